package demo

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/node"
	"github.com/vipstack/vipstack/internal/testnet"
)

// Cluster is a running demo cluster. Close removes it.
type Cluster struct {
	Spec   Spec
	Dir    string // cluster.yaml, the node agents' logs and state
	Tag    string // shared part of every namespace name
	Nodes  []*Node
	Client *testnet.Host

	opts  Options
	clk   clock.Clock
	out   *syncWriter
	topo  *testnet.Topology
	start time.Time
	ports cluster.Ports

	viewStop  chan struct{}
	viewDone  chan struct{}
	closeOnce sync.Once
	// keepDir leaves Dir (the node agents' logs and state) in place at
	// Close: set when a step did not hold, for the logs to explain it.
	keepDir bool
}

// Node is one node of the demo cluster.
type Node struct {
	NodeSpec
	Host *testnet.Host

	c      *Cluster
	nsh    netns.NsHandle
	nl     *netlink.Handle
	status *http.Client
	api    *httpServer // bootstrap and masters
	router *router     // workers

	mu    sync.Mutex
	agent *agentProc
	bin   string // the binary the agent runs (Options.Bin until Replace)
	pidns bool   // the agent runs as process 1 of its own PID namespace (ReplaceAs)
	off   string // why the node is gone; "" while it runs
}

// agentProc is one `vipstack node` process (its supervisor and engine
// share its process group).
type agentProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// Start builds the cluster: namespaces, stand-in servers, and a node agent
// on every node. It returns once every agent runs; the VIPs settle after.
// On error everything built so far is removed.
func Start(ctx context.Context, spec Spec, opts Options) (c *Cluster, err error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := preflight(opts); err != nil {
		return nil, err
	}
	if opts.Prefix == "" {
		opts.Prefix = "vsD"
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.View == 0 {
		opts.View = 500 * time.Millisecond
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "info"
	}
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	cf, err := cluster.Parse("demo cluster.yaml", []byte(spec.ClusterYAML()))
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	c = &Cluster{Spec: spec, opts: opts, clk: opts.Clock, out: &syncWriter{w: out}, start: opts.Clock.Now(), ports: cf.Ports}
	defer func() {
		if err != nil {
			c.Close()
			c = nil
		}
	}()
	if c.Dir, err = os.MkdirTemp("", "vipstack-demo-"); err != nil {
		return c, fmt.Errorf("demo: work directory: %w", err)
	}
	cfgPath := filepath.Join(c.Dir, "cluster.yaml")
	if err := os.WriteFile(cfgPath, []byte(spec.ClusterYAML()), 0o644); err != nil {
		return c, fmt.Errorf("demo: %w", err)
	}
	nodes := spec.Nodes()
	c.Printf("building %d nodes and a client in network namespaces %s*\n", len(nodes), opts.Prefix)
	topo := opts.Topology
	if topo == nil {
		if c.topo, err = testnet.Build(testnet.Options{Hosts: len(nodes), Client: true, Prefix: opts.Prefix}); err != nil {
			return c, fmt.Errorf("demo: %w", err)
		}
		topo = c.topo
	} else if len(topo.Hosts) < len(nodes) || topo.Client == nil {
		return c, fmt.Errorf("demo: Options.Topology has %d hosts and client %v, want %d hosts and a client", len(topo.Hosts), topo.Client != nil, len(nodes))
	}
	c.Tag, c.Client = topo.Tag, topo.Client
	for i, ns := range nodes {
		if h := topo.Hosts[i]; h.IPv4.Addr() != ns.Addr {
			return c, fmt.Errorf("demo: Options.Topology's host %d is %s, want %s for %s", i+1, h.IPv4.Addr(), ns.Addr, ns.Name)
		}
		n := &Node{NodeSpec: ns, Host: topo.Hosts[i], c: c, nsh: -1}
		c.Nodes = append(c.Nodes, n)
		if err := n.open(); err != nil {
			return c, err
		}
		switch ns.Role {
		case cluster.Bootstrap, cluster.Master:
			cert, err := selfSigned(ns.Name, c.clk.Now(), []netip.Addr{ns.Addr, VIPs()[0].Addr, netip.MustParseAddr("127.0.0.1")},
				[]string{"api." + Domain, "api-int." + Domain, "localhost"})
			if err != nil {
				return c, err
			}
			n.api = newAPIServer(ns.Name, cf.Ports.API, n.listen, cert)
			if err := n.api.start(); err != nil {
				return c, fmt.Errorf("demo: %s: %w", ns.Name, err)
			}
		case cluster.Worker:
			n.router = newRouter(ns.Name, cf.Ports.IngressHealth, n.listen)
			if err := n.router.set(RouterReady); err != nil {
				return c, fmt.Errorf("demo: %s: %w", ns.Name, err)
			}
		}
	}
	if !opts.NoAgents {
		for _, n := range c.Nodes {
			if err := n.startAgent(cfgPath, opts.Bin); err != nil {
				return c, err
			}
		}
		c.Printf("node agents started; work directory %s\n", c.Dir)
	}
	if opts.View > 0 {
		c.viewStop, c.viewDone = make(chan struct{}), make(chan struct{})
		go c.runView()
	}
	return c, nil
}

// preflight rejects what would make Start fail half-way.
func preflight(opts Options) error {
	if opts.Bin == "" && !opts.NoAgents {
		return errors.New("demo: Options.Bin: the vipstack binary is required")
	}
	if os.Geteuid() != 0 {
		return errors.New("demo: needs root: it builds network namespaces (try: sudo go run ./cmd/vipstack demo)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("demo: needs iproute2's ip command, which is not installed")
	}
	return nil
}

// open gets the handles the cluster uses to look into the node's
// namespace: netlink for its addresses, HTTP for its agent's status.
func (n *Node) open() error {
	h, err := netns.GetFromName(n.Host.Name)
	if err != nil {
		return fmt.Errorf("demo: open namespace %s: %w", n.Host.Name, err)
	}
	n.nsh = h
	if n.nl, err = netlink.NewHandleAt(h); err != nil {
		return fmt.Errorf("demo: netlink in %s: %w", n.Host.Name, err)
	}
	n.status = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: n.dial, MaxIdleConnsPerHost: 1, IdleConnTimeout: 5 * time.Second,
	}}
	return nil
}

