package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
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
	only        map[string]bool
	vipstackBin string
	keep        bool

	vrrpPackets int
	vrrpRate    int
	vrrpLimit   time.Duration

	lbConns   int
	lbMaxconn int
	lbGlobal  int
	lbTrickle int

	dnsSeconds int
	dnsQPS     int
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flood", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	only := fs.String("only", "vrrp,lb,dns", "comma-separated parts to run: vrrp, lb, dns")
	fs.StringVar(&o.vipstackBin, "vipstack", "", "vipstack binary to run (default: build ./cmd/vipstack)")
	markdown := fs.String("markdown", "", "write the results into the flood block of this Markdown `file` (docs/benchmarks.md)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (configurations and logs) and print its path")
	fs.IntVar(&o.vrrpPackets, "vrrp-packets", 200_000, "VRRP flood: packets to send")
	fs.IntVar(&o.vrrpRate, "vrrp-rate", 20_000, "VRRP flood: packets per second")
	fs.DurationVar(&o.vrrpLimit, "vrrp-limit", 15*time.Second, "VRRP flood: stop after this long even if packets remain")
	fs.IntVar(&o.lbConns, "lb-conns", 10_000, "LB: concurrent slow clients")
	fs.IntVar(&o.lbMaxconn, "lb-maxconn", 7000, "LB: frontend maxconn of both balancers")
	fs.IntVar(&o.lbGlobal, "lb-global", 9000, "LB: global maxconn of both balancers")
	fs.IntVar(&o.lbTrickle, "lb-trickle", 5, "LB: seconds during which every second client sends a byte a second")
	fs.IntVar(&o.dnsSeconds, "dns-seconds", 10, "DNS: dnsperf -l")
	fs.IntVar(&o.dnsQPS, "dns-qps", 20_000, "DNS: dnsperf -Q")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.only = map[string]bool{}
	for _, p := range strings.Split(*only, ",") {
		switch p = strings.TrimSpace(p); p {
		case "vrrp", "lb", "dns":
			o.only[p] = true
		default:
			fmt.Fprintf(stderr, "flood: -only %q: part %q, want vrrp, lb or dns\n", *only, p)
			return 2
		}
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "flood: unexpected arguments %q\n", fs.Args())
		return 2
	case o.vrrpPackets < 1 || o.vrrpPackets > 2_000_000:
		fmt.Fprintf(stderr, "flood: -vrrp-packets %d: want 1..2000000\n", o.vrrpPackets)
		return 2
	case o.vrrpRate < 100 || o.vrrpRate > 500_000:
		fmt.Fprintf(stderr, "flood: -vrrp-rate %d: want 100..500000\n", o.vrrpRate)
		return 2
	case o.vrrpLimit < time.Second || o.vrrpLimit > 5*time.Minute:
		fmt.Fprintf(stderr, "flood: -vrrp-limit %v: want 1s..5m\n", o.vrrpLimit)
		return 2
	case o.lbGlobal < 1 || o.lbGlobal > 9400 || o.lbMaxconn < 1 || o.lbMaxconn >= o.lbGlobal:
		fmt.Fprintf(stderr, "flood: -lb-global %d -lb-maxconn %d: want 1 <= maxconn < global <= 9400 (haproxy needs two descriptors per connection under the 20000 hard limit)\n", o.lbGlobal, o.lbMaxconn)
		return 2
	case o.lbConns < o.lbMaxconn || o.lbConns > 12_000:
		fmt.Fprintf(stderr, "flood: -lb-conns %d: want -lb-maxconn..12000\n", o.lbConns)
		return 2
	case o.lbTrickle < 0 || o.lbTrickle > 60:
		fmt.Fprintf(stderr, "flood: -lb-trickle %d: want 0..60\n", o.lbTrickle)
		return 2
	case o.dnsSeconds < 1 || o.dnsSeconds > 120 || o.dnsQPS < 1 || o.dnsQPS > 200_000:
		fmt.Fprintf(stderr, "flood: -dns-seconds %d -dns-qps %d: want 1..120 and 1..200000\n", o.dnsSeconds, o.dnsQPS)
		return 2
	}

	b := &bench{log: stderr}
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigc)
	go func() {
		s := <-sigc
		fmt.Fprintf(stderr, "\nflood: %v: stopping every process and removing the namespaces\n", s)
		b.close()
		os.Exit(130)
	}()
	defer b.close()

	if err := b.setup(o); err != nil {
		fmt.Fprintf(stderr, "flood: setup: %v\n", err)
		return 1
	}
	code := 0
	facts := benchdoc.Collect("./bench/flood", args)
	md := &benchdoc.Report{}
	if o.only["vrrp"] {
		figs, err := b.vrrp(o)
		if err != nil {
			fmt.Fprintf(stderr, "flood: vrrp: %v\n", err)
			code = 1
		}
		if len(figs) > 0 {
			printVRRP(stdout, figs)
			vrrpReport(md, figs)
			fmt.Fprintln(stdout)
		}
	}
	if o.only["lb"] {
		figs, err := b.lb(o)
		if err != nil {
			fmt.Fprintf(stderr, "flood: lb: %v\n", err)
			code = 1
		}
		if len(figs) > 0 {
			printLB(stdout, figs)
			lbReport(md, figs)
			fmt.Fprintln(stdout)
		}
	}
	if o.only["dns"] {
		f, err := b.dns(o)
		if err != nil {
			fmt.Fprintf(stderr, "flood: dns: %v\n", err)
			code = 1
		} else {
			printDNS(stdout, f)
			dnsReport(md, f)
		}
	}
	if *markdown != "" {
		if err := benchdoc.Write(*markdown, "flood", facts, md); err != nil {
			fmt.Fprintf(stderr, "flood: -markdown: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "wrote the results into %s\n", *markdown)
	}
	fmt.Fprintln(stdout, "load average at the end:", procfs.LoadAvg())
	if o.keep {
		fmt.Fprintln(stdout, "work directory kept:", b.work)
	}
	return code
}

// bench is one run.
type bench struct {
	log  io.Writer
	work string
	bin  string
	keep bool

	mu    sync.Mutex
	topos []*testnet.Topology
	stops []func()
	done  bool
}

func (b *bench) say(format string, a ...any) { fmt.Fprintf(b.log, "flood: "+format+"\n", a...) }

func (b *bench) setup(o options) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (network namespaces, raw sockets): run it as sudo go run ./bench/flood")
	}
	tools := []string{"ip"}
	if o.only["vrrp"] {
		tools = append(tools, "keepalived")
	}
	if o.only["lb"] {
		tools = append(tools, "haproxy")
	}
	if o.only["dns"] {
		tools = append(tools, "dnsperf")
	}
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("%s is not installed: %w", t, err)
		}
	}
	work, err := os.MkdirTemp("", "vf-flood-")
	if err != nil {
		return err
	}
	b.work, b.keep = work, o.keep
	b.bin = o.vipstackBin
	if b.bin == "" {
		b.say("building cmd/vipstack")
		dir := filepath.Join(work, "bin")
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		if b.bin, err = peers.BuildVipstack(dir); err != nil {
			return err
		}
	}
	return nil
}

