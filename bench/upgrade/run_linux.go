package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/benchdoc"
	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/demo"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/version"
)

type options struct {
	Masters, Workers int
	Rate             int
	Advert, Settle   time.Duration
	Prefix           string
	Old, New         string // the two builds
	// Phases are the rounds of replacements, every node in each; default
	// (run sets it): for each style, an upgrade then a downgrade.
	Phases []phase
	Logs   string // a directory to copy the node agents' logs to at the end; "": none
	Log    io.Writer
}

// The ways a node's binary is replaced.
const (
	// styleSystemd: a package upgrade under systemd
	// (deploy/systemd/vipstack-node.service): the other build is
	// installed over the node's one binary path (written beside it, then
	// renamed over it, as dpkg does), then `systemctl restart`: SIGTERM to
	// the supervisor (KillMode=mixed), and once it has exited the same path
	// started again with the same arguments.
	styleSystemd = "systemd"
	// styleStaticPod: a static pod's manifest names the other image: the
	// kubelet stops the container (SIGTERM to its process 1) and, once it
	// has exited, starts the new one, whose binary is the new image's (its
	// own path), as process 1 of a PID namespace of its own.
	styleStaticPod = "static-pod"
)

// phase is one round of replacements: every node, in the style, from the
// build named From to the one named To ("old", "new").
type phase struct {
	Style    string
	From, To string
}

// defaultPhases: for each style, an upgrade then a downgrade.
func defaultPhases(styles []string) []phase {
	var out []phase
	for _, s := range styles {
		out = append(out, phase{s, "old", "new"}, phase{s, "new", "old"})
	}
	return out
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("upgrade", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.Masters, "masters", 3, "masters (1 to 3)")
	fs.IntVar(&o.Workers, "workers", 2, "workers (1 to 4; the Ingress VIP needs one)")
	fs.IntVar(&o.Rate, "rate", 200, "new connections per second to every VIP")
	fs.DurationVar(&o.Advert, "advert", time.Second, "the cluster's VRRP advertisement interval")
	fs.DurationVar(&o.Settle, "settle", 5*time.Second, "how long every VIP must keep one holder before the next node")
	fs.StringVar(&o.Prefix, "prefix", "vsokU", "network namespace name prefix")
	styles := fs.String("styles", styleSystemd+","+styleStaticPod, "how binaries are replaced, comma-separated: "+styleSystemd+" (installed over one path, the service restarted) and "+styleStaticPod+" (the new image's path, process 1 of its own PID namespace); each upgrades every node, then downgrades it")
	v := fs.Bool("v", false, "narrate")
	fs.StringVar(&o.Logs, "logs", "", "copy the node agents' logs to this `directory` at the end")
	markdown := fs.String("markdown", "", "write the results into the upgrade block of this Markdown `file` (docs/benchmarks.md)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || o.Masters < 1 || o.Masters > 3 || o.Workers < 1 || o.Workers > 4 || o.Rate < 1 || o.Rate > 1000 || o.Settle <= 0 {
		fmt.Fprintln(stderr, "upgrade: want no arguments, -masters 1 to 3, -workers 1 to 4, -rate 1 to 1000, -settle > 0")
		return 2
	}
	for _, st := range strings.Split(*styles, ",") {
		if st != styleSystemd && st != styleStaticPod {
			fmt.Fprintf(stderr, "upgrade: -styles: %q is not a style (accepted: %s, %s, or both separated by a comma)\n", st, styleSystemd, styleStaticPod)
			return 2
		}
		o.Phases = append(o.Phases, defaultPhases([]string{st})...)
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "upgrade: needs root (network namespaces, raw sockets): sudo go run ./bench/upgrade")
		return 2
	}
	if *v {
		o.Log = stdout
	}
	facts := benchdoc.Collect("./bench/upgrade", args)
	dir, err := os.MkdirTemp("", "vsok-upgrade-")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	fmt.Fprintln(stdout, "building ./cmd/vipstack twice (old and new)")
	if o.Old, err = build(dir, "v0.0.0-soak-old"); err == nil {
		o.New, err = build(dir, "v0.0.0-soak-new")
	}
	if err != nil {
		fmt.Fprintf(stderr, "upgrade: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := Run(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "upgrade: %v\n", err)
		return 1
	}
	rep := res.report()
	_ = rep.Text(stdout)
	if *markdown != "" {
		if err := benchdoc.Write(*markdown, "upgrade", facts, rep); err != nil {
			fmt.Fprintf(stderr, "upgrade: -markdown: %v\n", err)
			return 1
		}
	}
	if !res.OK() {
		return 1
	}
	return 0
}

