package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/vipstack/vipstack/internal/benchdoc"
)

// summary is the p50, p99 and max of a set of durations, and how many of
// the expected count it holds.
type summary struct {
	N, Of         int
	P50, P99, Max time.Duration
}

// summarize sorts a copy of ds and picks the nearest-rank percentiles.
func summarize(ds []time.Duration, of int) summary {
	s := summary{N: len(ds), Of: of}
	if len(ds) == 0 {
		return s
	}
	d := slices.Clone(ds)
	slices.Sort(d)
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(d))+0.999999) - 1
		return d[max(0, min(i, len(d)-1))]
	}
	s.P50, s.P99, s.Max = rank(0.50), rank(0.99), d[len(d)-1]
	return s
}

// cells are the row of s in the latency table.
func (s summary) cells(what string) []string {
	r := func(d time.Duration) string { return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds()) }
	return []string{what, fmt.Sprintf("%d/%d", s.N, s.Of), r(s.P50), r(s.P99), r(s.Max)}
}

// mem is a process's memory, in MiB.
type mem struct{ rss, hwm, anon, file float64 }

// memTarget is issue 32's bound on each process's RSS after the Services.
const memTarget = 50.0 // MiB

// memTable is the memory of each process before, after the burst and at
// rest (rest: none when nil, the -rest 0 run), the resident set split into
// anonymous memory (heap, stacks) and file pages (the executable's, shared
// with every process of the binary through the page cache), each judged
// against memTarget.
func memTable(names []string, before, after, rest map[string]mem) benchdoc.Table {
	memt := benchdoc.Table{Header: []string{"process", "RSS before", "RSS after (anon + file)", "peak (VmHWM)", "target", "result"}}
	if rest != nil {
		memt.Header = append(memt.Header, "RSS at rest (anon + file)", "result at rest")
	}
	for _, name := range names {
		a := after[name]
		row := []string{name, fmt.Sprintf("%.1f MiB", before[name].rss), a.cell(),
			fmt.Sprintf("%.1f MiB", a.hwm), fmt.Sprintf("RSS < %.0f MiB", memTarget), a.result()}
		if rest != nil {
			r := rest[name]
			row = append(row, r.cell(), r.result())
		}
		memt.Add(row...)
	}
	return memt
}

// cell is m's RSS with its anonymous and file parts.
func (m mem) cell() string { return fmt.Sprintf("%.1f MiB (%.1f + %.1f)", m.rss, m.anon, m.file) }

// result judges m against memTarget; a memory that could not be read
// (zero) is a MISS.
func (m mem) result() string {
	if m.rss >= memTarget || m.rss == 0 {
		return "MISS"
	}
	return "PASS"
}
