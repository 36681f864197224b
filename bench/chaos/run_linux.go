package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/benchdoc"
	"github.com/vipstack/vipstack/internal/chaos"
	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/procfs"
)

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	seed := fs.Int64("seed", 0, "the schedule's seed (0: pick one and print it)")
	fs.IntVar(&o.Faults, "faults", 500, "how many faults to inject (1..100000)")
	fs.IntVar(&o.Nodes, "nodes", 5, "nodes: 3 masters and the rest workers (with -k8s: agents of one group) (5..20; with -bgp: masters, 3..8, default 3)")
	fs.DurationVar(&o.Advert, "advert", 100*time.Millisecond, "VRRP advertisement interval (a multiple of 10ms)")
	fs.BoolVar(&o.Verbose, "v", false, "print every fault as it is injected, and the agents' warnings on a violation")
	fs.BoolVar(&o.KeepLogs, "keep-logs", false, "keep the daemons' logs in a directory under $TMPDIR also when the run has no violation (a failed run always keeps them)")
	fs.StringVar(&o.Bin, "vipstack", "", "vipstack binary to run (default: build ./cmd/vipstack)")
	fs.BoolVar(&o.K8s, "k8s", false, "drive Kubernetes agents (a real kube-apiserver, the controller, one agent per node) instead of `vipstack node`")
	fs.StringVar(&o.Prefix, "prefix", "", "network namespace name prefix (default vx; ck with -k8s, vm with -mixed)")
	fs.BoolVar(&o.Mixed, "mixed", false, "drive keepalived 2.2.7 and vipstack nodes in the same VRRP groups (VRRPv2 IPv4, VRRPv3 IPv4 and IPv6): a migration's midpoint")
	fs.BoolVar(&o.FRR, "frr", false, "with -mixed: FRR 8.4's vrrpd on every third node (keepalived, vipstack, FRR in turn) in the same groups")
	fs.BoolVar(&o.BGP, "bgp", false, "drive `vipstack node`s each on its own subnet announcing the API and Ingress VIPs by BGP (BFD 100 ms x 3) to FRR 8.4, which routes them by ECMP")
	fs.StringVar(&o.Router, "router", "frr", "with -bgp: the router, frr (FRR 8.4: zebra, bfdd, bgpd) or bird (BIRD 2)")
	fs.StringVar(&o.Family, "family", "4", "with -bgp: the VIPs' family, 4, 6 or both (IPv6: fd00:ff::5 and ::7 over a second session per node)")
	fs.IntVar(&o.Services, "services", 6, "with -k8s: LoadBalancer Services, one VIP each (1..40)")
	markdown := fs.String("markdown", "", "write the results into the chaos block (chaos-k8s with -k8s, chaos-mixed with -mixed, chaos-mixed-frr with -mixed -frr, chaos-bgp with -bgp) of this Markdown `file` (docs/benchmarks.md)")
	fs.DurationVar(&o.MachineStall, "machine-stall", 250*time.Millisecond, "a pause of the sampler (from a sample's end to the next one's start; it asks every 10 ms at nice -10) longer than this is taken as a stall of the whole machine: every node stalled over it (reported; 0: off)")
	kinds := fs.String("kinds", "", "only these fault kinds, with weights: e.g. \"cut=1,stall=2\" (default: every kind, see internal/chaos DefaultWeights)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "chaos: unexpected arguments %q\n", fs.Args())
		return 2
	}
	nodesSet := false
	fs.Visit(func(f *flag.Flag) { nodesSet = nodesSet || f.Name == "nodes" })
	if o.BGP && !nodesSet {
		o.Nodes = 3
	}
	switch {
	case o.K8s && o.Mixed, o.BGP && (o.K8s || o.Mixed):
		fmt.Fprintf(stderr, "chaos: -k8s, -mixed and -bgp: want one of them\n")
		return 2
	case o.BGP && (o.Nodes < 3 || o.Nodes > 8):
		fmt.Fprintf(stderr, "chaos: -bgp -nodes %d: want 3..8 masters, each on its own subnet\n", o.Nodes)
		return 2
	case o.Router != "frr" && o.Router != "bird":
		fmt.Fprintf(stderr, "chaos: -router %q: want frr or bird\n", o.Router)
		return 2
	case o.Router != "frr" && !o.BGP:
		fmt.Fprintf(stderr, "chaos: -router %s: the router of -bgp: want -bgp with it\n", o.Router)
		return 2
	case o.Family != "4" && o.Family != "6" && o.Family != "both":
		fmt.Fprintf(stderr, "chaos: -family %q: want 4, 6 or both\n", o.Family)
		return 2
	case o.Family != "4" && !o.BGP:
		fmt.Fprintf(stderr, "chaos: -family %s: the VIPs' family of -bgp: want -bgp with it\n", o.Family)
		return 2
	case o.FRR && !o.Mixed:
		fmt.Fprintf(stderr, "chaos: -frr adds FRR nodes to a mixed cluster: want -mixed with it\n")
		return 2
	case o.Faults < 1 || o.Faults > 100000:
		fmt.Fprintf(stderr, "chaos: -faults %d: want 1..100000\n", o.Faults)
		return 2
	case !o.BGP && (o.Nodes < 5 || o.Nodes > 20):
		fmt.Fprintf(stderr, "chaos: -nodes %d: want 5..20 (3 masters and at least 2 workers)\n", o.Nodes)
		return 2
	case o.K8s && (o.Services < 1 || o.Services > 40):
		fmt.Fprintf(stderr, "chaos: -services %d: want 1..40 (the lab's pool holds 40 addresses)\n", o.Services)
		return 2
	case o.Advert < 10*time.Millisecond || o.Advert%(10*time.Millisecond) != 0 || o.Advert > 10*time.Second:
		fmt.Fprintf(stderr, "chaos: -advert %v: want a multiple of 10ms from 10ms to 10s\n", o.Advert)
		return 2
	}
	if *kinds != "" {
		o.Weights = map[chaos.Kind]int{}
		for _, kv := range strings.Split(*kinds, ",") {
			k, v, ok := strings.Cut(kv, "=")
			n, err := strconv.Atoi(v)
			if !ok || err != nil || n < 0 {
				fmt.Fprintf(stderr, "chaos: -kinds %q: %q is not KIND=WEIGHT (kinds: %v)\n", *kinds, kv, chaos.AllKinds)
				return 2
			}
			o.Weights[chaos.Kind(k)] = n
		}
	}
	if o.Verbose {
		o.Log = stdout
	}
	o.Seed = uint64(*seed)
	if *seed == 0 {
		o.Seed = uint64(time.Now().UnixNano()%1_000_000_000) + 1
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "chaos: needs root: it builds network namespaces (try: sudo go run ./bench/chaos)")
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigc)
	go func() {
		select {
		case s := <-sigc:
			fmt.Fprintf(stderr, "chaos: %v: undoing the faults and removing the cluster\n", s)
			cancel()
		case <-ctx.Done():
		}
	}()
	if o.Bin == "" {
		dir, err := os.MkdirTemp("", "vipstack-chaos-bin-")
		if err != nil {
			fmt.Fprintf(stderr, "chaos: %v\n", err)
			return 1
		}
		defer os.RemoveAll(dir)
		fmt.Fprintf(stdout, "building vipstack...\n")
		if o.Bin, err = peers.BuildVipstack(dir); err != nil {
			fmt.Fprintf(stderr, "chaos: %v\n", err)
			return 1
		}
	}
	factArgs := args
	if *seed == 0 {
		factArgs = append(slices.Clone(args), "-seed", strconv.FormatUint(o.Seed, 10))
	}
	facts := benchdoc.Collect("./bench/chaos", factArgs)
	res, err := Run(ctx, o, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "chaos: %v\n", err)
		return 1
	}
	if *markdown != "" {
		block := "chaos"
		switch {
		case o.K8s:
			block = "chaos-k8s"
		case o.Mixed && o.FRR:
			block = "chaos-mixed-frr"
		case o.Mixed:
			block = "chaos-mixed"
		case o.BGP:
			block = "chaos-bgp"
		}
		if err := benchdoc.Write(*markdown, block, facts, summary(o, res.Config, res, res.Elapsed)); err != nil {
			fmt.Fprintf(stderr, "chaos: -markdown: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "wrote the results into %s\n", *markdown)
	}
	if !res.OK() {
		return 1
	}
	return 0
}

// mode is what a run drives: `vipstack node` processes (demoMode, or
// bgpMode announcing by BGP), Kubernetes agents (k8sMode) or a mixed
// cluster (mixedMode). Node indices are the checker's (cfg.Nodes).
type mode interface {
	// name describes the cluster for the report.
	name() string
	// free reports whether node i can take a fault of kind k now (its
	// role, its processes).
	free(i int, k chaos.Kind) bool
	// guarded reports whether node i is one of the nodes of which the
	// runner keeps one out of disruptive faults (every VIP keeps an
	// eligible node).
	guarded(i int) bool
	// fault returns what starts and what ends fault f on node i (-1 for a
	// cluster-wide fault); end is nil for a fault without duration.
	fault(ctx context.Context, f chaos.Fault, i int) (begin, end func() error, err error)
	// sample reads every node, by checker index.
	sample() ([]chaos.NodeSample, error)
	// slowest describes the slowest reads, for the report.
	slowest() string
	// names maps the VIPs to what they are, for the report.
	names() map[netip.Addr]string
	// check returns problems the samples cannot show (a process that
	// died on its own), at the end of the run.
	check() []string
	// judge returns the violations of what the mode samples beside the
	// nodes (Kubernetes: the Services' status), and what it sampled.
	judge(cfg chaos.Config, windows []chaos.Window) (sampled string, vs []chaos.Violation, err error)
	// keepLogs copies the logs out of the cluster's work directory.
	keepLogs() (string, error)
	close()
}

// runner is the state of one run.
type runner struct {
	o       options
	m       mode
	cfg     chaos.Config
	out     io.Writer
	netem   bool
	guarded int // nodes m.guarded

	// clusterMu keeps cluster-wide faults (but reloads) from overlapping
	// when one takes longer than the schedule planned (a slow restart).
	clusterMu sync.Mutex

	mu        sync.Mutex
	busy      []time.Time // per chaos node: busy until (zero: free)
	disrupted []bool      // per chaos node: a disruptive fault is under way
	// rejoining: per chaos node, until when it may still be on its way
	// back after a fault that let the router drop its route (Anycast:
	// Config.Rejoin); the guard counts it as disrupted meanwhile, unless
	// the last sample shows it routed again, so that one guarded node
	// stays eligible and (b) keeps applying.
	rejoining []time.Time
	windows   []chaos.Window
	injected  map[chaos.Kind]int
	skipped   []string
	failed    []string
	last      *chaos.Sample
	undo      map[int]func() error // per chaos node (-Seq for cluster-wide faults): what ends the fault under way
}

// Run builds the cluster, runs the schedule, checks the samples and prints
// the report to out. The cluster is removed on every way out.
func Run(ctx context.Context, o options, out io.Writer) (res result, err error) {
	var (
		m       mode
		cfg     chaos.Config
		roles   []cluster.Role
		netem   bool
		weights map[chaos.Kind]int
	)
	switch {
	case o.K8s:
		if o.Prefix == "" {
			o.Prefix = "ck"
		}
		weights = chaos.AgentWeights()
		m, cfg, roles, netem, err = startK8s(ctx, o, out)
	case o.Mixed:
		if o.Prefix == "" {
			o.Prefix = "vm"
		}
		weights = chaos.MixedWeights()
		m, cfg, roles, netem, err = startMixed(ctx, o, out)
	case o.BGP:
		if o.Prefix == "" {
			o.Prefix = "vg"
		}
		weights = chaos.BGPWeights()
		m, cfg, roles, netem, err = startBGP(ctx, o, out)
	default:
		if o.Prefix == "" {
			o.Prefix = "vx"
		}
		weights = chaos.DefaultWeights()
		m, cfg, roles, netem, err = startDemo(ctx, o, out)
	}
	if err != nil {
		return res, err
	}
	defer m.close()
	r := &runner{o: o, m: m, cfg: cfg, out: out, netem: netem, injected: map[chaos.Kind]int{}, undo: map[int]func() error{},
		busy: make([]time.Time, len(cfg.Nodes)), disrupted: make([]bool, len(cfg.Nodes)), rejoining: make([]time.Time, len(cfg.Nodes))}
	defer func() {
		if uerr := r.undoAll(); uerr != nil {
			err = errors.Join(err, uerr)
		}
	}()
	for i := range cfg.Nodes {
		if m.guarded(i) {
			r.guarded++
		}
	}
	if o.Weights != nil {
		weights = maps.Clone(o.Weights) // the caller's stays as it is
	}
	how := "tc netem"
	if !r.netem {
		weights[chaos.Delay] = 0
		how = "nftables drops (this kernel has no sch_netem: no delay faults)"
		if _, err := exec.LookPath("nft"); err != nil {
			weights[chaos.Loss], weights[chaos.HeavyLoss] = 0, 0
			how = "none: the kernel has no sch_netem and nft is not installed (no loss or delay faults)"
		}
	}
	fmt.Fprintf(out, "packet loss and delay: %s\n", how)
	services := len(cfg.VIPs) // VIPs that are no spare: HolderOf and the Services' faults name them
	for _, sp := range cfg.SpareOf {
		if sp >= 0 {
			services--
		}
	}
	sched, err := chaos.Generate(chaos.GenOptions{Seed: o.Seed, Faults: o.Faults, Roles: roles, VIPs: services, Weights: weights})
	if err != nil {
		return res, err
	}
	fmt.Fprintf(out, "schedule of %d faults over %.0f s\n", len(sched), chaos.End(sched).Seconds())

	var samples []chaos.Sample
	var sampleErr error
	var slowest time.Duration // the longest Sample call
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		// The observer must not be starved by the machine's other work (or
		// by the cluster it watches): its thread runs at nice -10. The node
		// agents keep the default priority.
		runtime.LockOSThread()
		if err := unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), -10); err != nil {
			fmt.Fprintf(out, "sampler: cannot raise its priority (%v); its timing may suffer under load\n", err)
		}
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			t0 := time.Now()
			nodes, err := m.sample()
			at := time.Now()
			slowest = max(slowest, at.Sub(t0))
			if err != nil {
				sampleErr = err
				return
			}
			samples = append(samples, chaos.Sample{At: at, Nodes: nodes, Began: t0})
			r.mu.Lock()
			r.last = &samples[len(samples)-1]
			r.mu.Unlock()
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
		}
	}()

	start := time.Now()
	loadStart := procfs.LoadAvg()
	var wg sync.WaitGroup
	for _, f := range sched {
		wait := time.Until(start.Add(f.At))
		if wait > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.inject(ctx, f)
		}()
	}
	wg.Wait()
	// A last stretch without faults: everything must settle.
	select {
	case <-ctx.Done():
	case <-time.After(3 * time.Second):
	}
	close(stopSampling)
	<-sampled
	if sampleErr != nil {
		return res, fmt.Errorf("sampling: %w", sampleErr)
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	cfg.MachineStall = o.MachineStall
	rep, err := chaos.Check(cfg, r.windows, samples)
	if err != nil {
		return res, err
	}
	sampledToo, more, err := m.judge(cfg, r.windows)
	if err != nil {
		return res, err
	}
	rep.Violations = append(rep.Violations, more...)
	sort.SliceStable(rep.Violations, func(i, j int) bool { return rep.Violations[i].At.Before(rep.Violations[j].At) })
	res = result{Mode: m.name(), Report: rep, Injected: r.injected, Skipped: r.skipped, Failed: append(r.failed, m.check()...),
		Config: cfg, Elapsed: time.Since(start), Sampled: sampledToo}
	names := m.names()
	printReport(out, o, cfg, res, time.Since(start), r.netem, names)
	fmt.Fprintf(out, "sampling: the slowest sample took %v (%s)\n", slowest.Round(time.Millisecond), m.slowest())
	if sampledToo != "" {
		fmt.Fprintf(out, "sampling: %s\n", sampledToo)
	}
	fmt.Fprintf(out, "machine load: %s at the start, %s at the end (1, 5, 15 min; %d CPUs)\n", loadStart, procfs.LoadAvg(), runtime.NumCPU())
	if !res.OK() {
		for i, v := range rep.Violations {
			if i == 5 {
				fmt.Fprintf(out, "(timelines of the first 5 violations only)\n")
				break
			}
			fmt.Fprintf(out, "--- timeline around the %s at %s (VIP index: %s):\n", v.Kind, v.At.Format("15:04:05.000"), vipLegend(cfg, names))
			lines := chaos.Timeline(cfg, r.windows, samples, v.At.Add(-3*time.Second), v.At.Add(v.For+500*time.Millisecond))
			if len(lines) > 60 {
				lines = append(lines[:30], append([]string{"..."}, lines[len(lines)-30:]...)...)
			}
			for _, l := range lines {
				fmt.Fprintf(out, "  %s\n", l)
			}
		}
	}
	if !res.OK() || o.KeepLogs {
		if dir, err := m.keepLogs(); err == nil {
			fmt.Fprintf(out, "logs kept in %s\n", dir)
		}
	}
	return res, nil
}

