package main

import (
	"context"
	"os"
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
	res := runShort(t, 4*time.Minute, options{Seed: 8, Faults: 25, Nodes: 5, Advert: 100 * time.Millisecond, Prefix: "vxT"})
	checkShort(t, res)
}

// runShort builds vipstack, runs o with it and logs the report.
func runShort(t *testing.T, timeout time.Duration, o options) result {
	t.Helper()
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o.Bin = bin
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out strings.Builder
	res, err := Run(ctx, o, &out)
	t.Logf("chaos report:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// checkShort fails on too few faults injected, a failed injection or any
// violation.
func checkShort(t *testing.T, res result) {
	t.Helper()
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

// TestChaosK8sShort is bench/chaos's Kubernetes mode in little: 25 faults
// with a fixed seed (every kind an agent meets: kill -9 of the agent and
// of its supervised child, stalls, cuts, ifdown, loss, Service churn,
// controller kills; delays too where the kernel has netem) against 5
// agents with the DaemonSet's capabilities, a real kube-apiserver and 6
// LoadBalancer Services, failing on any violation or failed injection.
// `sudo go run ./bench/chaos -k8s -seed 37 -faults 25 -v` replays it.
func TestChaosK8sShort(t *testing.T) {
	testnet.RequireRoot(t)
	if testing.Short() {
		t.Skip("skipping the Kubernetes chaos run in -short mode (about 75 s)")
	}
	if os.Getenv("VIPSTACK_SKIP_KUBE") == "1" {
		t.Skip("VIPSTACK_SKIP_KUBE=1: skipping a test that needs kube-apiserver and etcd")
	}
	res := runShort(t, 5*time.Minute, options{Seed: 37, Faults: 25, Nodes: 5, Advert: 100 * time.Millisecond, Prefix: "ckT",
		K8s: true, Services: 6})
	checkShort(t, res)
	for _, k := range []chaos.Kind{chaos.KillAgent, chaos.KillEngine, chaos.Churn, chaos.KillController} {
		if res.Injected[k] == 0 {
			t.Errorf("no %s fault injected; the seed should give some", k)
		}
	}
	if len(res.Report.Sweeps) == 0 || len(res.Report.ServiceBack) == 0 {
		t.Errorf("no restart sweep or Service return measured (sweeps %v, back %v): the faults did not hit what they should", res.Report.Sweeps, res.Report.ServiceBack)
	}
}
