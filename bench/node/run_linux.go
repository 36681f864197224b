package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/vipstack/vipstack/internal/benchdoc"
	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/node"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/procfs"
	"github.com/vipstack/vipstack/internal/render"
	"github.com/vipstack/vipstack/internal/testnet"
)

const (
	readyLimit = 90 * time.Second // a daemon's start until every check passes
	trialLimit = 30 * time.Second // a reload trial
	pollEvery  = 5 * time.Millisecond
	// trialGap (plus up to 1 s at random, so that writes do not lock
	// onto the phase of the nodes' 1 s watch ticker) follows each trial;
	// the watcher's own reload of a SIGHUP trial's file is done by then.
	trialGap = 2 * time.Second
	apiInst  = clusterName + "_API"
	ingInst  = clusterName + "_INGRESS"
	// Effective priorities of master-0 with every check passing (cluster
	// plan: API 40 + 20 + 5, Ingress 20 + 50).
	wantAPIPrio = 65
	wantIngPrio = 70
)

type options struct {
	prefix                  string
	settle, window, timeout time.Duration
	samples, rounds, trials int
	v, keep                 bool
	bin, coredns            string
	markdown                string
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.DurationVar(&o.settle, "settle", 15*time.Second, "time at rest after every check passes, before measuring")
	fs.DurationVar(&o.window, "window", 30*time.Second, "measurement window for CPU time and RSS samples")
	fs.IntVar(&o.samples, "samples", 7, "RSS samples per window")
	fs.IntVar(&o.rounds, "rounds", 1, "rounds of (upstream trio, vipstack node) on master-0")
	fs.IntVar(&o.trials, "trials", 5, "reload trials per change and trigger (the median is reported)")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "bound on the whole run, builds included")
	fs.BoolVar(&o.v, "v", false, "narrate every step")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (configurations, cluster file) and print its path")
	fs.StringVar(&o.bin, "vipstack", "", "vipstack binary (default: build ./cmd/vipstack)")
	fs.StringVar(&o.prefix, "prefix", "vsP", "prefix of the network namespaces' names (give a run beside another its own)")
	fs.StringVar(&o.markdown, "markdown", "", "write the results into the node block of this Markdown `file` (docs/benchmarks.md)")
	fs.StringVar(&o.coredns, "coredns", "", "CoreDNS binary (default: build github.com/coredns/coredns at go.mod's version)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || o.settle < 0 || o.window < time.Second || o.samples < 1 || o.rounds < 1 || o.trials < 1 {
		fmt.Fprintln(stderr, "node: want no arguments, -settle >= 0, -window >= 1s, -samples, -rounds and -trials >= 1")
		return 2
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "node: needs root (network namespaces, VRRP): sudo go run ./bench/node")
		return 2
	}
	for _, tool := range []string{"ip", "keepalived", "haproxy", "/usr/bin/curl", "/usr/bin/timeout"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Fprintf(stderr, "node: %s is not installed (the rendered keepalived.conf runs curl under timeout)\n", tool)
			return 2
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	work, err := os.MkdirTemp("", "vsP-node-bench-")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	b := &bench{o: o, out: stdout, work: work, facts: benchdoc.Collect("./bench/node", args)}
	defer func() {
		if o.keep {
			fmt.Fprintf(stdout, "work directory kept: %s\n", work)
			return
		}
		os.RemoveAll(work)
	}()
	defer b.cleanup()
	if err := b.main(ctx); err != nil {
		fmt.Fprintf(stderr, "node: %v\n", err)
		if !errors.Is(err, context.Canceled) {
			b.dumpLogs(stderr)
		}
		return 1
	}
	return 0
}

type bench struct {
	facts benchdoc.Facts
	o     options
	out   io.Writer
	work  string
	cfg   string // the cluster file
	// peerBin is the copy of vipstack master-1 and master-2 run.
	peerBin string
	spec    clusterSpec

	topo    *testnet.Topology
	m       []*testnet.Host // masters
	nl      []*netlink.Handle
	links   []netlink.Link
	servers []*httptest.Server
	// upstream is the stand-in upstream resolver.
	upstream *dns.Server
	agents   []*peers.Node // vipstack node per master; agents[0] is the last one started
	trio     []daemon      // master-0's upstream daemons, the last ones started

	once sync.Once
}

// daemon is one program master-0 runs, found in its process group by
// command name.
type daemon struct {
	Name, Comm string
	Node       *peers.Node
}

// phaseState is who holds the VIPs once a daemon set is ready.
type phaseState struct {
	API, Ingress string
}

