package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/vipstack/vipstack/internal/chaos"
	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/procfs"
	"github.com/vipstack/vipstack/internal/testnet"
)

// mixedInstance is one VRRP group every node of a mixed cluster runs.
type mixedInstance struct {
	name    string
	vrid    int
	version int
	vip     netip.Prefix
}

// mixedInstances are the groups of a mixed run: VRRPv2 over IPv4 (whole
// seconds: keepalived rounds a shorter v2 interval up), VRRPv3 over IPv4
// and over IPv6 (the advert interval of the run).
var mixedInstances = []mixedInstance{
	{name: "VI_4v2", vrid: 51, version: 2, vip: netip.MustParsePrefix("198.18.0.100/32")},
	{name: "VI_4v3", vrid: 52, version: 3, vip: netip.MustParsePrefix("198.18.0.101/32")},
	{name: "VI_6v3", vrid: 53, version: 3, vip: netip.MustParsePrefix("fd00:bb::100/128")},
}

// mixedNode is one node of a mixed cluster: keepalived 2.2.7 or `vipstack
// vrrp` on the same keepalived.conf, or FRR's vrrpd (with -frr).
type mixedNode struct {
	name string
	impl peers.Impl
	host *testnet.Host
	dir  string
	nsh  netns.NsHandle
	nl   *netlink.Handle
	// drops are its VIPs' removals between samples (vipstack nodes).
	drops *drops

	mu     sync.Mutex
	frr    *peers.FRRNode // FRR's zebra and vrrpd (impl FRR; proc stays nil)
	proc   *peers.Node
	past   []string // the logs of the processes before proc (killed, started again)
	engine int      // the cached engine PID (keepalived's VRRP child, vipstack's supervised engine)
	reload int      // reloads so far: each rewrites the file with a new comment
}

// mixedMode drives a cluster in the middle of a node-by-node migration
// from keepalived to vipstack: both on one bridge, in the same VRRP groups.
type mixedMode struct {
	o     options
	work  string // the nodes' directories
	topo  *testnet.Topology
	nodes []*mixedNode
	cfg   chaos.Config
	netem bool
}

