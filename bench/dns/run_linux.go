package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/benchdoc"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
)

type options struct {
	seconds     int
	rounds      int
	maxQPS      int
	rate        int
	trials      int
	probeEvery  time.Duration
	probeN      int
	probePause  time.Duration
	pin         bool
	skipPerf    bool
	skipMDNS    bool
	verbose     bool
	vipstackBin string
	corednsBin  string
	prefix      string
	markdown    string
}

// bench is the state of one run.
type bench struct {
	o         options
	dir       string
	queryFile string
	vipBin    string
	serverCPU int // -1: not pinned
	clientCPU int
	stderr    io.Writer
}

func (b *bench) logf(format string, args ...any) {
	if b.o.verbose {
		fmt.Fprintf(b.stderr, "bench/dns: "+format+"\n", args...)
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench/dns", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.seconds, "l", 10, "seconds per dnsperf run (dnsperf -l)")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds per phase; each round runs both servers, alternating which goes first")
	fs.IntVar(&o.maxQPS, "max-qps", 200000, "dnsperf -Q cap in the throughput phase")
	fs.IntVar(&o.rate, "rate", 5000, "dnsperf -Q in the latency phase (queries per second)")
	fs.IntVar(&o.trials, "trials", 5, "mDNS join/leave trials")
	fs.IntVar(&o.probeN, "rtt-queries", 5000, "queries per server per round of the one-at-a-time latency measurement (the servers take turns query by query)")
	fs.DurationVar(&o.probePause, "rtt-pause", 200*time.Microsecond, "pause after each answer of that measurement")
	fs.DurationVar(&o.probeEvery, "probe-every", 5*time.Millisecond, "how often the mDNS phase asks for the SRV record")
	fs.BoolVar(&o.pin, "pin", runtime.NumCPU() >= 2, "pin the DNS server to CPU 1 and dnsperf to CPU 0 (taskset)")
	fs.BoolVar(&o.skipPerf, "skip-perf", false, "skip the dnsperf part")
	fs.BoolVar(&o.skipMDNS, "skip-mdns", false, "skip the mDNS join/leave part")
	fs.BoolVar(&o.verbose, "v", false, "log every run")
	fs.StringVar(&o.vipstackBin, "vipstack", "", "vipstack binary to run (default: build ./cmd/vipstack)")
	fs.StringVar(&o.corednsBin, "coredns", "", "stock CoreDNS binary to run beside vipstack (default: build ./internal/peers/corednsstock)")
	fs.StringVar(&o.prefix, "prefix", "vsJ", "prefix of the network namespaces' names")
	fs.StringVar(&o.markdown, "markdown", "", "write the results into the dns block of this Markdown `file` (docs/dns.md)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "bench/dns: needs root (network namespaces)")
		return 2
	}
	if !o.skipPerf {
		if _, err := exec.LookPath("dnsperf"); err != nil {
			fmt.Fprintln(stderr, "bench/dns: needs dnsperf (apt-get install -y dnsperf)")
			return 2
		}
	}
	facts := benchdoc.Collect("./bench/dns", args, "dnsperf "+benchdoc.FirstLine("dpkg-query", "-W", "-f", "${Version}", "dnsperf"))
	md := &benchdoc.Report{}
	b := &bench{o: o, serverCPU: -1, clientCPU: -1, stderr: stderr}
	if o.pin {
		b.serverCPU, b.clientCPU = 1, 0
	}
	var err error
	if b.dir, err = os.MkdirTemp("", "vsJ-bench-"); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer os.RemoveAll(b.dir)
	if b.vipBin, err = vipstackBinary(b); err != nil {
		fmt.Fprintf(stderr, "bench/dns: %v\n", err)
		return 1
	}
	if !o.skipPerf {
		if b.o.corednsBin, err = corednsBinary(b); err != nil {
			fmt.Fprintf(stderr, "bench/dns: %v\n", err)
			return 1
		}
	}
	b.queryFile = filepath.Join(b.dir, "queries.txt")
	if err := os.WriteFile(b.queryFile, []byte(strings.Join(queryMix, "\n")+"\n"), 0o644); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}

	topo, err := testnet.Build(testnet.Options{Hosts: 2, Prefix: o.prefix})
	if err != nil {
		fmt.Fprintf(stderr, "bench/dns: %v\n", err)
		return 1
	}
	defer topo.Close()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		topo.Close()
		os.Exit(130)
	}()
	h1, h2 := topo.Hosts[0], topo.Hosts[1]

	fmt.Fprintf(stdout, "bench/dns: %s; %d CPUs; %s; %s; vipstack: %s\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), kernel(), "dnsperf "+strings.TrimPrefix(tool("dnsperf", "-h"), "Version "), tool(b.vipBin, "version"))
	code := 0
	if !o.skipPerf {
		pinning := "not pinned"
		if o.pin {
			pinning = "server on CPU 1, dnsperf on CPU 0"
		}
		fmt.Fprintf(stdout, "query performance: vipstack dns with two Corefiles (clusterdns | template+hosts) and stock CoreDNS (%s) with the template+hosts one, loopback in a namespace; %s\n", firstLine(b.o.corednsBin, "-version"), pinning)
		fmt.Fprintf(stdout, "dnsperf -s 127.0.0.1 -d <%d-query mix> -l %d -c 1 -q 100 -t 2, -Q %d (throughput) or -Q %d (latency); %d round(s) per phase\n\n",
			len(queryMix), o.seconds, o.maxQPS, o.rate, o.rounds)
		md.Para("Query performance: `vipstack dns` with the clusterdns Corefile (*clusterdns*) and with the seeds' template + hosts one (*template*), and stock %s running the template + hosts Corefile as its own binary (*stock CoreDNS*, built by internal/peers/corednsstock); dnsperf -l %d -c 1 -q 100 -t 2, -Q %d (throughput) or -Q %d (latency), %d round(s) per phase; answers identical for all %d queries of the mix.",
			firstLine(b.o.corednsBin, "-version"), o.seconds, o.maxQPS, o.rate, o.rounds, len(queryMix))
		if err := perfPart(b, h1, stdout, md); err != nil {
			fmt.Fprintf(stderr, "bench/dns: %v\n", err)
			return 1
		}
	}
	if !o.skipMDNS {
		fmt.Fprintf(stdout, "\nmDNS join/leave: host 1 runs vipstack dns -mdns-cluster (master-0); host 2 joins and leaves as master-1 (SIGTERM); %d trial(s); SRV asked every %v\n\n", o.trials, o.probeEvery)
		joins, leaves, err := runMDNS(b, h1, h2)
		if err != nil {
			fmt.Fprintf(stderr, "bench/dns: %v\n", err)
			return 1
		}
		printMDNS(stdout, joins, leaves)
		md.Para("mDNS join and leave, %d trial(s), SRV asked every %v:", o.trials, o.probeEvery)
		mdnsReport(md, joins, leaves)
	}
	if o.markdown != "" {
		if err := benchdoc.Write(o.markdown, "dns", facts, md); err != nil {
			fmt.Fprintf(stderr, "bench/dns: -markdown: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "\nwrote the results into %s\n", o.markdown)
	}
	return code
}

func perfPart(b *bench, h *testnet.Host, stdout io.Writer, md *benchdoc.Report) error {
	servers, err := startPerfServers(b, h)
	if err != nil {
		return err
	}
	defer func() {
		for _, s := range servers {
			s.proc.stop()
		}
	}()
	diffs, err := sameAnswers(h, servers)
	if err != nil {
		return err
	}
	if len(diffs) > 0 {
		return fmt.Errorf("the servers answer differently, so the comparison would be unfair:\n%s", strings.Join(diffs, "\n"))
	}
	fmt.Fprintf(stdout, "answers identical from all three servers for all %d queries of the mix (rcode, answer, authority, additional)\n\n", len(queryMix))
	phases, err := runPerf(b, h, servers)
	if err != nil {
		return err
	}
	printPerf(stdout, phases)
	perfReport(md, phases)
	fmt.Fprintln(stdout)
	rtt, err := runProbe(b, h, servers)
	if err != nil {
		return err
	}
	printRTT(stdout, rtt)
	md.Para("One query at a time:")
	rttReport(md, rtt)
	return nil
}

// proc is a process started in a namespace.
type proc struct {
	cmd  *exec.Cmd
	log  *syncbuf.Buffer
	done chan struct{}
}

// pinned returns a command in h, on cpu unless cpu < 0.
func pinned(h *testnet.Host, cpu int, name string, args ...string) *exec.Cmd {
	if cpu < 0 {
		return h.Command(name, args...)
	}
	return h.Command("taskset", append([]string{"-c", strconv.Itoa(cpu), name}, args...)...)
}

// startVipstackNoWait starts vipstack in h without waiting for it to serve.
func startVipstackNoWait(b *bench, h *testnet.Host, args ...string) (*proc, error) {
	return launch(b, h, -1, nil, args...)
}

// startVipstack starts vipstack in h and waits until it says it serves.
func startVipstack(b *bench, h *testnet.Host, cpu int, args ...string) (*proc, error) {
	serving := make(chan struct{}, 1)
	p, err := launch(b, h, cpu, serving, args...)
	if err != nil {
		return nil, err
	}
	select {
	case <-serving:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("vipstack %s exited:\n%s", strings.Join(args, " "), p.log)
	case <-time.After(30 * time.Second):
		p.stop()
		return nil, fmt.Errorf("vipstack %s did not serve within 30s:\n%s", strings.Join(args, " "), p.log)
	}
}

func launch(b *bench, h *testnet.Host, cpu int, serving chan struct{}, args ...string) (*proc, error) {
	return launchBin(b, h, cpu, serving, b.vipBin, args...)
}

// startCoreDNS starts stock CoreDNS in h on cpu with corefile and waits
// until it answers on port.
func startCoreDNS(b *bench, h *testnet.Host, cpu int, corefile string, port int) (*proc, error) {
	p, err := launchBin(b, h, cpu, nil, b.o.corednsBin, "-conf", corefile)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := exchange(h, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), "api.managed.example.com", dns.TypeA); err == nil {
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("coredns -conf %s exited:\n%s", corefile, p.log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("coredns -conf %s did not answer within 30s:\n%s", corefile, p.log)
		}
	}
}

// corednsBinary returns -coredns or builds ./internal/peers/corednsstock
// (CoreDNS at the version go.mod pins, as its release binary) into b.dir.
func corednsBinary(b *bench) (string, error) {
	if b.o.corednsBin != "" {
		_, err := os.Stat(b.o.corednsBin)
		return b.o.corednsBin, err
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	bin := filepath.Join(b.dir, "coredns")
	c := exec.Command("go", "build", "-o", bin, "./internal/peers/corednsstock")
	c.Dir = filepath.Dir(strings.TrimSpace(string(out)))
	if o, err := c.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./internal/peers/corednsstock: %v\n%s", err, o)
	}
	return bin, nil
}

func launchBin(b *bench, h *testnet.Host, cpu int, serving chan struct{}, bin string, args ...string) (*proc, error) {
	c := pinned(h, cpu, bin, args...)
	p := &proc{cmd: c, log: &syncbuf.Buffer{}, done: make(chan struct{})}
	c.Stderr = p.log
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := h.Start(c); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fmt.Fprintln(p.log, sc.Text())
			if serving != nil && strings.HasPrefix(sc.Text(), "vipstack dns: serving") {
				serving <- struct{}{}
			}
		}
	}()
	go func() {
		c.Wait()
		close(p.done)
	}()
	return p, nil
}

