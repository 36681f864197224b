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
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/vipstack/vipstack/internal/benchdoc"
	"github.com/vipstack/vipstack/internal/ipfailover"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/procfs"
	"github.com/vipstack/vipstack/internal/testnet"
)

const (
	monitorPort = 8080
	restWindow  = 10 * time.Second
	// quietGARP must outlast garp_master_delay (5 s): the second burst of
	// announcements after a takeover is not "at rest".
	quietGARP   = 6 * time.Second
	settleLimit = 180 * time.Second
	// recoverLimit bounds the wait for every moved VIP to be announced.
	recoverLimit = 90 * time.Second
	probeRate    = 4000 // ARP probes per second in the final check
)

type options struct {
	trials int
	vips   int
	only   *regexp.Regexp
	rate   int
	v      bool
	keep   bool
	bin    string
	prefix string
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ipfailover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.trials, "trials", 3, "trials per variant (the median is reported)")
	fs.IntVar(&o.vips, "vips", 10000, "VIPs in the pool (250 per /24 from 198.18.16.0)")
	fs.IntVar(&o.rate, "announce-rate", 1000, "vipstack's --announce-rate for the paced variant")
	only := fs.String("only", "", "run only the variants whose name matches this `regexp` (keepalived, vipstack, vipstack-unpaced)")
	fs.BoolVar(&o.v, "v", false, "narrate every step")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (configurations and node logs) and print its path")
	fs.StringVar(&o.bin, "vipstack", "", "vipstack binary (default: build ./cmd/vipstack)")
	fs.StringVar(&o.prefix, "prefix", "vsL", "prefix of the network namespaces' names")
	markdown := fs.String("markdown", "", "write the results into the ipfailover block of this Markdown `file` (docs/benchmarks.md)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || o.trials < 1 || o.vips < 6 || o.vips > 10000 || o.rate < 1 {
		fmt.Fprintf(stderr, "ipfailover: want no arguments, -trials >= 1, -vips from 6 to 10000, -announce-rate >= 1\n")
		return 2
	}
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			fmt.Fprintf(stderr, "ipfailover: -only: %v\n", err)
			return 2
		}
		o.only = re
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "ipfailover: needs root (network namespaces, raw sockets): sudo go run ./bench/ipfailover")
		return 2
	}
	variants := []variant{
		{Name: "keepalived", Impl: "keepalived"},
		{Name: "vipstack", Impl: "vipstack", AnnounceRate: o.rate},
		{Name: "vipstack-unpaced", Impl: "vipstack", AnnounceRate: 0},
	}
	var picked []variant
	for _, v := range variants {
		if o.only == nil || o.only.MatchString(v.Name) {
			picked = append(picked, v)
		}
	}
	for _, tool := range []string{"ip", "keepalived"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Fprintf(stderr, "ipfailover: %s is not installed\n", tool)
			return 2
		}
	}
	work, err := os.MkdirTemp("", "vsL-ipfailover-bench-")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	b := &bench{o: o, work: work, out: stdout}
	defer func() {
		if b.o.keep {
			fmt.Fprintf(stdout, "work directory kept: %s\n", work)
			return
		}
		os.RemoveAll(work)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		s := <-sig
		fmt.Fprintf(stderr, "\nipfailover: %v: cleaning up\n", s)
		b.cleanup()
		os.Exit(130)
	}()
	if o.bin == "" {
		b.say("building ./cmd/vipstack")
		if o.bin, err = buildVipstack(work); err != nil {
			fmt.Fprintf(stderr, "ipfailover: %v\n", err)
			return 1
		}
	}
	b.o.bin = o.bin

	loadAtStart := procfs.LoadAvg()
	facts := benchdoc.Collect("./bench/ipfailover", args, firstLine("keepalived", "--version"))
	results := map[string][]trialResult{}
	for i := 1; i <= o.trials; i++ {
		for _, v := range picked {
			b.say(fmt.Sprintf("trial %d/%d: %s", i, o.trials, v.Name))
			r, err := b.trial(v)
			b.cleanup()
			if err != nil {
				fmt.Fprintf(stderr, "ipfailover: trial %d of %s: %v\n", i, v.Name, err)
				return 1
			}
			if r.Unsettled != "" {
				fmt.Fprintf(stdout, "%-17s trial %d: DID NOT SETTLE: %s (node logs kept under %s)\n", v.Name, i, r.Unsettled, work)
				results[v.Name] = append(results[v.Name], r)
				continue
			}
			fmt.Fprintf(stdout, "%-17s trial %d: held %v, moved %d, first %v, every %v, CPU %v %%, RSS %v MiB, PSS %v MiB, VRRP %.1f/s, answered once %d, twice %d\n",
				v.Name, i, r.Held, r.Moved, r.First.Round(time.Millisecond), r.Last.Round(time.Millisecond),
				fmtFloats(r.CPU, 2), fmtFloats(r.RSS, 1), fmtFloats(r.PSS, 1), r.VRRPPerSecond, r.Answered, r.Twice)
			results[v.Name] = append(results[v.Name], r)
		}
	}
	var sums []summary
	for _, v := range picked {
		sums = append(sums, summarize(v.Name, results[v.Name]))
	}
	fmt.Fprintf(stdout, "\nbench/ipfailover: %s; %d CPUs; Linux %s; load average at start %s; %s\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), firstLine("uname", "-r"), loadAtStart, firstLine("keepalived", "--version"))
	fmt.Fprintf(stdout, "%d VIPs, 3 nodes, VRRPv2 advert 1 s, 6 groups; %d trials each; vipstack --announce-rate %d per group\n\n", o.vips, o.trials, o.rate)
	printReport(stdout, o.vips, sums)
	if *markdown != "" {
		rep := report(o.vips, sums)
		rep.Para("%d VIPs, 3 nodes, VRRPv2 advert 1 s, 6 groups; %d trials each; vipstack --announce-rate %d per group.", o.vips, o.trials, o.rate)
		if err := benchdoc.Write(*markdown, "ipfailover", facts, rep); err != nil {
			fmt.Fprintf(stderr, "ipfailover: -markdown: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "\nwrote the results into %s\n", *markdown)
	}
	return 0
}

// firstLine runs a command and returns the first line it prints.
func firstLine(name string, args ...string) string {
	out, _ := exec.Command(name, args...).CombinedOutput()
	l, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return l
}

func fmtFloats(v []float64, prec int) string {
	var s []string
	for _, x := range v {
		s = append(s, strconv.FormatFloat(x, 'f', prec, 64))
	}
	return "[" + strings.Join(s, " ") + "]"
}

// buildVipstack builds cmd/vipstack; until main.go dispatches the
// ipfailover subcommand it overlays a main.go that does.
func buildVipstack(dir string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	mainGo := filepath.Join(root, "cmd", "vipstack", "main.go")
	src, err := os.ReadFile(mainGo)
	if err != nil {
		return "", err
	}
	if strings.Contains(string(src), `"ipfailover"`) {
		return peers.BuildVipstack(dir)
	}
	patched := strings.Replace(string(src), "\tcase \"vrrp\":\n",
		"\tcase \"ipfailover\":\n\t\treturn runIPFailover(ctx, args[1:], stdout, stderr)\n\tcase \"vrrp\":\n", 1)
	pf, ov := filepath.Join(dir, "main.go"), filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(pf, []byte(patched), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(ov, []byte(fmt.Sprintf(`{"Replace":{%q:%q}}`, mainGo, pf)), 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "vipstack")
	cmd := exec.Command("go", "build", "-overlay", ov, "-o", bin, "./cmd/vipstack")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, b)
	}
	return bin, nil
}

type bench struct {
	o    options
	work string
	out  io.Writer

	mu    sync.Mutex
	topo  *testnet.Topology
	cap   *capture
	lns   []net.Listener
	procs []*exec.Cmd
}

func (b *bench) say(s string) {
	if b.o.v {
		fmt.Fprintf(b.out, "%s  %s\n", time.Now().Format("15:04:05.000"), s)
	}
}

func (b *bench) cleanup() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.procs {
		if c.Process != nil {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		}
	}
	for _, c := range b.procs {
		_ = c.Wait()
	}
	b.procs = nil
	for _, ln := range b.lns {
		ln.Close()
	}
	b.lns = nil
	if b.cap != nil {
		b.cap.close()
		b.cap = nil
	}
	if b.topo != nil {
		b.topo.Close()
		b.topo = nil
	}
}