func (b *bench) say(format string, a ...any) {
	if b.o.v {
		fmt.Fprintf(b.out, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, a...))
	}
}

func (b *bench) main(ctx context.Context) error {
	loadStart := procfs.LoadAvg()
	var err error
	if b.o.bin == "" {
		b.say("building ./cmd/vipstack")
		if b.o.bin, err = peers.BuildVipstack(b.work); err != nil {
			return err
		}
	}
	if b.o.coredns == "" {
		b.say("building github.com/coredns/coredns (the first build takes minutes)")
		if b.o.coredns, err = peers.BuildReleaseCoreDNS(ctx, b.work); err != nil {
			return err
		}
	}
	if err := b.setup(); err != nil {
		return err
	}

	// Part 1: master-0 at rest, the trio and vipstack in turn.
	var vip, ka, hap, cdns usageAcc
	var states []string
	for r := 1; r <= b.o.rounds; r++ {
		b.say("round %d: upstream trio on master-0", r)
		us, st, err := b.rest(ctx, b.startTrio, b.trioPrios)
		if err != nil {
			return fmt.Errorf("round %d, upstream trio: %w", r, err)
		}
		ka.add(us[0])
		hap.add(us[1])
		cdns.add(us[2])
		states = append(states, fmt.Sprintf("trio: API VIP on %s", st.API))
		b.say("round %d: vipstack node on master-0", r)
		us, st, err = b.rest(ctx, b.startAgent, b.agentPrios)
		if err != nil {
			return fmt.Errorf("round %d, vipstack node: %w", r, err)
		}
		vip.add(us[0])
		states = append(states, fmt.Sprintf("vipstack: API VIP on %s", st.API))
	}

	// Part 2: reload latency with vipstack node on every master.
	rows, notes, err := b.reloads(ctx)
	if err != nil {
		return fmt.Errorf("reload trials: %w", err)
	}

	w := b.out
	fmt.Fprintf(w, "\nbench/node: %s; %d CPUs; Linux %s; load average at start %s, at end %s\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), firstLine("uname", "-r"), loadStart, procfs.LoadAvg())
	versions := fmt.Sprintf("%s; %s; %s (stock, every in-tree plugin); %s",
		firstLine("keepalived", "--version"), trimVersion(firstLine("haproxy", "-v")), firstLine(b.o.coredns, "-version"),
		"vipstack: "+firstLine(b.o.bin, "version"))
	rep := &benchdoc.Report{}
	rep.Para("%s", versions)
	rep.Para("3 masters (198.18.0.11-13) + a client on one bridge; API VIP %s, Ingress VIP %s; VRRPv2 unicast, advert 1 s; "+
		"stand-in API servers on every master, a stand-in router on master-0 only; master-1 and master-2 run vipstack node throughout.", apiVIP, ingressA)
	rep.Para("At rest on master-0: Ingress VIP held, effective priorities %d (API) and %d (Ingress): every check passes; %s; "+
		"settled %s after that, then measured over %s; %d round(s), the trio first in each:",
		wantAPIPrio, wantIngPrio, strings.Join(states, ", "), fmtSeconds(b.o.settle), fmtSeconds(b.o.window), b.o.rounds)
	restReport(rep, vip.usage("vipstack node"), []usage{ka.usage("keepalived"), hap.usage("haproxy -W"), cdns.usage("CoreDNS")})
	rep.Para("Reload: vipstack node on all 3 masters (--watch-interval 1s); the cluster file replaced by a rename at T0; "+
		"%d trial(s) per trigger, alternating; the client asks every master's DNS every %v:", b.o.trials, pollEvery)
	rep.Table(latencyTable(rows))
	rep.Para("(ms from T0; SIGHUP goes to every node right after the rename. keepalived + haproxy + CoreDNS have no single " +
		"equivalent: the files would be re-rendered and three daemons reloaded, so no upstream figure is printed)")
	var ns []string
	for _, n := range notes {
		ns = append(ns, "NOTE  "+n)
	}
	rep.List(ns)
	if err := rep.Text(w); err != nil {
		return err
	}
	if b.o.markdown != "" {
		if err := benchdoc.Write(b.o.markdown, "node", b.facts, rep); err != nil {
			return fmt.Errorf("-markdown: %w", err)
		}
		fmt.Fprintf(w, "\nwrote the results into %s\n", b.o.markdown)
	}
	return nil
}

// usageAcc gathers one daemon's usage over the rounds.
type usageAcc struct {
	u       usage
	perProc [][]float64
}

func (a *usageAcc) add(u usage) {
	a.u.Procs = u.Procs
	a.u.Window = u.Window
	a.u.RSS = append(a.u.RSS, u.RSS...)
	a.u.Anon = append(a.u.Anon, u.Anon...)
	a.u.File = append(a.u.File, u.File...)
	a.u.PSS = append(a.u.PSS, u.PSS...)
	a.u.CPU = append(a.u.CPU, u.CPU...)
	for i, p := range u.PerProc {
		if i >= len(a.perProc) {
			a.perProc = append(a.perProc, nil)
		}
		a.perProc[i] = append(a.perProc[i], p)
	}
}

func (a *usageAcc) usage(name string) usage {
	u := a.u
	u.Name = name
	u.PerProc = nil
	for _, p := range a.perProc {
		u.PerProc = append(u.PerProc, median(p))
	}
	return u
}

// setup builds the topology, writes the cluster file and master-0's
// rendered files, starts the stand-ins and vipstack node on master-1 and
// master-2.
func (b *bench) setup() error {
	topo, err := testnet.Build(testnet.Options{Hosts: masters, Client: true, Prefix: b.o.prefix})
	if err != nil {
		return err
	}
	b.topo, b.m = topo, topo.Hosts
	b.say("topology %s: %d masters and a client", topo.Tag, masters)
	for _, h := range b.m {
		ns, err := netns.GetFromName(h.Name)
		if err != nil {
			return fmt.Errorf("open netns %s: %w", h.Name, err)
		}
		hd, err := netlink.NewHandleAt(ns)
		ns.Close()
		if err != nil {
			return fmt.Errorf("netlink in %s: %w", h.Name, err)
		}
		b.nl = append(b.nl, hd)
		l, err := hd.LinkByName(h.Link)
		if err != nil {
			return fmt.Errorf("%s in %s: %w", h.Link, h.Name, err)
		}
		b.links = append(b.links, l)
	}
	b.cfg = filepath.Join(b.work, "cluster.yaml")
	b.spec = clusterSpec{Ingress: netip.MustParseAddr(ingressA)}
	if err := os.WriteFile(b.cfg, b.spec.YAML(), 0o644); err != nil {
		return err
	}
	c, err := cluster.Load(b.cfg)
	if err != nil {
		return err
	}
	files, err := render.Files(c, "master-0", render.Options{Interface: b.m[0].Link})
	if err != nil {
		return err
	}
	if _, err := render.WriteDir(filepath.Join(b.work, "render"), files, false); err != nil {
		return err
	}
	for i, h := range b.m {
		if err := b.serve(h, ":6443", true, fmt.Sprintf("ok from master-%d", i)); err != nil {
			return err
		}
	}
	if err := b.serve(b.m[0], ":1936", false, "router ready"); err != nil {
		return err
	}
	if err := b.serveUpstream(); err != nil {
		return err
	}
	// master-1 and master-2 run a copy of the binary, so that master-0's
	// processes share no page-cache pages with theirs (PSS).
	b.peerBin = filepath.Join(b.work, "vipstack-peer")
	if err := copyFile(b.o.bin, b.peerBin); err != nil {
		return err
	}
	b.agents = make([]*peers.Node, masters)
	for i := 1; i < masters; i++ {
		n, err := b.startVipstack(i)
		if err != nil {
			return err
		}
		b.agents[i] = n
	}
	return nil
}

// serve starts a stand-in HTTP(S) server on addr in h's namespace.
func (b *bench) serve(h *testnet.Host, addr string, tlsOn bool, body string) error {
	var ln net.Listener
	if err := h.Do(func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		return fmt.Errorf("stand-in on %s %s: %w", h.Name, addr, err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, body)
		}),
		// Health checks that close right after the TLS handshake are
		// expected, not worth a line each.
		ErrorLog: log.New(io.Discard, "", 0),
	}}
	if tlsOn {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	b.servers = append(b.servers, srv)
	return nil
}