// stop sends SIGTERM and waits (bounded) for the process to exit.
func (p *proc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func (p *proc) wait() { <-p.done }

// vipstackBinary returns -vipstack or builds ./cmd/vipstack into b.dir.
// Until main.go dispatches "dns", the build overlays a main.go that does.
func vipstackBinary(b *bench) (string, error) {
	if b.o.vipstackBin != "" {
		if _, err := os.Stat(b.o.vipstackBin); err != nil {
			return "", err
		}
		return b.o.vipstackBin, nil
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(b.dir, "vipstack")
	args := []string{"build", "-o", bin}
	mainGo := filepath.Join(root, "cmd", "vipstack", "main.go")
	src, err := os.ReadFile(mainGo)
	if err != nil {
		return "", err
	}
	if !strings.Contains(string(src), "runDNS(") {
		patched := strings.Replace(string(src), "\tcase \"vrrp\":\n", "\tcase \"dns\":\n\t\treturn runDNS(ctx, args[1:], stdout, stderr)\n\tcase \"vrrp\":\n", 1)
		pf, ov := filepath.Join(b.dir, "main.go"), filepath.Join(b.dir, "overlay.json")
		js, _ := json.Marshal(map[string]any{"Replace": map[string]string{mainGo: pf}})
		if err := os.WriteFile(pf, []byte(patched), 0o644); err != nil {
			return "", err
		}
		if err := os.WriteFile(ov, js, 0o644); err != nil {
			return "", err
		}
		args = append(args, "-overlay", ov)
	}
	c := exec.Command("go", append(args, "./cmd/vipstack")...)
	c.Dir = root
	if o, err := c.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/vipstack: %v\n%s", err, o)
	}
	return bin, nil
}

func kernel() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return "Linux"
	}
	b := make([]byte, 0, len(u.Release))
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return "Linux " + string(b)
}

// firstLine returns the first line a command prints.
func firstLine(name string, args ...string) string {
	out, _ := exec.Command(name, args...).CombinedOutput()
	l, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return l
}

// tool returns the version line a tool prints.
func tool(name string, args ...string) string {
	out, _ := exec.Command(name, args...).CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(strings.ToLower(l), "version") || strings.HasPrefix(l, "vipstack") {
			return strings.TrimSpace(l)
		}
	}
	return name
}