// topology builds namespaces that close removes.
func (b *bench) topology(o testnet.Options) (*testnet.Topology, error) {
	t, err := testnet.Build(o)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		t.Close()
		return nil, errors.New("stopping")
	}
	b.topos = append(b.topos, t)
	return t, nil
}

// atClose registers f to run when the bench stops.
func (b *bench) atClose(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stops = append(b.stops, f)
}

func (b *bench) close() {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return
	}
	b.done = true
	stops, topos := b.stops, b.topos
	b.mu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
	for _, t := range topos {
		t.Close()
	}
	if b.work != "" && !b.keep {
		os.RemoveAll(b.work)
	}
}

// groupCPU is the CPU time of every process in process group pgrp.
func groupCPU(pgrp int) (time.Duration, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var total time.Duration
	found := false
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		line, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		st, err := parseStat(string(line))
		if err != nil || st.PGrp != pgrp {
			continue
		}
		found = true
		total += st.CPU
	}
	if !found {
		return 0, fmt.Errorf("no process in process group %d", pgrp)
	}
	return total, nil
}

// groupMemory is VmRSS and VmHWM summed over process group pgrp.
func groupMemory(pgrp int) (rss, hwm uint64, err error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0, err
	}
	found := false
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		line, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		st, err := parseStat(string(line))
		if err != nil || st.PGrp != pgrp {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		r, err1 := parseStatusKB(string(status), "VmRSS")
		h, err2 := parseStatusKB(string(status), "VmHWM")
		if err := errors.Join(err1, err2); err != nil {
			return 0, 0, err
		}
		found = true
		rss += r
		hwm += h
	}
	if !found {
		return 0, 0, fmt.Errorf("no process in process group %d", pgrp)
	}
	return rss, hwm, nil
}
