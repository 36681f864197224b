package main

import (
	"bufio"
	"context"
	"encoding/binary"
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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/kubetest"
	"github.com/vipstack/vipstack/internal/testnet"
)

const (
	poolBlock = "198.18.16.0/22"
	benchNS   = "bench"
)

// fatal is what tb.Fatal panics with; run recovers it.
type fatal struct{ msg string }

// tb lets kubetest and k8stest, written for tests, run in this program:
// Fatal panics (run recovers), Cleanup functions run when run returns.
type tb struct {
	testing.TB // nil: any other method panics
	mu         sync.Mutex
	cleanups   []func()
	failed     bool
	log        io.Writer
	verbose    bool
}

func (t *tb) Helper() {}
func (t *tb) Logf(f string, a ...any) {
	if t.verbose {
		fmt.Fprintf(t.log, f+"\n", a...)
	}
}
func (t *tb) Errorf(f string, a ...any) {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	fmt.Fprintf(t.log, f+"\n", a...)
}
func (t *tb) Fatal(a ...any)            { t.failed = true; panic(fatal{fmt.Sprint(a...)}) }
func (t *tb) Fatalf(f string, a ...any) { t.failed = true; panic(fatal{fmt.Sprintf(f, a...)}) }
func (t *tb) Skip(a ...any)             { panic(fatal{"skipped: " + fmt.Sprint(a...)}) }
func (t *tb) Failed() bool              { t.mu.Lock(); defer t.mu.Unlock(); return t.failed }
func (t *tb) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}
func (t *tb) runCleanups() {
	t.mu.Lock()
	cs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

func run(args []string, stdout, stderr io.Writer) (code int) {
	fs := flag.NewFlagSet("bench/k8s", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		n       = fs.Int("services", 1000, "LoadBalancer Services created at once (at most 1,024, the pool's size)")
		timeout = fs.Duration("timeout", 9*time.Minute, "bound on the whole run")
		settle  = fs.Duration("settle", 5*time.Second, "wait after the last answer before reading memory")
		advert  = fs.Int("advert", 1000, "the VIPGroup's advertIntervalMilliseconds")
		clients = fs.Int("clients", 8, "concurrent clients creating the Services")
		warm    = fs.Int("warm", 0, "Services created and answering before the burst, so the group's VRRP instances already run (not counted)")
		bin     = fs.String("vipstack", "", "vipstack binary to run; empty: build ./cmd/vipstack")
		verbose = fs.Bool("v", false, "log progress")
	)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *n < 1 || *warm < 0 || *n+*warm > 1024 {
		fmt.Fprintf(stderr, "bench/k8s: -services %d -warm %d: want -services at least 1, -warm at least 0, and their sum at most 1024 (the pool %s holds 1,024 addresses)\n", *n, *warm, poolBlock)
		return 2
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "bench/k8s: needs root (network namespaces, packet sockets)")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	t := &tb{log: stderr, verbose: *verbose}
	defer t.runCleanups()
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fatal)
			if !ok {
				t.runCleanups()
				panic(r)
			}
			fmt.Fprintf(stderr, "bench/k8s: %s\n", f.msg)
			code = 1
		}
	}()
	b := &bench{t: t, ctx: ctx, out: stdout, n: *n, settle: *settle, advert: *advert, warm: *warm, clients: *clients}
	if err := b.run(*bin); err != nil {
		fmt.Fprintf(stderr, "bench/k8s: %v\n", err)
		return 1
	}
	return 0
}

type bench struct {
	t       *tb
	ctx     context.Context
	out     io.Writer
	n       int
	settle  time.Duration
	advert  int
	warm    int
	clients int

	topo  *testnet.Topology
	env   *kubetest.Env
	procs []*proc
}

type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
}

func (b *bench) logf(f string, a ...any) {
	b.t.Logf("%s "+f, append([]any{time.Now().Format("15:04:05.000")}, a...)...)
}