// dial opens a connection from inside the node's namespace.
func (n *Node) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return dialIn(ctx, n.Host, network, addr)
}

func dialIn(ctx context.Context, h *testnet.Host, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := h.Do(func() error {
		var err error
		conn, err = (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

func (n *Node) listen(addr string) (net.Listener, error) {
	var ln net.Listener
	err := n.Host.Do(func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	})
	return ln, err
}

func (n *Node) startAgent(cfgPath, bin string) error {
	logPath := filepath.Join(n.c.Dir, n.Name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("demo: %s: %w", n.Name, err)
	}
	argv := []string{bin, "node", "--config", cfgPath, "--node", n.Name,
		"--state-dir", filepath.Join(n.c.Dir, n.Name), "--log-level", n.c.opts.LogLevel}
	n.mu.Lock()
	pidns := n.pidns
	n.mu.Unlock()
	var cmd *exec.Cmd
	if pidns {
		// As a container runtime does: process 1 of a new PID namespace,
		// with a /proc of its own (the host's would name this process by
		// its outer PID: /proc/self/task/TID, which netns reads, would not
		// exist). ip netns exec has given it a mount namespace that does
		// not propagate back; the shell mounts /proc and becomes the
		// agent.
		argv = append(append([]string{"-c", `mount -t proc proc /proc && exec "$0" "$@"`}, n.c.opts.Wrap...), argv...)
		cmd = n.Host.Command("sh", argv...)
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWPID
	} else {
		cmd = n.c.opts.command(n.Host.Command, argv...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := n.Host.Start(cmd); err != nil {
		f.Close()
		return fmt.Errorf("demo: start the node agent on %s: %w", n.Name, err)
	}
	a := &agentProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(a.done)
	}()
	n.mu.Lock()
	n.agent, n.bin, n.off = a, bin, ""
	n.mu.Unlock()
	return nil
}

// agentPid is the node agent's process ID (its supervisor's), 0 if none.
func (n *Node) agentPid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.agent == nil {
		return 0
	}
	return n.agent.cmd.Process.Pid
}

// Log returns the node agent's log so far.
func (n *Node) Log() string {
	b, _ := os.ReadFile(filepath.Join(n.c.Dir, n.Name+".log"))
	return string(b)
}

// Off reports why the node is gone, or "" while it runs.
func (n *Node) Off() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.off
}

// Shutdown stops the node as an orderly teardown would: the agent gets
// SIGTERM (its VIPs leave with a priority-0 advertisement), then the
// machine goes away (its servers stop, its cable is pulled).
func (n *Node) Shutdown(ctx context.Context) error {
	n.mu.Lock()
	a := n.agent
	n.mu.Unlock()
	var err error
	if a != nil {
		if err = a.cmd.Process.Signal(syscall.SIGTERM); err == nil {
			err = a.wait(ctx, n.c.clk, 10*time.Second)
		}
		if err != nil {
			_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
			_ = a.wait(context.Background(), n.c.clk, 5*time.Second)
			err = fmt.Errorf("demo: %s: the node agent did not stop on SIGTERM: %w", n.Name, err)
		}
	}
	return errors.Join(err, n.powerOff("shut down"))
}

// Crash kills the node as a power loss would: the agent and everything it
// runs die at once (its VIPs stay configured on a machine nobody can
// reach), its servers stop and its cable is pulled.
func (n *Node) Crash() error {
	n.mu.Lock()
	a := n.agent
	n.mu.Unlock()
	var err error
	if a != nil {
		_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
		err = a.wait(context.Background(), n.c.clk, 5*time.Second)
	}
	return errors.Join(err, n.powerOff("crashed"))
}

func (n *Node) powerOff(why string) error {
	if n.api != nil {
		n.api.stop()
	}
	if n.router != nil {
		n.router.stop()
	}
	n.status.CloseIdleConnections()
	n.mu.Lock()
	n.off = why
	n.mu.Unlock()
	if err := n.Host.Cut(true); err != nil {
		return fmt.Errorf("demo: %s: pull the cable: %w", n.Name, err)
	}
	return nil
}

func (a *agentProc) wait(ctx context.Context, clk clock.Clock, d time.Duration) error {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-a.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return fmt.Errorf("pid %d did not exit within %v", a.cmd.Process.Pid, d)
	}
}

// SetAPI starts or stops the node's stand-in API server.
func (n *Node) SetAPI(up bool) error {
	if n.api == nil {
		return fmt.Errorf("demo: %s (%s) runs no API server", n.Name, n.Role)
	}
	if !up {
		n.api.stop()
		return nil
	}
	return n.api.start()
}

// SetRouter puts the node's stand-in router in mode m.
func (n *Node) SetRouter(m RouterMode) error {
	if n.router == nil {
		return fmt.Errorf("demo: %s (%s) runs no router", n.Name, n.Role)
	}
	return n.router.set(m)
}

// SetLB makes the node's load balancer unreachable from the node itself
// (up false) or reachable again: an nftables rule rejects loopback
// connections to the LB port, so the local chk_ocp_lb check fails while the
// API check still passes.
func (n *Node) SetLB(up bool) error {
	err := n.Host.Do(func() error { return setLBBlock(!up, uint16(n.c.ports.LB)) })
	if err != nil {
		return fmt.Errorf("demo: %s: %w", n.Name, err)
	}
	return nil
}

// Holds reports whether addr is configured on the node's interface.
func (n *Node) Holds(addr netip.Addr) (bool, error) {
	l, err := n.nl.LinkByName(n.Host.Link)
	if err != nil {
		return false, fmt.Errorf("demo: %s: %w", n.Name, err)
	}
	addrs, err := n.nl.AddrList(l, netlink.FAMILY_ALL)
	if err != nil {
		return false, fmt.Errorf("demo: %s: list addresses: %w", n.Name, err)
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.Unmap() == addr {
			return true, nil
		}
	}
	return false, nil
}

// Holders returns the running nodes that have addr configured (a crashed
// node may still have it, on a machine nobody reaches).
func (c *Cluster) Holders(addr netip.Addr) ([]*Node, error) {
	var out []*Node
	for _, n := range c.Nodes {
		if n.Off() != "" {
			continue
		}
		ok, err := n.Holds(addr)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, n)
		}
	}
	return out, nil
}

