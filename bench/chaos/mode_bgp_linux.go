package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/bgp"
	"github.com/vipstack/vipstack/internal/chaos"
	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/procfs"
	"github.com/vipstack/vipstack/internal/routedlab"
	"github.com/vipstack/vipstack/internal/supervise"
	"github.com/vipstack/vipstack/internal/testnet"
)

// The routed cluster of -bgp: FRR 8.4 (zebra, bfdd, bgpd) in the router
// namespace, and master i (1-based) alone on 198.18.i.0/24 at .10 behind
// it, announcing the API and Ingress VIPs (outside every subnet) by eBGP
// with BFD at 100 ms x 3 and a 30 s hold time. The router installs them
// as ECMP routes (maximum-paths 8).
var (
	bgpAPI     = netip.MustParseAddr("198.19.0.5")
	bgpIngress = netip.MustParseAddr("198.19.0.7")
	// With -family 6 or both: IPv6 VIPs outside every node's fd00:i::/64,
	// announced over a second session per node, between the link's IPv6
	// addresses (fd00:i::1 and fd00:i::10), with BFD over IPv6.
	bgpAPI6     = netip.MustParseAddr("fd00:ff::5")
	bgpIngress6 = netip.MustParseAddr("fd00:ff::7")
)

// bgpVIPs are the API and Ingress VIPs of family ("4", "6", "both").
func bgpVIPs(family string) (api, ingress []netip.Addr) {
	if family != "6" {
		api, ingress = append(api, bgpAPI), append(ingress, bgpIngress)
	}
	if family != "4" {
		api, ingress = append(api, bgpAPI6), append(ingress, bgpIngress6)
	}
	return api, ingress
}

// bgpFamilies are the lab's families of family: the sessions to set up.
func bgpFamilies(family string) (v4, v6 bool) { return family != "6", family != "4" }

func joinAddrs(as []netip.Addr) string {
	var ss []string
	for _, a := range as {
		ss = append(ss, fmt.Sprintf("'%s'", a))
	}
	return strings.Join(ss, ", ")
}

const (
	bgpRouterASN = 64500
	bgpNodeASN   = 64512
	bgpBFD       = 100 * time.Millisecond // BFD interval, both ends
	bgpBFDMult   = 3
	// bgpRejoin is how long a node may take to be routed again after a
	// fault (chaos.Config.Rejoin): its agent's start, the checks'
	// rise (chk_ocp_lb: 3 passes 2 s apart), BFD up, the session. Runs
	// on a loaded machine (load 10-19) took up to 7.4 s.
	bgpRejoin = 10 * time.Second
	// bgpWarmup is how long a new session may lack BFD
	// (chaos.Config.Warmup): both ends start it once the session is up,
	// at one packet a second until Up.
	bgpWarmup = 3 * time.Second
	bgpHold   = 30 * time.Second
	// bgpRouterBound is how long after a router daemon's restart every
	// node may take to be routed every VIP again (chaos.Config.RouterBound).
	// A restarted bgpd 8.4 ends the first session it establishes with a
	// Cease (BFD down, subcode 10) when its new BFD session reports Down;
	// it may do so twice. After each, GoBGP waits its fixed idle hold
	// (5 s) and then tries to connect at a random point in one to two
	// connect retries (bgp.DefaultConnectRetry, 1 s; bgpd's own is 1 s
	// too): 7 s at most. Then BFD comes up at its slow start (bgpWarmup:
	// a node holds its session down after a BFD failure until then).
	bgpRouterBound = 2*(5*time.Second+2*bgp.DefaultConnectRetry) + bgpWarmup
	// bgpTermWait bounds a graceful stop: the speaker's withdrawals
	// (StopTimeout 3 s at most), its drain and the engine's exit.
	bgpTermWait = 15 * time.Second
	// bgpFlapTable is the nftables table of a FlapLB fault: it refuses
	// the node's own connections to its load balancer (port 9445).
	bgpFlapTable = "vbcflap"
)

// bgpMode drives `vipstack node`s announcing VIPs by BGP to FRR.
type bgpMode struct {
	o       options
	lab     *routedlab.Lab
	cfg     chaos.Config
	cfgPath string
	nodes   []*bgpNode
	frr     map[string]*bgpProc // zebra, bfdd, bgpd
	frrDir  string
	rnsh    netns.NsHandle
	rnl     *netlink.Handle // the router's namespace
	netem   bool

	mu      sync.Mutex
	reloads int
	slowRT  time.Duration // the longest read of the router's routes
	slowN   time.Duration // the longest read of one node
}