// pick resolves the fault's target: the holder of HolderOf if free, else
// the planned node if free, else the next free node the kind allows. It
// marks the node busy. -1: no node can take it now.
func (r *runner) pick(f chaos.Fault, now time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	free := func(n int) bool {
		if r.busy[n].After(now) || !r.m.free(n, f.Kind) {
			return false
		}
		if f.Kind.Disruptive() && r.m.guarded(n) {
			// Keep one guarded node (a master) out of disruptive faults:
			// the VIPs only they hold need an eligible node.
			hit := 0
			for i, d := range r.disrupted {
				if (d || (r.rejoining[i].After(now) && !r.routedAll(i))) && r.m.guarded(i) {
					hit++
				}
			}
			if hit+1 >= r.guarded {
				return false
			}
		}
		return true
	}
	n := -1
	if f.HolderOf >= 0 && r.last != nil {
		var holders []int
		for i, ns := range r.last.Nodes {
			if slices.Contains(ns.Holds, r.cfg.VIPs[f.HolderOf]) {
				holders = append(holders, i)
			}
		}
		if len(holders) == 1 && free(holders[0]) {
			n = holders[0]
		}
	}
	if n < 0 && f.Node >= 0 && free(f.Node) {
		n = f.Node
	}
	for k := 1; n < 0 && k < len(r.cfg.Nodes); k++ {
		if c := (max(f.Node, 0) + k) % len(r.cfg.Nodes); free(c) {
			n = c
		}
	}
	if n >= 0 {
		r.busy[n] = now.Add(f.Busy() + time.Minute) // until the fault ends; set properly then
		r.disrupted[n] = f.Kind.Disruptive()
	}
	return n
}