func (b *bench) run(bin string) error {
	t := b.t
	dir, err := os.MkdirTemp("", "vsQ-bench-")
	if err != nil {
		return fmt.Errorf("create work directory: %w", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if bin == "" {
		bin = filepath.Join(dir, "vipstack")
		b.logf("building cmd/vipstack")
		cmd := exec.CommandContext(b.ctx, "go", "build", "-o", bin, "./cmd/vipstack")
		cmd.Dir = k8stest.Root(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/vipstack: %w\n%s", err, out)
		}
	}
	topo, err := testnet.Build(testnet.Options{Hosts: 3, Client: true, Prefix: "vsQ"})
	if err != nil {
		return fmt.Errorf("build network namespaces: %w", err)
	}
	b.topo = topo
	t.Cleanup(topo.Close)
	t.Cleanup(b.killAll)

	b.logf("starting etcd and kube-apiserver")
	b.env = kubetest.Start(t)
	admin := k8stest.Client(t, b.env.Config)
	k8stest.InstallCRDs(t, admin)
	ctx := b.ctx
	if err := k8stest.Apply(ctx, admin, k8stest.Objects(t, "rbac.yaml"), false); err != nil {
		return err
	}
	mk := func(o client.Object) error {
		if err := admin.Create(ctx, o); err != nil {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
		return nil
	}
	for _, ns := range []string{"infra", benchNS} {
		if err := mk(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	names := []string{"n1", "n2", "n3"}
	for i, h := range topo.Hosts {
		nd := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: names[i], Labels: map[string]string{"vipstack.io/lb": "true"}}}
		if err := mk(nd); err != nil {
			return err
		}
		nd.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: h.IPv4.Addr().String()}}
		if err := admin.Status().Update(ctx, nd); err != nil {
			return fmt.Errorf("update node %s status: %w", names[i], err)
		}
	}
	auto := true
	if err := mk(&v1alpha1.IPPool{ObjectMeta: metav1.ObjectMeta{Name: "big"},
		Spec: v1alpha1.IPPoolSpec{Addresses: []string{poolBlock}, AutoAssign: &auto}}); err != nil {
		return err
	}
	if err := mk(&v1alpha1.VIPGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "workers"},
		Spec: v1alpha1.VIPGroupSpec{NodeSelector: map[string]string{"vipstack.io/lb": "true"}, AdvertIntervalMilliseconds: int32(b.advert)}}); err != nil {
		return err
	}

	// The controller, as its ServiceAccount, in the root namespace.
	ckc, err := b.kubeconfig(dir, "controller", "", "vipstack-controller")
	if err != nil {
		return err
	}
	ctrl, err := b.start("controller", nil, dir, bin, "controller", "--kubeconfig", ckc, "--metrics-addr", "", "--log-level", "info")
	if err != nil {
		return err
	}
	apiHost := strings.TrimPrefix(b.env.Config.Host, "https://")
	var agents []*proc
	for i, h := range topo.Hosts {
		px, err := b.proxy(h, apiHost)
		if err != nil {
			return err
		}
		kc, err := b.kubeconfig(dir, names[i], px, "vipstack-agent")
		if err != nil {
			return err
		}
		sd := filepath.Join(dir, "state-"+names[i])
		if err := os.MkdirAll(sd, 0o755); err != nil {
			return err
		}
		p, err := b.start("agent-"+names[i], h, dir, bin, "agent", "--kubeconfig", kc, "--node-name", names[i], "--no-supervisor",
			"--state-dir", sd, "--metrics-addr", "", "--status-addr", "", "--log-level", "info")
		if err != nil {
			return err
		}
		agents = append(agents, p)
	}
	// The client reaches the pool's block on its link.
	if out, err := topo.Client.Run("ip", "route", "add", poolBlock, "dev", topo.Client.Link); err != nil {
		return fmt.Errorf("client route: %w: %s", err, out)
	}
	b.logf("waiting for the group's instances")
	if err := b.poll(60*time.Second, func() error {
		for _, p := range append([]*proc{ctrl}, agents...) {
			select {
			case <-p.done:
				return fmt.Errorf("%s exited:\n%s", p.name, b.tail(p))
			default:
			}
		}
		var g v1alpha1.VIPGroup
		if err := admin.Get(ctx, client.ObjectKey{Namespace: "infra", Name: "workers"}, &g); err != nil {
			return err
		}
		if len(g.Status.Instances) < 3 {
			return fmt.Errorf("group has %d instances, want 3", len(g.Status.Instances))
		}
		return nil
	}); err != nil {
		return err
	}
	// Let the agents load the group and elect their (empty) instances.
	if err := sleep(ctx, time.Duration(4*b.advert)*time.Millisecond+2*time.Second); err != nil {
		return err
	}
	before := map[string]mem{}
	for _, p := range append([]*proc{ctrl}, agents...) {
		before[p.name], _ = readMem(p.cmd.Process.Pid)
	}

	// Watch the Services and probe the wire from the client.
	wc, err := client.NewWithWatch(b.env.Config, client.Options{Scheme: admin.Scheme()})
	if err != nil {
		return fmt.Errorf("watch client: %w", err)
	}
	pr, err := newProber(topo.Client)
	if err != nil {
		return err
	}
	defer pr.close()
	var (
		mu       sync.Mutex
		created  = map[string]time.Time{}
		inStatus = map[string]time.Time{}
		addrOf   = map[string]netip.Addr{}
		nameOf   = map[netip.Addr]string{}
	)
	seen := func(s *corev1.Service, at time.Time) {
		if len(s.Status.LoadBalancer.Ingress) == 0 {
			return
		}
		a, err := netip.ParseAddr(s.Status.LoadBalancer.Ingress[0].IP)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, ok := inStatus[s.Name]; ok {
			return
		}
		inStatus[s.Name], addrOf[s.Name], nameOf[a] = at, a, s.Name
		pr.want(a)
	}
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	var list corev1.ServiceList
	if err := wc.List(ctx, &list, client.InNamespace(benchNS)); err != nil {
		return fmt.Errorf("list services: %w", err)
	}
	w, err := wc.Watch(wctx, &corev1.ServiceList{}, client.InNamespace(benchNS), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		return fmt.Errorf("watch services: %w", err)
	}
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for {
			for ev := range w.ResultChan() {
				if s, ok := ev.Object.(*corev1.Service); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
					seen(s, time.Now())
				}
			}
			if wctx.Err() != nil {
				return
			}
			// The watch ended early: list (late, but nothing is lost) and watch again.
			var l corev1.ServiceList
			if err := wc.List(wctx, &l, client.InNamespace(benchNS)); err != nil {
				return
			}
			now := time.Now()
			for i := range l.Items {
				seen(&l.Items[i], now)
			}
			if w, err = wc.Watch(wctx, &corev1.ServiceList{}, client.InNamespace(benchNS), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: l.ResourceVersion}}); err != nil {
				return
			}
		}
	}()
	go pr.loop(wctx)

	f := false
	svc := func(name string) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: benchNS, Name: name, Annotations: map[string]string{k8s.GroupAnnotation: "infra/workers"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: &f,
				Ports: []corev1.ServicePort{{Port: 8080}}},
		}
	}
	if b.warm > 0 {
		b.logf("creating %d warm-up Services", b.warm)
		for i := range b.warm {
			if err := mk(svc(fmt.Sprintf("warm%04d", i))); err != nil {
				return err
			}
		}
		if err := b.poll(60*time.Second, func() error {
			if got := pr.answered(); got < b.warm {
				return fmt.Errorf("%d of %d warm-up Services answer", got, b.warm)
			}
			return nil
		}); err != nil {
			return err
		}
		if err := sleep(ctx, 2*time.Second); err != nil {
			return err
		}
	}
	b.logf("creating %d Services", b.n)
	began := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, b.clients)
	for k := range b.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < b.n; i += b.clients {
				name := fmt.Sprintf("s%04d", i)
				if err := admin.Create(ctx, svc(name)); err != nil {
					errs <- fmt.Errorf("create service %s: %w", name, err)
					return
				}
				at := time.Now()
				mu.Lock()
				created[name] = at
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	createdIn := time.Since(began)
	b.logf("created in %v", createdIn.Round(time.Millisecond))

	progress := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		st, wire := 0, 0
		for i := range b.n {
			name := fmt.Sprintf("s%04d", i)
			if _, ok := inStatus[name]; ok {
				st++
				if _, ok := pr.answeredAt(addrOf[name]); ok {
					wire++
				}
			}
		}
		return st, wire
	}
	waitErr := b.poll(5*time.Minute, func() error {
		st, wire := progress()
		if st < b.n || wire < b.n {
			return fmt.Errorf("%d of %d Services have an address in status, %d answer on the wire", st, b.n, wire)
		}
		return nil
	})
	all := time.Since(began)
	st, wire := progress()
	b.logf("%d in status, %d on the wire after %v", st, wire, all.Round(time.Millisecond))
	if waitErr != nil {
		fmt.Fprintf(b.out, "NOT COMPLETE: %v\n", waitErr)
	}
	_ = sleep(ctx, b.settle)
	after := map[string]mem{}
	for _, p := range append([]*proc{ctrl}, agents...) {
		after[p.name], _ = readMem(p.cmd.Process.Pid)
	}
	wcancel()
	<-watchDone

	// Who holds what, for the record.
	held := make([]int, len(topo.Hosts))
	for i, h := range topo.Hosts {
		as, _ := h.Addrs()
		for _, a := range as {
			if p, err := netip.ParsePrefix(a); err == nil && netip.MustParsePrefix(poolBlock).Contains(p.Addr()) {
				held[i]++
			}
		}
	}

	mu.Lock()
	var toStatus, toWire []time.Duration
	for name, c := range created {
		if s, ok := inStatus[name]; ok {
			toStatus = append(toStatus, max(0, s.Sub(c)))
		}
		if a, ok := addrOf[name]; ok {
			if w, ok := pr.answeredAt(a); ok {
				toWire = append(toWire, max(0, w.Sub(c)))
			}
		}
	}
	mu.Unlock()

	o := b.out
	fmt.Fprintf(o, "vipstack Kubernetes benchmark: %d LoadBalancer Services created at once (%d clients), 3 agents, advert %d ms, %d warm-up Services before\n", b.n, b.clients, b.advert, b.warm)
	fmt.Fprintf(o, "creates took %v; every Service in status and answering after %v (from the first create)\n\n",
		createdIn.Round(time.Millisecond), all.Round(time.Millisecond))
	fmt.Fprintf(o, "%-34s %11s %9s %9s %9s\n", "per Service, from its create", "n", "p50", "p99", "max")
	summarize(toStatus, b.n).row(o, "address in status")
	summarize(toWire, b.n).row(o, "answers ARP from the client")
	fmt.Fprintf(o, "\nVIPs held per node: %v\n\n", held)
	fmt.Fprintf(o, "%-18s %14s %14s %14s\n", "process", "RSS before", "RSS after", "peak (VmHWM)")
	for _, p := range append([]*proc{ctrl}, agents...) {
		fmt.Fprintf(o, "%-18s %10.1f MiB %10.1f MiB %10.1f MiB\n", p.name, before[p.name].rss, after[p.name].rss, after[p.name].hwm)
	}
	if waitErr != nil {
		return waitErr
	}
	return nil
}

