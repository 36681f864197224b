package main

import (
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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/benchdoc"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/procfs"
	"github.com/vipstack/vipstack/internal/testnet"
)

type options struct {
	soak                  time.Duration
	trials, load, rt      int
	rlimit                int // vrrp_rlimit_rttime, us; 0 keepalived's default
	withoutRT             bool
	bin, markdown, prefix string
	logs                  string // directory for the nodes' logs of the soak
}

// pair is one implementation's master and backup.
type pair struct {
	impl           peers.Impl
	rt, rlimit     int // vrrp_rt_priority (0 none) and vrrp_rlimit_rttime (0 not set)
	vrid           int
	vip            netip.Addr
	master, backup *testnet.Host
	nodes          [2]*peers.Node
	res            pairResult
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fastvrrp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.DurationVar(&o.soak, "duration", 10*time.Minute, "length of the soak under load")
	fs.IntVar(&o.trials, "trials", 5, "crashes per implementation")
	fs.IntVar(&o.load, "load", 2, "busy loops run beside the pairs (one per CPU keeps every CPU busy)")
	fs.StringVar(&o.bin, "vipstack", "", "vipstack binary to run (default: build ./cmd/vipstack)")
	fs.StringVar(&o.markdown, "markdown", "", "write the results into the fastvrrp block of this Markdown `file`")
	fs.StringVar(&o.prefix, "prefix", "vvt", "start of the network namespaces' names (1 to 8 letters and digits)")
	fs.IntVar(&o.rt, "rt-priority", 50, "vrrp_rt_priority of both pairs (SCHED_RR); 0: none")
	fs.IntVar(&o.rlimit, "rlimit-rttime", 100000, "vrrp_rlimit_rttime of both pairs with -rt-priority, in us (0: not set, keepalived's default 10000, which killed both keepalived's and vipstack's engines every few seconds on this machine under other load)")
	fs.StringVar(&o.logs, "logs", "", "write each node's log of the soak into this `directory` (created), to read what a false failover's master and backup said")
	fs.BoolVar(&o.withoutRT, "without-rt", false, "also run a vipstack and a keepalived pair without vrrp_rt_priority, beside the others")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.soak < time.Second || o.trials < 1 || o.load < 0 || o.load > 16 || o.rt < 0 || o.rt > 99 || o.rlimit < 0 || !prefixOK(o.prefix) {
		fmt.Fprintf(stderr, "fastvrrp: want -duration >= 1s (got %v), -trials >= 1 (got %d), -load 0..16 (got %d), -rt-priority 0..99 (got %d), -rlimit-rttime >= 0 (got %d), "+
			"-prefix of 1 to 8 letters and digits (got %q)\n", o.soak, o.trials, o.load, o.rt, o.rlimit, o.prefix)
		return 2
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "fastvrrp: needs root (network namespaces, raw sockets)")
		return 1
	}
	work, err := os.MkdirTemp("", "vvt-fastvrrp-")
	if err != nil {
		fmt.Fprintf(stderr, "fastvrrp: %v\n", err)
		return 1
	}
	defer os.RemoveAll(work)
	if o.bin == "" {
		if o.bin, err = peers.BuildVipstack(work); err != nil {
			fmt.Fprintf(stderr, "fastvrrp: build vipstack: %v\n", err)
			return 1
		}
	}
	facts := benchdoc.Collect("./bench/fastvrrp", args, benchdoc.FirstLine("keepalived", "--version"))
	fmt.Fprintf(stdout, "bench/fastvrrp: %s\n", facts)
	hosts := 4
	if o.withoutRT {
		hosts = 8
	}
	topo, err := testnet.Build(testnet.Options{Hosts: hosts, Client: true, Prefix: o.prefix})
	if err != nil {
		fmt.Fprintf(stderr, "fastvrrp: topology: %v\n", err)
		return 1
	}
	defer topo.Close()
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigc)
	go func() {
		<-sigc
		topo.Close()
		os.Exit(130)
	}()
	ps, load, err := bench(o, topo, work, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "fastvrrp: %v\n", err)
		return 1
	}
	var res []pairResult
	for _, p := range ps {
		res = append(res, p.res)
	}
	rep := report(res, reportOpts{rt: o.rt, rlimit: o.rlimit, load: o.load, soak: o.soak}, load)
	fmt.Fprintln(stdout)
	_ = rep.Text(stdout)
	if o.markdown != "" {
		if err := benchdoc.Write(o.markdown, "fastvrrp", facts, rep); err != nil {
			fmt.Fprintf(stdout, "\nfastvrrp: -markdown: %v\n", err)
		}
	}
	return 0
}

