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
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vipstack/vipstack/internal/benchdoc"
	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/k8s/k8slab"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/procfs"
	"github.com/vipstack/vipstack/internal/testnet"
)

const poolBlock = "198.18.16.0/22"

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench/k8s", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		n       = fs.Int("services", 1000, "LoadBalancer Services created at once (at most 1,024, the pool's size)")
		timeout = fs.Duration("timeout", 9*time.Minute, "bound on the whole run")
		settle  = fs.Duration("settle", 5*time.Second, "wait after the burst's end (the last AnnouncedBy write) before reading memory")
		rest    = fs.Duration("rest", 60*time.Second, "read memory again this long after the burst's end, at rest (logged every 10 s with -v; not in the migration scenarios); 0: not")
		evict   = fs.Bool("evict", true, "drop the vipstack binary from the page cache before the daemons start, as on a freshly booted node (bench/node does the same); false: as go build left it, in large folios")
		advert  = fs.Int("advert", 1000, "the VIPGroup's advertIntervalMilliseconds")
		clients = fs.Int("clients", 8, "concurrent clients creating the Services")
		warm    = fs.Int("warm", 0, "Services created and answering before the burst, so the group's VRRP instances already run (not counted)")
		bin     = fs.String("vipstack", "", "vipstack binary to run; empty: build ./cmd/vipstack")
		verbose = fs.Bool("v", false, "log progress")
		nsPfx   = fs.String("prefix", "bk8", "prefix of the network namespaces' names (give a run beside another its own)")
		md      = fs.String("markdown", "", "write the results into the scenario's block (k8s, k8s-default-pool, k8s-from-keepalived, k8s-from-metallb) of this Markdown `file` (docs/benchmarks.md)")
		scen    = fs.String("scenario", scenarioAnnotated, "what is measured: "+scenarioHelp)
		third   = fs.String("thirdparty", "../shared/thirdparty", "directory with MetalLB's CRDs (metallb/metallb.io_*.yaml), for -scenario "+scenarioFromMetalLB+"; relative to the module's root")
		ctlArgs = fs.String("controller-args", "", "more arguments for vipstack controller, space-separated (e.g. \"--memory-limit 0\")")
		agArgs  = fs.String("agent-args", "", "more arguments for each vipstack agent, space-separated (e.g. \"--pprof-addr 127.0.0.1:6060\", in the node's namespace)")
	)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *n < 1 || *warm < 0 || *n+*warm > 1024 {
		fmt.Fprintf(stderr, "bench/k8s: -services %d -warm %d: want -services at least 1, -warm at least 0, and their sum at most 1024 (the pool %s holds 1,024 addresses)\n", *n, *warm, poolBlock)
		return 2
	}
	if !validScenario(*scen) {
		fmt.Fprintf(stderr, "bench/k8s: -scenario %q: want one of %s\n", *scen, strings.Join(scenarios, ", "))
		return 2
	}
	if *scen == scenarioFromKeepalived && *n > keepalivedMax {
		fmt.Fprintf(stderr, "bench/k8s: -services %d with -scenario %s: want at most %d (OpenShift gives neither the network nor the broadcast address of %s)\n", *n, *scen, keepalivedMax, poolBlock)
		return 2
	}
	if *warm > 0 && migrating(*scen) {
		fmt.Fprintf(stderr, "bench/k8s: -warm %d with -scenario %s: the Services exist before vipstack starts; want -warm 0\n", *warm, *scen)
		return 2
	}
	if *rest < 0 || (*rest > 0 && *rest <= *settle) {
		fmt.Fprintf(stderr, "bench/k8s: -rest %v: want 0 (not read) or longer than -settle %v\n", *rest, *settle)
		return 2
	}
	if *advert < 10 || *advert%10 != 0 {
		fmt.Fprintf(stderr, "bench/k8s: -advert %d: want a multiple of 10 ms\n", *advert)
		return 2
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "bench/k8s: needs root (network namespaces, packet sockets)")
		return 2
	}
	// The API server's warnings (spec.externalIPs in the migration
	// scenarios) would otherwise make controller-runtime print a stack.
	crlog.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	b := &bench{ctx: ctx, out: stdout, n: *n, settle: *settle, rest: *rest, evict: *evict, advert: *advert, warm: *warm, clients: *clients,
		markdown: *md, facts: benchdoc.Collect("./bench/k8s", args), scenario: *scen, thirdparty: *third, netnsPrefix: *nsPfx,
		controllerArgs: strings.Fields(*ctlArgs), agentArgs: strings.Fields(*agArgs)}
	b.p = &k8slab.Program{}
	if *verbose {
		b.log, b.p.Out = stderr, stderr
	}
	defer b.p.Close()
	if err := b.run(*bin); err != nil {
		fmt.Fprintf(stderr, "bench/k8s: %v\n", err)
		if b.lab != nil && ctx.Err() == nil { // not on an interrupt or the -timeout
			fmt.Fprintf(stderr, "---- controller log (tail):\n%s\n", tail(b.lab.ControllerLog()))
			for _, nd := range b.lab.Nodes {
				fmt.Fprintf(stderr, "---- agent-%s log (tail):\n%s\n", nd.Name, tail(nd.Log()))
			}
		}
		return 1
	}
	return 0
}

