package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/routedlab"
)

// TestMain runs the bench's helpers (speaker, greeter, prober) when the
// bench starts this binary as one.
func TestMain(m *testing.M) {
	if code := helperMain(); code >= 0 {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// TestBGPShort is bench/bgp in little: one trial of each crash with BFD
// (100 ms x 3), one graceful stop per implementation, and 1,000 routes to
// a new peer. It checks the bench measured every figure on real output
// and that each verdict follows from its figure; it asserts no timing.
func TestBGPShort(t *testing.T) {
	routedlab.RequireFRR(t)
	if testing.Short() {
		t.Skip("skipping the BGP bench run in -short mode (about a minute)")
	}
	// BFD at 100 ms: the suite runs on loaded machines, where 50 ms x 3
	// flaps; the verdict logic is the same at any interval.
	o := options{Trials: 1, Routes: 1000, BFDInterval: 100 * time.Millisecond, BFDMult: 3, Hold: 3 * time.Second,
		Impls: []string{implVipstack, implFRR}, Modes: []string{modeBFD}, Prefix: "vbnt",
		Parts: map[string]bool{"crash": true, "stop": true, "scale": true}}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	_ = res.report().Text(&out)
	t.Logf("bgp report:\n%s", out.String())
	if errs := res.errors(); len(errs) > 0 {
		t.Fatalf("trials failed to measure: %q", errs)
	}
	if len(res.Crash) != 4 || len(res.Stops) != 2 || len(res.Scale) != 2 {
		t.Fatalf("%d crash trials, %d stops, %d scale runs; want 4, 2, 2", len(res.Crash), len(res.Stops), len(res.Scale))
	}
	for _, c := range res.Crash {
		// About half the connections go to n1: a crash the client did
		// not see was not measured.
		if c.Failed == 0 || c.Probes == 0 || c.Moved <= 0 || c.Route <= 0 {
			t.Errorf("%s %s: %d of %d probes failed, moved %v, route %v: the crash was not seen", c.Impl, c.Event, c.Failed, c.Probes, c.Moved, c.Route)
		}
	}
	for _, s := range res.Stops {
		if s.Probes == 0 || s.Removed <= 0 {
			t.Errorf("%s graceful stop: %d probes, VIP removed at %v", s.Impl, s.Probes, s.Removed)
		}
	}
	for _, s := range res.Scale {
		if s.Received < s.Established || s.Established <= 0 || s.RSS0 <= 0 || s.RSSN <= 0 {
			t.Errorf("%s: %+v, want established, then every route received, and both RSS read", s.Impl, s)
		}
	}
	ts := res.targets()
	if len(ts) != 4 {
		t.Fatalf("targets %v, want 4", ts)
	}
	for i, ev := range []string{eventKill, eventCut} {
		m, n := res.median(implVipstack, modeBFD, ev, moved)
		if !ts[i].Count || n != 1 || ts[i].Pass != (m <= res.bfdTarget()) {
			t.Errorf("target %q with median %v: verdict does not follow from the figure", ts[i], m)
		}
	}
	failed, _, _ := res.stops(implVipstack)
	_, lateFails := res.inFlight(implVipstack)
	if !ts[2].Count || ts[2].Pass != (failed-lateFails == 0) {
		t.Errorf("target %q with %d failed connections: verdict does not follow", ts[2], failed)
	}
	// 1,000 routes are not the 10,000: never a PASS.
	if !ts[3].Count || ts[3].Pass || !strings.Contains(ts[3].Got, "run -routes 10000") {
		t.Errorf("target %q: want measured, MISS, and saying how to run the full count", ts[3])
	}
}