// Node returns the named node, or nil.
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// Status fetches the node agent's status.
func (n *Node) Status(ctx context.Context) (node.Status, error) {
	var s node.Status
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:9651/status", nil)
	if err != nil {
		return s, err
	}
	resp, err := n.status.Do(req)
	if err != nil {
		return s, fmt.Errorf("demo: %s status: %w", n.Name, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&s); err != nil {
		return s, fmt.Errorf("demo: %s status: %w", n.Name, err)
	}
	return s, nil
}

// Observe asks every running node for its status.
func (c *Cluster) Observe(ctx context.Context) Observation {
	o := Observation{Elapsed: c.clk.Now().Sub(c.start), Nodes: make([]NodeObs, len(c.Nodes))}
	var wg sync.WaitGroup
	for i, n := range c.Nodes {
		if off := n.Off(); off != "" {
			o.Nodes[i] = NodeObs{Name: n.Name, Addr: n.Addr, Gone: off}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			s, err := n.Status(ctx)
			if err != nil {
				o.Nodes[i] = NodeObs{Name: n.Name, Addr: n.Addr, Gone: "agent not answering"}
				for _, v := range VIPs() {
					if held, err := n.Holds(v.Addr); err == nil && held {
						o.Nodes[i].Left = append(o.Nodes[i].Left, v.Kind)
					}
				}
				return
			}
			o.Nodes[i] = ObserveNode(n.Name, n.Addr, s)
			o.Nodes[i].Stray = n.stray(ctx, o.Nodes[i])
		}()
	}
	wg.Wait()
	return o
}

// stray returns the VIP kinds whose address is on the node's interface
// although obs (its agent's status) does not say MASTER for them. A
// disagreement is looked at twice, status first: a takeover or a step-down
// between reading the status and the interface is over by the second look.
func (n *Node) stray(ctx context.Context, obs NodeObs) []string {
	var out []string
	for _, v := range VIPs() {
		if held, err := n.Holds(v.Addr); err != nil || !held || obs.Inst[v.Kind].State == "MASTER" {
			continue
		}
		in, err := n.Priority(ctx, v.Kind)
		if err != nil || in.State == "MASTER" {
			continue
		}
		if held, err := n.Holds(v.Addr); err == nil && held {
			out = append(out, v.Kind)
		}
	}
	return out
}

// Priority returns the effective priority of the node's instance for kind.
func (n *Node) Priority(ctx context.Context, kind string) (InstObs, error) {
	s, err := n.Status(ctx)
	if err != nil {
		return InstObs{}, err
	}
	in, ok := ObserveNode(n.Name, n.Addr, s).Inst[kind]
	if !ok {
		return InstObs{}, fmt.Errorf("demo: %s runs no %s instance", n.Name, kind)
	}
	return in, nil
}

// Poll calls cond every 100 ms until it reports done, ctx ends or timeout
// passes; the error then repeats cond's last explanation.
func (c *Cluster) Poll(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) (done bool, why string, err error)) error {
	deadline := c.clk.Now().Add(timeout)
	why := "not checked yet"
	for {
		done, w, err := cond(ctx)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if w != "" {
			why = w
		}
		if !c.clk.Now().Before(deadline) {
			return fmt.Errorf("not so after %v: %s", timeout, why)
		}
		t := c.clk.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("interrupted while waiting: %w", ctx.Err())
		case <-t.C():
		}
	}
}