// bgpNode is one master.
type bgpNode struct {
	name string // m1, m2, ...
	i    int    // its subnet
	ns   string
	host *testnet.Host // for Impair
	nsh  netns.NsHandle
	nl   *netlink.Handle
	nft  *nftables.Conn
	lo   netlink.Link
	srv  []io.Closer // stand-in servers
	log  string      // its agent's log file

	mu     sync.Mutex
	agent  *bgpProc
	engine int
}

// bgpProc is a process started in its own process group.
type bgpProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *bgpProc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL to its group (SIGCONT first: a stalled group) and
// waits, bounded, for it.
func (p *bgpProc) kill() error {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT)
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("pid %d has not exited 5 s after SIGKILL", p.cmd.Process.Pid)
	}
}

// startIn runs name in namespace ns, its output appended to logPath.
func startIn(ns, logPath, name string, args ...string) (*bgpProc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	c := exec.Command("ip", append([]string{"netns", "exec", ns, name}, args...)...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Stdout, c.Stderr = f, f
	if err := c.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s in %s: %w", name, ns, err)
	}
	p := &bgpProc{cmd: c, done: make(chan struct{})}
	go func() {
		_ = c.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// bgpClusterYAML is the nodes' cluster file for family; note, if set, is
// a comment (a reload's harmless change).
func bgpClusterYAML(nodes int, family, note string) string {
	var b strings.Builder
	api, ing := bgpVIPs(family)
	v4, v6 := bgpFamilies(family)
	fmt.Fprintf(&b, "name: chaos\nbaseDomain: example.com\napiVIPs: [%s]\ningressVIPs: [%s]\nmachineNetworks: [", joinAddrs(api), joinAddrs(ing))
	for i := 1; i <= nodes; i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "198.18.%d.0/24", i)
		if v6 {
			fmt.Fprintf(&b, ", 'fd00:%d::/64'", i)
		}
	}
	b.WriteString("]\nnodes:\n")
	for i := 1; i <= nodes; i++ {
		fmt.Fprintf(&b, "  - {name: m%d, role: master, ips: [%s", i, routedlab.SubnetV4(i, 10))
		if v6 {
			fmt.Fprintf(&b, ", '%s'", routedlab.SubnetV6(i, 0x10))
		}
		b.WriteString("]}\n")
	}
	fmt.Fprintf(&b, "bgp:\n  asn: %d\n  announce: [api, ingress]\n  peers:\n", bgpNodeASN)
	for i := 1; i <= nodes; i++ {
		var peers []netip.Addr
		if v4 {
			peers = append(peers, routedlab.SubnetV4(i, 1))
		}
		if v6 {
			peers = append(peers, routedlab.SubnetV6(i, 1))
		}
		for _, p := range peers {
			fmt.Fprintf(&b, "    - {address: '%s', asn: %d, nodes: [m%d], holdTime: %v, keepalive: 10s, bfd: {interval: %v, multiplier: %d}}\n",
				p, bgpRouterASN, i, bgpHold, bgpBFD, bgpBFDMult)
		}
	}
	if note != "" {
		fmt.Fprintf(&b, "# chaos: %s\n", note)
	}
	return b.String()
}

// bgpBIRDConf is BIRD 2's configuration as the router: one eBGP session
// with BFD per node, ECMP into the kernel (merge paths). Not BIRD's
// defaults: connect retry 1 s and error wait 1 s as bgpd's, and graceful
// restart off (BIRD would take a node's session ending without a
// NOTIFICATION for a restart and keep its routes), as FRR here.
func bgpBIRDConf(nodes int, family string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `router id %s;
log stderr all;
timeformat log "%%F %%T.%%6f";
debug protocols { states, events };
protocol device { scan time 10; }
protocol kernel kernel4 { ipv4 { export where source = RTS_BGP; }; merge paths on; }
protocol kernel kernel6 { ipv6 { export where source = RTS_BGP; }; merge paths on; }
protocol bfd %s { interface "*" { min rx interval %d ms; min tx interval %d ms; multiplier %d; }; }
`, routedlab.SubnetV4(routedlab.ClientSubnet, 1), bgpBIRDBFD, bgpBFD.Milliseconds(), bgpBFD.Milliseconds(), bgpBFDMult)
	v4, v6 := bgpFamilies(family)
	for i := 1; i <= nodes; i++ {
		type sess struct {
			name, fam   string
			local, node netip.Addr
		}
		var ss []sess
		if v4 {
			ss = append(ss, sess{fmt.Sprintf("m%d", i), "ipv4", routedlab.SubnetV4(i, 1), routedlab.SubnetV4(i, 10)})
		}
		if v6 {
			ss = append(ss, sess{fmt.Sprintf("m%dv6", i), "ipv6", routedlab.SubnetV6(i, 1), routedlab.SubnetV6(i, 0x10)})
		}
		for _, x := range ss {
			fmt.Fprintf(&b, "protocol bgp %s {\n local %v as %d;\n neighbor %v as %d;\n hold time %d;\n keepalive time 10;\n"+
				" connect retry time 1;\n error wait time 1, 1;\n graceful restart off;\n bfd on;\n %s { import all; export none; };\n}\n",
				x.name, x.local, bgpRouterASN, x.node, bgpNodeASN, int(bgpHold.Seconds()), x.fam)
		}
	}
	return b.String()
}