// serveUpstream runs the cluster's upstream resolver on the client (a
// second address, 198.18.0.53): it answers NXDOMAIN to everything, at
// once, as a live resolver does for the names the cluster DNS forwards.
// Without it, forwarded queries would wait out the forward plugin's
// timeouts and hold up vipstack's DNS restarts.
func (b *bench) serveUpstream() error {
	c := b.topo.Client
	if _, err := c.Run("ip", "addr", "add", upstreamDNS+"/24", "dev", c.Link); err != nil {
		return err
	}
	var pc net.PacketConn
	if err := c.Do(func() error {
		var err error
		pc, err = net.ListenPacket("udp", netip.AddrPortFrom(netip.MustParseAddr(upstreamDNS), 53).String())
		return err
	}); err != nil {
		return fmt.Errorf("stand-in upstream DNS: %w", err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeNameError)
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	b.upstream = srv
	return nil
}

// cleanup kills every process started in the topology (by process group),
// deletes the namespaces and stops the stand-ins. Safe to call twice.
func (b *bench) cleanup() {
	b.once.Do(func() {
		if b.o.keep {
			b.saveLogs()
		}
		if b.topo != nil {
			b.topo.Close()
		}
		for _, hd := range b.nl {
			hd.Close()
		}
		for _, s := range b.servers {
			s.Close()
		}
		if b.upstream != nil {
			_ = b.upstream.Shutdown()
		}
	})
}

// dumpLogs prints the last lines of every running daemon's output.
func (b *bench) dumpLogs(w io.Writer) {
	for i, n := range b.agents {
		if n != nil {
			fmt.Fprintf(w, "---- vipstack node on master-%d, last lines:\n%s\n", i, tail(n.Log(), 20))
		}
	}
	for _, d := range b.trio {
		fmt.Fprintf(w, "---- %s on master-0, last lines:\n%s\n", d.Name, tail(d.Node.Log(), 20))
	}
}

// saveLogs writes the last daemons' output to the work directory.
func (b *bench) saveLogs() {
	for i, n := range b.agents {
		if n != nil {
			_ = os.WriteFile(filepath.Join(b.work, fmt.Sprintf("vipstack-master-%d.log", i)), []byte(n.Log()), 0o644)
		}
	}
	for _, d := range b.trio {
		_ = os.WriteFile(filepath.Join(b.work, d.Comm+"-master-0.log"), []byte(d.Node.Log()), 0o644)
	}
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

func (b *bench) startVipstack(i int) (*peers.Node, error) {
	name := fmt.Sprintf("master-%d", i)
	h := b.m[i]
	bin := b.o.bin
	if i > 0 {
		bin = b.peerBin
	}
	return peers.StartCmd(h, h.Command(bin, "node", "--config", b.cfg, "--node", name,
		"--state-dir", filepath.Join(b.work, "state-"+name)))
}

// startAgent runs vipstack node on master-0.
func (b *bench) startAgent() ([]daemon, error) {
	if err := procfs.EvictPageCache(b.o.bin); err != nil {
		return nil, err
	}
	n, err := b.startVipstack(0)
	if err != nil {
		return nil, err
	}
	b.agents[0] = n
	return []daemon{{Name: "vipstack node", Comm: commOf(b.o.bin), Node: n}}, nil
}

// commOf is the command name the kernel gives a process running path: its
// base name, cut to 15 bytes.
func commOf(path string) string {
	c := filepath.Base(path)
	return c[:min(len(c), 15)]
}

// startTrio runs the upstream daemons on master-0 with the rendered files,
// with the commands of the rendered static pods (render's keepalivedPod,
// haproxyPod, corednsPod), plus keepalived PID files of our own.
func (b *bench) startTrio() ([]daemon, error) {
	h := b.m[0]
	dir := filepath.Join(b.work, "render")
	f := func(rel string) string { return filepath.Join(dir, filepath.FromSlash(rel)) }
	cmds := []struct {
		name, comm string
		cmd        *exec.Cmd
	}{
		{"keepalived", "keepalived", h.Command("keepalived", "--dont-fork", "--vrrp", "--log-console", "--log-detail",
			"--use-file", f(render.KeepalivedConfPath),
			"-p", filepath.Join(b.work, "keepalived.pid"), "-r", filepath.Join(b.work, "keepalived-vrrp.pid"))},
		{"haproxy", "haproxy", h.Command("haproxy", "-W", "-db", "-f", f(render.HAProxyCfgPath))},
		{"CoreDNS", commOf(b.o.coredns), h.Command(b.o.coredns, "-conf", f(render.CorefilePath))},
	}
	b.trio = nil
	for _, c := range cmds {
		prog, err := exec.LookPath(c.cmd.Args[4]) // ip netns exec NS PROGRAM ...
		if err != nil {
			return b.trio, err
		}
		if err := procfs.EvictPageCache(prog); err != nil {
			return b.trio, err
		}
		n, err := peers.StartCmd(h, c.cmd)
		if err != nil {
			return b.trio, err
		}
		b.trio = append(b.trio, daemon{Name: c.name, Comm: c.comm, Node: n})
	}
	return b.trio, nil
}

// agentPrios reads master-0's effective priorities from vipstack status.
func (b *bench) agentPrios(_ []daemon) (map[string]int, error) {
	out, err := b.m[0].Command(b.o.bin, "status", "-o", "json").Output()
	if err != nil {
		return nil, fmt.Errorf("vipstack status: %w", err)
	}
	var s node.Status
	if err := json.Unmarshal(out, &s); err != nil {
		return nil, fmt.Errorf("vipstack status: %w", err)
	}
	p := map[string]int{}
	for _, in := range s.VRRP {
		p[in.Name] = in.Effective
	}
	return p, nil
}

// trioPrios reads master-0's effective priorities from keepalived's log.
func (b *bench) trioPrios(ds []daemon) (map[string]int, error) {
	return effectivePriorities(ds[0].Node.Log()), nil
}

// rest starts a daemon set on master-0, waits until it is ready and has
// settled, and measures it.
func (b *bench) rest(ctx context.Context, start func() ([]daemon, error),
	prios func([]daemon) (map[string]int, error)) ([]usage, phaseState, error) {
	ds, err := start()
	defer b.stop(ds)
	if err != nil {
		return nil, phaseState{}, err
	}
	st, err := b.waitReady(ctx, ds, prios, readyLimit)
	if err != nil {
		return nil, st, err
	}
	b.say("ready: API VIP on %s, Ingress VIP on %s; settling %v", st.API, st.Ingress, b.o.settle)
	if err := clock.Sleep(ctx, b.o.settle); err != nil {
		return nil, st, err
	}
	if after, err := b.waitReady(ctx, ds, prios, 0); err != nil || after != st {
		return nil, st, fmt.Errorf("not at rest after settling: %+v, was %+v (%v)", after, st, err)
	}
	us, err := b.measure(ctx, ds)
	if err != nil {
		return nil, st, err
	}
	if after, err := b.waitReady(ctx, ds, prios, 0); err != nil || after != st {
		return nil, st, fmt.Errorf("a VIP moved or a check failed during the window: %+v, was %+v (%v)", after, st, err)
	}
	return us, st, nil
}

// stop stops a daemon set: SIGTERM, then SIGKILL to its process group if
// it lingers.
func (b *bench) stop(ds []daemon) {
	for _, d := range ds {
		if err := d.Node.Term(); err != nil {
			b.say("%s: %v; killing its process group", d.Name, err)
			_ = d.Node.Kill()
		}
		if left := groupProcs(d.Node.Pid()); len(left) > 0 {
			_ = syscall.Kill(-d.Node.Pid(), syscall.SIGKILL)
		}
	}
}

// waitReady polls until master-0 holds the Ingress VIP alone, one master
// holds the API VIP, master-0's priorities show every check passing, the
// client gets /readyz through master-0's load balancer and master-0's DNS
// answers. limit 0 checks once.
func (b *bench) waitReady(ctx context.Context, ds []daemon, prios func([]daemon) (map[string]int, error), limit time.Duration) (phaseState, error) {
	deadline := time.Now().Add(limit)
	for {
		st, why := b.ready(ds, prios)
		if why == "" {
			return st, nil
		}
		if !time.Now().Before(deadline) {
			return st, errors.New(why)
		}
		if err := clock.Sleep(ctx, 250*time.Millisecond); err != nil {
			return st, err
		}
	}
}

func (b *bench) ready(ds []daemon, prios func([]daemon) (map[string]int, error)) (phaseState, string) {
	var st phaseState
	for _, d := range ds {
		if !d.Node.Alive() {
			return st, d.Name + " exited"
		}
	}
	api, ing := b.holders(netip.MustParseAddr(apiVIP)), b.holders(b.spec.Ingress)
	if len(api) != 1 {
		return st, fmt.Sprintf("API VIP held by %v, want one master", api)
	}
	if len(ing) != 1 || ing[0] != 0 {
		return st, fmt.Sprintf("Ingress VIP held by %v, want master-0 alone", ing)
	}
	st = phaseState{API: fmt.Sprintf("master-%d", api[0]), Ingress: "master-0"}
	p, err := prios(ds)
	if err != nil {
		return st, err.Error()
	}
	if p[apiInst] != wantAPIPrio || p[ingInst] != wantIngPrio {
		return st, fmt.Sprintf("master-0's effective priorities %v, want %s %d and %s %d", p, apiInst, wantAPIPrio, ingInst, wantIngPrio)
	}
	if err := b.lbReady(); err != nil {
		return st, "client through master-0's load balancer: " + err.Error()
	}
	got, err := b.ask(masterIP(0), "api."+zone+".")
	if err != nil || !slices.Contains(got, netip.MustParseAddr(apiVIP)) {
		return st, fmt.Sprintf("master-0's DNS: api.%s: %v %v", zone, got, err)
	}
	return st, ""
}

// holders lists the masters (by index) holding addr.
func (b *bench) holders(addr netip.Addr) []int {
	var out []int
	for i := range b.m {
		if b.has(i, addr) {
			out = append(out, i)
		}
	}
	return out
}

func (b *bench) has(i int, addr netip.Addr) bool {
	as, err := b.nl[i].AddrList(b.links[i], netlink.FAMILY_V4)
	if err != nil {
		return false
	}
	for _, a := range as {
		if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.Unmap() == addr {
			return true
		}
	}
	return false
}

// lbReady GETs /readyz from the client through master-0's :9445.
func (b *bench) lbReady() error {
	return b.topo.Client.Do(func() error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp",
			netip.AddrPortFrom(masterIP(0), 9445).String(), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return err
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(3 * time.Second))
		fmt.Fprintf(conn, "GET /readyz HTTP/1.0\r\n\r\n")
		body, err := io.ReadAll(conn)
		if !strings.Contains(string(body), "ok from master-") {
			return fmt.Errorf("answer %q (%v)", body, err)
		}
		return nil
	})
}