func (b *bench) poll(d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", d, err)
		}
		if err := sleep(b.ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("%w (last: %v)", err, f())
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// kubeconfig writes a copy of the admin kubeconfig that impersonates the
// ServiceAccount vipstack-system/sa and, if server is set, reaches the API
// there.
func (b *bench) kubeconfig(dir, name, server, sa string) (string, error) {
	path := filepath.Join(dir, "kubeconfig-"+name)
	return path, b.env.WriteKubeconfigAs(path, server, "vipstack-system", sa)
}

// proxy listens on the host namespace's loopback and forwards to the API
// server on the root namespace's loopback.
func (b *bench) proxy(h *testnet.Host, target string) (string, error) {
	var ln net.Listener
	if err := h.Do(func() (err error) {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		return "", fmt.Errorf("proxy in %s: %w", h.Name, err)
	}
	b.t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c) }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	return ln.Addr().String(), nil
}

// start runs bin args (in h's namespace unless h is nil) in its own
// process group, logging to a file.
func (b *bench) start(name string, h *testnet.Host, dir, bin string, args ...string) (*proc, error) {
	var c *exec.Cmd
	if h != nil {
		c = h.Command(bin, args...)
	} else {
		c = exec.Command(bin, args...)
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	c.Env = []string{"PATH=" + os.Getenv("PATH")}
	lf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	c.Stdout, c.Stderr = lf, lf
	if err := c.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: c, log: lf, done: make(chan struct{})}
	b.procs = append(b.procs, p)
	go func() {
		_ = c.Wait()
		close(p.done)
	}()
	return p, nil
}

