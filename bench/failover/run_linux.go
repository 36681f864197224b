package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/benchdoc"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// The cluster every trial runs.
var (
	vip        = netip.MustParsePrefix("198.18.0.100/32")
	priorities = [3]int{150, 100, 50}
)

const (
	vrid        = 51
	dialTimeout = 200 * time.Millisecond
	// baselineWait bounds how long the client may take to reach node1
	// through the VIP before the event.
	baselineWait = 3 * time.Second
)

// timerSets are the configurations measured, in the order they run.
func timerSets() []timerSet {
	return []timerSet{
		{ID: "v3-50ms", Label: "VRRPv3 advert 0.05 s", Version: 3, Advert: 50 * time.Millisecond},
		{ID: "v2-1s", Label: "VRRPv2 advert 1 s PASS", Version: 2, Advert: time.Second, Auth: "vsEpass"},
	}
}

type options struct {
	trials      int
	quick       bool
	only        *regexp.Regexp
	verbose     bool
	keep        bool
	vipstackBin string
	markdown    string
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("failover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.trials, "trials", 5, "trials per implementation and scenario (the median is reported)")
	fs.BoolVar(&o.quick, "quick", false, "the demo: 1 trial each, every step narrated")
	only := fs.String("only", "", "run only the trials whose `regexp` matches \"IMPL TIMERS/EVENT\", e.g. \"vipstack v3-50ms/kill\" (TIMERS: v3-50ms, v2-1s; EVENT: kill, term, check)")
	fs.BoolVar(&o.verbose, "v", false, "narrate every step and print node logs of failed trials")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (configurations and node logs) and print its path")
	fs.StringVar(&o.vipstackBin, "vipstack", "", "vipstack binary to run (default: build ./cmd/vipstack)")
	fs.StringVar(&o.markdown, "markdown", "", "write the results into the failover block of this Markdown `file` (docs/benchmarks.md)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "failover: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if o.quick {
		o.trials = 1
	}
	if o.trials < 1 || o.trials > 101 {
		fmt.Fprintf(stderr, "failover: -trials %d: want 1..101\n", o.trials)
		return 2
	}
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			fmt.Fprintf(stderr, "failover: -only %q: %v\n", *only, err)
			return 2
		}
		o.only = re
	}

	b := &bench{out: stdout, narrate: o.quick || o.verbose, verbose: o.verbose, keep: o.keep,
		facts: benchdoc.Collect("./bench/failover", args, version("keepalived", "--version"))}
	// Clean up on every way out: return, panic on this goroutine, SIGINT
	// or SIGTERM (which exit from the signal goroutine after cleaning up).
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigc)
	go func() {
		s := <-sigc
		fmt.Fprintf(stderr, "\nfailover: %v: stopping the nodes and removing the namespaces\n", s)
		b.close()
		os.Exit(130)
	}()
	defer func() {
		r := recover()
		b.close()
		if r != nil {
			panic(r)
		}
	}()

	if err := b.setup(o); err != nil {
		fmt.Fprintf(stderr, "failover: setup: %v\n", err)
		return 1
	}
	b.runAll(o)
	return 0
}

// bench is one run: the topology, the binaries, and what to print.
type bench struct {
	out                    io.Writer
	narrate, verbose, keep bool

	work      string
	vipBin    string
	topo      *testnet.Topology
	listeners []net.Listener
	adverts   *advertWatch
	jobs      []job
	res       results
	notes     []string // misbehaviour seen, printed at the end
	facts     benchdoc.Facts

	closeOnce sync.Once
	mu        sync.Mutex // guards topo, listeners and work against close from the signal goroutine
}

type job struct {
	impl string
	sc   scenario
}

func (b *bench) setup(o options) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (network namespaces, raw sockets): run it as sudo go run ./bench/failover")
	}
	impls := map[string]bool{}
	var scs []scenario
	for _, t := range timerSets() {
		for _, e := range events {
			s := scenario{Timers: t, Event: e}
			picked := false
			for _, impl := range []string{implKeepalived, implVipstack} {
				if o.only == nil || o.only.MatchString(impl+" "+s.ID()) {
					impls[impl], picked = true, true
				}
			}
			if picked {
				scs = append(scs, s)
			}
		}
	}
	if len(scs) == 0 {
		return fmt.Errorf("-only %q matches no trial; trials are named like \"keepalived v2-1s/kill\" and \"vipstack v3-50ms/term\"", o.only)
	}
	for i := 1; i <= o.trials; i++ {
		for _, s := range scs {
			for _, impl := range []string{implKeepalived, implVipstack} {
				if impls[impl] && (o.only == nil || o.only.MatchString(impl+" "+s.ID())) {
					b.jobs = append(b.jobs, job{impl: impl, sc: s})
				}
			}
		}
	}
	b.res.Scenarios = scs

	tools := []string{"ip"}
	if impls[implKeepalived] {
		tools = append(tools, "keepalived")
	}
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("%s is not installed: %w", t, err)
		}
	}
	work, err := os.MkdirTemp("", "vsE-failover-")
	if err != nil {
		return fmt.Errorf("work directory: %w", err)
	}
	b.mu.Lock()
	b.work = work
	b.mu.Unlock()
	if impls[implVipstack] {
		if o.vipstackBin != "" {
			if _, err := os.Stat(o.vipstackBin); err != nil {
				return fmt.Errorf("-vipstack: %w", err)
			}
			b.vipBin = o.vipstackBin
		} else {
			b.say("", "building ./cmd/vipstack")
			bin, err := peers.BuildVipstack(work)
			if err != nil {
				return fmt.Errorf("build vipstack: %w", err)
			}
			b.vipBin = bin
		}
	}
	b.say("", "building 3 hosts and a client in network namespaces")
	topo, err := testnet.Build(testnet.Options{Hosts: 3, Client: true, Prefix: "vsE"})
	if err != nil {
		return fmt.Errorf("topology: %w", err)
	}
	b.mu.Lock()
	b.topo = topo
	b.mu.Unlock()
	for _, h := range topo.Hosts {
		ln, err := listen(h)
		if err != nil {
			return fmt.Errorf("listener on %s: %w", h.Name, err)
		}
		b.mu.Lock()
		b.listeners = append(b.listeners, ln)
		b.mu.Unlock()
	}
	adv, err := watchAdverts(topo.Client)
	if err != nil {
		return fmt.Errorf("VRRP advertisement watcher on the client: %w", err)
	}
	b.mu.Lock()
	b.adverts = adv
	b.mu.Unlock()
	// Every host must answer the client on its own address before a VIP
	// moves anywhere.
	for _, h := range topo.Hosts {
		p := startProber(topo.Client, netip.AddrPortFrom(h.IPv4.Addr(), greetPort).String(), probeEvery, dialTimeout, 100)
		ok := p.waitFor(func(a attempt) bool { return a.From != 0 }, time.Now().Add(baselineWait))
		p.stop()
		if a, _ := first(p.attempts(), func(a attempt) bool { return a.From != 0 }); !ok || a.From != h.Index {
			return fmt.Errorf("the client cannot reach the listener on %s (%v): %v", h.Name, h.IPv4.Addr(), lastErr(p.attempts()))
		}
	}
	return nil
}