// startMixed builds the namespaces, starts keepalived on the odd nodes
// and vipstack on the even ones, and waits until every VIP has one holder.
func startMixed(ctx context.Context, o options, out io.Writer) (_ mode, cfg chaos.Config, roles []cluster.Role, netem bool, err error) {
	if _, err := exec.LookPath("keepalived"); err != nil {
		return nil, cfg, nil, false, fmt.Errorf("-mixed needs keepalived 2.2.7 (Debian package keepalived): %w", err)
	}
	if o.FRR {
		if _, err := os.Stat(filepath.Join(peers.FRRDir, "vrrpd")); err != nil {
			return nil, cfg, nil, false, fmt.Errorf("-frr needs FRR 8.4's vrrpd (Debian package frr): %w", err)
		}
	}
	impls := "keepalived 2.2.7 and vipstack alternating"
	if o.FRR {
		impls = "keepalived 2.2.7, vipstack and FRR vrrpd in turn"
	}
	fmt.Fprintf(out, "vipstack chaos (mixed): seed %d, %d faults, %d nodes (%s), VRRPv2 IPv4 at 1s, VRRPv3 IPv4 and IPv6 at %v\n",
		o.Seed, o.Faults, o.Nodes, impls, o.Advert)
	topo, err := testnet.Build(testnet.Options{Hosts: o.Nodes, Prefix: o.Prefix})
	if err != nil {
		return nil, cfg, nil, false, err
	}
	m := &mixedMode{o: o, topo: topo}
	ok := false
	defer func() {
		if !ok {
			m.close()
		}
	}()
	if m.work, err = os.MkdirTemp("", "vipstack-chaos-mixed-"); err != nil {
		return nil, cfg, nil, false, err
	}
	if o.FRR {
		// FRR's daemons drop to user frr, who must enter the directories
		// above their own.
		if err := os.Chmod(m.work, 0o755); err != nil {
			return nil, cfg, nil, false, err
		}
	}
	var vips []netip.Addr
	for _, in := range mixedInstances {
		vips = append(vips, in.vip.Addr())
	}
	var plans []chaos.NodePlan
	for i, h := range topo.Hosts {
		impl := mixedImpl(i, o.FRR)
		n := &mixedNode{name: fmt.Sprintf("%s-%d", impl, i+1), impl: impl, host: h, dir: filepath.Join(m.work, fmt.Sprintf("n%d", i+1))}
		m.nodes = append(m.nodes, n)
		if n.nsh, err = netns.GetFromName(h.Name); err != nil {
			return nil, cfg, nil, false, fmt.Errorf("open namespace %s: %w", h.Name, err)
		}
		if n.nl, err = netlink.NewHandleAt(n.nsh); err != nil {
			return nil, cfg, nil, false, fmt.Errorf("netlink in %s: %w", h.Name, err)
		}
		if n.impl == peers.Vipstack {
			if n.drops, err = watchDrops(n.nsh, vips); err != nil {
				return nil, cfg, nil, false, fmt.Errorf("%s: %w", h.Name, err)
			}
		}
		np := chaos.NodePlan{Node: n.name}
		for j, in := range mixedInstances {
			np.Instances = append(np.Instances, chaos.PlanInstance{Priority: m.priority(i, j), VIPs: []netip.Addr{in.vip.Addr()}})
		}
		plans = append(plans, np)
		roles = append(roles, cluster.Master) // every node may hold every VIP
	}
	if cfg, err = chaos.ConfigForPlans(o.Advert, vips, plans); err != nil {
		return nil, cfg, nil, false, err
	}
	cfg.AdvertOf = make([]time.Duration, len(cfg.VIPs))
	for j, in := range mixedInstances {
		if in.version == 2 {
			cfg.AdvertOf[j] = m.advert(in)
		}
	}
	// keepalived, taking over, advertises before it adds the VIP (RFC
	// 5798's order): a handover to it may leave the VIP on no node for a
	// few milliseconds. A handover to vipstack or FRR may not
	// (advertsFirst).
	cfg.HandoverGap = 100 * time.Millisecond
	cfg.AdvertFirst = make([]bool, len(m.nodes))
	for i, n := range m.nodes {
		cfg.AdvertFirst[i] = advertsFirst(n.impl)
	}
	// keepalived sweeps nothing when it starts again after kill -9: the
	// VIPs it held stay until it becomes master or a backup again, which
	// takes it a Master_Down_Interval of the slowest group.
	cfg.StartSweep = max(cfg.StartSweep, cfg.RecoveryBound()+time.Second)
	m.cfg = cfg
	for _, n := range m.nodes {
		if err := m.start(n); err != nil {
			return nil, cfg, nil, false, err
		}
	}
	m.netem = topo.Hosts[0].ProbeNetem()
	began := time.Now()
	if err := waitFor(ctx, 90*time.Second, func() bool {
		s, err := m.sample()
		if err != nil {
			return false
		}
		for _, v := range cfg.VIPs {
			held := 0
			for _, ns := range s {
				if slices.Contains(ns.Holds, v) {
					held++
				}
			}
			if held != 1 {
				return false
			}
		}
		return true
	}, "the mixed cluster did not settle within 90 s: a VIP without exactly one holder"); err != nil {
		return nil, cfg, nil, false, err
	}
	fmt.Fprintf(out, "cluster settled after %.1f s:%s\n", time.Since(began).Seconds(), m.holders())
	ok = true
	return m, cfg, roles, m.netem, nil
}

