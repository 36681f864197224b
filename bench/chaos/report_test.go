package main

import (
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/chaos"
)

func TestPct(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		in   []time.Duration
		q    int
		want time.Duration
	}{
		{name: "none", in: nil, q: 50, want: 0},
		{name: "one", in: []time.Duration{7 * ms}, q: 50, want: 7 * ms},
		{name: "median of odd", in: []time.Duration{30 * ms, 10 * ms, 20 * ms}, q: 50, want: 20 * ms},
		{name: "median of even: the lower", in: []time.Duration{40 * ms, 10 * ms, 30 * ms, 20 * ms}, q: 50, want: 20 * ms},
		{name: "max", in: []time.Duration{40 * ms, 10 * ms, 30 * ms}, q: 100, want: 40 * ms},
		{name: "p99 of 100 is the 99th", in: func() []time.Duration {
			var d []time.Duration
			for i := 1; i <= 100; i++ {
				d = append(d, time.Duration(i)*ms)
			}
			return d
		}(), q: 99, want: 99 * ms},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pct(tc.in, tc.q); got != tc.want {
				t.Errorf("pct(%v, %d) = %v, want %v", tc.in, tc.q, got, tc.want)
			}
		})
	}
}

// TestSummary: the Markdown summary judges each figure against its bound,
// and lists the violations.
func TestSummary(t *testing.T) {
	ms := time.Millisecond
	cfg := chaos.Config{Advert: 100 * ms, Skew: 60 * ms, Margin: 200 * ms, SupervisorBound: 500 * ms, StartSweep: time.Second}
	o := options{Faults: 3, Nodes: 5, Advert: 100 * ms}
	at := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	res := result{
		Mode:     "demo cluster",
		Injected: map[chaos.Kind]int{chaos.AllKinds[0]: 3},
		Report: chaos.Report{
			Samples:    100,
			Recoveries: []chaos.Recovery{{Event: "x", At: at, Took: 700 * ms}, {Took: 10 * ms}},
			Reactions:  []time.Duration{50 * ms},
			Violations: []chaos.Violation{{Kind: chaos.ViolationKinds[0], At: at, For: 30 * ms, Nodes: []string{"master-0", "master-1"}, Detail: "held twice"}},
		},
	}
	var b strings.Builder
	if err := summary(o, cfg, res, 10*time.Second).Markdown(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| violations | 1 | 0 | **MISS** |",
		"worst 700ms (n = 2) | under 560ms (3 x advert + skew + margin) | **MISS** (1.25) |",
		"| supervisor reaction, kill -9 of the engine to its VIPs gone | p50 50ms, max 50ms (n = 1) | under 500ms | PASS |",
		"| restart sweep | none | under 1s | PASS |",
		"on master-0, master-1: held twice",
		"3 of 3 in 10 s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Service deleted") {
		t.Errorf("Service rows outside -k8s:\n%s", out)
	}
}
