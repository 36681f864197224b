package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/benchdoc"
	"github.com/vipstack/vipstack/internal/bgp"
	"github.com/vipstack/vipstack/internal/routedlab"
	"github.com/vipstack/vipstack/internal/syncbuf"
)

var validPrefix = regexp.MustCompile(`^[a-z][a-z0-9]{0,5}$`)

// options are a run's settings.
type options struct {
	Trials      int
	Routes      int
	BFDInterval time.Duration
	BFDMult     int
	Hold        time.Duration // the hold mode's hold timer (keepalive a third)
	Impls       []string
	Routers     []string // routerFRR, routerBIRD
	Modes       []string
	Parts       map[string]bool // crash, stop, scale
	Prefix      string          // namespace prefix
	Verbose     io.Writer
}

func (o options) validate() error {
	switch {
	case o.Trials < 1 || o.Trials > 51:
		return fmt.Errorf("-trials %d: want 1..51", o.Trials)
	case o.Routes < 1 || o.Routes > 60000:
		return fmt.Errorf("-routes %d: want 1..60000 (they are /32s in 198.19.0.0/16)", o.Routes)
	case o.BFDInterval < 10*time.Millisecond || o.BFDInterval > time.Second:
		return fmt.Errorf("-bfd-interval %v: want 10ms..1s", o.BFDInterval)
	case o.BFDMult < 2 || o.BFDMult > 50:
		return fmt.Errorf("-bfd-mult %d: want 2..50", o.BFDMult)
	case o.Hold < 3*time.Second || o.Hold%time.Second != 0 || o.Hold > time.Minute:
		return fmt.Errorf("-hold %v: want whole seconds, 3s..60s", o.Hold)
	case !validPrefix.MatchString(o.Prefix):
		return fmt.Errorf("-prefix %q: want 1 to 6 letters or digits, starting with a letter", o.Prefix)
	case len(o.Routers) == 0:
		return errors.New("no router: want frr, bird or both")
	}
	return nil
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bgp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := options{Impls: []string{implVipstack, implFRR}, Modes: []string{modeBFD, modeHold}}
	fs.IntVar(&o.Trials, "trials", 3, "crash trials per implementation, mode and event, and graceful stops per implementation (the median is reported)")
	fs.IntVar(&o.Routes, "routes", fullScale, "VIP routes announced to a new peer")
	fs.DurationVar(&o.BFDInterval, "bfd-interval", 50*time.Millisecond, "BFD transmit and receive interval")
	fs.IntVar(&o.BFDMult, "bfd-mult", 3, "BFD detect multiplier")
	fs.DurationVar(&o.Hold, "hold", 3*time.Second, "BGP hold timer of the runs without BFD")
	fs.StringVar(&o.Prefix, "prefix", "vbnb", "start of every network namespace's name (letters and digits, at most 6)")
	rt := fs.String("router", "both", "the router's daemon: frr, bird or both (each runs every trial)")
	verbose := fs.Bool("v", false, "narrate every step")
	parts := fs.String("parts", "crash,stop,scale", "the parts to run, comma-separated: crash, stop, scale")
	markdown := fs.String("markdown", "", "write the verdicts into the bgp block of this Markdown `file` (docs/benchmarks.md) and the full tables into the bgp block of bgp-bench.md beside it")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *verbose {
		o.Verbose = stderr
	}
	o.Parts = map[string]bool{}
	for _, p := range strings.Split(*parts, ",") {
		if p != "crash" && p != "stop" && p != "scale" {
			fmt.Fprintf(stderr, "bgp: -parts %q: %q; accepted: crash, stop, scale\n", *parts, p)
			return 2
		}
		o.Parts[p] = true
	}
	switch *rt {
	case routerFRR, routerBIRD:
		o.Routers = []string{*rt}
	case "both":
		o.Routers = []string{routerFRR, routerBIRD}
	default:
		fmt.Fprintf(stderr, "bgp: -router %q; accepted: frr, bird, both\n", *rt)
		return 2
	}
	if err := o.validate(); err != nil {
		fmt.Fprintln(stderr, "bgp:", err)
		return 2
	}
	facts := benchdoc.Collect("./bench/bgp", args, benchdoc.FirstLine("/usr/lib/frr/bgpd", "--version"))
	ctx, stop := signalContext()
	defer stop()
	res, err := Run(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "bgp:", err)
		return 1
	}
	res.Loaded = loaded()
	if err := res.report().Text(stdout); err != nil {
		return 1
	}
	if *markdown != "" {
		detail := filepath.Join(filepath.Dir(*markdown), "bgp-bench.md")
		if err := benchdoc.Update(*markdown, "bgp", res.summary(facts, time.Since(facts.Start))); err != nil {
			fmt.Fprintln(stderr, "bgp:", err)
			return 1
		}
		if err := benchdoc.Write(detail, "bgp", facts, res.report()); err != nil {
			fmt.Fprintln(stderr, "bgp:", err)
			return 1
		}
	}
	return 0
}

func signalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case <-c:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// loaded says why figures are noisy: a load average above half the CPUs.
func loaded() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	l, _ := strconv.ParseFloat(f[0], 64)
	if l > float64(runtime.NumCPU())/2 {
		return fmt.Sprintf("load average %s on %d CPUs at the end", f[0], runtime.NumCPU())
	}
	return ""
}

// bench is one router's part of a run.
type bench struct {
	o          options
	l          *lab
	routerName string
	router     router
	mode       string
	res        *results
}

func (b *bench) say(format string, args ...any) {
	if b.o.Verbose != nil {
		fmt.Fprintf(b.o.Verbose, time.Now().Format("15:04:05.000 ")+b.routerName+" router: "+format+"\n", args...)
	}
}

// Run runs every trial with each router in turn, each in a lab of its
// own.
func Run(ctx context.Context, o options) (*results, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("needs root (network namespaces)")
	}
	for _, p := range []string{"/usr/lib/frr/zebra", "/usr/lib/frr/bgpd", "/usr/lib/frr/bfdd", "/usr/bin/vtysh"} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("FRR is needed (%v); install the frr package", err)
		}
	}
	if slices.Contains(o.Routers, routerBIRD) {
		for _, p := range []string{"bird", "birdc"} {
			if _, err := exec.LookPath(p); err != nil {
				return nil, fmt.Errorf("BIRD 2 is needed for -router %s (%v); install the bird2 package or run -router frr", routerBIRD, err)
			}
		}
	}
	res := &results{BFDInterval: o.BFDInterval, BFDMult: o.BFDMult, Hold: o.Hold,
		BFDHold: bfdHold, ProbeEvery: probeEvery, Routes: o.Routes, Routers: o.Routers}
	for _, rt := range o.Routers {
		if err := runRouter(ctx, o, rt, res); err != nil {
			return nil, fmt.Errorf("router %s: %w", rt, err)
		}
	}
	return res, nil
}

// runRouter builds a lab, runs every trial with rt as the router and
// removes the lab.
func runRouter(ctx context.Context, o options, rt string, res *results) error {
	l, err := newLab(o.Prefix, scaleNode)
	if err != nil {
		if l != nil {
			l.close()
		}
		return err
	}
	defer l.close()
	b := &bench{o: o, l: l, routerName: rt, res: res}
	defer func() {
		if b.router != nil {
			b.router.stop()
		}
	}()
	for i := 1; i <= 2; i++ {
		if err := routedlab.IPIn(l.nodes[i-1], "addr", "add", vip.String()+"/32", "dev", "lo"); err != nil {
			return err
		}
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		g, err := start(l.nodes[i-1], []string{roleEnv + "=greet", configEnv + "=" + fmt.Sprintf("n%d", i)}, &syncbuf.Buffer{Limit: 1 << 16}, exe)
		if err != nil {
			return err
		}
		defer g.kill()
	}
	for _, mode := range o.Modes {
		if err := b.setMode(mode); err != nil {
			return err
		}
		if err := b.trials(ctx); err != nil {
			return err
		}
		if mode == modeBFD && o.Parts["scale"] {
			for _, impl := range o.Impls {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				s := b.scale(impl)
				b.say("%s scale: %+v", impl, s)
				b.res.Scale = append(b.res.Scale, s)
			}
		}
	}
	return nil
}

