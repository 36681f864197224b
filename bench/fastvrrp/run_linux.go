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
	"strconv"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/benchdoc"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

type options struct {
	soak          time.Duration
	trials, load  int
	bin, markdown string
}

// pair is one implementation's master and backup.
type pair struct {
	impl           peers.Impl
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
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.soak < time.Second || o.trials < 1 || o.load < 0 || o.load > 16 {
		fmt.Fprintln(stderr, "fastvrrp: want -duration >= 1s, -trials >= 1, -load 0..16")
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
	topo, err := testnet.Build(testnet.Options{Hosts: 4, Client: true, Prefix: "vvt"})
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
	vs, ka, err := bench(o, topo, work, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "fastvrrp: %v\n", err)
		return 1
	}
	rep := report(vs.res, ka.res, o.soak, o.load)
	fmt.Fprintln(stdout)
	_ = rep.Text(stdout)
	if o.markdown != "" {
		if err := benchdoc.Write(o.markdown, "fastvrrp", facts, rep); err != nil {
			fmt.Fprintf(stdout, "\nfastvrrp: -markdown: %v\n", err)
		}
	}
	return 0
}

func bench(o options, topo *testnet.Topology, work string, out io.Writer) (vs, ka *pair, err error) {
	w, err := watchAdverts(topo.Client)
	if err != nil {
		return nil, nil, fmt.Errorf("advert watcher: %w", err)
	}
	defer w.close()
	hs := topo.Hosts
	vs = &pair{impl: peers.Vipstack, vrid: 51, vip: netip.MustParseAddr("198.18.0.100"), master: hs[0], backup: hs[1], res: pairResult{Impl: "vipstack"}}
	ka = &pair{impl: peers.Keepalived, vrid: 52, vip: netip.MustParseAddr("198.18.0.101"), master: hs[2], backup: hs[3], res: pairResult{Impl: "keepalived"}}
	for _, p := range []*pair{vs, ka} {
		for i, h := range []*testnet.Host{p.master, p.backup} {
			if p.nodes[i], err = p.start(h, o.bin, work, 0); err != nil {
				return nil, nil, err
			}
		}
	}
	for _, p := range []*pair{vs, ka} {
		if _, err := peers.WaitSoleHolder([]*testnet.Host{p.master, p.backup}, p.vip, p.master, time.Second, 30*time.Second); err != nil {
			return nil, nil, fmt.Errorf("%s pair before the load: %w", p.impl, err)
		}
	}
	// The load: busy loops in the client's namespace, bounded by time.
	limit := o.soak + time.Duration(o.trials)*2*time.Minute
	var loads []*exec.Cmd
	for range o.load {
		c := topo.Client.Command("timeout", strconv.Itoa(int(limit.Seconds())), "sh", "-c", "while :; do :; done")
		if err := topo.Client.Start(c); err != nil {
			return nil, nil, fmt.Errorf("load: %w", err)
		}
		loads = append(loads, c)
	}
	defer func() {
		for _, c := range loads {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		}
	}()
	fmt.Fprintf(out, "pairs settled; %d busy loops started; soaking for %v\n", o.load, o.soak)
	w.startSoak()
	time.Sleep(o.soak) // the soak: counting what the pairs send meanwhile
	st := w.endSoak()
	for _, p := range []*pair{vs, ka} {
		m, b := st[p.master.IPv4.Addr()], st[p.backup.IPv4.Addr()]
		p.res.Adverts, p.res.MaxGap, p.res.FalseFailovers = m.n, m.maxGap, b.episodes
		for _, nd := range p.nodes {
			if !nd.Alive() {
				return nil, nil, fmt.Errorf("%s on %s exited during the soak:\n%s", p.impl, nd.Host.Name, nd.Log())
			}
		}
		fmt.Fprintf(out, "%s: %d master adverts, longest gap %s ms, %d false failovers\n", p.impl, m.n, msf(m.maxGap), b.episodes)
	}
	for i := range o.trials {
		for _, p := range []*pair{ka, vs} {
			d, err := p.crash(w, o.bin, work, i+1)
			if err != nil {
				p.res.CrashErrs = append(p.res.CrashErrs, fmt.Sprintf("trial %d: %v", i+1, err))
				fmt.Fprintf(out, "%s crash %d: %v\n", p.impl, i+1, err)
				continue
			}
			p.res.Crashes = append(p.res.Crashes, d)
			fmt.Fprintf(out, "%s crash %d: backup advertised %s ms after the master's last advert\n", p.impl, i+1, msf(d))
		}
	}
	return vs, ka, nil
}

func (p *pair) start(h *testnet.Host, bin, work string, n int) (*peers.Node, error) {
	prio := backupPriority
	if h == p.master {
		prio = 150
	}
	c := peers.Conf{Version: 3, Interval: advert, VRID: p.vrid, Priority: prio, Interface: h.Link, VIP: netip.PrefixFrom(p.vip, 32)}
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
			last, ok := w.lastBefore(p.master.IPv4.Addr(), t0)
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