// bgpBIRDBFD names BIRD's BFD protocol: a restart-bfdd fault disables
// and enables it (BIRD has no BFD process of its own).
const bgpBIRDBFD = "bfd1"

// bgpFRRConf is bgpd's configuration: one eBGP session with BFD per node
// and family.
func bgpFRRConf(nodes int, family string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "router bgp %d\n bgp router-id %s\n no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\n", bgpRouterASN, routedlab.SubnetV4(routedlab.ClientSubnet, 1))
	v4, v6 := bgpFamilies(family)
	var ns4, ns6 []netip.Addr
	for i := 1; i <= nodes; i++ {
		type sess struct{ node, src netip.Addr }
		var ss []sess
		if v4 {
			ss = append(ss, sess{routedlab.SubnetV4(i, 10), routedlab.SubnetV4(i, 1)})
			ns4 = append(ns4, routedlab.SubnetV4(i, 10))
		}
		if v6 {
			ss = append(ss, sess{routedlab.SubnetV6(i, 0x10), routedlab.SubnetV6(i, 1)})
			ns6 = append(ns6, routedlab.SubnetV6(i, 0x10))
		}
		for _, x := range ss {
			n := x.node
			fmt.Fprintf(&b, " neighbor %s remote-as %d\n neighbor %s timers 10 30\n neighbor %s timers connect 1\n", n, bgpNodeASN, n, n)
			// update-source: bgpd registers the BFD session with its
			// source from the start.
			fmt.Fprintf(&b, " neighbor %s update-source %s\n neighbor %s bfd profile fast\n", n, x.src, n)
		}
	}
	for _, af := range []struct {
		name string
		ns   []netip.Addr
	}{{"ipv4", ns4}, {"ipv6", ns6}} {
		if len(af.ns) == 0 {
			continue
		}
		fmt.Fprintf(&b, " address-family %s unicast\n  maximum-paths 8\n", af.name)
		for _, n := range af.ns {
			fmt.Fprintf(&b, "  neighbor %s activate\n", n)
		}
		b.WriteString(" exit-address-family\n")
	}
	b.WriteString("!\n")
	return b.String()
}

// requireRouter says what is missing for -bgp with router r.
func requireRouter(r string) error {
	need, pkg := []string{"/usr/lib/frr/zebra", "/usr/lib/frr/bgpd", "/usr/lib/frr/bfdd"}, "frr"
	if r == "bird" {
		need, pkg = []string{"bird", "birdc"}, "bird2"
	}
	for _, p := range need {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("-bgp -router %s needs %s (Debian package %s): %w", r, p, pkg, err)
		}
	}
	if _, err := exec.LookPath("nft"); err != nil {
		return fmt.Errorf("-bgp needs nft for its flap-lb faults (Debian package nftables): %w", err)
	}
	return nil
}

