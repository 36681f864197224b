package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestSoakShort is bench/soak in little: every part at a smaller scale (2
// masters, 2 agents, ipfailover with 1,000 VIPs on 2 nodes, the lb under
// 50 new connections a second) for 150 s with a fault or reload per part
// every 3 s, sampled every 2 s after a 40 s warm-up. It fails when a
// sampled process's RSS, goroutines or descriptors grow beyond the noise
// (a descriptor or goroutine left behind by every reload is some 15 to 20
// over the fitted span, beyond the floors of 8 and 10), when a sampled
// process is replaced, or when a step fails. VIPSTACK_SKIP_KUBE=1 leaves
// out the k8s part.
func TestSoakShort(t *testing.T) {
	testnet.RequireRoot(t)
	if testing.Short() {
		t.Skip("skipping the soak in -short mode (about 3 minutes)")
	}
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	parts := []string{"node", "k8s", "ipfailover", "lb"}
	if os.Getenv("VIPSTACK_SKIP_KUBE") == "1" {
		parts = []string{"node", "ipfailover", "lb"}
	}
	o := options{Duration: 150 * time.Second, Warmup: 40 * time.Second, Interval: 2 * time.Second, FaultEvery: 3 * time.Second,
		Parts: parts, VIPs: 1000, IPFNodes: 2, Masters: 2, K8sNodes: 2, Rate: 50, Bin: bin, Prefix: "vsokT"}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	_ = res.report().Text(&out)
	t.Logf("soak report:\n%s", out.String())
	for _, p := range parts {
		if res.Steps[p] < 20 {
			t.Errorf("%s: only %d steps taken, want some 36", p, res.Steps[p])
		}
	}
	for _, l := range res.Leaks() {
		t.Errorf("leak: %s", l)
	}
	for _, f := range res.Failed {
		t.Errorf("step failed: %s", f)
	}
	for _, p := range res.Probs {
		t.Error(p)
	}
	for _, s := range res.Series {
		if n := len(s.Samples); n < 40 {
			t.Errorf("%s %s %s: %d samples after the warm-up, want some 55", s.Part, s.Proc, s.Metric, n)
		}
	}
}
