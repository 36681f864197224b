package main

import (
	"strings"
	"testing"
	"time"
)

func TestTargets(t *testing.T) {
	ms := time.Millisecond
	base := func() *results {
		return &results{BFDInterval: 50 * ms, BFDMult: 3, Hold: 3 * time.Second, Routes: fullScale}
	}
	crash := func(ev string, moved ...time.Duration) []crashTrial {
		var ts []crashTrial
		for _, m := range moved {
			ts = append(ts, crashTrial{Impl: implVipstack, Mode: modeBFD, Event: ev, Moved: m})
		}
		return ts
	}
	for _, tc := range []struct {
		name string
		set  func(r *results)
		want []string // each target's verdict and a piece of its figure
	}{
		{name: "nothing measured", set: func(*results) {},
			want: []string{"MISS.*not measured", "MISS.*not measured", "MISS.*not measured", "MISS.*not measured"}},
		{name: "at the bound passes, one over misses", set: func(r *results) {
			r.Crash = append(crash(eventKill, 190*ms, 200*ms, 260*ms), crash(eventCut, 201*ms)...)
		}, want: []string{"PASS.*median 200 ms of 3", "MISS.*median 201 ms of 1", "MISS", "MISS"}},
		{name: "failed trials and FRR's do not count", set: func(r *results) {
			r.Crash = append(crash(eventKill, 100*ms), crashTrial{Impl: implVipstack, Mode: modeBFD, Event: eventKill, Moved: time.Second, Err: "x"},
				crashTrial{Impl: implFRR, Mode: modeBFD, Event: eventCut, Moved: 10 * ms},
				crashTrial{Impl: implVipstack, Mode: modeHold, Event: eventCut, Moved: 10 * ms})
		}, want: []string{"PASS.*of 1", "MISS.*not measured", "MISS", "MISS"}},
		{name: "a lost connection misses the stop", set: func(r *results) {
			r.Stops = []stopTrial{{Impl: implVipstack, Probes: 100}, {Impl: implVipstack, Probes: 100, Failed: 1}}
		}, want: []string{"MISS", "MISS", "MISS.*1 of 200 connections failed over 2 stops", "MISS"}},
		{name: "failures after the stop settled do not count", set: func(r *results) {
			r.Stops = []stopTrial{{Impl: implVipstack, Probes: 100, Failed: 2, Late: 2}}
		}, want: []string{"MISS", "MISS", "PASS.*0 of 100 connections failed over 1 stops (2 more after it settled", "MISS"}},
		{name: "failures before it settled do", set: func(r *results) {
			r.Stops = []stopTrial{{Impl: implVipstack, Probes: 100, Failed: 3, Late: 2}}
		}, want: []string{"MISS", "MISS", "MISS.*1 of 100", "MISS"}},
		{name: "no lost connection passes", set: func(r *results) {
			r.Stops = []stopTrial{{Impl: implVipstack, Probes: 100}, {Impl: implFRR, Probes: 100, Failed: 3}}
		}, want: []string{"MISS", "MISS", "PASS.*0 of 100", "MISS"}},
		{name: "routes under 1 s from established", set: func(r *results) {
			r.Scale = []scaleRun{{Impl: implVipstack, Routes: fullScale, Established: 2 * time.Second, Received: 2*time.Second + 999*ms}}
		}, want: []string{"MISS", "MISS", "MISS", "PASS.*999 ms"}},
		{name: "routes at 1 s miss", set: func(r *results) {
			r.Scale = []scaleRun{{Impl: implVipstack, Routes: fullScale, Established: 0, Received: time.Second}}
		}, want: []string{"MISS", "MISS", "MISS", "MISS.*1000 ms"}},
		{name: "fewer routes never pass", set: func(r *results) {
			r.Routes = 1000
			r.Scale = []scaleRun{{Impl: implVipstack, Routes: 1000, Received: 10 * ms}}
		}, want: []string{"MISS", "MISS", "MISS", "MISS.*run -routes 10000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			tc.set(r)
			ts := r.targets()
			if len(ts) != len(tc.want) {
				t.Fatalf("%d targets, want %d", len(ts), len(tc.want))
			}
			for i, w := range tc.want {
				verdict, part, _ := strings.Cut(w, ".*")
				if got := ts[i].String(); !strings.HasPrefix(got, verdict) || !strings.Contains(got, part) {
					t.Errorf("target %d: %q, want %s with %q", i, got, verdict, part)
				}
			}
		})
	}
}