// trials runs the crash trials and, with BFD, the graceful stops of the
// mode, implementations alternating.
func (b *bench) trials(ctx context.Context) error {
	o := b.o
	for range o.Trials {
		for _, impl := range o.Impls {
			for _, ev := range []string{eventKill, eventCut} {
				if !o.Parts["crash"] {
					break
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
				t := b.crash(impl, ev)
				for try := 2; try <= 3 && t.Err == errFlap.Error(); try++ {
					b.say("%s %s %s: %s; try %d", impl, b.mode, ev, t.Err, try)
					t = b.crash(impl, ev)
				}
				b.say("%s %s %s: BFD down %v route %v moved %v failed %d/%d %s", impl, b.mode, ev, t.Detect, t.Route, t.Moved, t.Failed, t.Probes, t.Err)
				b.res.Crash = append(b.res.Crash, t)
			}
			if b.mode == modeBFD && o.Parts["stop"] {
				s := b.gracefulStop(impl)
				for try := 2; try <= 3 && s.Err == errFlap.Error(); try++ {
					b.say("%s graceful stop: %s; try %d", impl, s.Err, try)
					s = b.gracefulStop(impl)
				}
				b.say("%s graceful stop: failed %d/%d (%d in flight, last at %v), VIP removed at %v, route changed at %v %s", impl, s.Failed, s.Probes, s.InFlight, s.LastFail, s.Removed, s.Route, s.Err)
				b.res.Stops = append(b.res.Stops, s)
			}
		}
	}
	return nil
}

// The timers: probes every 10 ms, each given 200 ms (no SYN is resent
// within it); BGP under BFD holds 30 s, so only BFD explains a quick
// removal.
const (
	probeEvery   = 10 * time.Millisecond
	probeTimeout = 200 * time.Millisecond
	bfdHold      = 30 * time.Second
)

func (b *bench) hold() time.Duration {
	if b.mode == modeBFD {
		return bfdHold
	}
	return b.o.Hold
}

func (b *bench) routerConf() routerConf {
	return routerConf{mode: b.mode, hold: b.hold(), bfdInterval: b.o.BFDInterval, bfdMult: b.o.BFDMult}
}

// setMode (re)starts the router's daemon for a mode.
func (b *bench) setMode(mode string) error {
	if b.router != nil {
		b.router.stop()
		b.router = nil
	}
	b.mode = mode
	var err error
	switch b.routerName {
	case routerFRR:
		b.router, err = startRouterFRR(b.l.router, b.l.dir, b.routerConf())
	case routerBIRD:
		b.router, err = startRouterBIRD(b.l.router, b.l.dir, b.routerConf())
	default:
		err = fmt.Errorf("router %q; accepted: %s, %s", b.routerName, routerFRR, routerBIRD)
	}
	if err != nil {
		b.router = nil
	}
	return err
}

// node is one node's BGP daemons.
type node struct {
	impl  string
	procs []*proc // vipstack: the speaker; FRR: zebra, bfdd, bgpd
	main  *proc   // the one a graceful stop signals and whose RSS counts
	frr   *frr
}

func (n *node) kill() {
	for _, p := range n.procs {
		p.kill()
	}
}

// startNode runs impl's daemons on node i announcing routes.
func (b *bench) startNode(impl string, i int, routes []netip.Addr) (*node, error) {
	ns := b.l.nodes[i-1]
	hold := b.hold()
	if i == scaleNode {
		hold = bfdHold
	}
	withBFD := b.mode == modeBFD && i != scaleNode
	if impl == implVipstack {
		p := bgp.Peer{Address: routerAddr(i), ASN: routerASN, LocalAddress: nodeAddr(i), HoldTime: hold, Keepalive: hold / 3}
		if withBFD {
			p.BFD = &bgp.BFD{Interval: b.o.BFDInterval, Multiplier: uint8(b.o.BFDMult)}
		}
		cfg := bgp.Config{ASN: nodeASN, RouterID: nodeAddr(i), ListenPort: 179, Peers: []bgp.Peer{p}}
		for _, r := range routes {
			cfg.Routes = append(cfg.Routes, bgp.Route{VIP: r})
		}
		raw, err := json.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cf := filepath.Join(b.l.dir, fmt.Sprintf("speaker-n%d.json", i))
		if err := os.WriteFile(cf, raw, 0o644); err != nil {
			return nil, err
		}
		sp, err := start(ns, []string{roleEnv + "=speaker", configEnv + "=@" + cf}, &syncbuf.Buffer{Limit: 1 << 20}, exe)
		if err != nil {
			return nil, err
		}
		return &node{impl: impl, procs: []*proc{sp}, main: sp}, nil
	}
	var c strings.Builder
	fmt.Fprintf(&c, "router bgp %d\n bgp router-id %v\n no bgp ebgp-requires-policy\n no bgp network import-check\n", nodeASN, nodeAddr(i))
	r := routerAddr(i)
	fmt.Fprintf(&c, " neighbor %v remote-as %d\n neighbor %v update-source %v\n neighbor %v timers %d %d\n neighbor %v timers connect 1\n",
		r, routerASN, r, nodeAddr(i), r, int(hold.Seconds())/3, int(hold.Seconds()), r)
	if withBFD {
		fmt.Fprintf(&c, " neighbor %v bfd profile fast\n", r)
	}
	c.WriteString(" address-family ipv4 unicast\n")
	for _, v := range routes {
		fmt.Fprintf(&c, "  network %v/32\n", v)
	}
	c.WriteString(" exit-address-family\n!\n")
	f, err := startFRR(ns, b.l.dir, c.String(), bfdConf(b.routerConf()))
	if err != nil {
		return nil, err
	}
	return &node{impl: impl, procs: []*proc{f.procs["bgpd"], f.procs["bfdd"], f.procs["zebra"]}, main: f.procs["bgpd"], frr: f}, nil
}

// up starts impl on n1 and n2 and waits until the router routes the VIP
// over both (with BFD up on both, held for a second: FRR's bgpd replaces
// a BFD session when BGP comes up) and the client reaches both.
func (b *bench) up(impl string) ([]*node, *prober, error) {
	var ns []*node
	fail := func(err error) ([]*node, *prober, error) {
		for _, n := range ns {
			n.kill()
		}
		return nil, nil, err
	}
	for i := 1; i <= 2; i++ {
		n, err := b.startNode(impl, i, []netip.Addr{vip})
		if err != nil {
			return fail(err)
		}
		ns = append(ns, n)
	}
	if err := b.l.waitNexthops(40*time.Second, 1, 2); err != nil {
		return fail(err)
	}
	if b.mode == modeBFD {
		// Up at two looks a second apart: FRR's bgpd replaces its BFD
		// session when BGP comes up, and the old one may go down first.
		var err error
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if err = b.router.bfdUp(nodeAddr(1), nodeAddr(2)); err != nil {
				continue
			}
			time.Sleep(time.Second)
			if err = b.router.bfdUp(nodeAddr(1), nodeAddr(2)); err == nil {
				break
			}
		}
		if err != nil {
			return fail(err)
		}
	}
	if err := b.l.waitNexthops(5*time.Second, 1, 2); err != nil {
		return fail(err)
	}
	pr, err := startProber(b.l.client, probeConfig{Target: netip.AddrPortFrom(vip, greetPort), Every: probeEvery, Timeout: probeTimeout})
	if err != nil {
		return fail(err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := before(pr.snapshot(), time.Now().Add(-probeTimeout), "n1", "n2"); err != nil {
		pr.stop()
		return fail(fmt.Errorf("baseline: %w", err))
	}
	return ns, pr, nil
}

// upRetry is up, tried three times: a baseline that does not hold (a
// session or BFD flap on a loaded machine) is no measurement, so the
// trial starts again from nothing.
func (b *bench) upRetry(impl string) ([]*node, *prober, error) {
	var err error
	for try := 1; try <= 3; try++ {
		var ns []*node
		var pr *prober
		if ns, pr, err = b.up(impl); err == nil {
			return ns, pr, nil
		}
		b.say("%s: baseline, try %d: %v", impl, try, err)
		if derr := b.l.waitNexthops(b.hold() + 10*time.Second); derr != nil {
			return nil, nil, fmt.Errorf("%w; then %v", err, derr)
		}
	}
	return nil, nil, err
}

// down stops every node's daemons and waits until the router has no
// route to the VIP left, so the next trial starts from nothing.
func (b *bench) down(ns []*node) error {
	for _, n := range ns {
		n.kill()
	}
	return b.l.waitNexthops(b.hold() + 10*time.Second)
}

const (
	killTable = "vbnkill"
	cutTable  = "vbncut"
)

// crash runs one crash trial.
func (b *bench) crash(impl, ev string) crashTrial {
	t := crashTrial{Router: b.routerName, Impl: impl, Mode: b.mode, Event: ev}
	ns, pr, err := b.upRetry(impl)
	if err != nil {
		t.Err = err.Error()
		return t
	}
	mon, err := startMonitor(b.l.router)
	if err != nil {
		pr.stop()
		t.Err = err.Error()
		_ = b.down(ns)
		return t
	}
	mark := b.router.logMark()
	t0 := time.Now()
	switch ev {
	case eventKill:
		// The machine is gone: nothing leaves n1 (no FIN, no RST, no
		// answer), then its daemons die.
		err = nft(b.l.nodes[0], "add table inet "+killTable+"\nadd chain inet "+killTable+" out { type filter hook output priority 0; policy drop; }\n")
		ns[0].kill()
	case eventCut:
		err = nft(b.l.router, "table inet "+cutTable+" {\n"+
			" chain cfwd { type filter hook forward priority 0; iifname \"n1\" drop; oifname \"n1\" drop; }\n"+
			" chain cin { type filter hook input priority 0; iifname \"n1\" drop; }\n"+
			" chain cout { type filter hook output priority 0; oifname \"n1\" drop; }\n}\n")
	}
	if err == nil {
		err = b.l.waitNexthops(b.hold()+10*time.Second, 2)
	}
	time.Sleep(probeTimeout + 300*time.Millisecond)
	probes := pr.stop()
	lines := mon.stop()
	_ = nft(b.l.nodes[0], "delete table inet "+killTable+"\n")
	_ = nft(b.l.router, "delete table inet "+cutTable+"\n")
	if err == nil {
		err = before(probes, t0, "n1", "n2")
	}
	if err == nil {
		t.Moved, t.Failed, t.Probes, err = outcome(probes, t0)
	}
	if err == nil {
		t.Route, err = firstChange(lines, vip.String(), t0)
	}
	if err == nil && b.mode == modeBFD {
		var at time.Time
		if at, err = b.router.bfdDown(mark, nodeAddr(1)); err == nil {
			t.Detect = at.Sub(t0)
		}
		if err == nil {
			err = b.n2Flapped(mark)
		}
	}
	if err != nil {
		t.Err = err.Error()
		b.say("%s %s: the router's log about n1 since T0:\n%s", impl, ev, b.router.logSince(mark, nodeAddr(1)))
	}
	if err := b.down(ns); err != nil && t.Err == "" {
		t.Err = "after the trial: " + err.Error()
	}
	return t
}

// errFlap marks a trial in which the router's BFD session with n2, the
// node that stays, went down: the router then has no route at all for
// seconds, which measures n2's outage rather than n1's crash or stop. The
// trial is run again, up to three times. Seen on a loaded machine (50 ms
// x 3), and with BIRD as the router after an FRR node's graceful stop.
var errFlap = errors.New("the router's BFD session with n2, the node that stays, went down during the trial")

func (b *bench) n2Flapped(mark int) error {
	if b.mode != modeBFD {
		return nil
	}
	if _, err := b.router.bfdDown(mark, nodeAddr(2)); err == nil {
		return errFlap
	}
	return nil
}

// gracefulStop stops n1 with SIGTERM (vipstack's speaker; FRR's bgpd)
// under the client's probes; once the daemon has exited the VIP leaves
// n1's loopback, as `vipstack node` takes it off after the withdrawals.
func (b *bench) gracefulStop(impl string) stopTrial {
	s := stopTrial{Router: b.routerName, Impl: impl}
	ns, pr, err := b.upRetry(impl)
	if err != nil {
		s.Err = err.Error()
		return s
	}
	mon, err := startMonitor(b.l.router)
	if err != nil {
		pr.stop()
		s.Err = err.Error()
		_ = b.down(ns)
		return s
	}
	mark := b.router.logMark()
	t0 := time.Now()
	_ = ns[0].main.cmd.Process.Signal(syscall.SIGTERM)
	if !ns[0].main.exited(20 * time.Second) {
		err = errors.New("n1's daemon did not exit within 20 s of SIGTERM")
	}
	if err == nil {
		err = routedlab.IPIn(b.l.nodes[0], "addr", "del", vip.String()+"/32", "dev", "lo")
		s.Removed = time.Since(t0)
	}
	if err == nil {
		err = b.l.waitNexthops(10*time.Second, 2)
	}
	time.Sleep(time.Second)
	probes := pr.stop()
	lines := mon.stop()
	if err == nil {
		err = before(probes, t0, "n1", "n2")
	}
	if err == nil {
		err = b.n2Flapped(mark)
	}
	if err == nil {
		s.Route, err = firstChange(lines, vip.String(), t0)
	}
	if err == nil {
		s.InFlight = inFlight(probes, t0, s.Route, s.Removed)
		s.Late = late(probes, t0, s.Route, s.Removed)
	}
	for _, p := range probes {
		if p.At >= t0.UnixNano() {
			s.Probes++
			if p.By == "" {
				s.Failed++
				s.LastFail = time.Duration(p.At - t0.UnixNano())
			}
		}
	}
	if err != nil {
		s.Err = err.Error()
	}
	if s.Failed > 0 && b.o.Verbose != nil {
		b.say("%s graceful stop: %d failed; the router's route changes:\n%s\nits log about n2:\n%s", impl, s.Failed,
			strings.Join(lines[:min(len(lines), 16)], "\n"), b.router.logSince(mark, nodeAddr(2)))
	}
	if err := routedlab.IPIn(b.l.nodes[0], "addr", "replace", vip.String()+"/32", "dev", "lo"); err != nil && s.Err == "" {
		s.Err = err.Error()
	}
	if err := b.down(ns); err != nil && s.Err == "" {
		s.Err = "after the trial: " + err.Error()
	}
	return s
}

// scaleVIPs are n host routes in 198.19.0.0/16 (not the VIP).
func scaleVIPs(n int) []netip.Addr {
	out := make([]netip.Addr, 0, n)
	for i := range n {
		out = append(out, netip.AddrFrom4([4]byte{198, 19, byte(1 + i/250), byte(1 + i%250)}))
	}
	return out
}

// scale measures impl on n3: its RSS established with no routes, then
// with Routes routes the time from the router's `no neighbor shutdown` to
// every route received, and the RSS.
func (b *bench) scale(impl string) scaleRun {
	s := scaleRun{Router: b.routerName, Impl: impl, Routes: b.o.Routes}
	var err error
	if s.RSS0, _, _, _, err = b.announce(impl, 0); err == nil {
		s.RSSN, s.Established, s.Received, s.PollEvery, err = b.announce(impl, b.o.Routes)
	}
	if err != nil {
		s.Err = err.Error()
	}
	return s
}

// announce runs impl on n3 with n routes and brings the router's
// session with it up; it returns the daemon's RSS, the times to the
// session established and to every route received, and how often the
// router was polled.
func (b *bench) announce(impl string, n int) (rss float64, est, all, poll time.Duration, err error) {
	a := nodeAddr(scaleNode)
	nd, err := b.startNode(impl, scaleNode, scaleVIPs(n))
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer func() {
		_ = b.router.shutdown(a, true)
		nd.kill()
	}()
	// Let the daemon load its routes before the peer comes.
	time.Sleep(time.Second)
	nd.main.idle(30 * time.Second)
	t0 := time.Now()
	if err := b.router.shutdown(a, false); err != nil {
		return 0, 0, 0, 0, err
	}
	var polls int
	for end := t0.Add(60 * time.Second); time.Now().Before(end); {
		up, got, err := b.router.neighbor(a)
		polls++
		if err != nil {
			return 0, 0, 0, 0, err
		}
		now := time.Since(t0)
		if up && est == 0 {
			est = now
		}
		if est > 0 && got >= n {
			all = now
			break
		}
	}
	if all == 0 {
		return 0, est, 0, 0, fmt.Errorf("the router did not receive %d routes from n3 within 60 s", n)
	}
	poll = (time.Since(t0) / time.Duration(polls)).Round(time.Millisecond)
	nd.main.idle(30 * time.Second)
	rss, err = nd.main.rss()
	return rss, est, all, poll, err
}
