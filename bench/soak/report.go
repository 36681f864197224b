//go:build linux

package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/benchdoc"
)

// report renders a finished soak.
func (r result) report() *benchdoc.Report {
	rep := &benchdoc.Report{}
	o := r.O
	rep.Para("vipstack soak: parts %s; %v (warm-up %v), a sample every %v, a fault or reload per part every %v; ipfailover %d VIPs on %d nodes; lb %d new connections/s.",
		strings.Join(o.Parts, ", "), r.Took.Round(time.Second), o.Warmup, o.Interval, o.FaultEvery, o.VIPs, o.IPFNodes, o.Rate)
	t := benchdoc.Table{Header: []string{"part", "process", "metric", "samples", "at start", "after warm-up (min-max)", "slope /h", "growth over run", "noise", "verdict"}}
	for _, s := range r.Series {
		f := fitLine(s.Samples)
		verdict := "flat"
		switch {
		case f.N < 5:
			verdict = "too few samples"
		case Grows(s.Metric, f):
			verdict = "GROWS"
		}
		if s.Restarts > 0 {
			verdict += fmt.Sprintf(", replaced %d×", s.Restarts)
		}
		if s.Misses > 0 {
			verdict += fmt.Sprintf(", %d unread", s.Misses)
		}
		first := "-"
		if s.First >= 0 {
			first = s.Metric.format(s.First)
		}
		t.Add(s.Part, s.Proc, s.Metric.String(), fmt.Sprint(f.N), first,
			s.Metric.format(f.Min)+" - "+s.Metric.format(f.Max), signed(s.Metric, f.PerHour), signed(s.Metric, f.Growth),
			fmt.Sprintf("%s (3σ %s)", s.Metric.format(noise(s.Metric, f)), s.Metric.format(3*f.Resid)), verdict)
	}
	rep.Table(t)
	rep.Para("Slope: least squares over the samples after the warm-up. Growth: the slope times the span of those samples. Noise: three standard deviations of the residuals about the line, and at least 8 MiB of RSS, 10 goroutines or 8 descriptors. GROWS: the growth exceeds the noise.")
	var steps []string
	for _, p := range o.Parts {
		steps = append(steps, fmt.Sprintf("%s %d", p, r.Steps[p]))
	}
	rep.Para("Faults and reloads taken: %s.", strings.Join(steps, ", "))
	rep.List(r.Notes)
	var bad []string
	bad = append(bad, r.Leaks()...)
	bad = append(bad, r.Failed...)
	bad = append(bad, r.Probs...)
	if len(bad) == 0 {
		rep.Para("PASS: no growth beyond noise, no process replaced, every step done.")
	} else {
		rep.Para("MISS:")
		rep.List(bad)
	}
	return rep
}

// signed prints v with its sign.
func signed(m Metric, v float64) string {
	s := m.format(v)
	if v >= 0 {
		s = "+" + s
	}
	return s
}
