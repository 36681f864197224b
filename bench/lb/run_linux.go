package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/benchdoc"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/procfs"
	"github.com/vipstack/vipstack/internal/testnet"
)

type options struct {
	mode        string // tcp or http: the main frontend's mode
	rounds      int
	dur         time.Duration // of each wrk run
	iperfSecs   int
	kill        bool
	killRate    int
	killFor     time.Duration
	killAt      time.Duration
	vipstackBin string
	keep        bool
	netnsPrefix string
	idleConns   int     // mode http: connections of the idle-memory test, 0: none
	pacedRate   int     // requests a second of the open-loop latency test, 0: none, pacedAuto: from haproxy's wrk rate
	pacedFrac   float64 // with pacedAuto: the fraction of haproxy's wrk keep-alive rate
	datapath    string  // vipstack lb --datapath: relay, kernel or auto
	httpEngine  string  // vipstack lb --http-engine: std, loop or auto
}

// haproxyMaxConn is haproxy's global maxconn (-n): it must stay under about
// 9000 here, where the open-file hard limit is 20000.
const haproxyMaxConn = 8000

// requestDeadline bounds one request of the kill test; a request that has
// no complete answer by then failed. It is well above haproxy's connect
// retry window (retries 3, about 1 s apart).
const requestDeadline = 8 * time.Second

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lb", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.mode, "mode", "tcp", "the main frontend's and backend's mode: tcp (the TCP relay) or http (the HTTP reverse proxy)")
	fs.IntVar(&o.rounds, "rounds", 1, "measurement rounds; each test runs for both balancers back to back, and the median of the rounds is reported")
	fs.DurationVar(&o.dur, "d", 10*time.Second, "duration of each wrk run")
	o.pacedRate = pacedAuto
	fs.Func("paced-rate", "`rate` of keep-alive GETs a second of the open-loop latency test (64 connections, as wrk, for -d), where the keep-alive p99 target is judged, the same rate for direct, haproxy and vipstack within a round: auto (the default) is -paced-fraction of haproxy's wrk keep-alive requests/s in the same round, a number fixes it, 0 skips the test (the p99 target is then wrk's)", func(s string) (err error) {
		o.pacedRate, err = parsePacedRate(s)
		return err
	})
	fs.Float64Var(&o.pacedFrac, "paced-fraction", defaultPacedFraction, "-paced-rate auto: the open loop's rate as a fraction of haproxy's wrk keep-alive requests/s in the same round, 0.05..1")
	fs.IntVar(&o.iperfSecs, "iperf-t", 5, "duration in seconds of each iperf3 run")
	smaps := fs.Bool("smaps", false, "idle test: print how each balancer's resident set grew, mapping by mapping (/proc/PID/smaps)")
	noKill := fs.Bool("no-kill", false, "skip the backend-kill test")
	fs.IntVar(&o.killRate, "kill-rate", 200, "kill test: new connections per second")
	fs.DurationVar(&o.killFor, "kill-for", 12*time.Second, "kill test: duration of the load")
	fs.DurationVar(&o.killAt, "kill-at", 4*time.Second, "kill test: when the backend is killed, from the start of the load")
	fs.StringVar(&o.vipstackBin, "vipstack", "", "vipstack binary to run (default: build ./cmd/vipstack)")
	fs.StringVar(&o.netnsPrefix, "netns-prefix", "vsI", "start of the throwaway network namespace's name (give each concurrent run its own)")
	fs.IntVar(&o.idleConns, "idle-conns", 3000, "mode http: idle keep-alive connections opened to each balancer for the memory test, 0 to skip (at most 3900: the frontends' maxconn is 4000)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (configurations and logs) and print its path")
	fs.StringVar(&o.datapath, "datapath", "relay", "vipstack lb --datapath: relay (user space), kernel or auto (nftables DNAT; the targets become the issue's 1.2x keep-alive and new connections, p99 <= 1.0, bulk >= 1.5, via/direct >= 0.8)")
	fs.StringVar(&o.httpEngine, "http-engine", "std", "vipstack lb --http-engine: std (net/http), loop (own HTTP/1 event loops) or auto; -mode http only")
	markdown := fs.String("markdown", "", "write the results into the lb block (-mode http: lb-http, lb-http-loop with -http-engine loop or auto) of this Markdown `file` (docs/benchmarks.md; the lb-http blocks are in docs/lb.md)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.kill = !*noKill
	switch {
	case o.mode != "tcp" && o.mode != "http":
		fmt.Fprintf(stderr, "lb: -mode %q: want tcp or http\n", o.mode)
		return 2
	case o.datapath != "relay" && o.datapath != "kernel" && o.datapath != "auto":
		fmt.Fprintf(stderr, "lb: -datapath %q: want relay, kernel or auto\n", o.datapath)
		return 2
	case o.httpEngine != "std" && o.httpEngine != "loop" && o.httpEngine != "auto":
		fmt.Fprintf(stderr, "lb: -http-engine %q: want std, loop or auto\n", o.httpEngine)
		return 2
	case !validPrefix(o.netnsPrefix):
		fmt.Fprintf(stderr, "lb: -netns-prefix %q: want 1..4 letters or digits\n", o.netnsPrefix)
		return 2
	case o.pacedFrac < 0.05 || o.pacedFrac > 1:
		fmt.Fprintf(stderr, "lb: -paced-fraction %v: want 0.05..1 (above 1, haproxy is offered more than it sustained)\n", o.pacedFrac)
		return 2
	case o.idleConns < 0 || o.idleConns > 3900:
		fmt.Fprintf(stderr, "lb: -idle-conns %d: want 0..3900 (the frontends' maxconn is 4000)\n", o.idleConns)
		return 2
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "lb: unexpected arguments %q\n", fs.Args())
		return 2
	case o.rounds < 1 || o.rounds > 21:
		fmt.Fprintf(stderr, "lb: -rounds %d: want 1..21\n", o.rounds)
		return 2
	case o.dur < time.Second || o.dur > 5*time.Minute:
		fmt.Fprintf(stderr, "lb: -d %v: want 1s..5m\n", o.dur)
		return 2
	case o.iperfSecs < 1 || o.iperfSecs > 60:
		fmt.Fprintf(stderr, "lb: -iperf-t %d: want 1..60\n", o.iperfSecs)
		return 2
	case o.killRate < 1 || o.killRate > 2000:
		fmt.Fprintf(stderr, "lb: -kill-rate %d: want 1..2000\n", o.killRate)
		return 2
	case o.killFor < time.Second || o.killFor > 2*time.Minute || o.killAt <= 0 || o.killAt >= o.killFor:
		fmt.Fprintf(stderr, "lb: -kill-for %v -kill-at %v: want 1s..2m and 0 < kill-at < kill-for\n", o.killFor, o.killAt)
		return 2
	}

	b := &bench{out: stdout, log: stderr, keep: o.keep, smaps: *smaps, procs: map[string]*proc{}}
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigc)
	go func() {
		s := <-sigc
		fmt.Fprintf(stderr, "\nlb: %v: stopping every process and removing the namespace\n", s)
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

	facts := benchdoc.Collect("./bench/lb", args)
	res, err := b.run(o)
	if err != nil {
		fmt.Fprintf(stderr, "lb: %v\n", err)
		return 1
	}
	res.print(stdout)
	if *markdown != "" {
		// Each mode has its own block: an http run leaves the tcp
		// figures alone.
		block := "lb"
		switch {
		case o.mode == "http" && o.httpEngine != "std":
			block = "lb-http-loop" // the std engine's figures stay in "lb-http"
		case o.mode == "http":
			block = "lb-http"
		case o.datapath != "relay":
			block = "lb-kernel" // the relay's figures stay in "lb"
		}
		if err := benchdoc.Write(*markdown, block, facts, res.report()); err != nil {
			fmt.Fprintf(stderr, "lb: -markdown: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "\nwrote the results into %s\n", *markdown)
	}
	return 0
}

// bench is one run.
type bench struct {
	out, log io.Writer
	keep     bool
	smaps    bool // the idle test prints each balancer's growth by mapping

	work       string
	backendBin string
	vipBin     string
	topo       *testnet.Topology
	h          *testnet.Host
	procs      map[string]*proc // by name: b1..b3, iperf3, haproxy, vipstack

	closeOnce sync.Once
	mu        sync.Mutex // guards procs, topo and work against close from the signal goroutine
}

func (b *bench) say(format string, a ...any) {
	fmt.Fprintf(b.log, "lb: "+format+"\n", a...)
}

func (b *bench) run(o options) (*results, error) {
	res := &results{Rounds: map[string][]figures{}, Kill: map[string]killResult{}, Mem: map[string]memResult{}, HTTP: o.mode == "http",
		Kernel: o.datapath != "relay"}
	if o.pacedRate == pacedAuto {
		res.PacedFraction = o.pacedFrac
	}
	if err := b.setup(o, res); err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	impls := []string{implHAProxy}
	if res.Skipped == "" {
		impls = append(impls, implVipstack)
	}
	// First, while both balancers have served nothing but the health
	// checks and the spread check: memory a load left behind (a Go
	// heap not yet given back) would hide what the connections cost.
	if o.mode == "http" && o.idleConns > 0 {
		for _, impl := range impls {
			b.say("idle test, %s: %d keep-alive connections", impl, o.idleConns)
			m, err := b.idleMemory(impl, o.idleConns)
			if err != nil {
				return nil, fmt.Errorf("idle test, %s: %w", impl, err)
			}
			res.Mem[impl] = m
			rss, pss := m.per10k()
			b.say("idle test, %s: RSS %.1f -> %.1f MiB, %.1f MiB RSS, %.1f MiB PSS and %.1f MiB anonymous per 10,000", impl, m.RSSBefore, m.RSSAfter, rss, pss, m.anon10k())
		}
		time.Sleep(idleSettle) // the balancers see the connections close
	}
	for round := 1; round <= o.rounds; round++ {
		order := append([]string(nil), impls...)
		if round%2 == 0 {
			slices.Reverse(order)
		}
		if round == 1 {
			order = append([]string{implDirect}, order...)
		}
		figs, err := b.measureRound(o, round, order)
		if err != nil {
			return nil, err
		}
		for _, impl := range append([]string{implDirect}, impls...) {
			f, ok := figs[impl]
			if !ok {
				continue
			}
			res.Rounds[impl] = append(res.Rounds[impl], f)
			if n := f.KeepAlive.Errors + f.Close.Errors; n > 0 {
				res.Notes = append(res.Notes, fmt.Sprintf("round %d, %s: wrk counted %d socket errors or non-2xx answers", round, impl, n))
			}
		}
	}
	if o.kill {
		res.KillSpec = fmt.Sprintf("%d new connections/s for %v (one GET each, %v deadline), one of %d backends killed (SIGKILL) at %v",
			o.killRate, o.killFor, requestDeadline, numBackends, o.killAt)
		for _, impl := range impls {
			k, err := b.killTest(o, impl, impls)
			if err != nil {
				return nil, fmt.Errorf("kill test, %s: %w", impl, err)
			}
			res.Kill[impl] = k
		}
	}
	res.Notes = append(res.Notes, "load average at the end: "+procfs.LoadAvg())
	if b.keep {
		res.Notes = append(res.Notes, "work directory kept: "+b.work)
	}
	return res, nil
}

func (b *bench) setup(o options, res *results) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (network namespaces): run it as sudo go run ./bench/lb")
	}
	for _, t := range []string{"ip", "haproxy", "wrk", "iperf3", "go"} {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("%s is not installed (apt-get install -y haproxy wrk iperf3): %w", t, err)
		}
	}
	work, err := os.MkdirTemp("", "vsI-lb-")
	if err != nil {
		return fmt.Errorf("work directory: %w", err)
	}
	b.mu.Lock()
	b.work = work
	b.mu.Unlock()

	b.say("building bench/lb/backend")
	b.backendBin = filepath.Join(work, "backend")
	if out, err := exec.Command("go", "build", "-o", b.backendBin, "github.com/vipstack/vipstack/bench/lb/backend").CombinedOutput(); err != nil {
		return fmt.Errorf("go build bench/lb/backend: %v\n%s", err, out)
	}
	cfgs := map[string]string{}
	for _, impl := range []string{implHAProxy, implVipstack} {
		cfgs[impl] = filepath.Join(work, impl+".cfg")
		cfg := renderConfig(portsFor(impl), filepath.Join(work, impl+".sock"), o.mode == "http")
		if err := os.WriteFile(cfgs[impl], []byte(cfg), 0o644); err != nil {
			return err
		}
	}
	if out, err := exec.Command("haproxy", "-c", "-f", cfgs[implHAProxy]).CombinedOutput(); err != nil {
		return fmt.Errorf("haproxy -c rejects the benchmark's configuration: %v\n%s", err, out)
	}
	res.Versions = append(res.Versions,
		fmt.Sprintf("bench/lb (mode %s, vipstack --datapath %s --http-engine %s): %s; args: %q", o.mode, o.datapath, o.httpEngine, time.Now().UTC().Format("2006-01-02 15:04 MST"), os.Args[1:]),
		"haproxy:  "+firstLine(exec.Command("haproxy", "-v")))

	// vipstack: build it, then ask `vipstack lb --check` about the same
	// configuration; either failing leaves vipstack out of this run.
	if o.vipstackBin != "" {
		if _, err := os.Stat(o.vipstackBin); err != nil {
			return fmt.Errorf("-vipstack: %w", err)
		}
		b.vipBin = o.vipstackBin
	} else {
		b.say("building ./cmd/vipstack")
		bin, err := peers.BuildVipstack(work)
		if err != nil {
			res.Skipped = fmt.Sprintf("building ./cmd/vipstack failed: %v", err)
		}
		b.vipBin = bin
	}
	if res.Skipped == "" {
		out, err := exec.Command(b.vipBin, "lb", "--check", "--datapath", o.datapath, "--http-engine", o.httpEngine, "-f", cfgs[implVipstack]).CombinedOutput()
		if err != nil {
			res.Skipped = fmt.Sprintf("`vipstack lb --check -f %s` failed (%v): %s", cfgs[implVipstack], err, headLines(string(out), 3))
		} else {
			res.Versions = append(res.Versions, "vipstack: "+firstLine(exec.Command(b.vipBin, "version")))
		}
	}
	if res.Skipped != "" {
		b.say("vipstack will not be measured: %s", res.Skipped)
	}
	res.Versions = append(res.Versions,
		"clients:  "+firstLine(exec.Command("wrk", "-v"))+"; "+firstLine(exec.Command("iperf3", "-v")),
		fmt.Sprintf("machine:  %d CPUs, kernel %s, load average at start %s", runtime.NumCPU(), kernel(), procfs.LoadAvg()))

	b.say("building the namespace")
	topo, err := testnet.Build(testnet.Options{Hosts: 1, Prefix: o.netnsPrefix})
	if err != nil {
		return fmt.Errorf("namespace: %w", err)
	}
	b.mu.Lock()
	b.topo, b.h = topo, topo.Hosts[0]
	b.mu.Unlock()
	// Tens of thousands of short connections per run: widen the ephemeral
	// range (every listening port here is below it).
	if _, err := b.h.Run("sysctl", "-qw", "net.ipv4.ip_local_port_range=16000 65000"); err != nil {
		return err
	}
	// Each balancer's clients have an address of their own (clientAddr).
	for _, impl := range []string{implHAProxy, implVipstack} {
		if _, err := b.h.Run("ip", "addr", "add", clientAddr(impl)+"/32", "dev", "lo"); err != nil {
			return err
		}
	}

	b.say("starting %d backends and iperf3 -s", numBackends)
	for i := 1; i <= numBackends; i++ {
		if err := b.startBackend(i); err != nil {
			return err
		}
	}
	if _, err := b.start("iperf3", "iperf3", "-s", "-p", strconv.Itoa(iperfPort)); err != nil {
		return err
	}
	if err := b.waitTCP(iperfPort, 5*time.Second); err != nil {
		return fmt.Errorf("iperf3 -s: %w", err)
	}

	// Both executables are read from disk, as on a node, not from the
	// page cache in the folios go build left, which every fault maps
	// whole (procfs.EvictPageCache): without it vipstack's RSS before the
	// idle test was 21.3-24.0 MiB in most runs, 35.0 and 36.8 in two
	// whose read-only data mapping held 19 MiB, not 7 (-smaps).
	if err := evictExecutables("haproxy", b.vipBin); err != nil {
		return err
	}
	b.say("starting haproxy")
	if _, err := b.start(implHAProxy, "haproxy", "-db", "-n", strconv.Itoa(haproxyMaxConn), "-f", cfgs[implHAProxy]); err != nil {
		return err
	}
	if res.Skipped == "" {
		b.say("starting vipstack lb")
		if _, err := b.start(implVipstack, b.vipBin, "lb", "--datapath", o.datapath, "--http-engine", o.httpEngine, "-f", cfgs[implVipstack]); err != nil {
			return err
		}
	}
	for _, impl := range []string{implHAProxy, implVipstack} {
		if impl == implVipstack && res.Skipped != "" {
			continue
		}
		if err := b.waitSpread(impl, 20*time.Second); err != nil {
			if impl == implHAProxy {
				return err
			}
			res.Skipped = fmt.Sprintf("vipstack lb did not balance over the 3 backends: %v; its log:\n%s", err, b.procs[implVipstack].tail())
			b.procs[implVipstack].kill()
		}
	}
	return nil
}