// ask sends one A query from the client to server's port 53.
func (b *bench) ask(server netip.Addr, name string) ([]netip.Addr, error) {
	var out []netip.Addr
	err := b.topo.Client.Do(func() error {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		c := &dns.Client{Timeout: time.Second}
		r, _, err := c.Exchange(m, netip.AddrPortFrom(server, 53).String())
		if err != nil {
			return err
		}
		out = answers(r)
		return nil
	})
	return out, err
}

func answers(r *dns.Msg) []netip.Addr {
	var out []netip.Addr
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			if ip, ok := netip.AddrFromSlice(a.A); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out
}

// measure samples the daemons' memory -samples times over -window and
// reads their CPU time at both ends.
func (b *bench) measure(ctx context.Context, ds []daemon) ([]usage, error) {
	pids := make([][]int, len(ds))
	t0 := make([]uint64, len(ds))
	for i, d := range ds {
		pids[i] = daemonProcs(d.Node.Pid(), d.Comm)
		if len(pids[i]) == 0 {
			return nil, fmt.Errorf("no %s process in process group %d", d.Comm, d.Node.Pid())
		}
		var err error
		if t0[i], err = cpuTicks(pids[i]); err != nil {
			return nil, fmt.Errorf("%s: %w", d.Name, err)
		}
	}
	b.say("measuring %v: %v", b.o.window, pids)
	us := make([]usage, len(ds))
	per := make([][][]float64, len(ds))
	for i, d := range ds {
		us[i] = usage{Name: d.Name, Procs: len(pids[i]), Window: b.o.window}
		per[i] = make([][]float64, len(pids[i]))
	}
	start := time.Now()
	for s := 1; s <= b.o.samples; s++ {
		if err := clock.Sleep(ctx, time.Until(start.Add(time.Duration(s)*b.o.window/time.Duration(b.o.samples)))); err != nil {
			return nil, err
		}
		for i, d := range ds {
			var sum [4]int64 // RSS, anon, file, PSS
			for j, pid := range pids[i] {
				var v [4]int64
				for k, f := range [][2]string{{"status", "VmRSS"}, {"status", "RssAnon"}, {"status", "RssFile"}, {"smaps_rollup", "Pss"}} {
					var err error
					if v[k], err = memKiB(pid, f[0], f[1]); err != nil {
						return nil, fmt.Errorf("%s: %w", d.Name, err)
					}
					sum[k] += v[k]
				}
				per[i][j] = append(per[i][j], float64(v[0])/1024)
				if s == b.o.samples {
					b.say("%s pid %d: RSS %d kB (anon %d, file %d), PSS %d kB", d.Name, pid, v[0], v[1], v[2], v[3])
				}
			}
			us[i].RSS = append(us[i].RSS, float64(sum[0])/1024)
			us[i].Anon = append(us[i].Anon, float64(sum[1])/1024)
			us[i].File = append(us[i].File, float64(sum[2])/1024)
			us[i].PSS = append(us[i].PSS, float64(sum[3])/1024)
		}
	}
	for i, d := range ds {
		t1, err := cpuTicks(pids[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Name, err)
		}
		if now := daemonProcs(d.Node.Pid(), d.Comm); !slices.Equal(now, pids[i]) {
			return nil, fmt.Errorf("%s's processes changed during the window: %v, then %v", d.Name, pids[i], now)
		}
		us[i].CPU = []float64{float64(t1-t0[i]) / clockTicks}
		for _, p := range per[i] {
			us[i].PerProc = append(us[i].PerProc, median(p))
		}
	}
	return us, nil
}