// startBGP builds the lab, starts FRR and the nodes, and waits until the
// router routes every VIP to every node.
func startBGP(ctx context.Context, o options, out io.Writer) (_ mode, cfg chaos.Config, roles []cluster.Role, netem bool, err error) {
	if o.Router == "" {
		o.Router = "frr"
	}
	if o.Family == "" {
		o.Family = "4"
	}
	if err := requireRouter(o.Router); err != nil {
		return nil, cfg, nil, false, err
	}
	m := &bgpMode{o: o, frr: map[string]*bgpProc{}, rnsh: netns.None()}
	fmt.Fprintf(out, "vipstack chaos -bgp: seed %d, %d faults, %d masters announcing by eBGP to %s, BFD %v x %d\n", o.Seed, o.Faults, o.Nodes, m.routerName(), bgpBFD, bgpBFDMult)
	defer func() {
		if err != nil {
			m.close()
		}
	}()
	if m.lab, err = routedlab.Build(routedlab.Options{Prefix: o.Prefix, Nodes: o.Nodes}); err != nil {
		return nil, cfg, nil, false, err
	}
	if o.Router == "bird" {
		err = m.startBIRD()
	} else {
		err = m.startFRR()
	}
	if err != nil {
		return nil, cfg, nil, false, err
	}
	if m.rnsh, err = netns.GetFromName(m.lab.Router); err != nil {
		return nil, cfg, nil, false, err
	}
	if m.rnl, err = netlink.NewHandleAt(m.rnsh); err != nil {
		return nil, cfg, nil, false, err
	}
	m.cfgPath = filepath.Join(m.lab.Dir, "cluster.yaml")
	if err := os.WriteFile(m.cfgPath, []byte(bgpClusterYAML(o.Nodes, o.Family, "")), 0o644); err != nil {
		return nil, cfg, nil, false, err
	}
	api, ing := bgpVIPs(o.Family)
	cfg = chaos.Config{VIPs: slices.Concat(api, ing), Advert: bgpBFD, Margin: 2 * bgpBFD, PartitionLoss: 20,
		SupervisorBound: 250 * time.Millisecond, StartSweep: 3 * time.Second, ServiceBound: 3 * time.Second,
		Anycast: true, Detect: bgpBFDMult * bgpBFD, Rejoin: bgpRejoin, Warmup: bgpWarmup, Hold: bgpHold, RouterBound: bgpRouterBound}
	for i := 1; i <= o.Nodes; i++ {
		n, err := m.addNode(i)
		m.nodes = append(m.nodes, n) // close releases what it opened
		if err != nil {
			return nil, cfg, nil, false, err
		}
		cfg.Nodes = append(cfg.Nodes, n.name)
		roles = append(roles, cluster.Master)
	}
	all := make([]int, o.Nodes)
	for i := range all {
		all[i] = i
	}
	for range cfg.VIPs {
		cfg.Allowed = append(cfg.Allowed, slices.Clone(all))
	}
	m.cfg = cfg
	for _, n := range m.nodes {
		if err := m.startAgent(n); err != nil {
			return nil, cfg, nil, false, err
		}
	}
	m.netem = m.nodes[0].host.ProbeNetem()
	if err := waitFor(ctx, 120*time.Second, m.settled, "the router does not route every VIP to every node 120 s after the start"); err != nil {
		return nil, cfg, nil, false, err
	}
	fmt.Fprintf(out, "the router routes all %d VIPs to all %d nodes\n", len(cfg.VIPs), o.Nodes)
	return m, cfg, roles, m.netem, nil
}