// prefixOK reports whether p can start the namespaces' names (testnet
// adds 8 random hex digits and a suffix): 1 to 8 letters and digits.
func prefixOK(p string) bool {
	if len(p) < 1 || len(p) > 8 {
		return false
	}
	for _, r := range p {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

// pairs are the pairs of the run: vipstack and keepalived at -rt-priority
// first (the verdicts' two), then the same without it (-without-rt).
func pairs(o options, hs []*testnet.Host) []*pair {
	ps := []*pair{
		{impl: peers.Vipstack, rt: o.rt, rlimit: o.rlimit, vrid: 51, vip: netip.MustParseAddr("198.18.0.100"), master: hs[0], backup: hs[1]},
		{impl: peers.Keepalived, rt: o.rt, rlimit: o.rlimit, vrid: 52, vip: netip.MustParseAddr("198.18.0.101"), master: hs[2], backup: hs[3]},
	}
	if o.withoutRT {
		ps = append(ps,
			&pair{impl: peers.Vipstack, vrid: 53, vip: netip.MustParseAddr("198.18.0.102"), master: hs[4], backup: hs[5]},
			&pair{impl: peers.Keepalived, vrid: 54, vip: netip.MustParseAddr("198.18.0.103"), master: hs[6], backup: hs[7]})
	}
	for _, p := range ps {
		p.res = pairResult{Impl: string(p.impl), RT: p.rt}
	}
	return ps
}

// bench runs the pairs and returns them with the load average at the end
// of the soak.
func bench(o options, topo *testnet.Topology, work string, out io.Writer) ([]*pair, string, error) {
	w, err := watchAdverts(topo.Client)
	if err != nil {
		return nil, "", fmt.Errorf("advert watcher: %w", err)
	}
	defer w.close()
	ps := pairs(o, topo.Hosts)
	for _, p := range ps {
		for i, h := range []*testnet.Host{p.master, p.backup} {
			if p.nodes[i], err = p.start(h, o.bin, work, 0); err != nil {
				return nil, "", err
			}
		}
	}
	for _, p := range ps {
		if _, err := peers.WaitSoleHolder([]*testnet.Host{p.master, p.backup}, p.vip, p.master, time.Second, 30*time.Second); err != nil {
			return nil, "", fmt.Errorf("%s pair before the load: %w", p.res.Label(), err)
		}
	}
	// The load: busy loops in the client's namespace, bounded by time.
	limit := o.soak + time.Duration(o.trials*len(ps))*time.Minute
	var loads []*exec.Cmd
	for range o.load {
		c := topo.Client.Command("timeout", strconv.Itoa(int(limit.Seconds())), "sh", "-c", "while :; do :; done")
		if err := topo.Client.Start(c); err != nil {
			return nil, "", fmt.Errorf("load: %w", err)
		}
		loads = append(loads, c)
	}
	defer func() {
		for _, c := range loads {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		}
	}()
	fmt.Fprintf(out, "pairs settled; %d busy loops started; soaking for %v\n", o.load, o.soak)
	steal0 := stealTime()
	cpu0, t0 := soakCPU(ps), time.Now()
	w.startSoak()
	time.Sleep(o.soak) // the soak: counting what the pairs send meanwhile
	st := w.endSoak()
	cpu1, elapsed := soakCPU(ps), time.Since(t0)
	for i, p := range ps {
		pct := func(n int) float64 {
			return 100 * float64(cpu1[i][n]-cpu0[i][n]) / procfs.ClockTicks / elapsed.Seconds()
		}
		p.res.MasterCPU, p.res.BackupCPU = pct(0), pct(1)
	}
	load := fmt.Sprintf("%s, CPU time stolen by the hypervisor %v", loadAverage(), (stealTime() - steal0).Round(time.Millisecond))
	if err := soakResults(ps, st, out); err != nil {
		return nil, "", err
	}
	if o.logs != "" {
		if err := saveLogs(ps, o.logs); err != nil {
			fmt.Fprintf(out, "-logs: %v\n", err)
		}
	}
	for i := range o.trials {
		for _, p := range ps {
			d, err := p.crash(w, o.bin, work, i+1)
			if err != nil {
				p.res.CrashErrs = append(p.res.CrashErrs, fmt.Sprintf("trial %d: %v", i+1, err))
				fmt.Fprintf(out, "%s crash %d: %v\n", p.res.Label(), i+1, err)
				continue
			}
			p.res.Crashes = append(p.res.Crashes, d)
			fmt.Fprintf(out, "%s crash %d: backup advertised %s ms after the master's last advert\n", p.res.Label(), i+1, msf(d))
		}
	}
	return ps, load, nil
}

// soakCPU is the CPU time so far of each pair's master and backup, their
// process groups with their reaped children, in procfs.ClockTicks.
func soakCPU(ps []*pair) [][2]uint64 {
	out := make([][2]uint64, len(ps))
	for i, p := range ps {
		for j, nd := range p.nodes {
			out[i][j] = procfs.CPUTicks(procfs.Group(nd.Pid()))
		}
	}
	return out
}

// soakResults records what each pair's master and backup sent during the
// soak, and fails if a node exited.
func soakResults(ps []*pair, st map[netip.Addr]soakStats, out io.Writer) error {
	for _, p := range ps {
		m, b := st[p.master.IPv4.Addr()], st[p.backup.IPv4.Addr()]
		p.res.Adverts, p.res.MaxGap, p.res.FalseFailovers, p.res.Gaps = m.n, m.maxGap, b.episodes, m.gaps[:]
		p.res.LongGaps = len(m.long)
		// Against the other implementation's master at the same settings.
		for _, q := range ps {
			if q != p && q.rt == p.rt {
				p.res.Shared = overlapping(m.long, st[q.master.IPv4.Addr()].long)
			}
		}
		for _, nd := range p.nodes {
			if !nd.Alive() {
				return fmt.Errorf("%s on %s exited during the soak:\n%s", p.res.Label(), nd.Host.Name, nd.Log())
			}
		}
		for _, nd := range p.nodes {
			p.res.Killed += len(killedLog.FindAllString(nd.Log(), -1))
			for _, l := range notable(nd.Log()) {
				fmt.Fprintf(out, "  %s: %s\n", nd.Host.Name, l)
			}
		}
		fmt.Fprintf(out, "%s: %d master adverts, longest gap %s ms, %d false failovers, %d VRRP processes killed\n",
			p.res.Label(), m.n, msf(m.maxGap), b.episodes, p.res.Killed)
		for _, at := range b.starts {
			fmt.Fprintf(out, "  false failover at %s: %s\n", at.UTC().Format("15:04:05.000"), silenceAround(m.long, at))
		}
	}
	return nil
}

// silenceAround describes the master's silence that a backup's takeover
// at at fell in: the gap over longGap that holds it, or none.
func silenceAround(long []span, at time.Time) string {
	for _, g := range long {
		if !at.Before(g.from) && !at.After(g.to) {
			return fmt.Sprintf("the master was silent from %s for %s ms", g.from.UTC().Format("15:04:05.000"), msf(g.to.Sub(g.from)))
		}
	}
	return fmt.Sprintf("no silence of the master over %v holds it", longGap)
}

// saveLogs writes each node's log into dir, named for its implementation
// and host.
func saveLogs(ps []*pair, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, p := range ps {
		for _, nd := range p.nodes {
			name := filepath.Join(dir, fmt.Sprintf("%s-%s.log", p.impl, nd.Host.Name))
			if err := os.WriteFile(name, []byte(nd.Log()), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// notableLog picks the log lines that say a process died, was restarted
// or ran late.
var notableLog = regexp.MustCompile(`(?i)exited|died|respawn|killed|signal|SIGXCPU|late|took long|cannot`)

// killedLog matches the line vipstack's supervisor and keepalived's parent
// log when the VRRP process dies (RLIMIT_RTTIME's SIGKILL among others).
var killedLog = regexp.MustCompile(`supervisor: engine died|VRRP child process\(\d+\) died`)

// notable returns up to 8 notable lines of a node's log.
func notable(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if notableLog.MatchString(l) && len(out) < 8 {
			out = append(out, l)
		}
	}
	return out
}

// stealTime is the CPU time the hypervisor took from this machine's
// CPUs so far (/proc/stat's steal, in USER_HZ ticks of 10 ms).
func stealTime() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	n, _ := strconv.Atoi(f[8])
	return time.Duration(n) * 10 * time.Millisecond
}

// loadAverage is /proc/loadavg's first three fields.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func (p *pair) start(h *testnet.Host, bin, work string, n int) (*peers.Node, error) {
	prio := backupPriority
	if h == p.master {
		prio = 150
	}
	c := peers.Conf{Version: 3, Interval: advert, VRID: p.vrid, Priority: prio, Interface: h.Link, VIP: netip.PrefixFrom(p.vip, 32), RTPriority: p.rt}
	if p.rt > 0 {
		c.RLimitRTTime = p.rlimit
	}
	text, err := c.Render(h.Name)
	if err != nil {
		return nil, err
	}
	return peers.Start(h, p.impl, text, filepath.Join(work, fmt.Sprintf("%s-%s-%d", p.impl, h.Name, n)), bin, "--log-level", "info")
}

// crash kills the master and returns the time from its last advert to the
// backup's first; then it starts the master again and waits for it to
// take the VIP back.
func (p *pair) crash(w *watch, bin, work string, n int) (time.Duration, error) {
	t0 := time.Now()
	if err := p.nodes[0].Kill(); err != nil && p.nodes[0].Alive() {
		return 0, fmt.Errorf("kill -9: %w", err)
	}
	var d time.Duration
	deadline := t0.Add(2 * time.Second)
	for {
		if first, ok := w.firstAfter(p.backup.IPv4.Addr(), t0); ok {
			// The master's last advert before the backup's first, not
			// before t0: this process runs beside the load too, and the
			// kill may leave it well after t0.
			last, ok := w.lastBefore(p.master.IPv4.Addr(), first)
			if !ok {
				return 0, errors.New("no advert from the master before the kill")
			}
			d = first.Sub(last)
			break
		}
		if time.Now().After(deadline) {
			return 0, errors.New("the backup did not advertise within 2 s of the kill")
		}
		time.Sleep(20 * time.Millisecond) // polling the watcher
	}
	// The crashed master keeps the VIP in its kernel; remove it, then
	// start the master again.
	_, _ = p.master.Run("ip", "addr", "del", netip.PrefixFrom(p.vip, 32).String(), "dev", p.master.Link)
	nd, err := p.start(p.master, bin, work, n)
	if err != nil {
		return d, fmt.Errorf("restart: %w", err)
	}
	p.nodes[0] = nd
	if _, err := peers.WaitSoleHolder([]*testnet.Host{p.master, p.backup}, p.vip, p.master, time.Second, 30*time.Second); err != nil {
		return d, fmt.Errorf("after the restart: %w", err)
	}
	return d, nil
}