// reloads runs part 2 and returns its rows and notes.
func (b *bench) reloads(ctx context.Context) ([]latencyRow, []string, error) {
	ds, err := b.startAgent()
	defer b.stop(ds)
	if err != nil {
		return nil, nil, err
	}
	st, err := b.waitReady(ctx, ds, b.agentPrios, readyLimit)
	if err != nil {
		return nil, nil, err
	}
	b.say("reload trials: all masters run vipstack node; API VIP on %s", st.API)
	triggers := []string{"watch 1 s", "SIGHUP"}
	row := func(change, observed string) []latencyRow {
		var rs []latencyRow
		for _, t := range triggers {
			rs = append(rs, latencyRow{Change: change, Observed: observed, Trigger: t})
		}
		return rs
	}
	vipChange := "ingressVIPs .7 <-> .8"
	held := row(vipChange, "new VIP held")
	final := row(vipChange, "new VIP on master-0 alone, old gone")
	apps := row(vipChange, "*.apps answer, 3 masters")
	added := row("a worker added", "its name answers, 3 masters")
	var notes []string
	api := netip.MustParseAddr(apiVIP)
	for i := 0; i < b.o.trials; i++ {
		for k, trig := range triggers {
			hup := trig == "SIGHUP"
			old := b.spec.Ingress
			next := netip.MustParseAddr(ingressA)
			if old == next {
				next = netip.MustParseAddr(ingressB)
			}
			h, f, d, err := b.vipTrial(ctx, hup, old, next)
			if err != nil {
				return nil, nil, err
			}
			held[k].Times = append(held[k].Times, h)
			final[k].Times = append(final[k].Times, f)
			apps[k].Times = append(apps[k].Times, d)
			b.say("ingressVIPs %v -> %v (%s): held %v, final %v, DNS %v", old, next, trig, h, f, d)
			if hs := b.holders(api); len(hs) != 1 || fmt.Sprintf("master-%d", hs[0]) != st.API {
				notes = append(notes, fmt.Sprintf("the API VIP moved during ingressVIPs trial %d (%s): now on %v", i+1, trig, hs))
			}
			if err := clock.Sleep(ctx, trialGap+rand.N(time.Second)); err != nil {
				return nil, nil, err
			}

			before := [2][]int{b.holders(api), b.holders(b.spec.Ingress)}
			n, err := b.nodeTrial(ctx, hup)
			if err != nil {
				return nil, nil, err
			}
			added[k].Times = append(added[k].Times, n)
			b.say("%s added (%s): %v", b.spec.Workers[len(b.spec.Workers)-1].Name, trig, n)
			if after := [2][]int{b.holders(api), b.holders(b.spec.Ingress)}; !slices.Equal(after[0], before[0]) || !slices.Equal(after[1], before[1]) {
				notes = append(notes, fmt.Sprintf("a VIP moved when a worker was added (trial %d, %s): holders %v, then %v", i+1, trig, before, after))
			}
			if err := clock.Sleep(ctx, trialGap+rand.N(time.Second)); err != nil {
				return nil, nil, err
			}
		}
	}
	for _, n := range b.agents {
		if n != nil && strings.Contains(n.Log(), "cluster file rejected") {
			notes = append(notes, "a node rejected a cluster file: "+tail(n.Log(), 3))
		}
	}
	var rows []latencyRow
	for _, g := range [][]latencyRow{held, final, apps, added} {
		rows = append(rows, g...)
	}
	return rows, notes, nil
}