// build builds ./cmd/vipstack with version ver written in, as
// hack/build.sh does, and checks that `vipstack version` says so.
func build(dir, ver string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(dir, "vipstack-"+ver)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-X "+version.LDFlag+"="+ver, "-o", bin, "./cmd/vipstack")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", ver, err, b)
	}
	got, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(got), ver) {
		return "", fmt.Errorf("%s version: %q (%v), want %s", bin, got, err, ver)
	}
	return bin, nil
}

// target is a VIP and the port the load connects to.
type target struct {
	Kind string
	Addr netip.AddrPort
}

func targets() []target {
	var out []target
	for _, v := range demo.VIPs() {
		port := map[string]uint16{demo.KindAPI: 6443, demo.KindDNS: 53, demo.KindIngress: 80}[v.Kind]
		out = append(out, target{Kind: v.Kind, Addr: netip.AddrPortFrom(v.Addr, port)})
	}
	return out
}

// replacement is one node's binary replaced, and what the VIPs saw.
type replacement struct {
	Node, Style string
	From, To    string
	Took        time.Duration // from SIGTERM to every VIP settled
	Moves       []tracker     // by target
	Failed      []int64       // failed connections, by target
	Errors      []string      // the first few connection errors
}

type result struct {
	O        options
	Targets  []target
	Steps    []replacement
	OKConns  []int64 // by target, over the whole run
	BadConns []int64
}

// OK reports whether no connection failed and no replacement moved a VIP
// twice.
func (r result) OK() bool {
	for _, s := range r.Steps {
		for i := range r.Targets {
			if s.Failed[i] > 0 || s.Moves[i].Moves > 1 {
				return false
			}
		}
	}
	return len(r.Steps) > 0
}

func logf(o options, format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	}
}

// loader opens rate new connections a second to one target from the
// client namespace.
type loader struct {
	t            target
	ok, failed   atomic.Int64
	mu           sync.Mutex
	errs         []string
	stepFailures atomic.Int64
}

func (l *loader) run(ctx context.Context, client *testnet.Host, rate int) {
	const workers = 256 // at most this many connections in flight
	tickets := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			// Each worker lives in the client namespace, so its sockets do.
			_ = client.Do(func() error {
				d := net.Dialer{Timeout: 5 * time.Second}
				for range tickets {
					c, err := d.DialContext(ctx, "tcp", l.t.Addr.String())
					if err != nil {
						if ctx.Err() != nil {
							continue
						}
						l.failed.Add(1)
						l.stepFailures.Add(1)
						l.mu.Lock()
						if len(l.errs) < 5 {
							l.errs = append(l.errs, time.Now().Format("15:04:05.000")+" "+err.Error())
						}
						l.mu.Unlock()
						continue
					}
					c.Close()
					l.ok.Add(1)
				}
				return nil
			})
		})
	}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
			select {
			case tickets <- struct{}{}:
			default:
				l.failed.Add(1) // every worker busy for 5 s: as good as failed
				l.stepFailures.Add(1)
			}
		}
	}
	close(tickets)
	wg.Wait()
}

// takeErrs returns and forgets the errors seen since the last call.
func (l *loader) takeErrs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.errs
	l.errs = nil
	return e
}