func lastErr(log []attempt) error {
	for i := len(log) - 1; i >= 0; i-- {
		if log[i].Err != nil {
			return log[i].Err
		}
	}
	return errors.New("no attempt failed")
}

// close stops every process, removes the namespaces and the work
// directory (unless -keep). Safe to call twice and from the signal
// goroutine.
func (b *bench) close() {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, ln := range b.listeners {
			_ = ln.Close()
		}
		if b.adverts != nil {
			b.adverts.close()
		}
		if b.topo != nil {
			b.topo.Close()
		}
		if b.work != "" {
			if b.keep {
				fmt.Fprintf(b.out, "work directory (configurations and node logs) kept in %s\n", b.work)
			} else {
				_ = os.RemoveAll(b.work)
			}
		}
	})
}

// say narrates a step when narrating.
func (b *bench) say(impl, format string, args ...any) {
	if !b.narrate {
		return
	}
	if impl != "" {
		format = impl + ": " + format
	}
	fmt.Fprintf(b.out, "  "+format+"\n", args...)
}

// note records misbehaviour, printed with the results.
func (b *bench) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.notes = append(b.notes, msg)
	fmt.Fprintf(b.out, "  NOTE: %s\n", msg)
}

func (b *bench) runAll(o options) {
	fmt.Fprintf(b.out, "bench/failover: %s; vipstack: %s\n", b.facts, vipVersion(b.vipBin))
	fmt.Fprintf(b.out, "3 nodes at priorities 150/100/50 + a client on one bridge; VIP %s; VRID %d; multicast; %d trial(s) each; probe every %v\n\n",
		vip.Addr(), vrid, o.trials, probeEvery)
	var last string
	for i, j := range b.jobs {
		if b.narrate && j.sc.ID() != last {
			fmt.Fprintf(b.out, "== %s ==\n", j.sc.Label())
			last = j.sc.ID()
		}
		trial := len(b.res.Trials[key(j.impl, j.sc)]) + 1
		oc := b.trial(j.impl, j.sc, trial)
		b.res.add(j.impl, j.sc, oc)
		res := ms(oc.Outage) + " ms"
		if oc.Err != nil {
			res = "FAILED: " + oc.Err.Error()
		}
		if !b.narrate || oc.Err != nil {
			fmt.Fprintf(b.out, "[%2d/%d] %-10s %-12s trial %d: %s\n", i+1, len(b.jobs), j.impl, j.sc.ID(), trial, res)
		}
	}
	fmt.Fprintln(b.out)
	var rep benchdoc.Report
	b.res.report(&rep)
	rep.List(b.res.targets())
	if o.trials < 5 {
		rep.Para("(%d trial(s) each: a crash ratio mostly shows where in the advertisement interval the kill fell; the targets are judged on medians of 5 or more: sudo go run ./bench/failover)", o.trials)
	}
	if f := b.res.failures(); len(f) > 0 {
		rep.Para("Failed trials:")
		rep.List(f)
	}
	if len(b.notes) > 0 {
		rep.Para("Misbehaviour seen:")
		rep.List(b.notes)
	}
	_ = rep.Text(b.out)
	if o.markdown != "" {
		rep.Para("VRID %d, multicast, %d trial(s) each, a connect every %v.", vrid, o.trials, probeEvery)
		if err := benchdoc.Write(o.markdown, "failover", b.facts, &rep); err != nil {
			fmt.Fprintf(b.out, "\nfailover: -markdown: %v\n", err)
		} else {
			fmt.Fprintf(b.out, "\nwrote the results into %s\n", o.markdown)
		}
	}
}

func version(name string, args ...string) string {
	if _, err := exec.LookPath(name); err != nil {
		return "not installed"
	}
	out, _ := exec.Command(name, args...).CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

func vipVersion(bin string) string {
	if bin == "" {
		return "not run"
	}
	return version(bin, "version")
}