// apply replaces the cluster file with spec's (write a temporary file,
// rename it over the old one) and, with hup, sends SIGHUP to every node
// agent. It returns T0, the time of the rename.
func (b *bench) apply(spec clusterSpec, hup bool) (time.Time, error) {
	tmp := b.cfg + ".new"
	if err := os.WriteFile(tmp, spec.YAML(), 0o644); err != nil {
		return time.Time{}, err
	}
	if err := os.Rename(tmp, b.cfg); err != nil {
		return time.Time{}, err
	}
	t0 := time.Now()
	b.spec = spec
	if hup {
		for _, n := range b.agents {
			if err := n.Signal(syscall.SIGHUP); err != nil {
				return t0, err
			}
		}
	}
	return t0, nil
}

// vipTrial switches ingressVIPs from old to next and returns the times to
// the new VIP being held, to the final state and to every master's DNS
// answering *.apps with it (-1: not seen within trialLimit).
func (b *bench) vipTrial(ctx context.Context, hup bool, old, next netip.Addr) (held, final, dnsAll time.Duration, err error) {
	spec := b.spec
	spec.Ingress = next
	t0, err := b.apply(spec, hup)
	if err != nil {
		return 0, 0, 0, err
	}
	dnsc := make(chan time.Duration, 1)
	go func() { dnsc <- b.waitAnswers(ctx, t0, "bench.apps."+zone+".", next) }()
	held, final = -1, -1
	for deadline := t0.Add(trialLimit); time.Now().Before(deadline); {
		withNew, withOld := b.holders(next), b.holders(old)
		now := time.Since(t0)
		if held < 0 && len(withNew) > 0 {
			held = now
		}
		if len(withOld) == 0 && len(withNew) == 1 && withNew[0] == 0 {
			final = now
			break
		}
		if err := clock.Sleep(ctx, pollEvery); err != nil {
			return 0, 0, 0, err
		}
	}
	return held, final, <-dnsc, ctx.Err()
}