type bench struct {
	p       *k8slab.Program
	ctx     context.Context
	out     io.Writer
	log     io.Writer // progress; nil: none
	n       int
	settle  time.Duration
	rest    time.Duration // 0: memory not read at rest
	evict   bool
	advert  int
	warm    int
	clients int

	markdown string
	facts    benchdoc.Facts

	scenario    string
	netnsPrefix string
	thirdparty  string
	// controllerArgs and agentArgs are added to the daemons' command lines.
	controllerArgs, agentArgs []string
	// left is what the other load balancer gave each Service (migration
	// scenarios); installed is when vipstack's controller was started.
	left      map[string]netip.Addr
	installed time.Time

	lab *k8slab.Lab
}

func (b *bench) logf(f string, a ...any) {
	if b.log != nil {
		fmt.Fprintf(b.log, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(f, a...))
	}
}

// pids are the processes whose memory is read: the controller and each
// agent (without a supervisor, the agent runs the engine itself).
func (b *bench) pids() (names []string, pids []int) {
	names, pids = []string{"controller"}, []int{b.lab.ControllerPid()}
	for _, nd := range b.lab.Nodes {
		names, pids = append(names, "agent-"+nd.Name), append(pids, nd.AgentPid())
	}
	return names, pids
}

func (b *bench) run(bin string) error {
	ctx := b.ctx
	if bin == "" {
		dir, err := os.MkdirTemp("", "bk8-bench-")
		if err != nil {
			return fmt.Errorf("create work directory: %w", err)
		}
		defer os.RemoveAll(dir)
		b.logf("building cmd/vipstack")
		if bin, err = peers.BuildVipstack(dir); err != nil {
			return fmt.Errorf("build ./cmd/vipstack: %w", err)
		}
	}
	// Three agents without a supervisor, the controller with leader
	// election as deployed, a client namespace, the pool's block and no
	// Services yet; Start returns once every node is master of its own
	// (empty) instance.
	o := k8slab.Options{Nodes: 3, Prefix: b.netnsPrefix, Bin: bin,
		Advert: time.Duration(b.advert) * time.Millisecond, Pool: poolBlock, Client: true, LeaderElect: true, Log: b.log}
	switch b.scenario {
	case scenarioDefaultPool:
		// vipstack as the cluster's default load balancer: Services
		// name no group.
		o.ControllerArgs = []string{"--default-group", k8slab.Group}
	case scenarioFromKeepalived, scenarioFromMetalLB:
		// The block is the other load balancer's; the lab's own pool
		// is elsewhere.
		o.Pool = labPool
		before, err := b.leftBehind()
		if err != nil {
			return err
		}
		o.Before = before
	}
	o.ControllerArgs = append(o.ControllerArgs, b.controllerArgs...)
	o.AgentArgs = b.agentArgs
	if b.evict {
		if err := procfs.EvictPageCache(bin); err != nil {
			return err
		}
	}
	if err := b.p.Do(func() { b.lab = k8slab.Start(ctx, b.p, o) }); err != nil {
		return err
	}
	lab, topo := b.lab, b.lab.Topo
	// The client reaches the pool's block on its link.
	if out, err := topo.Client.Run("ip", "route", "add", poolBlock, "dev", topo.Client.Link); err != nil {
		return fmt.Errorf("client route: %w: %s", err, out)
	}
	// Let the agents settle before the first memory reading.
	if err := clock.Sleep(ctx, time.Duration(4*b.advert)*time.Millisecond+2*time.Second); err != nil {
		return err
	}
	names, pids := b.pids()
	for i, name := range names {
		if pids[i] == 0 {
			return fmt.Errorf("%s does not run", name)
		}
	}
	before := map[string]mem{}
	for i, name := range names {
		before[name], _ = readMem(pids[i])
	}

	// Watch the Services and probe the wire from the client.
	wc, err := client.NewWithWatch(lab.Env.Config, client.Options{Scheme: lab.Admin.Scheme()})
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
		// announced: the controller has written the AnnouncedBy
		// condition, its last (rate-limited) write for a new Service.
		announced = map[string]bool{}
		addrOf    = map[string]netip.Addr{}
		nameOf    = map[netip.Addr]string{}
	)
	seen := func(s *corev1.Service, at time.Time) {
		if c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ServiceConditionAnnounced); c != nil && c.Status == metav1.ConditionTrue {
			mu.Lock()
			announced[s.Name] = true
			mu.Unlock()
		}
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
	ns := client.InNamespace(k8slab.ServiceNamespace)
	var list corev1.ServiceList
	if err := wc.List(ctx, &list, ns); err != nil {
		return fmt.Errorf("list services: %w", err)
	}
	w, err := wc.Watch(wctx, &corev1.ServiceList{}, ns, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
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
			if err := wc.List(wctx, &l, ns); err != nil {
				return
			}
			now := time.Now()
			for i := range l.Items {
				seen(&l.Items[i], now)
			}
			if w, err = wc.Watch(wctx, &corev1.ServiceList{}, ns, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: l.ResourceVersion}}); err != nil {
				return
			}
		}
	}()
	go pr.loop(wctx)
	if migrating(b.scenario) {
		return b.migrated(pr, wcancel, watchDone, names, pids, before)
	}

	// Each Service takes the pool's next free address (no LoadBalancerIP).
	create := func(name string) error {
		s := k8slab.NewService(name, netip.Addr{})
		if b.scenario == scenarioDefaultPool {
			s.Annotations = nil
		}
		if err := lab.Admin.Create(ctx, s); err != nil {
			return fmt.Errorf("create service %s: %w", name, err)
		}
		return nil
	}
	if b.warm > 0 {
		b.logf("creating %d warm-up Services", b.warm)
		for i := range b.warm {
			if err := create(fmt.Sprintf("warm%04d", i)); err != nil {
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
		if err := clock.Sleep(ctx, 2*time.Second); err != nil {
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
				if err := create(name); err != nil {
					errs <- err
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
	// The burst's work ends when the controller has written the last
	// AnnouncedBy condition (--announced-writes a second, after the
	// addresses): the memory is read -settle after that.
	annErr := b.poll(3*time.Minute, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(announced) < b.n {
			return fmt.Errorf("%d of %d Services have their AnnouncedBy condition", len(announced), b.n)
		}
		return nil
	})
	doneAfter := time.Since(began)
	b.logf("AnnouncedBy on every Service after %v (%v)", doneAfter.Round(time.Millisecond), annErr)
	_ = clock.Sleep(ctx, b.settle)
	after := readAll(names, pids)
	wcancel()
	<-watchDone
	rest := b.atRest(began.Add(doneAfter), names, pids)

	// Who holds what, for the record.
	held := make([]int, len(lab.Nodes))
	for i, nd := range lab.Nodes {
		as, _ := nd.Host.Addrs()
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

	rep := &benchdoc.Report{}
	what := "annotated for the lab's VIPGroup"
	if b.scenario == scenarioDefaultPool {
		what = "with no annotation (the controller's --default-group, the auto-assigning pool)"
	}
	rep.Para("%d LoadBalancer Services %s created at once (%d clients), 3 agents, advert %d ms, %d warm-up Services before; "+
		"creates took %v; every Service in status and answering after %v (from the first create).",
		b.n, what, b.clients, b.advert, b.warm, createdIn.Round(time.Millisecond), all.Round(time.Millisecond))
	lat := benchdoc.Table{Header: []string{"per Service, from its create", "n", "p50", "p99", "max", "target", "result"}}
	lat.Add(summarize(toStatus, b.n).cells("address in status")...)
	arp := summarize(toWire, b.n)
	result := "PASS"
	if arp.N < arp.Of || arp.P99 >= time.Second {
		result = "MISS"
	}
	lat.Add(append(arp.cells("answers ARP from the client"), "p99 < 1 s, every Service", result)...)
	rep.Table(lat)
	end := fmt.Sprintf("the controller wrote the last AnnouncedBy condition %v after the first create; RSS after is read %v later, the peak covers the run until then", doneAfter.Round(time.Millisecond), b.settle)
	if rest != nil {
		end += fmt.Sprintf(", RSS at rest %v later", b.rest)
	}
	if annErr != nil {
		end = fmt.Sprintf("memory read without the burst's end: %v", annErr)
	}
	rep.Para("VIPs held per node: %v; %s.", held, end)
	rep.Table(memTable(names, before, after, rest))
	if waitErr != nil {
		rep.Para("NOT COMPLETE: %v", waitErr)
	}
	if err := b.report(rep); err != nil {
		return err
	}
	if waitErr != nil {
		return waitErr
	}
	return nil
}

// report prints rep and, with -markdown, writes it into the scenario's
// block.
func (b *bench) report(rep *benchdoc.Report) error {
	_ = rep.Text(b.out)
	if b.markdown != "" {
		if err := benchdoc.Write(b.markdown, blockName(b.scenario), b.facts, rep); err != nil {
			return fmt.Errorf("-markdown: %w", err)
		}
		fmt.Fprintf(b.out, "\nwrote the results into %s\n", b.markdown)
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
		if err := clock.Sleep(b.ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("%w (last: %v)", err, f())
		}
	}
}

// tail is the last 20 lines of a log.
func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// readAll reads the memory of each named process; an unreadable one is
// zero (a MISS in the table).
func readAll(names []string, pids []int) map[string]mem {
	m := map[string]mem{}
	for i, name := range names {
		m[name], _ = readMem(pids[i])
	}
	return m
}

// atRest waits until -rest after end (the burst's end), logging every
// process's memory every 10 s on the way, and reads it then; nil with
// -rest 0, or when the run is cut short before.
func (b *bench) atRest(end time.Time, names []string, pids []int) map[string]mem {
	if b.rest == 0 {
		return nil
	}
	at := end.Add(b.rest)
	for {
		wait := time.Until(at)
		if wait <= 0 {
			return readAll(names, pids)
		}
		if clock.Sleep(b.ctx, min(wait, 10*time.Second)) != nil {
			return nil
		}
		if b.log == nil {
			continue
		}
		var line []string
		for i, name := range names {
			m, _ := readMem(pids[i])
			line = append(line, fmt.Sprintf("%s %.1f (%.1f + %.1f)", name, m.rss, m.anon, m.file))
		}
		b.logf("%v after the burst, MiB: %s", time.Since(end).Round(time.Second), strings.Join(line, ", "))
	}
}

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
		if _, err := fmt.Sscanf(sc.Text(), "RssAnon: %f kB", &kb); err == nil {
			m.anon = kb / 1024
		}
		if _, err := fmt.Sscanf(sc.Text(), "RssFile: %f kB", &kb); err == nil {
			m.file = kb / 1024
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
		_ = clock.Sleep(ctx, min(100*time.Millisecond, max(20*time.Millisecond, time.Duration(len(round))*100*time.Microsecond)))
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