func (b *bench) env() []string {
	return []string{
		"OPENSHIFT_HA_CONFIG_NAME=bench",
		"OPENSHIFT_HA_VIRTUAL_IPS=" + vipList(b.o.vips),
		"OPENSHIFT_HA_VIP_GROUPS=6",
		"OPENSHIFT_HA_REPLICA_COUNT=3",
		fmt.Sprintf("OPENSHIFT_HA_MONITOR_PORT=%d", monitorPort),
		"OPENSHIFT_HA_NETWORK_INTERFACE=eth0",
		"OPENSHIFT_HA_VRRP_ID_OFFSET=10",
	}
}

func (b *bench) trial(v variant) (trialResult, error) {
	r := trialResult{Variant: v.Name}
	env := b.env()
	m := map[string]string{}
	for _, kv := range env {
		k, val, _ := strings.Cut(kv, "=")
		m[k] = val
	}
	spec, err := ipfailover.Parse(ipfailover.Input{Env: m})
	if err != nil {
		return r, err
	}
	topo, err := testnet.Build(testnet.Options{Hosts: 3, Client: true, Prefix: b.o.prefix})
	if err != nil {
		return r, err
	}
	b.mu.Lock()
	b.topo = topo
	b.mu.Unlock()
	for _, h := range topo.Hosts {
		var ln net.Listener
		if err := h.Do(func() (err error) { ln, err = net.Listen("tcp", fmt.Sprintf(":%d", monitorPort)); return err }); err != nil {
			return r, err
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		b.mu.Lock()
		b.lns = append(b.lns, ln)
		b.mu.Unlock()
	}
	c, err := startCapture(topo.Client)
	if err != nil {
		return r, fmt.Errorf("capture on the client: %w", err)
	}
	b.mu.Lock()
	b.cap = c
	b.mu.Unlock()

	dir, err := os.MkdirTemp(b.work, v.Name+"-")
	if err != nil {
		return r, err
	}
	// The nodes start as on freshly booted machines (procfs.EvictPageCache):
	// a binary go build has just written sits in the page cache in large
	// folios, which a fault maps whole.
	exe := b.o.bin
	if v.Impl == "keepalived" {
		exe, _ = exec.LookPath("keepalived")
	}
	if err := procfs.EvictPageCache(exe); err != nil {
		return r, err
	}
	var cmds []*exec.Cmd
	for i, h := range topo.Hosts {
		var cmd *exec.Cmd
		nd := filepath.Join(dir, fmt.Sprintf("node%d", i+1))
		if err := os.MkdirAll(nd, 0o755); err != nil {
			return r, err
		}
		switch v.Impl {
		case "keepalived":
			conf, err := ipfailover.OriginConfig(spec, h.IPv4.Addr(), "eth0", func(n int) int { return n - 1 })
			if err != nil {
				return r, err
			}
			path := filepath.Join(nd, "keepalived.conf")
			if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
				return r, err
			}
			cmd = h.Command("keepalived", "-n", "-l", "--vrrp", "-f", path,
				"-p", filepath.Join(nd, "keepalived.pid"), "-r", filepath.Join(nd, "vrrp.pid"))
		default:
			cmd = h.Command(b.o.bin, "ipfailover", "--state-dir", nd, "--announce-rate", strconv.Itoa(v.AnnounceRate))
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
		}
		logf, err := os.Create(filepath.Join(nd, "log"))
		if err != nil {
			return r, err
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := h.Start(cmd); err != nil {
			logf.Close()
			return r, err
		}
		logf.Close()
		b.mu.Lock()
		b.procs = append(b.procs, cmd)
		b.mu.Unlock()
		cmds = append(cmds, cmd)
	}
	b.say("nodes started; waiting until every VIP is held once and announcements stop")

	held, err := b.settle(topo.Hosts, spec.VIPs, c)
	if err != nil {
		// A pool that never converges is a result, not a bench failure:
		// record it, keep the node logs, and go on with the next trial.
		r.Unsettled = err.Error()
		b.o.keep = true
		return r, nil
	}
	for _, hs := range held {
		r.Held = append(r.Held, len(hs))
	}
	b.say(fmt.Sprintf("at rest: held %v; measuring for %v", r.Held, restWindow))

	pids := make([][]int, len(cmds))
	before := make([]uint64, len(cmds))
	for i, cmd := range cmds {
		pids[i] = procfs.Group(cmd.Process.Pid)
		before[i] = procfs.CPUTicks(pids[i])
	}
	v0, t0 := c.vrrpCount.Load(), time.Now()
	time.Sleep(restWindow) // the measurement window
	v1, t1 := c.vrrpCount.Load(), time.Now()
	for i := range cmds {
		pids[i] = procfs.Group(cmds[i].Process.Pid)
		after := procfs.CPUTicks(pids[i])
		r.CPU = append(r.CPU, float64(after-before[i])/procfs.ClockTicks/t1.Sub(t0).Seconds()*100)
		rss, pss := procfs.MemMiB(pids[i])
		r.RSS, r.PSS = append(r.RSS, rss), append(r.PSS, pss)
	}
	r.VRRPPerSecond = float64(v1-v0) / t1.Sub(t0).Seconds()

	// Kill node 1: its processes and its switch port.
	dead := held[0]
	r.Moved = len(dead)
	if r.Moved == 0 {
		return r, errors.New("node 1 holds no VIP: nothing would move")
	}
	var deadVIPs []netip.Addr
	for a := range dead {
		deadVIPs = append(deadVIPs, a)
	}
	mac, err := net.ParseMAC(topo.Hosts[0].MAC)
	if err != nil {
		return r, err
	}
	c.watchAnnouncements(deadVIPs, mac)
	drops0 := softnetDrops()
	b.say(fmt.Sprintf("killing node 1 (%d VIPs) at %s", r.Moved, time.Now().UTC().Format("15:04:05.000")))
	kill := time.Now()
	_ = syscall.Kill(-cmds[0].Process.Pid, syscall.SIGKILL)
	if err := topo.Hosts[0].Cut(true); err != nil {
		return r, err
	}
	for {
		n, first, last := c.announced()
		if n == len(deadVIPs) {
			r.First, r.Last = first.Sub(kill), last.Sub(kill)
			break
		}
		if time.Since(kill) > recoverLimit {
			return r, fmt.Errorf("after %v only %d of the %d moved VIPs were announced", recoverLimit, n, len(deadVIPs))
		}
		time.Sleep(20 * time.Millisecond) // polling the capture
	}
	b.say(fmt.Sprintf("every moved VIP announced %v after the kill; probing all VIPs (ARP frames dropped by the capture so far: %d)",
		r.Last.Round(time.Millisecond), c.drops()))
	// Let the survivors finish their announcements before probing.
	for !c.quietFor(quietGARP) && time.Since(kill) < recoverLimit {
		time.Sleep(100 * time.Millisecond) // polling the capture
	}
	heard := c.heardAnnouncements()
	r.Heard, r.Peak, r.SoftnetDrops = len(heard), peakRate(heard, 100*time.Millisecond), softnetDrops()-drops0
	b.say(fmt.Sprintf("heard %d gratuitous ARPs for the moved VIPs, at most %.0f/s over 100 ms; input backlog drops meanwhile: %d",
		r.Heard, r.Peak, r.SoftnetDrops))
	replies, err := c.probe(spec.VIPs, probeRate, time.Second)
	if err != nil {
		return r, err
	}
	for _, a := range spec.VIPs {
		macs := replies[a]
		if macs[topo.Hosts[0].MAC] {
			delete(macs, topo.Hosts[0].MAC) // cannot happen: its port is cut
		}
		switch len(macs) {
		case 1:
			r.Answered++
		case 0:
		default:
			r.Twice++
		}
	}
	return r, nil
}

// settle waits until every VIP is held by exactly one host and no
// gratuitous ARP was heard for quietGARP, and returns who holds what.
func (b *bench) settle(hs []*testnet.Host, vips []netip.Addr, c *capture) ([]map[netip.Addr]bool, error) {
	want := make(map[netip.Addr]bool, len(vips))
	for _, a := range vips {
		want[a] = true
	}
	start := time.Now()
	var last string
	for time.Since(start) < settleLimit {
		held := make([]map[netip.Addr]bool, len(hs))
		total, dup := 0, 0
		seen := map[netip.Addr]bool{}
		for i, h := range hs {
			held[i] = map[netip.Addr]bool{}
			err := h.Do(func() error {
				l, err := netlink.LinkByName(h.Link)
				if err != nil {
					return err
				}
				var addrs []netlink.Addr
				for range 10 { // a dump the kernel interrupted (addresses changing) is retried
					if addrs, err = netlink.AddrList(l, netlink.FAMILY_V4); !errors.Is(err, netlink.ErrDumpInterrupted) {
						break
					}
				}
				if err != nil {
					return err
				}
				for _, ad := range addrs {
					a, _ := netip.AddrFromSlice(ad.IP)
					a = a.Unmap()
					if want[a] {
						held[i][a] = true
					}
				}
				return nil
			})
			if errors.Is(err, netlink.ErrDumpInterrupted) {
				break // addresses are still changing: poll again
			}
			if err != nil {
				return nil, err
			}
			for a := range held[i] {
				if seen[a] {
					dup++
				}
				seen[a] = true
			}
			total += len(held[i])
		}
		last = fmt.Sprintf("held %d %d %d, %d distinct of %d, %d twice", len(held[0]), len(held[1]), len(held[2]), len(seen), len(vips), dup)
		if len(seen) == len(vips) && dup == 0 && c.quietFor(quietGARP) {
			b.say(fmt.Sprintf("settled after %v: %s", time.Since(start).Round(time.Millisecond), last))
			return held, nil
		}
		time.Sleep(500 * time.Millisecond) // polling the nodes
	}
	return nil, fmt.Errorf("not settled after %v: %s", settleLimit, last)
}