// nodeTrial adds a worker and returns the time until every master's DNS
// answers its name (-1: not within trialLimit).
func (b *bench) nodeTrial(ctx context.Context, hup bool) (time.Duration, error) {
	spec := b.spec
	k := len(spec.Workers)
	w := extraNode{Name: fmt.Sprintf("worker-%d", k), IP: netip.AddrFrom4([4]byte{198, 18, 0, byte(31 + k)})}
	spec.Workers = append(slices.Clone(spec.Workers), w)
	t0, err := b.apply(spec, hup)
	if err != nil {
		return 0, err
	}
	return b.waitAnswers(ctx, t0, w.Name+"."+zone+".", w.IP), ctx.Err()
}

// waitAnswers asks every master's DNS for name (A) from the client every
// pollEvery, without waiting for answers (a name not yet known is
// forwarded upstream, where nothing answers), and returns the time from t0
// until the last master first answered want, or -1 if one did not within
// trialLimit.
func (b *bench) waitAnswers(ctx context.Context, t0 time.Time, name string, want netip.Addr) time.Duration {
	deadline := t0.Add(trialLimit)
	conns := make([]net.Conn, masters)
	if err := b.topo.Client.Do(func() error {
		for i := range conns {
			c, err := net.Dial("udp", netip.AddrPortFrom(masterIP(i), 53).String())
			if err != nil {
				return err
			}
			conns[i] = c
		}
		return nil
	}); err != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return -1
	}
	var mu sync.Mutex
	seen := make([]time.Duration, masters)
	left := masters
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range conns {
		seen[i] = -1
		c.SetReadDeadline(deadline)
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1500)
			for {
				n, err := c.Read(buf)
				if err != nil {
					if errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) {
						return
					}
					continue // ICMP errors while a server restarts
				}
				r := new(dns.Msg)
				if r.Unpack(buf[:n]) != nil || !slices.Contains(answers(r), want) {
					continue
				}
				mu.Lock()
				if seen[i] < 0 {
					seen[i] = time.Since(t0)
					if left--; left == 0 {
						close(done)
					}
				}
				mu.Unlock()
				return
			}
		}()
	}
	tick := time.NewTicker(pollEvery)
	var id uint16
send:
	for time.Now().Before(deadline) {
		id++
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		m.Id = id
		q, _ := m.Pack()
		mu.Lock()
		for i, c := range conns {
			if seen[i] < 0 {
				c.Write(q)
			}
		}
		mu.Unlock()
		select {
		case <-done:
			break send
		case <-ctx.Done():
			break send
		case <-tick.C:
		}
	}
	tick.Stop()
	for _, c := range conns {
		c.Close()
	}
	wg.Wait()
	if slices.Contains(seen, -1) {
		return -1 // a master never answered
	}
	return slices.Max(seen)
}

// firstLine runs a command and returns the first line it prints.
func firstLine(name string, args ...string) string {
	out, _ := exec.Command(name, args...).CombinedOutput()
	l, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return l
}

// trimVersion cuts haproxy's version line before its URL.
func trimVersion(s string) string {
	s, _, _ = strings.Cut(s, " - ")
	return s
}