// measureRound takes one round's figures for each of order: wrk
// keep-alive, wrk Connection: close and iperf3 straight to the first
// backend (implDirect) or through a balancer's frontends. The targets of
// each test are measured back to back, so the two balancers' figures in a
// pair are seconds apart, not a whole round: the machine's speed drifts
// (the same balancer measures 15-30 % apart from minute to minute here),
// and a pair taken back to back sees the same machine. The order flips
// from test to test (A B, B A, A B) and run() flips it from round to
// round, so neither balancer always goes first after the same test.
func (b *bench) measureRound(o options, round int, order []string) (map[string]figures, error) {
	figs := make(map[string]figures, len(order))
	pacedRate := 0 // the round's open-loop rate, set by the first paced run
	tests := []struct {
		name string
		run  func(impl string, f *figures) error
	}{
		{"wrk keep-alive", func(impl string, f *figures) (err error) {
			f.KeepAlive, f.KeepAliveCPU, err = b.wrkCPU(o.dur, impl, false)
			return err
		}},
		{"wrk Connection: close", func(impl string, f *figures) (err error) {
			f.Close, f.CloseCPU, err = b.wrkCPU(o.dur, impl, true)
			return err
		}},
		{"open loop keep-alive", func(impl string, f *figures) (err error) {
			if o.pacedRate == 0 {
				return nil
			}
			if pacedRate == 0 {
				// Every wrk keep-alive run of the round came first.
				hps := figs[implHAProxy].KeepAlive.RPS
				if pacedRate, err = openLoopRate(o.pacedRate, o.pacedFrac, hps); err != nil {
					return err
				}
				if o.pacedRate == pacedAuto {
					b.say("round %d: open loop at %d GETs/s, %.2f of haproxy's wrk keep-alive %.0f requests/s", round, pacedRate, o.pacedFrac, hps)
				} else {
					b.say("round %d: open loop at %d GETs/s (-paced-rate)", round, pacedRate)
				}
			}
			if f.Paced, err = b.pacedLatency(impl, pacedRate, o.dur); err == nil {
				b.say("round %d, %s: open loop p50 %v, p99 %v; the client's CPU %v per request", round, impl, f.Paced.P50, f.Paced.P99, f.Paced.ClientCPU)
			}
			return err
		}},
		{"iperf3", func(impl string, f *figures) error {
			out, err := b.runBounded(time.Duration(o.iperfSecs)*time.Second+30*time.Second,
				"iperf3", "-c", clientAddr(impl), "-p", strconv.Itoa(bulkPort(impl)), "-t", strconv.Itoa(o.iperfSecs), "-J")
			if err != nil {
				return err
			}
			f.Bps, err = parseIperf3(out)
			return err
		}},
	}
	for i, t := range tests {
		seq := slices.Clone(order)
		if i%2 == 1 {
			slices.Reverse(seq)
		}
		for _, impl := range seq {
			b.say("round %d, %s: %s", round, impl, t.name)
			f := figs[impl]
			if err := t.run(impl, &f); err != nil {
				return nil, fmt.Errorf("round %d, %s, %s: %w", round, impl, t.name, err)
			}
			figs[impl] = f
		}
	}
	return figs, nil
}