// inject runs one fault to its end and records its window.
func (r *runner) inject(ctx context.Context, f chaos.Fault) {
	if f.Kind.ClusterWide() && f.Kind != chaos.Reload {
		r.clusterMu.Lock()
		defer r.clusterMu.Unlock()
	}
	n, key := -1, -f.Seq
	if !f.Kind.ClusterWide() {
		// A retargeted fault may have taken the node the schedule planned
		// for this one: wait (bounded) for a free node rather than skip it.
		n = r.pick(f, time.Now())
		for deadline := time.Now().Add(15 * time.Second); n < 0 && time.Now().Before(deadline) && ctx.Err() == nil; n = r.pick(f, time.Now()) {
			time.Sleep(50 * time.Millisecond)
		}
		if n < 0 {
			r.mu.Lock()
			r.skipped = append(r.skipped, f.String()+": no free node for 15 s")
			r.mu.Unlock()
			return
		}
		key = n
	}
	begin, end, err := r.m.fault(ctx, f, n)
	if err != nil {
		r.record(chaos.Window{Fault: f, Node: n, Start: time.Now(), End: time.Now()}, err)
		r.release(n, f)
		return
	}
	if r.o.Verbose {
		target := "the cluster"
		if n >= 0 {
			target = r.cfg.Nodes[n]
		}
		fmt.Fprintf(r.out, "%s  %s -> %s\n", time.Now().Format("15:04:05.000"), f, target)
	}
	at := time.Now()
	if err := begin(); err != nil {
		r.record(chaos.Window{Fault: f, Node: n, Start: at, End: time.Now()}, err)
		r.release(n, f)
		return
	}
	var began time.Time
	if f.Kind.OnNetwork() {
		// A link change holds the kernel's lock for a few hundred
		// milliseconds at times: the fault took effect somewhere before
		// the command returned (chaos.Window.Began).
		began = time.Now()
	}
	if end == nil {
		r.record(chaos.Window{Fault: f, Node: n, Start: at, End: at}, nil)
		r.release(n, f)
		return
	}
	r.mu.Lock()
	r.undo[key] = end
	r.mu.Unlock()
	if f.For > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(f.For):
		}
	}
	r.mu.Lock()
	delete(r.undo, key)
	r.mu.Unlock()
	// The window ends when the undoing begins (a woken node counts as
	// awake from SIGCONT on); an engine kill ends when a new engine runs.
	w := chaos.Window{Fault: f, Node: n, Start: at, End: time.Now(), Began: began}
	err = end()
	if f.Kind == chaos.KillEngine {
		w.End = time.Now()
	}
	if f.Kind.OnNetwork() {
		w.Ended = time.Now()
	}
	r.record(w, err)
	r.release(n, f)
}

