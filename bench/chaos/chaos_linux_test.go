package main

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/chaos"
	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/routedlab"
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
	checkShort(t, res, 25)
}

// runShort builds vipstack, runs o with it and logs the report.
func runShort(t *testing.T, timeout time.Duration, o options) result {
	t.Helper()
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o.Bin = bin
	// The suite runs beside other packages' tests: a machine that stops
	// running the sampler (and so the daemons) for longer than this is a
	// stall of every node, as the bench's default has it.
	o.MachineStall = 250 * time.Millisecond
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

// checkShort fails on too few of the faults faults injected (at least 4
// in 5), a failed injection or any violation.
func checkShort(t *testing.T, res result, faults int) {
	t.Helper()
	injected := 0
	for _, n := range res.Injected {
		injected += n
	}
	if injected < faults*4/5 {
		t.Errorf("only %d of %d faults injected (skipped: %v)", injected, faults, res.Skipped)
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

// TestChaosK8sShort is bench/chaos's Kubernetes mode in little: 36 faults
// with a fixed seed, of every kind but delay (kept out so that the
// schedule does not depend on the kernel's netem): kill -9 of the agent
// and of its supervised child, stalls, cuts, ifdown, loss; the API server,
// etcd, the controller and the leader (a standby runs) killed and started
// again; Services deleted and created again and edited (type, class,
// requested address, traffic policy). Against 5 agents with the
// DaemonSet's capabilities, a real kube-apiserver and 6 LoadBalancer
// Services (3 with addresses the controller picked), failing on any
// violation (the nodes' addresses and the Services' status) or failed
// injection. `sudo go run ./bench/chaos -k8s -seed 127 -faults 36
// -kinds ...` (every kind of chaos.AgentWeights but delay) replays it.
func TestChaosK8sShort(t *testing.T) {
	testnet.RequireRoot(t)
	if testing.Short() {
		t.Skip("skipping the Kubernetes chaos run in -short mode (about 4 min)")
	}
	if os.Getenv("VIPSTACK_SKIP_KUBE") == "1" {
		t.Skip("VIPSTACK_SKIP_KUBE=1: skipping a test that needs kube-apiserver and etcd")
	}
	w := chaos.AgentWeights()
	delete(w, chaos.Delay)
	res := runShort(t, 10*time.Minute, options{Seed: 127, Faults: 36, Nodes: 5, Advert: 100 * time.Millisecond, Prefix: "ckT",
		K8s: true, Services: 6, Weights: w})
	checkShort(t, res, 36)
	for k, n := range w {
		if n > 0 && res.Injected[k] == 0 {
			t.Errorf("no %s fault injected; the seed gives some", k)
		}
	}
	if len(res.Report.Sweeps) == 0 || len(res.Report.ServiceBack) == 0 {
		t.Errorf("no restart sweep or Service return measured (sweeps %v, back %v): the faults did not hit what they should", res.Report.Sweeps, res.Report.ServiceBack)
	}
}

// TestChaosMixedShort is bench/chaos's mixed mode in little: 32 faults
// with a fixed seed, of every kind a keepalived node meets but delay (kept
// out so that the schedule does not depend on the kernel's netem): kill
// -9 and restart, stalls, cuts, ifdown, loss, reloads, and kill -9 of
// vipstack's supervised engine, against keepalived 2.2.7 on 3 nodes and
// `vipstack vrrp` on 2 in one VRRPv2 IPv4 and two VRRPv3 (IPv4, IPv6)
// groups, failing on any violation or failed injection. `sudo go run
// ./bench/chaos -mixed -seed 2 -faults 32 -kinds
// kill-engine=6,kill-agent=10,stall=14,cut=10,ifdown=6,loss=8,heavy-loss=6,reload=8`
// replays it.
func TestChaosMixedShort(t *testing.T) {
	testnet.RequireRoot(t)
	if testing.Short() {
		t.Skip("skipping the mixed chaos run in -short mode (about 60 s)")
	}
	if _, err := exec.LookPath("keepalived"); err != nil {
		t.Skip("keepalived is not installed (Debian package keepalived)")
	}
	w := chaos.MixedWeights()
	delete(w, chaos.Delay)
	res := runShort(t, 5*time.Minute, options{Seed: 2, Faults: 32, Nodes: 5, Advert: 100 * time.Millisecond, Prefix: "vmT",
		Mixed: true, Weights: w})
	checkShort(t, res, 32)
	for k, n := range w {
		if n > 0 && res.Injected[k] == 0 {
			t.Errorf("no %s fault injected; the seed gives some", k)
		}
	}
	// Which node holds a VIP when a kill comes depends on the run (a
	// takeover's order and timing), so one kind may miss every holder;
	// both missing means the kills hit nothing that held a VIP.
	if len(res.Report.Sweeps)+len(res.Report.Reactions) == 0 {
		t.Errorf("no restart sweep and no supervisor reaction measured: the faults did not hit what they should")
	}
}

// TestChaosBGPShort is bench/chaos's BGP mode in little: 25 faults with a
// fixed seed, of every kind of chaos.BGPWeights but delay (kept out so
// that the schedule does not depend on the kernel's netem): kill -9 of
// the agent and of its supervised engine, graceful stops, stalls, cuts
// (the router's end of the link), ifdown, loss, the load balancer's
// checks failing, reloads, and FRR's bgpd and bfdd killed and started
// again, against 3 masters each on its own subnet announcing the API and
// Ingress VIPs by eBGP with BFD to FRR 8.4; failing on any violation of
// the anycast invariants (the router's kernel routes, the loopbacks) or
// failed injection. `sudo go run ./bench/chaos -bgp -seed 159 -faults 25
// -kinds kill-engine=10,kill-agent=8,term-agent=6,stall=14,cut=10,ifdown=8,loss=8,heavy-loss=6,flap-lb=6,reload=8,restart-bgpd=3,restart-bfdd=3`
// replays it (seed 159 is one whose first 25 faults hold every kind).
func TestChaosBGPShort(t *testing.T) {
	runBGPShort(t, "frr", "vbcT", 159, 25)
}

// TestChaosBGPShortBIRD is the same against BIRD 2 as the router, 20
// faults (the first 20 of the same schedule; no cut nor loss among those
// injected): -router bird -faults 20.
func TestChaosBGPShortBIRD(t *testing.T) {
	runBGPShort(t, "bird", "vbbT", 159, 20)
}

func runBGPShort(t *testing.T, router, prefix string, seed uint64, faults int) {
	if router == "bird" {
		testnet.RequireRoot(t)
		for _, p := range []string{"bird", "birdc"} {
			if _, err := exec.LookPath(p); err != nil {
				t.Skipf("skipping: BIRD 2 is not installed (%v); .ci/run installs the bird2 package", err)
			}
		}
	} else {
		routedlab.RequireFRR(t)
	}
	if testing.Short() {
		t.Skip("skipping the BGP chaos run in -short mode (about 90 s)")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skipf("skipping: nft is not installed (%v); .ci/run installs nftables", err)
	}
	w := chaos.BGPWeights()
	delete(w, chaos.Delay)
	res := runShort(t, 5*time.Minute, options{Seed: seed, Faults: faults, Nodes: 3, Prefix: prefix, BGP: true, Router: router, Weights: w})
	// The runner keeps one node out of disruptive faults until the others
	// are routed again (rejoining, up to Config.Rejoin), so that (b)
	// applies: of 3 nodes, some faults find none free and are skipped.
	checkShort(t, res, faults/2)
	sched, err := chaos.Generate(chaos.GenOptions{Seed: seed, Faults: faults, Roles: []cluster.Role{cluster.Master, cluster.Master, cluster.Master}, VIPs: 2, Weights: w})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range sched {
		// A kind whose every fault found no free node is no failure of
		// the run (the schedule's timing varies with the machine).
		k := f.Kind
		skipped := slices.ContainsFunc(res.Skipped, func(s string) bool { return strings.Contains(s, " "+string(k)+" ") })
		if res.Injected[k] == 0 && !skipped {
			t.Errorf("no %s fault injected; the seed gives some", k)
		}
	}
	if len(res.Report.Recoveries) == 0 || len(res.Report.Rejoins) == 0 || len(res.Report.RouterReturns) == 0 {
		t.Errorf("no withdrawal, rejoin or router return timed (withdrawals %v, rejoins %v, router returns %v): the faults did not hit what they should",
			res.Report.Recoveries, res.Report.Rejoins, res.Report.RouterReturns)
	}
}
