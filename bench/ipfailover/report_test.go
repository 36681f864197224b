package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSummarize(t *testing.T) {
	rs := []trialResult{
		{CPU: []float64{1, 2, 3}, RSS: []float64{14, 15, 16}, PSS: []float64{10, 10, 10}, VRRPPerSecond: 6, Moved: 3334, First: 3 * time.Second, Last: 5 * time.Second, Answered: 10000},
		{CPU: []float64{3, 3, 3}, RSS: []float64{17, 17, 17}, PSS: []float64{12, 12, 12}, VRRPPerSecond: 6, Moved: 3334, First: 4 * time.Second, Last: 9 * time.Second, Answered: 9999, Twice: 1},
		{CPU: []float64{2, 2, 2}, RSS: []float64{13, 13, 13}, PSS: []float64{11, 11, 11}, VRRPPerSecond: 7, Moved: 3334, First: 2 * time.Second, Last: 6 * time.Second, Answered: 10000},
		{Unsettled: "not settled after 3m0s"},
	}
	got := summarize("x", rs)
	want := summary{Variant: "x", Trials: 3, CPU: 2, RSS: 15, PSS: 11, VRRPPerSecond: 6, Moved: 3334, First: 3 * time.Second, Last: 6 * time.Second,
		Answered: 9999, Twice: 1, Lasts: []time.Duration{5 * time.Second, 9 * time.Second, 6 * time.Second}, Unsettled: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summarize (-want +got):\n%s", diff)
	}
}

func TestPrintReportRatios(t *testing.T) {
	ka := summary{Variant: "keepalived", Trials: 1, CPU: 2, RSS: 14, PSS: 10, VRRPPerSecond: 6, Moved: 10, First: time.Second, Last: 4 * time.Second, Answered: 10}
	vs := summary{Variant: "vipstack", Trials: 1, CPU: 1, RSS: 7, PSS: 20, VRRPPerSecond: 6, Moved: 10, First: time.Second, Last: 2 * time.Second, Answered: 10}
	var b bytes.Buffer
	printReport(&b, 10, []summary{ka, vs})
	for _, want := range []string{"keepalived  vipstack  ratio", "4000 ms     2000 ms   0.50", "10.0 MiB    20.0 MiB  2.00", "14.0 MiB    7.0 MiB   0.50", "10          10        1.00"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

func TestVerdicts(t *testing.T) {
	ka := summary{Variant: "keepalived", Trials: 3, Last: 3400 * time.Millisecond, RSS: 8, PSS: 5.4}
	got := verdicts([]summary{ka,
		{Variant: "vipstack", Trials: 3, Last: 3400 * time.Millisecond, RSS: 8, PSS: 5},
		{Variant: "vipstack-slow", Trials: 3, Last: 8500 * time.Millisecond, RSS: 12, PSS: 8.1},
		{Variant: "vipstack-unsettled", Trials: 0, Unsettled: 3},
	})
	want := []string{
		"PASS  every VIP re-announced: vipstack/keepalived = 1.00 (3400 against 3400 ms; want <= 1.00)",
		"PASS  RSS per node at rest: vipstack/keepalived = 1.00 (8.0 against 8.0 MiB; want <= 1.00)",
		"PASS  PSS per node at rest: vipstack/keepalived = 0.93 (5.0 against 5.4 MiB; want <= 1.00)",
		"MISS  every VIP re-announced: vipstack-slow/keepalived = 2.50 (8500 against 3400 ms; want <= 1.00)",
		"MISS  RSS per node at rest: vipstack-slow/keepalived = 1.50 (12.0 against 8.0 MiB; want <= 1.00)",
		"MISS  PSS per node at rest: vipstack-slow/keepalived = 1.50 (8.1 against 5.4 MiB; want <= 1.00)",
		"MISS  every VIP re-announced, RSS and PSS: vipstack-unsettled has no settled trial",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	if got := verdicts([]summary{{Variant: "keepalived", Trials: 0}, {Variant: "vipstack", Trials: 1}}); got != nil {
		t.Errorf("verdicts without a settled keepalived trial = %q, want none", got)
	}
	got = verdicts([]summary{{Variant: "keepalived", Trials: 1, Last: time.Second}, {Variant: "vipstack", Trials: 1, Last: time.Second, RSS: 1, PSS: 1}})
	if want := "MISS  RSS per node at rest: keepalived's is not known"; len(got) != 3 || got[1] != want {
		t.Errorf("verdicts without keepalived's memory = %q, want %q second", got, want)
	}
}

func TestPeakRate(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	var times []time.Time
	for _, ms := range []int{515, 0, 10, 20, 500, 505, 510, 700} {
		times = append(times, t0.Add(time.Duration(ms)*time.Millisecond))
	}
	if got := peakRate(times, 100*time.Millisecond); got != 40 {
		t.Errorf("peakRate = %v, want 40 (4 in 100 ms)", got)
	}
	if got := peakRate(nil, 100*time.Millisecond); got != 0 {
		t.Errorf("peakRate(nil) = %v, want 0", got)
	}
}

func TestVIPList(t *testing.T) {
	if got, want := vipList(260), "198.18.16.1-250,198.18.17.1-10"; got != want {
		t.Errorf("vipList(260) = %q, want %q", got, want)
	}
}
