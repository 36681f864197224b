package main

import (
	"strings"
	"testing"
	"time"
)

func TestTargets(t *testing.T) {
	ms := time.Millisecond
	base := func() *results {
		return &results{BFDInterval: 50 * ms, BFDMult: 3, Hold: 3 * time.Second, Routes: fullScale, Routers: []string{routerFRR, routerBIRD}}
	}
	crash := func(rt, ev string, moved ...time.Duration) []crashTrial {
		var ts []crashTrial
		for _, m := range moved {
			ts = append(ts, crashTrial{Router: rt, Impl: implVipstack, Mode: modeBFD, Event: ev, Moved: m})
		}
		return ts
	}
	none := []string{"MISS.*kill -9, BIRD router: crash to traffic moved: not measured", "MISS.*link cut, BIRD router: crash to traffic moved: not measured",
		"MISS.*under load, BIRD router: not measured", "MISS.*peer, BIRD router: not measured"}
	for _, tc := range []struct {
		name string
		set  func(r *results)
		want []string // each target's verdict and a piece of it, FRR's four then BIRD's
	}{
		{name: "nothing measured", set: func(*results) {},
			want: append([]string{"MISS.*kill -9, FRR router: crash to traffic moved: not measured", "MISS.*link cut, FRR router: crash to traffic moved: not measured",
				"MISS.*under load, FRR router: not measured", "MISS.*peer, FRR router: not measured"}, none...)},
		{name: "at the bound passes, one over misses", set: func(r *results) {
			r.Crash = append(crash(routerFRR, eventKill, 190*ms, 200*ms, 260*ms), crash(routerFRR, eventCut, 201*ms)...)
		}, want: append([]string{"PASS.*median 200 ms of 3", "MISS.*median 201 ms of 1", "MISS", "MISS"}, none...)},
		{name: "each router's trials count for it alone", set: func(r *results) {
			r.Crash = append(crash(routerFRR, eventKill, 260*ms), crash(routerBIRD, eventKill, 160*ms, 170*ms)...)
			r.Crash = append(r.Crash, crashTrial{Router: routerBIRD, Impl: implFRR, Mode: modeBFD, Event: eventKill, Moved: 150 * ms})
		}, want: []string{"MISS.*median 260 ms of 1", "MISS.*not measured", "MISS", "MISS",
			"PASS.*kill -9, BIRD router: crash to traffic moved: median 165 ms of 2; FRR announcing 150 ms", "MISS.*not measured", "MISS", "MISS"}},
		{name: "failed trials and FRR's do not count", set: func(r *results) {
			r.Crash = append(crash(routerFRR, eventKill, 100*ms), crashTrial{Router: routerFRR, Impl: implVipstack, Mode: modeBFD, Event: eventKill, Moved: time.Second, Err: "x"},
				crashTrial{Router: routerFRR, Impl: implFRR, Mode: modeBFD, Event: eventCut, Moved: 10 * ms},
				crashTrial{Router: routerFRR, Impl: implVipstack, Mode: modeHold, Event: eventCut, Moved: 10 * ms})
		}, want: append([]string{"PASS.*of 1", "MISS.*not measured", "MISS", "MISS"}, none...)},
		{name: "a lost connection misses the stop", set: func(r *results) {
			r.Stops = []stopTrial{{Router: routerFRR, Impl: implVipstack, Probes: 100}, {Router: routerFRR, Impl: implVipstack, Probes: 100, Failed: 1}}
		}, want: append([]string{"MISS", "MISS", "MISS.*1 of 200 connections failed over 2 stops", "MISS"}, none...)},
		{name: "failures after the stop settled do not count", set: func(r *results) {
			r.Stops = []stopTrial{{Router: routerBIRD, Impl: implVipstack, Probes: 100, Failed: 2, Late: 2}}
		}, want: []string{"MISS", "MISS", "MISS.*not measured", "MISS", "MISS", "MISS", "PASS.*BIRD router: 0 of 100 connections failed over 1 stops (2 more after it settled", "MISS"}},
		{name: "failures before it settled do", set: func(r *results) {
			r.Stops = []stopTrial{{Router: routerFRR, Impl: implVipstack, Probes: 100, Failed: 3, Late: 2}}
		}, want: append([]string{"MISS", "MISS", "MISS.*1 of 100", "MISS"}, none...)},
		{name: "no lost connection passes", set: func(r *results) {
			r.Stops = []stopTrial{{Router: routerFRR, Impl: implVipstack, Probes: 100}, {Router: routerFRR, Impl: implFRR, Probes: 100, Failed: 3}}
		}, want: append([]string{"MISS", "MISS", "PASS.*0 of 100", "MISS"}, none...)},
		{name: "routes under 1 s from established", set: func(r *results) {
			r.Scale = []scaleRun{{Router: routerFRR, Impl: implVipstack, Routes: fullScale, Established: 2 * time.Second, Received: 2*time.Second + 999*ms, PollEvery: 80 * ms}}
		}, want: append([]string{"MISS", "MISS", "MISS", "PASS.*999 ms from established to all received; polled every 80 ms"}, none...)},
		{name: "routes at 1 s miss", set: func(r *results) {
			r.Scale = []scaleRun{{Router: routerFRR, Impl: implVipstack, Routes: fullScale, Established: 0, Received: time.Second}}
		}, want: append([]string{"MISS", "MISS", "MISS", "MISS.*1000 ms"}, none...)},
		{name: "fewer routes never pass", set: func(r *results) {
			r.Routes = 1000
			r.Scale = []scaleRun{{Router: routerFRR, Impl: implVipstack, Routes: 1000, Received: 10 * ms}}
		}, want: append([]string{"MISS", "MISS", "MISS", "MISS.*run -routes 10000"}, none...)},
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

func TestProgramming(t *testing.T) {
	ms := time.Millisecond
	r := &results{BFDInterval: 50 * ms, BFDMult: 3, Routers: []string{routerFRR}, Crash: []crashTrial{
		{Router: routerFRR, Impl: implVipstack, Mode: modeBFD, Event: eventKill, Detect: 140 * ms, Route: 210 * ms},
		{Router: routerFRR, Impl: implVipstack, Mode: modeBFD, Event: eventKill, Detect: 150 * ms, Route: 230 * ms},
		{Router: routerFRR, Impl: implVipstack, Mode: modeBFD, Event: eventKill, Detect: 120 * ms, Route: 180 * ms},
	}}
	if got, n := r.median(routerFRR, implVipstack, modeBFD, eventKill, programming); got != 70*ms || n != 3 {
		t.Errorf("BFD down to route: median %v of %d, want 70ms of 3 (70, 80, 60)", got, n)
	}
	var out strings.Builder
	if err := r.report().Text(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "70 ms (3)") {
		t.Errorf("report lacks the router's median programming time, 70 ms (3):\n%s", out.String())
	}
}

func TestLogTime(t *testing.T) {
	log := "2026/11/29 20:23:21.000001 BFD: state-change: [mhop:no peer:198.18.1.10 local:198.18.1.1] up -> down reason:control-expired\n" +
		"2026/11/29 20:23:22.529442 BFD: [X] state-change: [mhop:no peer:198.18.1.10 local:198.18.1.1 vrf:default] up -> down reason:control-expired\n" +
		"2026-11-29 20:23:23.250000 <TRACE> bfd1: Session to 198.18.2.10 changed state from Up to Down\n"
	frr := func(l string) bool { return strings.Contains(l, "peer:198.18.1.10 ") && strings.Contains(l, "-> down") }
	mark := strings.Index(log, "\n") + 1
	got, err := logTime(log, mark, frr)
	if want := time.Date(2026, 11, 29, 20, 23, 22, 529442000, time.Local); err != nil || !got.Equal(want) {
		t.Errorf("FRR line after the mark: %v, %v; want %v", got, err, want)
	}
	got, err = logTime(log, 0, func(l string) bool { return strings.Contains(l, "Session to 198.18.2.10 ") })
	if want := time.Date(2026, 11, 29, 20, 23, 23, 250000000, time.Local); err != nil || !got.Equal(want) {
		t.Errorf("BIRD line: %v, %v; want %v", got, err, want)
	}
	if _, err := logTime(log, len(log), frr); err == nil {
		t.Error("nothing logged after the mark, yet no error")
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