// Run starts the cluster on o.Old, puts the load on, replaces every node's
// binary with o.New and then back with o.Old, one node at a time.
func Run(ctx context.Context, o options) (res result, err error) {
	res = result{O: o, Targets: targets()}
	c, err := demo.Start(ctx, demo.Spec{Masters: o.Masters, Workers: o.Workers, Advert: o.Advert},
		demo.Options{Bin: o.Old, Prefix: o.Prefix, View: -1})
	if err != nil {
		return res, err
	}
	defer c.Close()
	if o.Logs != "" {
		defer func() {
			for _, n := range c.Nodes {
				if werr := os.WriteFile(filepath.Join(o.Logs, n.Name+".log"), []byte(n.Log()), 0o644); werr != nil && err == nil {
					err = werr
				}
			}
		}()
	}
	if err := settle(ctx, c, o.Settle); err != nil {
		return res, fmt.Errorf("the cluster did not settle: %w", err)
	}
	logf(o, "cluster settled; load on")
	lctx, stopLoad := context.WithCancel(ctx)
	var lwg sync.WaitGroup
	loaders := make([]*loader, len(res.Targets))
	for i, t := range res.Targets {
		loaders[i] = &loader{t: t}
		lwg.Go(func() { loaders[i].run(lctx, c.Client, o.Rate) })
	}
	defer func() {
		stopLoad()
		lwg.Wait()
		for _, l := range loaders {
			res.OKConns = append(res.OKConns, l.ok.Load())
			res.BadConns = append(res.BadConns, l.failed.Load())
		}
	}()
	time.Sleep(2 * time.Second)
	installed, err := os.MkdirTemp("", "vsok-upgrade-installed-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(installed)
	builds := map[string]string{"old": o.Old, "new": o.New}
	for _, ph := range o.Phases {
		for _, n := range c.Nodes {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			step := replacement{Node: n.Name, Style: ph.Style, From: ph.From, To: ph.To,
				Moves: make([]tracker, len(res.Targets)), Failed: make([]int64, len(res.Targets))}
			for _, l := range loaders {
				l.stepFailures.Store(0)
				l.takeErrs()
			}
			// The binary the node runs next: the new image's own path, or
			// the build installed over the node's one path.
			bin := builds[ph.To]
			if ph.Style == styleSystemd {
				bin = filepath.Join(installed, n.Name, "vipstack")
				if err := install(builds[ph.To], bin); err != nil {
					return res, err
				}
			}
			// The holders before the stop, read before it starts: the
			// sampler's first round may come after the addresses left.
			sampleOnce(c, res.Targets, step.Moves)
			sctx, stopSampling := context.WithCancel(ctx)
			var swg sync.WaitGroup
			swg.Go(func() { sample(sctx, c, res.Targets, step.Moves) })
			t0 := time.Now()
			logf(o, "%s (%s): %s to %s", n.Name, ph.Style, ph.From, ph.To)
			err := n.ReplaceAs(ctx, bin, ph.Style == styleStaticPod)
			if err == nil {
				err = waitRunning(ctx, n, bin)
			}
			if err == nil {
				err = settle(ctx, c, o.Settle)
			}
			step.Took = time.Since(t0)
			stopSampling()
			swg.Wait()
			for i, l := range loaders {
				step.Failed[i] = l.stepFailures.Load()
				for _, e := range l.takeErrs() {
					step.Errors = append(step.Errors, res.Targets[i].Kind+": "+e)
				}
			}
			res.Steps = append(res.Steps, step)
			if err != nil {
				return res, fmt.Errorf("%s (%s), %s to %s: %w", n.Name, ph.Style, ph.From, ph.To, err)
			}
			logf(o, "%s: %s after %v; moves %v, failed %v", n.Name, ph.To, step.Took.Round(time.Millisecond), moves(step), step.Failed)
		}
	}
	return res, nil
}

func moves(s replacement) []int {
	var out []int
	for _, m := range s.Moves {
		out = append(out, m.Moves)
	}
	return out
}

// waitRunning waits until n's engine runs the file at bin (its
// /proc/PID/exe is that file, the one installed there last for the
// systemd style).
func waitRunning(ctx context.Context, n *demo.Node, bin string) error {
	deadline := time.Now().Add(30 * time.Second)
	want, err := os.Stat(bin)
	if err != nil {
		return err
	}
	for {
		if pid := n.EnginePid(); pid != 0 {
			if got, err := os.Stat(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && os.SameFile(got, want) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s runs no engine from %s after 30 s", n.Name, bin)
		}
		if err := clock.Sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// install puts a copy of bin at dst as a package manager does: written
// beside it, then renamed over it (a running process keeps the old file).
func install(bin, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	tmp := dst + ".dpkg-new"
	if err := os.WriteFile(tmp, b, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// settle waits until every VIP has one holder, the same for d.
func settle(ctx context.Context, c *demo.Cluster, d time.Duration) error {
	for _, v := range demo.VIPs() {
		if _, err := c.WaitHolder(ctx, v.Addr, nil, d, 2*time.Minute); err != nil {
			return fmt.Errorf("%s VIP %s: %w", v.Kind, v.Addr, err)
		}
	}
	return nil
}

// sample reads every target's holders every 20 ms until ctx ends.
func sample(ctx context.Context, c *demo.Cluster, ts []target, into []tracker) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		sampleOnce(c, ts, into)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sampleOnce reads every target's holders once.
func sampleOnce(c *demo.Cluster, ts []target, into []tracker) {
	for i, tg := range ts {
		hs, err := c.Holders(tg.Addr.Addr())
		if err != nil {
			continue
		}
		var names []string
		for _, h := range hs {
			names = append(names, h.Name)
		}
		into[i].add(names)
	}
}