// WaitHolder waits until exactly one running node holds vip, that node
// satisfies want (nil: any), and that stays so for `stable`. It returns the
// holder.
func (c *Cluster) WaitHolder(ctx context.Context, vip netip.Addr, want func(*Node) bool, stable, timeout time.Duration) (*Node, error) {
	var since time.Time
	var got *Node
	err := c.Poll(ctx, timeout, func(ctx context.Context) (bool, string, error) {
		hs, err := c.Holders(vip)
		if err != nil {
			return false, "", err
		}
		if len(hs) != 1 || (want != nil && !want(hs[0])) {
			since, got = time.Time{}, nil
			return false, fmt.Sprintf("%s is held by %s", vip, c.holderStates(ctx, vip, hs)), nil
		}
		if got != hs[0] {
			since, got = c.clk.Now(), hs[0]
		}
		if c.clk.Now().Sub(since) < stable {
			return false, fmt.Sprintf("%s is held by %s for less than %v", vip, got.Name, stable), nil
		}
		return true, "", nil
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}

// holderStates names the nodes that have vip on their interface and, when
// there are several, what each one's agent reports for it: a holder whose
// agent does not say MASTER is the kernel and the agent disagreeing.
func (c *Cluster) holderStates(ctx context.Context, vip netip.Addr, hs []*Node) string {
	if len(hs) < 2 {
		return nodeNames(hs)
	}
	kind := ""
	for _, v := range VIPs() {
		if v.Addr == vip {
			kind = v.Kind
		}
	}
	var s []string
	for _, n := range hs {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		in, err := n.Priority(ctx, kind)
		cancel()
		switch {
		case err != nil:
			s = append(s, fmt.Sprintf("%s (its agent does not say: %v)", n.Name, err))
		case in.Reason != "":
			s = append(s, fmt.Sprintf("%s (%s since: %s)", n.Name, in.State, in.Reason))
		default:
			s = append(s, fmt.Sprintf("%s (%s)", n.Name, in.State))
		}
	}
	return strings.Join(s, " and ")
}

func nodeNames(ns []*Node) string {
	if len(ns) == 0 {
		return "nobody"
	}
	var s []string
	for _, n := range ns {
		s = append(s, n.Name)
	}
	return strings.Join(s, " and ")
}

// Resolve asks the DNS server at server (from the client) for name's IPv4
// addresses.
func (c *Cluster) Resolve(ctx context.Context, server netip.Addr, name string) ([]netip.Addr, error) {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dialIn(ctx, c.Client, network, netip.AddrPortFrom(server, 53).String())
	}}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addrs, err := r.LookupNetIP(ctx, "ip4", strings.TrimSuffix(name, ".")+".")
	if err != nil {
		return nil, fmt.Errorf("resolve %s at %s: %w", name, server, err)
	}
	return addrs, nil
}