// clientAddr is the loopback address the clients of impl connect to,
// which is also their source address (a /32 on lo gives its own
// source): direct 127.0.0.1, haproxy 127.0.0.2, vipstack 127.0.0.3. With
// one address for all, the kernel path's DNATed connections (client
// port P to the frontend, then to a backend) and the others' (client port
// P straight to the same backend) meet in the backends' TIME_WAIT sockets
// and in conntrack: measured, a backend's TIME_WAIT socket rejects a
// SYN from the other population (TcpExtPAWSTimewait, SYN retried after
// 1 s) and conntrack remaps source ports, which slowed whichever ran
// after the other (docs/design/lb-kernel.md). A VIP's clients are other
// hosts, not the balancer's backends' own clients on the same address.
func clientAddr(impl string) string {
	switch impl {
	case implHAProxy:
		return "127.0.0.2"
	case implVipstack:
		return "127.0.0.3"
	}
	return "127.0.0.1"
}

// mainPort and bulkPort are where wrk and iperf3 connect for impl.
func mainPort(impl string) int {
	if impl == implDirect {
		return backendBasePort
	}
	return portsFor(impl).Main
}

func bulkPort(impl string) int {
	if impl == implDirect {
		return iperfPort
	}
	return portsFor(impl).Bulk
}