// routedAll reports whether the last sample shows node n routed every VIP
// it may hold (Anycast). Called with r.mu held.
func (r *runner) routedAll(n int) bool {
	if r.last == nil {
		return false
	}
	for vi, v := range r.cfg.VIPs {
		if slices.Contains(r.cfg.Allowed[vi], n) && !slices.Contains(r.last.Nodes[n].Routed, v) {
			return false
		}
	}
	return true
}

// release frees node n after the fault's cool-down.
func (r *runner) release(n int, f chaos.Fault) {
	if n < 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.busy[n] = time.Now().Add(f.Busy() - f.For)
	r.disrupted[n] = false
	if r.cfg.Anycast && f.Kind.Unannounced() {
		r.rejoining[n] = time.Now().Add(r.cfg.Rejoin)
	}
}

func (r *runner) record(w chaos.Window, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.windows = append(r.windows, w)
	r.injected[w.Fault.Kind]++
	if err != nil {
		r.failed = append(r.failed, fmt.Sprintf("%s: %v", w.Fault, err))
	}
}

// undoAll ends the faults still under way (an interrupted run).
func (r *runner) undoAll() error {
	r.mu.Lock()
	undo := r.undo
	r.undo = map[int]func() error{}
	r.mu.Unlock()
	var errs []error
	for _, f := range undo {
		errs = append(errs, f())
	}
	return errors.Join(errs...)
}

// waitFor polls cond every 10 ms until it holds, ctx ends or d passes.
func waitFor(ctx context.Context, d time.Duration, cond func() bool, msg string) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if cond() {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("%s", msg)
}