// Get fetches url from the client (a new connection each time, TLS without
// verification) and returns the body of a 200 answer. A host name in url is
// resolved through the DNS server at dnsServer.
func (c *Cluster) Get(ctx context.Context, dnsServer netip.Addr, url string) (string, error) {
	tr := &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // the stand-ins' certificates are self-signed
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			if _, err := netip.ParseAddr(host); err != nil {
				addrs, err := c.Resolve(ctx, dnsServer, host)
				if err != nil {
					return nil, err
				}
				host = addrs[0].String()
			}
			return dialIn(ctx, c.Client, network, net.JoinHostPort(host, port))
		},
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", fmt.Errorf("client GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", fmt.Errorf("client GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("client GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	return strings.TrimSpace(string(b)), nil
}

// Printf writes to the demo's output, prefixed with the elapsed time.
func (c *Cluster) Printf(format string, args ...any) {
	c.out.write(stamp(c.clk.Now().Sub(c.start)) + "  " + fmt.Sprintf(format, args...))
}

// Elapsed is the time since the cluster started being built.
func (c *Cluster) Elapsed() time.Duration { return c.clk.Now().Sub(c.start) }

// runView prints the live view whenever it changes.
func (c *Cluster) runView() {
	defer close(c.viewDone)
	defer func() {
		if r := recover(); r != nil {
			c.Printf("live view stopped: %v\n", r)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-c.viewStop
		cancel()
	}()
	var prev Observation
	var prevTable string
	for {
		o := c.Observe(ctx)
		if ctx.Err() != nil {
			return
		}
		for _, m := range Moves(prev, o) {
			c.out.write(stamp(o.Elapsed) + "  " + m + "\n")
		}
		if t := o.Table(); t != prevTable {
			c.out.write(stamp(o.Elapsed) + "  " + t + "\n")
			prevTable = t
		}
		prev = o
		t := c.clk.NewTimer(c.opts.View)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// Close stops the live view and the node agents and removes every
// namespace, process and file the cluster made. It is safe to call twice.
func (c *Cluster) Close() {
	c.closeOnce.Do(c.close)
}

func (c *Cluster) close() {
	if c.viewStop != nil {
		close(c.viewStop)
		<-c.viewDone
	}
	// Agents first, gracefully and all at once, so they remove what they
	// installed; whatever is left dies with the namespaces.
	var wg sync.WaitGroup
	for _, n := range c.Nodes {
		n.mu.Lock()
		a := n.agent
		n.mu.Unlock()
		if a == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = a.cmd.Process.Signal(syscall.SIGTERM)
			if a.wait(context.Background(), c.clk, 3*time.Second) != nil {
				_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
				_ = a.wait(context.Background(), c.clk, 5*time.Second)
			}
		}()
	}
	wg.Wait()
	for _, n := range c.Nodes {
		if n.api != nil {
			n.api.stop()
		}
		if n.router != nil {
			n.router.stop()
		}
		if n.status != nil {
			n.status.CloseIdleConnections()
		}
		if n.nl != nil {
			n.nl.Close()
		}
		if n.nsh >= 0 {
			n.nsh.Close()
		}
	}
	if c.topo != nil {
		c.topo.Close()
	}
	if c.Dir != "" && !c.keepDir {
		_ = os.RemoveAll(c.Dir)
	}
}

// syncWriter serializes the view's and the story's lines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) write(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = io.WriteString(s.w, text)
}