// wrkCPU runs wrk against impl and measures the CPU time the balancer's
// process spends per request meanwhile (0 for direct).
func (b *bench) wrkCPU(d time.Duration, impl string, closeConns bool) (wrkResult, time.Duration, error) {
	if impl == implDirect {
		r, err := b.wrk(d, impl, closeConns)
		return r, 0, err
	}
	b.mu.Lock()
	p := b.procs[impl]
	b.mu.Unlock()
	if p == nil {
		return wrkResult{}, 0, fmt.Errorf("%s is not running", impl)
	}
	before, err := procCPU(p.cmd.Process.Pid)
	if err != nil {
		return wrkResult{}, 0, err
	}
	r, err := b.wrk(d, impl, closeConns)
	if err != nil {
		return r, 0, err
	}
	after, err := procCPU(p.cmd.Process.Pid)
	if err != nil {
		return r, 0, err
	}
	if r.Requests == 0 {
		return r, 0, fmt.Errorf("wrk through %s completed no request", impl)
	}
	return r, (after - before) / time.Duration(r.Requests), nil
}

// procCPU is the CPU time process pid has used so far.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseProcStatCPU(string(b))
}

func (b *bench) wrk(d time.Duration, impl string, closeConns bool) (wrkResult, error) {
	args := []string{"-t2", "-c64", "-d" + strconv.Itoa(int(d.Seconds())) + "s", "--latency"}
	if closeConns {
		args = append(args, "-H", "Connection: close")
	}
	args = append(args, fmt.Sprintf("http://%s/", net.JoinHostPort(clientAddr(impl), strconv.Itoa(mainPort(impl)))))
	out, err := b.runBounded(d+30*time.Second, "wrk", args...)
	if err != nil {
		return wrkResult{}, err
	}
	return parseWrk(string(out))
}

