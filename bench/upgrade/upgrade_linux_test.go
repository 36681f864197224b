package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/testnet"
)

// TestUpgradeShort is bench/upgrade in little: 2 masters and 2 workers,
// every node's binary replaced by another build and back (8
// replacements) under 100 new connections a second to each VIP. With two
// candidates per VIP, a replacement moves a VIP at most once (away from
// the stopped node); a second move would be a VIP taken back, or given to
// a third holder. It fails on any failed connection or second move.
func TestUpgradeShort(t *testing.T) {
	testnet.RequireRoot(t)
	if testing.Short() {
		t.Skip("skipping the upgrade run in -short mode (about 3 minutes with the two builds)")
	}
	dir := t.TempDir()
	old, err := build(dir, "v0.0.0-test-old")
	if err != nil {
		t.Fatal(err)
	}
	next, err := build(dir, "v0.0.0-test-new")
	if err != nil {
		t.Fatal(err)
	}
	o := options{Masters: 2, Workers: 2, Rate: 100, Advert: time.Second, Settle: 3 * time.Second, Prefix: "vsokV", Old: old, New: next}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, o)
	var out strings.Builder
	_ = res.report().Text(&out)
	t.Logf("upgrade report:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 8 {
		t.Fatalf("%d replacements, want 8", len(res.Steps))
	}
	for i, tg := range res.Targets {
		if res.OKConns[i] < 1000 {
			t.Errorf("%s: only %d connections made", tg.Kind, res.OKConns[i])
		}
		for _, s := range res.Steps {
			if s.Failed[i] > 0 {
				t.Errorf("%s, %s to %s: %d connections to the %s VIP failed", s.Node, s.From, s.To, s.Failed[i], tg.Kind)
			}
			if m := s.Moves[i]; m.Moves > 1 {
				t.Errorf("%s, %s to %s: the %s VIP moved %d times (%s)", s.Node, s.From, s.To, tg.Kind, m.Moves, strings.Join(m.Path, " to "))
			}
		}
	}
}