// holders names each group's holder now (" VI_4v2 on keepalived-1, ...").
func (m *mixedMode) holders() string {
	s, err := m.sample()
	if err != nil {
		return " " + err.Error()
	}
	var parts []string
	for _, in := range mixedInstances {
		var on []string
		for i, ns := range s {
			if slices.Contains(ns.Holds, in.vip.Addr()) {
				on = append(on, m.nodes[i].name)
			}
		}
		parts = append(parts, fmt.Sprintf(" %s on %s", in.name, strings.Join(on, "+")))
	}
	return strings.Join(parts, ",")
}

// priority spreads the groups' masters: node i has the highest priority
// (250) in group j when i == j (mod the nodes), and less for each step
// away, down to 10 or more.
func (m *mixedMode) priority(i, j int) uint8 {
	n := len(m.topo.Hosts)
	return uint8(250 - 240*((i-j+n)%n)/n)
}

func (m *mixedMode) advert(in mixedInstance) time.Duration {
	if in.version == 2 {
		return max(time.Second, m.o.Advert.Round(time.Second))
	}
	return m.o.Advert
}

// conf renders node i's keepalived.conf (a comment counts its reloads).
func (m *mixedMode) conf(n *mixedNode) string {
	i := slices.Index(m.nodes, n)
	cfg := keepalived.NewConfig()
	cfg.Global.RouterID = n.name
	for j, mi := range mixedInstances {
		in := cfg.NewInstance(mi.name)
		in.Interface, in.VRID, in.Priority = n.host.Link, uint8(mi.vrid), m.priority(i, j)
		in.AdvertInterval, in.Version, in.Preempt = m.advert(mi), mi.version, true
		in.VIPs = []keepalived.VIP{{Prefix: mi.vip}}
		cfg.Instances = append(cfg.Instances, in)
	}
	return fmt.Sprintf("# reload %d\n%s", n.reload, keepalived.Format(cfg))
}

