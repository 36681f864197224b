package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/testnet"
)

// TestUpgradeShort is bench/upgrade in little: 3 masters and 2 workers
// (with one, the Ingress VIP has no other healthy holder), every node's
// binary upgraded in the systemd style (installed over its
// path, the service restarted) and downgraded in the static-pod style (the
// old image's path, process 1 of a PID namespace), 10 replacements under
// 100 new connections a second to each VIP. The API and DNS VIPs have
// three candidates of one priority: when their holder stops, both others
// would take over after the same Skew_Time without the tie-break, the
// second move bench/upgrade saw. It fails on any failed connection or
// second move.
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
	o := options{Masters: 3, Workers: 2, Rate: 100, Advert: time.Second, Settle: 3 * time.Second, Prefix: "vsokV", Old: old, New: next,
		Phases: []phase{{Style: styleSystemd, From: "old", To: "new"}, {Style: styleStaticPod, From: "new", To: "old"}}}
	o.Logs = t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	res, err := Run(ctx, o)
	var out strings.Builder
	_ = res.report().Text(&out)
	t.Logf("upgrade report:\n%s", out.String())
	t.Cleanup(func() {
		if t.Failed() {
			logTransitions(t, o.Logs)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 10 {
		t.Fatalf("%d replacements, want 10", len(res.Steps))
	}
	for i, tg := range res.Targets {
		if res.OKConns[i] < 1000 {
			t.Errorf("%s: only %d connections made", tg.Kind, res.OKConns[i])
		}
		for _, s := range res.Steps {
			if s.Failed[i] > 0 {
				t.Errorf("%s (%s), %s to %s: %d connections to the %s VIP failed", s.Node, s.Style, s.From, s.To, s.Failed[i], tg.Kind)
			}
			if m := s.Moves[i]; m.Moves > 1 {
				t.Errorf("%s (%s), %s to %s: the %s VIP moved %d times (%s)", s.Node, s.Style, s.From, s.To, tg.Kind, m.Moves, strings.Join(m.Path, " to "))
			}
		}
	}
}

// logTransitions logs the node agents' VRRP state and priority changes
// (their logs copied to dir), to tell a second move's cause.
func logTransitions(t *testing.T, dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var lines []string
		for line := range strings.Lines(string(b)) {
			if strings.Contains(line, "VRRP state change") || strings.Contains(line, "effective priority changed") {
				lines = append(lines, strings.TrimSpace(line))
			}
		}
		t.Logf("---- %s: state and priority changes\n%s", filepath.Base(f), strings.Join(lines, "\n"))
	}
}