func (b *bench) killAll() {
	for _, p := range b.procs {
		if p.cmd.Process != nil {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
			}
		}
		if b.t.Failed() {
			fmt.Fprintf(b.t.log, "---- %s log (tail):\n%s\n", p.name, b.tail(p))
		}
		p.log.Close()
	}
}

func (b *bench) tail(p *proc) string {
	data, _ := os.ReadFile(p.log.Name())
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

type mem struct{ rss, hwm float64 } // MiB

func readMem(pid int) (mem, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return mem{}, err
	}
	defer f.Close()
	var m mem
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kb float64
		if _, err := fmt.Sscanf(sc.Text(), "VmRSS: %f kB", &kb); err == nil {
			m.rss = kb / 1024
		}
		if _, err := fmt.Sscanf(sc.Text(), "VmHWM: %f kB", &kb); err == nil {
			m.hwm = kb / 1024
		}
	}
	return m, sc.Err()
}

// prober asks, from the client's namespace, who has each wanted address
// (ARP requests on a packet socket) and records the first reply.
type prober struct {
	fd      int
	ifindex int
	mac     net.HardwareAddr
	ip      netip.Addr

	mu      sync.Mutex
	pending map[netip.Addr]bool
	got     map[netip.Addr]time.Time
}

func newProber(h *testnet.Host) (*prober, error) {
	p := &prober{ip: h.IPv4.Addr(), pending: map[netip.Addr]bool{}, got: map[netip.Addr]time.Time{}}
	err := h.Do(func() error {
		ifi, err := net.InterfaceByName(h.Link)
		if err != nil {
			return err
		}
		p.ifindex, p.mac = ifi.Index, ifi.HardwareAddr
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ARP)))
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		p.fd = fd
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ARP), Ifindex: ifi.Index}); err != nil {
			return fmt.Errorf("bind packet socket: %w", err)
		}
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 200000})
	})
	if err != nil {
		if p.fd > 0 {
			unix.Close(p.fd)
		}
		return nil, fmt.Errorf("client prober: %w", err)
	}
	return p, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (p *prober) close() { unix.Close(p.fd) }

