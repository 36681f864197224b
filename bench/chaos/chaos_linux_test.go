package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/chaos"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestChaosShort is bench/chaos in little: 25 faults of every kind with a
// fixed seed against a 5-node cluster (3 masters, 2 workers), failing on
// any violation of internal/chaos's invariants or any failed injection.
// The report is logged; `sudo go run ./bench/chaos -seed 8 -faults 25 -v`
// replays the same schedule.
func TestChaosShort(t *testing.T) {
	testnet.RequireRoot(t)
	if testing.Short() {
		t.Skip("skipping the chaos run in -short mode (about 70 s)")
	}
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out strings.Builder
	res, err := Run(ctx, options{Seed: 8, Faults: 25, Nodes: 5, Advert: 100 * time.Millisecond, Bin: bin, Prefix: "vxT"}, &out)
	t.Logf("chaos report:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	injected := 0
	for _, n := range res.Injected {
		injected += n
	}
	if injected < 20 {
		t.Errorf("only %d of 25 faults injected (skipped: %v)", injected, res.Skipped)
	}
	for _, f := range res.Failed {
		t.Errorf("injection failed: %s", f)
	}
	for _, k := range chaos.ViolationKinds {
		if n := res.Report.Count(k); n > 0 {
			t.Errorf("%d %s violations (see the report above)", n, k)
		}
	}
}