func TestOutcome(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(d time.Duration) int64 { return t0.Add(d).UnixNano() }
	ms := time.Millisecond
	ps := []probe{
		{At: at(-20 * ms), By: "n1"}, {At: at(-10 * ms), By: "n2"},
		{At: at(0), By: ""}, {At: at(10 * ms), By: "n2"}, {At: at(20 * ms), By: ""},
		{At: at(40 * ms), By: "n2"}, {At: at(30 * ms), By: "n2"}, // out of order, as they finish
	}
	moved, failed, total, err := outcome(ps, t0)
	if err != nil || moved != 30*ms || failed != 2 || total != 5 {
		t.Errorf("outcome = %v, %d failed of %d, %v; want 30ms, 2 of 5", moved, failed, total, err)
	}
	if err := before(ps, t0, "n1", "n2"); err != nil {
		t.Errorf("before: %v", err)
	}
	if err := before(ps, t0, "n1", "n3"); err == nil || !strings.Contains(err.Error(), "n3") {
		t.Errorf("before with n3 never answering: %v", err)
	}
	if err := before(append(ps, probe{At: at(-5 * ms)}), t0); err == nil {
		t.Error("before: a failed probe before T0 is not an error")
	}
	if _, _, _, err := outcome(ps[:5], t0); err == nil {
		t.Error("outcome: the last probe failed, yet no error")
	}
}

func TestInFlight(t *testing.T) {
	t0 := time.Unix(100, 0)
	ms := time.Millisecond
	at := func(d time.Duration) int64 { return t0.Add(d).UnixNano() }
	ps := []probe{{At: at(-5 * ms)}, {At: at(10 * ms)}, {At: at(20 * ms), By: "n2"}, {At: at(59 * ms)}, {At: at(60 * ms)}, {At: at(90 * ms)}}
	for _, tc := range []struct {
		name           string
		route, removed time.Duration
		want           int
	}{
		{name: "VIP kept past the change", route: 60 * ms, removed: time.Second, want: 2},
		{name: "VIP gone first", route: 60 * ms, removed: 30 * ms, want: 0},
		{name: "at the same time", route: 60 * ms, removed: 60 * ms, want: 0},
	} {
		if got := inFlight(ps, t0, tc.route, tc.removed); got != tc.want {
			t.Errorf("%s: %d in flight, want %d", tc.name, got, tc.want)
		}
	}
}

func TestLate(t *testing.T) {
	t0 := time.Unix(100, 0)
	ms := time.Millisecond
	at := func(d time.Duration) int64 { return t0.Add(d).UnixNano() }
	ps := []probe{{At: at(10 * ms)}, {At: at(70 * ms)}, {At: at(1100 * ms), By: "n2"}, {At: at(1200 * ms)}, {At: at(2000 * ms)}}
	if got := late(ps, t0, 60*ms, 1000*ms); got != 2 {
		t.Errorf("late = %d, want 2 (the failures after both the route change at 60 ms and the VIP gone at 1 s)", got)
	}
	if got := late(ps, t0, 1500*ms, 30*ms); got != 1 {
		t.Errorf("late = %d with the route changed at 1.5 s, want 1", got)
	}
}

func TestFirstChange(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 7, 0, 40, 795000000, time.Local)
	lines := []string{
		"[2026-11-29T07:00:40.793024] 198.19.0.10 proto bgp metric 20 ",
		"[2026-11-29T07:00:40.795476] 198.19.0.100 via 198.18.1.10 dev n1 proto bgp metric 20 ",
		"\tnexthop via 198.18.2.10 dev n2 weight 1 ",
		"[2026-11-29T07:00:40.998049] 198.19.0.10 via 198.18.2.10 dev n2 proto bgp metric 20 ",
	}
	got, err := firstChange(lines, "198.19.0.10", t0)
	if err != nil || got != 203049*time.Microsecond {
		t.Errorf("firstChange = %v, %v; want 203.049ms (the change before T0 and another route's do not count)", got, err)
	}
	if _, err := firstChange(lines[:3], "198.19.0.10", t0); err == nil {
		t.Error("no change after T0, yet no error")
	}
}