func (p *prober) want(a netip.Addr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.got[a]; !ok {
		p.pending[a] = true
	}
}

func (p *prober) answered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.got)
}

func (p *prober) answeredAt(a netip.Addr) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.got[a]
	return t, ok
}

// loop sends a round of requests for every pending address every 20 to
// 100 ms (100 µs per pending address, so at most 10,000 frames a second)
// and receives replies until ctx ends.
func (p *prober) loop(ctx context.Context) {
	go p.receive(ctx)
	frame := make([]byte, 42)
	copy(frame[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(frame[6:12], p.mac)
	binary.BigEndian.PutUint16(frame[12:14], unix.ETH_P_ARP)
	binary.BigEndian.PutUint16(frame[14:16], 1)      // Ethernet
	binary.BigEndian.PutUint16(frame[16:18], 0x0800) // IPv4
	frame[18], frame[19] = 6, 4
	binary.BigEndian.PutUint16(frame[20:22], 1) // request
	copy(frame[22:28], p.mac)
	src := p.ip.As4()
	copy(frame[28:32], src[:])
	to := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ARP), Ifindex: p.ifindex, Halen: 6, Addr: [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	for ctx.Err() == nil {
		p.mu.Lock()
		var round []netip.Addr
		for a := range p.pending {
			round = append(round, a)
		}
		p.mu.Unlock()
		for _, a := range round {
			t := a.As4()
			copy(frame[38:42], t[:])
			_ = unix.Sendto(p.fd, frame, 0, to)
		}
		_ = sleep(ctx, min(100*time.Millisecond, max(20*time.Millisecond, time.Duration(len(round))*100*time.Microsecond)))
	}
}

func (p *prober) receive(ctx context.Context) {
	buf := make([]byte, 1500)
	me := p.ip.As4()
	for ctx.Err() == nil {
		n, _, err := unix.Recvfrom(p.fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		now := time.Now()
		if n < 42 || binary.BigEndian.Uint16(buf[12:14]) != unix.ETH_P_ARP || binary.BigEndian.Uint16(buf[20:22]) != 2 {
			continue
		}
		if [4]byte(buf[38:42]) != me {
			continue // not an answer to us (a gratuitous reply)
		}
		a := netip.AddrFrom4([4]byte(buf[28:32]))
		p.mu.Lock()
		if p.pending[a] {
			delete(p.pending, a)
			p.got[a] = now
		}
		p.mu.Unlock()
	}
}