// killTest runs the fixed load through impl and kills backend 2 at
// o.killAt, then restarts it and waits until every balancer in all sees
// the three backends again.
func (b *bench) killTest(o options, impl string, all []string) (killResult, error) {
	for _, i := range all {
		if err := b.waitSpread(i, 20*time.Second); err != nil {
			return killResult{}, fmt.Errorf("before the test: %w", err)
		}
	}
	b.say("kill test, %s: %d conn/s for %v, killing b2 at %v", impl, o.killRate, o.killFor, o.killAt)
	addr := net.JoinHostPort(clientAddr(impl), strconv.Itoa(portsFor(impl).Main))
	b.mu.Lock()
	victim := b.procs["b2"]
	b.mu.Unlock()
	k := b.load(addr, o.killRate, o.killFor, o.killAt, victim.kill)
	if err := b.startBackend(2); err != nil {
		return k, fmt.Errorf("restart b2: %w", err)
	}
	return k, nil
}

// proc is a process started in the namespace.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

// start runs name's program in the namespace in its own process group,
// with its output in the work directory.
// evictExecutables drops each program's file (looked up in PATH) from the
// page cache; an empty name is skipped.
func evictExecutables(progs ...string) error {
	for _, prog := range progs {
		if prog == "" {
			continue
		}
		path, err := exec.LookPath(prog)
		if err != nil {
			return err
		}
		if err := procfs.EvictPageCache(path); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) start(name, bin string, args ...string) (*proc, error) {
	p := &proc{name: name, logPath: filepath.Join(b.work, name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	p.cmd = b.h.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.h.Start(p.cmd); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	b.procs[name] = p
	go func() {
		_ = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// kill sends SIGKILL to the process group and waits (bounded) for it.
func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// tail returns the end of the process's output.
func (p *proc) tail() string {
	out, _ := os.ReadFile(p.logPath)
	const n = 2000
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return string(out)
}

func (b *bench) startBackend(i int) error {
	name := "b" + strconv.Itoa(i)
	port := backendBasePort + i - 1
	if _, err := b.start(name, b.backendBin, "-name", name, "-addr", "127.0.0.1:"+strconv.Itoa(port)); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, _, err := b.get(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), "/readyz")
		if err == nil && code == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("backend %s does not answer /readyz after 5 s (%v, status %d): %s", name, err, code, b.procs[name].tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitTCP waits until something accepts connections on port.
func (b *bench) waitTCP(port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var err error
		_ = b.h.Do(func() error {
			var c net.Conn
			if c, err = net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second); err == nil {
				c.Close()
			}
			return nil
		})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing accepts on port %d after %v: %w", port, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitSpread waits until impl's main frontend answers from every backend.
func (b *bench) waitSpread(impl string, timeout time.Duration) error {
	addr := net.JoinHostPort(clientAddr(impl), strconv.Itoa(portsFor(impl).Main))
	deadline := time.Now().Add(timeout)
	var last error
	for {
		seen := map[string]bool{}
		for i := 0; i < 4*numBackends; i++ {
			code, body, err := b.get(addr, "/")
			if err != nil {
				last = err
				break
			}
			if code == http.StatusOK {
				seen[strings.TrimSpace(body)] = true
			}
		}
		if len(seen) == numBackends {
			return nil
		}
		if last == nil {
			last = fmt.Errorf("answers came from %d of %d backends", len(seen), numBackends)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s on %s: %w (after %v)", impl, addr, last, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// get does one HTTP/1.1 GET on a new connection from inside the namespace.
func (b *bench) get(addr, path string) (int, string, error) {
	var c net.Conn
	if err := b.h.Do(func() (err error) {
		c, err = net.DialTimeout("tcp", addr, 2*time.Second)
		return err
	}); err != nil {
		return 0, "", err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(3 * time.Second)); err != nil {
		return 0, "", err
	}
	return request(c, path)
}

// request sends GET path with Connection: close on c and reads the answer.
func request(c net.Conn, path string) (int, string, error) {
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n", path); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, "", err
	}
	return resp.StatusCode, string(body), nil
}

// runBounded runs a client in the namespace and returns its standard
// output; it is killed (whole process group) after timeout.
func (b *bench) runBounded(timeout time.Duration, bin string, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := b.h.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := b.h.Start(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	t := time.AfterFunc(timeout, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err := cmd.Wait()
	if !t.Stop() {
		return nil, fmt.Errorf("%s %s: killed after %v", bin, strings.Join(args, " "), timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s%s", bin, strings.Join(args, " "), err, stderr.Bytes(), stdout.Bytes())
	}
	return stdout.Bytes(), nil
}

// close stops every process by PID, removes the namespace and, unless
// -keep, the work directory. Safe to call twice and from the signal
// goroutine.
func (b *bench) close() {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, p := range b.procs {
			p.kill()
		}
		if b.topo != nil {
			b.topo.Close()
		}
		if b.work != "" && !b.keep {
			_ = os.RemoveAll(b.work)
		}
	})
}

func firstLine(cmd *exec.Cmd) string {
	out, err := cmd.CombinedOutput()
	if err != nil && len(out) == 0 {
		return fmt.Sprintf("(%s: %v)", cmd.Path, err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

// headLines returns the first n non-empty lines of s, joined by " / ".
func headLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && len(lines) < n {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, " / ")
}

func kernel() string {
	out, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