// startFRR runs zebra, bfdd and bgpd in the router namespace, their
// output in frr.log.
func (m *bgpMode) startFRR() error {
	m.frrDir = filepath.Join(m.lab.Dir, "frr")
	if err := os.Mkdir(m.frrDir, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(m.frrDir, 0o777); err != nil {
		return err
	}
	// Routes with their nexthops inline, not kernel nexthop objects: with
	// those, zebra 8.4 failed to install both VIP routes when a node's
	// link went down ("Nexthop id does not exist", "Route install
	// failed"), and the router routed them nowhere for 329 ms.
	confs := map[string]string{"zebra": "no zebra nexthop kernel enable\n", "bfdd": routedlab.BFDProfileFast, "bgpd": bgpFRRConf(m.o.Nodes, m.o.Family)}
	for _, d := range []string{"zebra", "bfdd", "bgpd"} {
		cf := filepath.Join(m.frrDir, d+".conf")
		if err := os.WriteFile(cf, []byte("log stdout informational\nlog timestamp precision 6\n"+confs[d]), 0o644); err != nil {
			return err
		}
		if err := m.startDaemon(d); err != nil {
			return err
		}
		if d == "zebra" {
			zserv := filepath.Join(m.frrDir, "zserv.api")
			if err := waitFor(context.Background(), 10*time.Second, func() bool { _, err := os.Stat(zserv); return err == nil }, "zebra did not open "+zserv); err != nil {
				return err
			}
		}
	}
	return nil
}

// routerName is the router's implementation, for the report.
func (m *bgpMode) routerName() string {
	if m.o.Router == "bird" {
		return "BIRD 2"
	}
	return "FRR 8.4"
}

// startBIRD runs BIRD in the router namespace, its output in bird.log,
// and waits until birdc answers.
func (m *bgpMode) startBIRD() error {
	m.frrDir = filepath.Join(m.lab.Dir, "bird")
	if err := os.Mkdir(m.frrDir, 0o755); err != nil {
		return err
	}
	cf := filepath.Join(m.frrDir, "bird.conf")
	if err := os.WriteFile(cf, []byte(bgpBIRDConf(m.o.Nodes, m.o.Family)), 0o644); err != nil {
		return err
	}
	if out, err := exec.Command("bird", "-p", "-c", cf).CombinedOutput(); err != nil {
		return fmt.Errorf("bird -p -c %s: %v: %s", cf, err, out)
	}
	return m.startDaemon("bird")
}

// birdc runs one birdc command against the lab's BIRD.
func (m *bgpMode) birdc(args ...string) error {
	out, err := exec.Command("birdc", append([]string{"-s", filepath.Join(m.frrDir, "bird.ctl")}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("birdc %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// startDaemon starts FRR daemon d (zebra, bfdd, bgpd) on its file.
// (or BIRD, d "bird", waiting until birdc answers).
func (m *bgpMode) startDaemon(d string) error {
	if d == "bird" {
		p, err := startIn(m.lab.Router, filepath.Join(m.lab.Dir, "bird.log"), "bird", "-f", "-c", filepath.Join(m.frrDir, "bird.conf"),
			"-s", filepath.Join(m.frrDir, "bird.ctl"), "-P", filepath.Join(m.frrDir, "bird.pid"))
		if err != nil {
			return err
		}
		m.mu.Lock()
		m.frr[d] = p
		m.mu.Unlock()
		return waitFor(context.Background(), 10*time.Second, func() bool { return m.birdc("show", "status") == nil }, "birdc has no answer 10 s after bird's start")
	}
	args := []string{"-f", filepath.Join(m.frrDir, d+".conf"), "-i", filepath.Join(m.frrDir, d+".pid"), "-z", filepath.Join(m.frrDir, "zserv.api"),
		"--vty_socket", m.frrDir, "-u", "frr", "-g", "frr", "-P", "0"}
	if d == "bfdd" {
		args = append(args, "--bfdctl", filepath.Join(m.frrDir, "bfdd.sock"))
	}
	p, err := startIn(m.lab.Router, filepath.Join(m.lab.Dir, "frr.log"), "/usr/lib/frr/"+d, args...)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.frr[d] = p
	m.mu.Unlock()
	return nil
}

// daemon is FRR's daemon d as last started.
func (m *bgpMode) daemon(d string) *bgpProc {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.frr[d]
}

// restartFault kills FRR's daemon d (kill -9) and starts it again: a
// router fault. bgpd's sessions go with it (zebra removes its routes);
// without bfdd the nodes' BFD fails and they hold their sessions down
// until it is Up again.
//
// Under BIRD, one process: restart-bgpd kills bird -9 (its routes stay in
// the kernel until the next bird prunes them) and restart-bfdd disables
// its BFD protocol and enables it again.
func (m *bgpMode) restartFault(d string) (begin, end func() error) {
	if m.o.Router == "bird" && d == "bfdd" {
		return func() error { return m.birdc("disable", bgpBIRDBFD) }, func() error { return m.birdc("enable", bgpBIRDBFD) }
	}
	if m.o.Router == "bird" {
		d = "bird"
	}
	begin = func() error {
		p := m.daemon(d)
		if p == nil || !p.running() {
			return fmt.Errorf("FRR's %s does not run", d)
		}
		return p.kill()
	}
	end = func() error {
		// A daemon killed -9 leaves its pid file (locked no more) and
		// sockets; both start over them.
		return m.startDaemon(d)
	}
	return begin, end
}

// termFault stops node n's agent gracefully (SIGTERM to its supervisor,
// which passes it on) and waits, bounded, for it to exit.
func (m *bgpMode) termFault(n *bgpNode) func() error {
	return func() error {
		p := m.running(n)
		if p == nil {
			return fmt.Errorf("%s: no agent runs", n.name)
		}
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			return fmt.Errorf("%s: SIGTERM: %w", n.name, err)
		}
		select {
		case <-p.done:
			return nil
		case <-time.After(bgpTermWait):
			err := fmt.Errorf("%s: the agent has not exited %v after SIGTERM; killed", n.name, bgpTermWait)
			return errors.Join(err, p.kill())
		}
	}
}

// addNode opens node i's handles and starts its stand-ins: the API
// server (HTTPS on 6443, the load balancer's backend) and the Ingress
// router's health endpoint (HTTP on 1936), which the checks probe.
func (m *bgpMode) addNode(i int) (*bgpNode, error) {
	n := &bgpNode{name: fmt.Sprintf("m%d", i), i: i, ns: m.lab.Nodes[i-1], nsh: netns.None()}
	n.host = &testnet.Host{Name: n.ns, Link: "eth0"}
	n.log = filepath.Join(m.lab.Dir, n.name+".log")
	var err error
	if n.nsh, err = netns.GetFromName(n.ns); err != nil {
		return n, err
	}
	if n.nl, err = netlink.NewHandleAt(n.nsh); err != nil {
		return n, err
	}
	if n.lo, err = n.nl.LinkByName("lo"); err != nil {
		return n, err
	}
	if n.nft, err = nftables.New(nftables.AsLasting(), nftables.WithNetNSFd(int(n.nsh))); err != nil {
		return n, err
	}
	// The load balancer's TCP checks close without a handshake: no log.
	quiet := log.New(io.Discard, "", 0)
	api := &httptest.Server{Config: &http.Server{ErrorLog: quiet, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok from "+n.name)
	})}}
	if err := routedlab.Do(n.ns, func() (err error) { api.Listener, err = net.Listen("tcp", ":6443"); return err }); err != nil {
		return n, err
	}
	api.StartTLS()
	ing := &http.Server{ErrorLog: quiet, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	var ln net.Listener
	if err := routedlab.Do(n.ns, func() (err error) { ln, err = net.Listen("tcp", ":1936"); return err }); err != nil {
		api.Close()
		return n, err
	}
	go func() { _ = ing.Serve(ln) }()
	n.srv = []io.Closer{closerFunc(api.Close), ing}
	return n, nil
}

type closerFunc func()

func (f closerFunc) Close() error { f(); return nil }

// startAgent starts node n's `vipstack node`.
func (m *bgpMode) startAgent(n *bgpNode) error {
	p, err := startIn(n.ns, n.log, m.o.Bin, "node", "--config", m.cfgPath, "--node", n.name,
		"--state-dir", filepath.Join(m.lab.Dir, n.name), "--log-level", "info")
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.agent, n.engine = p, 0
	n.mu.Unlock()
	return nil
}

// settled reports whether the router routes every VIP to every node.
func (m *bgpMode) settled() bool {
	routed, err := m.routes()
	if err != nil {
		return false
	}
	for n := range m.nodes {
		if len(routed[n]) != len(m.cfg.VIPs) {
			return false
		}
	}
	return true
}

// routes reads the router's kernel routes to the VIPs (installed by
// zebra, protocol bgp): by node, the VIPs it has a live nexthop for. A
// dead nexthop (its link down) carries nothing; one whose link lost its
// carrier still does (the kernel's default, ignore_routes_with_linkdown 0).
func (m *bgpMode) routes() ([][]netip.Addr, error) {
	rs, err := m.rnl.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("the router's routes: %w", err)
	}
	if m.o.Family != "4" {
		rs6, err := m.rnl.RouteListFiltered(netlink.FAMILY_V6, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
		if err != nil {
			return nil, fmt.Errorf("the router's IPv6 routes: %w", err)
		}
		rs = append(rs, rs6...)
	}
	out := make([][]netip.Addr, len(m.nodes))
	add := func(v netip.Addr, gw net.IP, flags int) {
		a, ok := netip.AddrFromSlice(gw)
		if !ok || flags&unix.RTNH_F_DEAD != 0 {
			return
		}
		for i, n := range m.nodes {
			if (a.Unmap() == routedlab.SubnetV4(n.i, 10) || a == routedlab.SubnetV6(n.i, 0x10)) && !slices.Contains(out[i], v) {
				out[i] = append(out[i], v)
			}
		}
	}
	for _, r := range rs {
		if r.Dst == nil || (r.Protocol != unix.RTPROT_BGP && r.Protocol != unix.RTPROT_BIRD) {
			continue
		}
		ones, _ := r.Dst.Mask.Size()
		v, ok := netip.AddrFromSlice(r.Dst.IP)
		if !ok || ones != v.Unmap().BitLen() || !slices.Contains(m.cfg.VIPs, v.Unmap()) {
			continue
		}
		v = v.Unmap()
		if r.Gw != nil {
			add(v, r.Gw, r.Flags)
		}
		for _, nh := range r.MultiPath {
			add(v, nh.Gw, nh.Flags)
		}
	}
	return out, nil
}

func (m *bgpMode) name() string {
	return fmt.Sprintf("`vipstack node`, %d masters announcing the API and Ingress VIPs by eBGP to %s (BFD %v x %d, hold 30 s, ECMP)", m.o.Nodes, m.routerName(), bgpBFD, bgpBFDMult)
}

func (m *bgpMode) running(n *bgpNode) *bgpProc {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.agent == nil || !n.agent.running() {
		return nil
	}
	return n.agent
}

func (m *bgpMode) enginePid(n *bgpNode) int {
	p := m.running(n)
	if p == nil {
		return 0
	}
	return engineOf(p.cmd.Process.Pid)
}

// engineOf is the supervisor sup's engine: its child, unless that child
// is the clean-up it runs after the engine died (supervise.EnvCleanup in
// its environment), which is no engine.
func engineOf(sup int) int {
	pid := procfs.ChildOf(sup)
	if pid == 0 {
		return 0
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err == nil && slices.ContainsFunc(strings.Split(string(env), "\x00"), func(kv string) bool {
		return strings.HasPrefix(kv, supervise.EnvCleanup+"=")
	}) {
		return 0
	}
	return pid
}

func (m *bgpMode) free(i int, k chaos.Kind) bool {
	n := m.nodes[i]
	if k == chaos.KillEngine && m.enginePid(n) == 0 {
		return false
	}
	return m.running(n) != nil
}

// guarded: every node is a master announcing every VIP.
func (m *bgpMode) guarded(int) bool { return true }

func (m *bgpMode) fault(ctx context.Context, f chaos.Fault, i int) (begin, end func() error, err error) {
	switch f.Kind {
	case chaos.Reload:
		return func() error { return m.reload(fmt.Sprintf("fault %d", f.Seq)) }, nil, nil
	case chaos.RestartBGPD:
		begin, end = m.restartFault("bgpd")
		return begin, end, nil
	case chaos.RestartBFDD:
		begin, end = m.restartFault("bfdd")
		return begin, end, nil
	}
	if i < 0 {
		return nil, nil, fmt.Errorf("%s: not a fault of -bgp", f.Kind)
	}
	n := m.nodes[i]
	switch f.Kind {
	case chaos.KillEngine:
		var pid int
		begin = func() error {
			if pid = m.enginePid(n); pid == 0 {
				return fmt.Errorf("%s: no engine runs", n.name)
			}
			return syscall.Kill(pid, syscall.SIGKILL)
		}
		end = func() error {
			// The supervisor restarts it (1 s back-off, doubling after a
			// crash within a minute): wait for it, bounded.
			return waitFor(ctx, 70*time.Second, func() bool { p := m.enginePid(n); return p != 0 && p != pid },
				fmt.Sprintf("%s: no new engine 70 s after kill -9 of pid %d", n.name, pid))
		}
	case chaos.KillAgent:
		begin = func() error {
			p := m.running(n)
			if p == nil {
				return fmt.Errorf("%s: no agent runs", n.name)
			}
			return p.kill()
		}
		end = func() error { return m.startAgent(n) }
	case chaos.TermAgent:
		begin = m.termFault(n)
		end = func() error { return m.startAgent(n) }
	case chaos.Stall:
		sig := func(s syscall.Signal) func() error {
			return func() error {
				p := m.running(n)
				if p == nil {
					return fmt.Errorf("%s: no agent runs", n.name)
				}
				return syscall.Kill(-p.cmd.Process.Pid, s)
			}
		}
		begin, end = sig(syscall.SIGSTOP), sig(syscall.SIGCONT)
	case chaos.Cut:
		// The router's end of the link goes down: the node loses its
		// carrier, the router its nexthop.
		link := func(state string) func() error {
			return func() error { return routedlab.IPIn(m.lab.Router, "link", "set", routedlab.RouterLink(n.i), state) }
		}
		begin, end = link("down"), link("up")
	case chaos.IfDown:
		begin = func() error { return routedlab.IPIn(n.ns, "link", "set", "eth0", "down") }
		end = func() error {
			if err := routedlab.IPIn(n.ns, "link", "set", "eth0", "up"); err != nil {
				return err
			}
			// The kernel dropped the default route with the link; the
			// load balancer reaches the other masters' API through it.
			return routedlab.IPIn(n.ns, "route", "replace", "default", "via", routedlab.SubnetV4(n.i, 1).String())
		}
	case chaos.Loss, chaos.HeavyLoss:
		begin = func() error { return n.host.Impair(f.Percent, 0, m.netem) }
		end = func() error { return n.host.Impair(0, 0, m.netem) }
	case chaos.Delay:
		begin = func() error { return n.host.Impair(0, f.Delay, m.netem) }
		end = func() error { return n.host.Impair(0, 0, m.netem) }
	case chaos.FlapLB:
		begin = func() error { return nftIn(n.ns, bgpFlapRules) }
		end = func() error { return nftIn(n.ns, "delete table inet "+bgpFlapTable+"\n") }
	default:
		return nil, nil, fmt.Errorf("%s: not a fault of -bgp", f.Kind)
	}
	return begin, end, nil
}

// bgpFlapRules refuse the node's own connections to its load balancer:
// its checks of the API VIP (chk_ocp_lb, chk_ocp_both) fail.
const bgpFlapRules = "table inet " + bgpFlapTable + " {\n\tchain out {\n\t\ttype filter hook output priority 0; policy accept;\n" +
	"\t\toifname \"lo\" tcp dport 9445 reject with tcp reset\n\t}\n}\n"

// nftIn runs the nftables script in namespace ns.
func nftIn(ns, script string) error {
	c := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	c.Stdin = strings.NewReader(script)
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("nft in %s: %w: %s", ns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// reload rewrites the cluster file with a comment and sends SIGHUP to
// every running agent (its supervisor passes it on).
func (m *bgpMode) reload(note string) error {
	m.mu.Lock()
	m.reloads++
	m.mu.Unlock()
	tmp := m.cfgPath + ".tmp"
	if err := os.WriteFile(tmp, []byte(bgpClusterYAML(m.o.Nodes, m.o.Family, note)), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, m.cfgPath); err != nil {
		return err
	}
	var errs []error
	for _, n := range m.nodes {
		if p := m.running(n); p != nil {
			if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				errs = append(errs, fmt.Errorf("SIGHUP to %s: %w", n.name, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (m *bgpMode) sample() ([]chaos.NodeSample, error) {
	t0 := time.Now()
	routed, err := m.routes()
	if err != nil {
		return nil, err
	}
	t1 := time.Now()
	out := make([]chaos.NodeSample, len(m.nodes))
	var slowest time.Duration
	for i, n := range m.nodes {
		s0 := time.Now()
		ns := &out[i]
		ns.Routed = routed[i]
		addrs, err := n.nl.AddrList(n.lo, netlink.FAMILY_ALL)
		if err != nil {
			return nil, fmt.Errorf("%s: addresses on lo: %w", n.name, err)
		}
		for _, a := range addrs {
			if ip, ok := netip.AddrFromSlice(a.IP); ok && slices.Contains(m.cfg.VIPs, ip.Unmap()) {
				ns.Holds = append(ns.Holds, ip.Unmap())
			}
		}
		tables, err := n.nft.ListTables()
		if err != nil {
			return nil, fmt.Errorf("%s: nftables tables: %w", n.name, err)
		}
		for _, t := range tables {
			if strings.HasPrefix(t.Name, "vipstack_") {
				ns.Rules = append(ns.Rules, t.Name)
			}
		}
		p := m.running(n)
		ns.Agent = p != nil
		n.mu.Lock()
		if p == nil {
			n.engine = 0
		} else {
			// Looked up every time: a child read between its fork and its
			// exec may turn out to be the clean-up (engineOf).
			n.engine = engineOf(p.cmd.Process.Pid)
			ns.Engine = n.engine != 0
		}
		n.mu.Unlock()
		slowest = max(slowest, time.Since(s0))
	}
	m.mu.Lock()
	m.slowRT, m.slowN = max(m.slowRT, t1.Sub(t0)), max(m.slowN, slowest)
	m.mu.Unlock()
	return out, nil
}

func (m *bgpMode) slowest() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprintf("slowest read: the router's routes %v, one node (loopback, nftables, processes) %v", m.slowRT.Round(time.Millisecond), m.slowN.Round(time.Millisecond))
}

func (m *bgpMode) names() map[netip.Addr]string {
	return map[netip.Addr]string{bgpAPI: "api", bgpIngress: "ingress", bgpAPI6: "api6", bgpIngress6: "ingress6"}
}

func (m *bgpMode) check() []string {
	var out []string
	for _, n := range m.nodes {
		if m.running(n) == nil {
			out = append(out, n.name+"'s agent does not run at the end of the run (it exited on its own)")
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for d, p := range m.frr {
		if !p.running() {
			out = append(out, "the router's "+d+" does not run at the end of the run")
		}
	}
	return out
}

func (m *bgpMode) judge(chaos.Config, []chaos.Window) (string, []chaos.Violation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprintf("the router's kernel routes to the VIPs (protocol bgp or bird, live nexthops) with every sample; %d reloads", m.reloads), nil, nil
}

// keepLogs copies the agents' and FRR's logs out of the lab's directory
// (which close removes).
func (m *bgpMode) keepLogs() (string, error) {
	dir, err := os.MkdirTemp("", "vipstack-chaos-logs-")
	if err != nil {
		return "", err
	}
	files := []string{filepath.Join(m.lab.Dir, "frr.log")}
	if m.o.Router == "bird" {
		files[0] = filepath.Join(m.lab.Dir, "bird.log")
	}
	for _, n := range m.nodes {
		files = append(files, n.log)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func (m *bgpMode) close() {
	for _, n := range m.nodes {
		if p := m.running(n); p != nil {
			_ = p.kill()
		}
		for _, s := range n.srv {
			_ = s.Close()
		}
		if n.nft != nil {
			_ = n.nft.CloseLasting()
		}
		if n.nl != nil {
			n.nl.Close()
		}
		if n.nsh.IsOpen() {
			n.nsh.Close()
		}
	}
	m.mu.Lock()
	frr := maps.Clone(m.frr)
	m.mu.Unlock()
	for _, p := range frr {
		if p.running() {
			_ = p.kill()
		}
	}
	if m.rnl != nil {
		m.rnl.Close()
	}
	if m.rnsh.IsOpen() {
		m.rnsh.Close()
	}
	if m.lab != nil {
		m.lab.Close()
	}
}
