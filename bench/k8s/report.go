package main

import (
	"fmt"
	"slices"
	"time"
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