// start runs the node's implementation on its current keepalived.conf
// (FRR: vrrpd.conf).
func (m *mixedMode) start(n *mixedNode) error {
	if n.impl == peers.FRR {
		return m.startFRR(n)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc != nil && n.proc.Alive() {
		return fmt.Errorf("%s still runs", n.name)
	}
	// keepalived refuses to start while its pid files name a live
	// process: after kill -9 they stay, and a PID may have been reused.
	for _, f := range []string{"keepalived.pid", "vrrp.pid"} {
		if err := os.Remove(filepath.Join(n.dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	p, err := peers.Start(n.host, n.impl, m.conf(n), n.dir, m.o.Bin, "--log-level", "info")
	if err != nil {
		return err
	}
	if n.proc != nil {
		n.past = append(n.past, n.proc.Log())
	}
	n.proc, n.engine = p, 0
	return nil
}

func (m *mixedMode) running(n *mixedNode) *peers.Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil || !n.proc.Alive() {
		return nil
	}
	return n.proc
}

func (m *mixedMode) name() string {
	count := map[peers.Impl]int{}
	for _, n := range m.nodes {
		count[n.impl]++
	}
	frr := ""
	if count[peers.FRR] > 0 {
		frr = fmt.Sprintf(", FRR 8.4 vrrpd on %d", count[peers.FRR])
	}
	return fmt.Sprintf("mixed: keepalived 2.2.7 on %d nodes, `vipstack vrrp` on %d%s, in VRRPv2 IPv4 (1 s), VRRPv3 IPv4 and IPv6 groups",
		count[peers.Keepalived], count[peers.Vipstack], frr)
}

// alive reports whether node n's implementation runs (FRR: zebra and
// vrrpd both).
func (m *mixedMode) alive(n *mixedNode) bool {
	if n.impl == peers.FRR {
		n.mu.Lock()
		f := n.frr
		n.mu.Unlock()
		return f != nil && f.Running()
	}
	return m.running(n) != nil
}

// free: every fault a keepalived node meets (kill, stall, cut, ifdown,
// loss, reload); kill -9 of the supervised engine only on vipstack nodes.
func (m *mixedMode) free(i int, k chaos.Kind) bool {
	n := m.nodes[i]
	if n.impl == peers.FRR {
		return k != chaos.KillEngine && m.alive(n)
	}
	p := m.running(n)
	if p == nil {
		return false
	}
	if k == chaos.KillEngine {
		pid, err := p.EnginePid()
		return n.impl == peers.Vipstack && err == nil && pid != p.Pid()
	}
	return true
}

func (m *mixedMode) guarded(int) bool { return true }

func (m *mixedMode) fault(ctx context.Context, f chaos.Fault, i int) (begin, end func() error, err error) {
	if f.Kind == chaos.Reload {
		return m.reloadAll, nil, nil
	}
	if i < 0 {
		return nil, nil, fmt.Errorf("%s: not a fault of a mixed cluster", f.Kind)
	}
	n := m.nodes[i]
	if n.impl == peers.FRR {
		if begin, end, ok := m.frrFault(f, n); ok {
			return begin, end, nil
		}
	}
	h := n.host
	switch f.Kind {
	case chaos.KillEngine:
		var pid, parent int
		begin = func() error {
			p := m.running(n)
			if p == nil {
				return fmt.Errorf("%s does not run", n.name)
			}
			var err error
			if pid, err = p.EnginePid(); err != nil {
				return err
			}
			parent = p.Pid()
			return syscall.Kill(pid, syscall.SIGKILL)
		}
		end = func() error {
			return waitFor(ctx, 70*time.Second, func() bool {
				c := procfs.ChildOf(parent)
				return c != 0 && c != pid
			}, fmt.Sprintf("%s: no new engine 70 s after kill -9 of pid %d", n.name, pid))
		}
	case chaos.KillAgent:
		begin = func() error {
			p := m.running(n)
			if p == nil {
				return fmt.Errorf("%s does not run", n.name)
			}
			return p.Kill()
		}
		end = func() error { return m.start(n) }
	case chaos.Stall:
		sig := func(s syscall.Signal) error {
			p := m.running(n)
			if p == nil {
				return fmt.Errorf("%s does not run", n.name)
			}
			return p.SignalGroup(s)
		}
		begin, end = func() error { return sig(syscall.SIGSTOP) }, func() error { return sig(syscall.SIGCONT) }
	case chaos.Cut:
		begin, end = func() error { return h.Cut(true) }, func() error { return h.Cut(false) }
	case chaos.IfDown:
		begin, end = func() error { return h.SetLink(false) }, func() error { return h.SetLink(true) }
	case chaos.Loss, chaos.HeavyLoss:
		begin = func() error { return h.Impair(f.Percent, 0, m.netem) }
		end = func() error { return h.Impair(0, 0, m.netem) }
	case chaos.Delay:
		begin = func() error { return h.Impair(0, f.Delay, m.netem) }
		end = func() error { return h.Impair(0, 0, m.netem) }
	default:
		return nil, nil, fmt.Errorf("%s: not a fault of a mixed cluster", f.Kind)
	}
	return begin, end, nil
}

// reloadAll rewrites every node's keepalived.conf (a new comment) and
// sends SIGHUP to each running one, as an operator's reload does (FRR:
// reloadFRR).
func (m *mixedMode) reloadAll() error {
	var errs []error
	for _, n := range m.nodes {
		if n.impl == peers.FRR {
			errs = append(errs, m.reloadFRR(n))
			continue
		}
		n.mu.Lock()
		n.reload++
		text := m.conf(n)
		p := n.proc
		n.mu.Unlock()
		if err := os.WriteFile(filepath.Join(n.dir, "keepalived.conf"), []byte(text), 0o644); err != nil {
			errs = append(errs, err)
			continue
		}
		// A process still starting (no VRRP child or engine yet) may not
		// handle SIGHUP yet: it would die of it. An operator's reload
		// waits for the service to have started too.
		if p != nil && p.Alive() && procfs.ChildOf(p.Pid()) != 0 {
			if err := p.Signal(syscall.SIGHUP); err != nil && !errors.Is(err, os.ErrProcessDone) {
				errs = append(errs, fmt.Errorf("%s: SIGHUP: %w", n.name, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (m *mixedMode) sample() ([]chaos.NodeSample, error) {
	out := make([]chaos.NodeSample, len(m.nodes))
	for i, n := range m.nodes {
		ns := &out[i]
		if n.impl == peers.FRR {
			n.mu.Lock()
			f := n.frr
			n.mu.Unlock()
			if f == nil {
				continue
			}
			var err error
			if ns.Holds, err = m.sampleFRR(n, f); err != nil {
				return nil, err
			}
			ns.Agent = f.Running()
			ns.Engine = ns.Agent // no supervisor: vrrpd is the engine
			continue
		}
		lk, err := n.nl.LinkByName(n.host.Link)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.name, err)
		}
		addrs, err := n.nl.AddrList(lk, netlink.FAMILY_ALL)
		if err != nil {
			return nil, fmt.Errorf("%s: list addresses: %w", n.name, err)
		}
		for _, a := range addrs {
			if ip, ok := netip.AddrFromSlice(a.IP); ok && slices.Contains(m.cfg.VIPs, ip.Unmap()) {
				ns.Holds = append(ns.Holds, ip.Unmap())
			}
		}
		ns.Dropped = n.drops.take()
		p := m.running(n)
		ns.Agent = p != nil
		n.mu.Lock()
		switch {
		case p == nil:
			n.engine = 0
		default:
			if n.engine == 0 || !procfs.Alive(n.engine) || procfs.PPid(n.engine) != p.Pid() {
				n.engine = procfs.ChildOf(p.Pid())
			}
			ns.Engine = n.engine != 0
		}
		n.mu.Unlock()
	}
	return out, nil
}

func (m *mixedMode) slowest() string { return "addresses by netlink, processes from /proc" }

func (m *mixedMode) names() map[netip.Addr]string {
	out := map[netip.Addr]string{}
	for _, in := range mixedInstances {
		out[in.vip.Addr()] = in.name
	}
	return out
}

func (m *mixedMode) check() []string {
	var out []string
	for _, n := range m.nodes {
		if !m.alive(n) {
			out = append(out, n.name+" does not run at the end of the run (it exited on its own)")
		}
	}
	return out
}

func (m *mixedMode) judge(chaos.Config, []chaos.Window) (string, []chaos.Violation, error) {
	return "", nil, nil
}

func (m *mixedMode) keepLogs() (string, error) {
	dir, err := os.MkdirTemp("", "vipstack-chaos-logs-")
	if err != nil {
		return "", err
	}
	for _, n := range m.nodes {
		n.mu.Lock()
		logs := slices.Clone(n.past)
		if n.proc != nil {
			logs = append(logs, n.proc.Log())
		}
		if n.frr != nil {
			logs = append(logs, n.frr.Log())
		}
		n.mu.Unlock()
		text := strings.Join(logs, "---- started again\n")
		if err := os.WriteFile(filepath.Join(dir, n.name+".log"), []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func (m *mixedMode) close() {
	for _, n := range m.nodes {
		if p := m.running(n); p != nil {
			_ = p.SignalGroup(syscall.SIGCONT)
			_ = p.Kill()
		}
		if n.frr != nil && n.frr.Running() {
			_ = n.frr.SignalAll(syscall.SIGCONT)
			_ = n.frr.Kill()
		}
		n.drops.close()
		if n.nl != nil {
			n.nl.Close()
		}
		if n.nsh.IsOpen() {
			n.nsh.Close()
		}
	}
	if m.work != "" {
		os.RemoveAll(m.work)
	}
	m.topo.Close()
}
