//go:build linux

package story_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/node"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/render"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
	"go.yaml.in/yaml/v3"
)

// mixedYAML is a cluster left at OpenShift's VRRP defaults (VRRPv2, advert
// 1 s, unicast, PASS auth), so the rendered keepalived.conf is what an
// OpenShift node runs. Hosts 1..5 of the topology are 198.18.0.11..15: the
// keepalived master has the lowest address, so a vipstack master that took
// the VIP on the address tie-break at equal priority would show.
const mixedYAML = `name: mixed
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
nodes:
  - {name: master-0, role: master, ips: [198.18.0.11]}
  - {name: master-1, role: master, ips: [198.18.0.12]}
  - {name: master-2, role: master, ips: [198.18.0.13]}
  - {name: worker-0, role: worker, ips: [198.18.0.14]}
  - {name: worker-1, role: worker, ips: [198.18.0.15]}
`

// mixedNode is one node of the mixed cluster: either `vipstack node`, or
// keepalived (and, on a master, haproxy) from `vipstack render`'s files.
type mixedNode struct {
	name     string
	host     *testnet.Host
	upstream bool
	dir      string // rendered files (upstream) or state dir (vipstack)
	vrrp     *peers.Node
	haproxy  *peers.Node
	monitor  *peers.Node  // the haproxy pod's haproxy-monitor: vipstack redirect
	router   *atomic.Bool // workers: the stand-in router's readiness
	status   *http.Client // vipstack nodes: /status inside the namespace
}

// mixedCluster runs the nodes and watches who holds the VIPs.
type mixedCluster struct {
	t     *testing.T
	bin   string
	cfg   *cluster.Cluster
	nodes []*mixedNode
	topo  *testnet.Topology

	mu  sync.Mutex
	off map[*testnet.Host]bool // crashed nodes: cable pulled, not sampled

	v6Instances map[string]bool // instances that hold IPv6 VIPs
}

// TestStoryMixedCluster checks the README's migration promise end to end: a
// cluster where master-0 and worker-0 run the upstream daemons (keepalived,
// and haproxy on the master) with the files `vipstack render` writes for
// them, and the other nodes run `vipstack node`, from one cluster file.
// Each step acts on one side and checks that the VIP lands on the node the
// plan's priorities say (OpenShift's: every instance BACKUP, preemption on,
// no nopreempt, so a strictly higher effective priority takes the VIP and
// an equal one does not), within a bound derived from the advert interval;
// all along, no VIP has two live holders for longer than a handover grace.
func TestStoryMixedCluster(t *testing.T) {
	mixedStory(t, mixedYAML, "vsX")
}

// TestStoryMixedVRRPv3 is TestStoryMixedCluster's story on a cluster
// file that sets vrrp.version 3: the rendered keepalived.conf says
// vrrp_version 3 (no authentication, which VRRPv3 does not carry), and
// keepalived and vipstack must agree over IPv4 VRRPv3 adverts, whose
// checksum covers the IPv4 pseudo-header (VRRPv2's does not).
func TestStoryMixedVRRPv3(t *testing.T) {
	mixedStory(t, strings.Replace(mixedYAML, "nodes:\n", "vrrp: {version: 3}\nnodes:\n", 1), "vsX3")
}

// mixedStory runs the steps of TestStoryMixedCluster on the cluster of
// yamlText.
func mixedStory(t *testing.T, yamlText, prefix string) {
	testnet.RequireRoot(t)
	for _, p := range []string{"keepalived", "haproxy", "curl", "nft", "timeout"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("skipping: %s is not installed (the mixed cluster runs the rendered upstream configs)", p)
		}
	}
	mc := startMixedCluster(t, yamlText, prefix)
	cfg := mc.cfg
	// The upstream nodes run the version the cluster file asks for.
	for _, n := range mc.nodes {
		if !n.upstream {
			continue
		}
		conf, err := os.ReadFile(filepath.Join(n.dir, filepath.FromSlash(render.KeepalivedConfPath)))
		if err != nil {
			t.Fatal(err)
		}
		v3 := strings.Contains(string(conf), "vrrp_version 3")
		if v3 != (cfg.VRRP.Version == 3) || (v3 && strings.Contains(string(conf), "authentication")) {
			t.Fatalf("%s: rendered keepalived.conf does not run VRRPv%d as the cluster file asks:\n%s", n.name, cfg.VRRP.Version, conf)
		}
	}

	var (
		apiVIP, ingressVIP = cfg.APIVIPs[0], cfg.IngressVIPs[0]
		advert             = cfg.VRRP.AdvertInterval
		m0, m1, m2         = mc.nodes[0], mc.nodes[1], mc.nodes[2]
		w0, w1             = mc.nodes[3], mc.nodes[4]
		masters            = mc.nodes[:3]
		workers            = mc.nodes[3:]
		apiName            = cfg.Name + "_API"
		ingName            = cfg.Name + "_INGRESS"
		// The plan's priorities: a healthy master's API instance, one
		// whose LB check fails (its API still answers), a worker whose
		// router is ready and one whose router is not.
		apiUp   = cluster.PrioMasterAPI + cluster.WeightLB + cluster.WeightLBOrAPI
		apiNoLB = cluster.PrioMasterAPI + cluster.WeightLBOrAPI
		ingUp   = cluster.PrioIngress + cluster.WeightIngress
		ingDown = cluster.PrioIngress
	)
	// RFC 3768's Master_Down_Interval at the lowest priority in play, and
	// the margin and handover grace of docs/reliability.md (chaos.Config):
	// Margin = 2 x advert, Grace = advert + Margin.
	skew := func(prio int) time.Duration { return time.Duration(256-prio) * advert / 256 }
	masterDown := 3*advert + skew(cluster.PrioIngress)
	margin := 2 * advert
	grace := advert + margin
	// A failing check: its fall count of intervals plus a timeout, then
	// the lower priority rides on the next advert (keepalived does not
	// send one at once), then the backups' master-down timer.
	checkBound := func(c cluster.CheckSpec) time.Duration {
		return time.Duration(c.Fall)*c.Interval + c.Timeout + advert + masterDown + margin
	}
	lbCheck, ingCheck := mc.check("master-0", "chk_ocp_lb"), mc.check("worker-0", "chk_ingress")
	riseBound := func(c cluster.CheckSpec) time.Duration {
		return time.Duration(c.Rise)*c.Interval + c.Timeout + margin
	}

	stopWatch := mc.watchSplitBrain([]netip.Addr{apiVIP, ingressVIP}, grace)
	t.Cleanup(stopWatch)

	// Convergence: every daemon's checks pass after its rise count (the
	// upstream ones start from failed), then one holder each.
	converge := riseBound(lbCheck) + masterDown + 30*time.Second
	for _, n := range []*mixedNode{m1, m2} {
		mc.waitPrio(n, apiName, apiUp, converge)
	}
	mc.waitPrio(w1, ingName, ingUp, converge)
	apiHolder := mc.waitSole(apiVIP, masters, nil, 3*advert, converge)
	ingHolder := mc.waitSole(ingressVIP, workers, nil, 3*advert, converge)
	// The vipstack backups decode the upstream masters' adverts (VRID;
	// VRRPv2 with PASS auth cut to 8 bytes, or VRRPv3) and see them at
	// their priority.
	mc.waitMasterSeen(apiName, apiHolder, apiUp, []*mixedNode{m1, m2}, masterDown)
	mc.waitMasterSeen(ingName, ingHolder, ingUp, []*mixedNode{w1}, masterDown)
	t.Logf("converged: %s holds the API VIP, %s the Ingress VIP", apiHolder.name, ingHolder.name)

	// 1. keepalived's side fails its LB check (haproxy stops): it is at
	//    45 against the vipstack masters' 65, which take the VIP if it had
	//    it. Then haproxy is back: 65 again, equal, and nobody preempts.
	haproxyDown := m0.vrrp.Log()
	if err := m0.haproxy.Term(); err != nil {
		t.Fatal(err)
	}
	mc.waitKeepalivedPrio(m0, haproxyDown, apiName, apiNoLB, checkBound(lbCheck))
	apiHolder = mc.waitSole(apiVIP, masters, isVipstack, 3*advert, advert+masterDown+margin)
	t.Logf("haproxy stopped on master-0: %s holds the API VIP", apiHolder.name)
	back := m0.vrrp.Log()
	mc.startHAProxy(m0)
	mc.keepsWhile(apiVIP, masters, apiHolder, riseBound(lbCheck)+masterDown, func() bool {
		return mc.keepalivedPrioSince(m0, back, apiName, apiUp)
	})
	mc.keeps(apiVIP, masters, apiHolder, masterDown+advert)
	t.Logf("haproxy back on master-0 at %d: %s keeps the API VIP", apiUp, apiHolder.name)

	// 2. Both vipstack masters fail their LB check: the keepalived master,
	//    now strictly higher, preempts. Then they recover, at equal
	//    priority with higher addresses, and must not take it back.
	for _, n := range []*mixedNode{m1, m2} {
		mc.setLBBlock(n, true)
	}
	for _, n := range []*mixedNode{m1, m2} {
		mc.waitPrio(n, apiName, apiNoLB, checkBound(lbCheck))
	}
	mc.waitSole(apiVIP, masters, is(m0), 3*advert, checkBound(lbCheck))
	t.Logf("vipstack masters' LB check failing (%d): keepalived's master-0 holds the API VIP", apiNoLB)
	for _, n := range []*mixedNode{m1, m2} {
		mc.setLBBlock(n, false)
	}
	mc.keepsWhile(apiVIP, masters, m0, riseBound(lbCheck)+masterDown, func() bool {
		return mc.prio(m1, apiName) == apiUp && mc.prio(m2, apiName) == apiUp
	})
	mc.keeps(apiVIP, masters, m0, masterDown+advert)
	t.Logf("vipstack masters back at %d: master-0 keeps the API VIP", apiUp)

	// 3. keepalived on master-0 is stopped (SIGTERM: a priority-0 advert):
	//    a vipstack master takes over within its skew time (bounded here by
	//    one master-down interval). Restarted, keepalived comes back as a
	//    backup and, at equal priority, leaves the VIP where it is.
	if err := m0.vrrp.Term(); err != nil {
		t.Fatal(err)
	}
	apiHolder = mc.waitSole(apiVIP, masters, isVipstack, 3*advert, masterDown+margin)
	t.Logf("keepalived on master-0 stopped: %s holds the API VIP", apiHolder.name)
	mc.startVRRP(m0) // a new process, a new log: "" marks its start
	mc.keepsWhile(apiVIP, masters, apiHolder, riseBound(lbCheck)+masterDown+margin, func() bool {
		return mc.keepalivedPrioSince(m0, "", apiName, apiUp)
	})
	mc.keeps(apiVIP, masters, apiHolder, masterDown+advert)
	t.Logf("keepalived on master-0 restarted, at %d: %s keeps the API VIP", apiUp, apiHolder.name)

	// 4. The vipstack holder crashes (its process group killed, its cable
	//    pulled): another master, of either kind, takes over within the
	//    master-down interval.
	mc.crash(apiHolder)
	live := []*mixedNode{}
	for _, n := range masters {
		if n != apiHolder {
			live = append(live, n)
		}
	}
	// A keepalived master's chk_ocp_lb asks the API through its haproxy,
	// which sends some checks to the crashed master until its own health
	// check marks it down: the script may time out once (status 124), and
	// the VIP then moves once more, to a vipstack master (seen in the full
	// suite). One sole holder is wanted by the end of that check's bound.
	newHolder := mc.waitSole(apiVIP, live, nil, 3*advert, masterDown+margin+checkBound(lbCheck))
	t.Logf("%s crashed: %s holds the API VIP", apiHolder.name, newHolder.name)

	// 5. The Ingress VIP between keepalived's worker-0 and vipstack's
	//    worker-1: the holder's router stops being ready, the other takes
	//    the VIP; once ready again, equal priorities, nobody preempts; then
	//    the other way round.
	for i := range 2 {
		from := ingHolder
		to := w0
		if from == w0 {
			to = w1
		}
		from.router.Store(false)
		mc.waitSole(ingressVIP, workers, is(to), 3*advert, checkBound(ingCheck))
		t.Logf("ingress %d: %s's router not ready (%d): %s holds the Ingress VIP", i+1, from.name, ingDown, to.name)
		since := from.logMark()
		from.router.Store(true)
		mc.keepsWhile(ingressVIP, workers, to, riseBound(ingCheck)+masterDown, func() bool {
			if from.upstream {
				return mc.keepalivedPrioSince(from, since, ingName, ingUp)
			}
			return mc.prio(from, ingName) == ingUp
		})
		mc.keeps(ingressVIP, workers, to, masterDown+advert)
		t.Logf("ingress %d: %s's router ready again: %s keeps the Ingress VIP", i+1, from.name, to.name)
		ingHolder = to
	}
}

// startMixedCluster runs the cluster of yamlText (5 nodes: master-0..2,
// worker-0..1) on a topology with prefix: master-0 and worker-0 run the
// upstream daemons with the files `vipstack render` writes for them, the
// others `vipstack node`; masters serve a stand-in API, workers a
// stand-in router's readiness.
func startMixedCluster(t *testing.T, yamlText, prefix string) *mixedCluster {
	t.Helper()
	return startMixedClusterOn(t, yamlText, testnet.Options{Hosts: 5, Prefix: prefix})
}

// startMixedClusterOn is startMixedCluster on a topology of its own
// options (5 hosts, and a client for tests that send traffic to the VIPs).
func startMixedClusterOn(t *testing.T, yamlText string, opts testnet.Options) *mixedCluster {
	t.Helper()
	cfg, err := cluster.Parse("mixed cluster.yaml", []byte(yamlText))
	if err != nil {
		t.Fatal(err)
	}
	bin := buildVipstack(t)
	topo := testnet.New(t, opts)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cfgPath, []byte(yamlText), 0o644); err != nil {
		t.Fatal(err)
	}
	mc := &mixedCluster{t: t, bin: bin, cfg: cfg, topo: topo, off: map[*testnet.Host]bool{}, v6Instances: map[string]bool{}}
	for _, n := range cfg.Nodes {
		p, err := cfg.PlanFor(n.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range p.Instances {
			mc.v6Instances[in.Name] = in.VIPs[0].Is6()
		}
	}
	specs := []struct {
		name     string
		upstream bool
	}{{"master-0", true}, {"master-1", false}, {"master-2", false}, {"worker-0", true}, {"worker-1", false}}
	for _, n := range cfg.Nodes {
		if n.Role == cluster.Bootstrap {
			// The installer's bootstrap node: keepalived from the
			// rendered files, as an installer that knows nothing of
			// vipstack would run it; host 6.
			specs = append(specs, struct {
				name     string
				upstream bool
			}{n.Name, true})
		}
	}
	for i, spec := range specs {
		n := &mixedNode{name: spec.name, host: topo.Hosts[i], upstream: spec.upstream, dir: filepath.Join(dir, spec.name)}
		mc.nodes = append(mc.nodes, n)
		if strings.HasPrefix(n.name, "master-") || i >= 5 {
			serveIn(t, n.host, fmt.Sprintf(":%d", cfg.Ports.API), true, "ok from "+n.name)
		} else {
			n.router = serveRouter(t, n.host, cfg.Ports.IngressHealth)
		}
		if n.upstream {
			out, err := exec.Command(bin, "render", "--config", cfgPath, "--node", n.name, "--interface", n.host.Link, "--out", n.dir).CombinedOutput()
			if err != nil {
				t.Fatalf("vipstack render for %s: %v\n%s", n.name, err, out)
			}
		} else {
			hc := n.host
			n.status = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
				DisableKeepAlives: true,
				DialContext: func(ctx context.Context, network, addr string) (conn net.Conn, err error) {
					err = hc.Do(func() error {
						conn, err = (&net.Dialer{Timeout: time.Second}).DialContext(ctx, network, addr)
						return err
					})
					return conn, err
				},
			}}
		}
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, n := range mc.nodes {
			for _, p := range []*peers.Node{n.vrrp, n.haproxy, n.monitor} {
				if p != nil {
					t.Logf("---- %s (%s), last lines:\n%s", n.name, n.host.Name, testutil.Tail(p.Log(), 30))
				}
			}
		}
	})
	for _, n := range mc.nodes {
		if n.upstream && n.host.Index <= 3 {
			mc.startHAProxy(n)
		}
		mc.startVRRP(n)
	}

	return mc
}

// mixedDualYAML is mixedYAML dual-stack, as OpenShift 4.11 and later
// install it: an IPv4 and an IPv6 VIP each for the API and the Ingress,
// every node an address of each family (the topology's IPv6 addresses,
// testnet.HostIPv6). keepalived runs the rendered IPv4 instances as VRRPv2
// with PASS auth and the IPv6 ones as VRRPv3, with the same VRID.
func mixedDualYAML() string {
	var b strings.Builder
	b.WriteString("name: mixed\nbaseDomain: example.com\napiVIPs: [198.18.0.5, 'fd00:bb::5']\ningressVIPs: [198.18.0.7, 'fd00:bb::7']\n" +
		"machineNetworks: [198.18.0.0/24, 'fd00:bb::/64']\nnodes:\n")
	for i, n := range []struct{ name, role string }{
		{"master-0", "master"}, {"master-1", "master"}, {"master-2", "master"}, {"worker-0", "worker"}, {"worker-1", "worker"},
	} {
		fmt.Fprintf(&b, "  - {name: %s, role: %s, ips: [%s, '%s']}\n", n.name, n.role, testnet.HostIPv4(i+1), testnet.HostIPv6(i+1))
	}
	return b.String()
}

// TestStoryMixedDualStack is the migration promise for a dual-stack
// cluster: keepalived from `vipstack render` on master-0 and worker-0,
// `vipstack node` on the others, one IPv4 (VRRPv2) and one IPv6 (VRRPv3)
// instance per VIP with the same VRID. Both implementations must agree on
// every instance: the vipstack backups see keepalived's masters of both
// families at their priorities, keepalived preempts both families when
// the vipstack masters' LB checks fail and keeps them at equal priority,
// and when keepalived stops, vipstack takes both; each VIP has one holder
// throughout (up to a handover grace).
func TestStoryMixedDualStack(t *testing.T) {
	testnet.RequireRoot(t)
	for _, p := range []string{"keepalived", "haproxy", "curl", "nft", "timeout"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("skipping: %s is not installed (the mixed cluster runs the rendered upstream configs)", p)
		}
	}
	mc := startMixedCluster(t, mixedDualYAML(), "vsXd")
	cfg := mc.cfg
	var (
		advert      = cfg.VRRP.AdvertInterval
		m0, m1, m2  = mc.nodes[0], mc.nodes[1], mc.nodes[2]
		w0, w1      = mc.nodes[3], mc.nodes[4]
		masters     = mc.nodes[:3]
		workers     = mc.nodes[3:]
		apiUp       = cluster.PrioMasterAPI + cluster.WeightLB + cluster.WeightLBOrAPI
		apiNoLB     = cluster.PrioMasterAPI + cluster.WeightLBOrAPI
		ingUp       = cluster.PrioIngress + cluster.WeightIngress
		skew        = time.Duration(256-cluster.PrioIngress) * advert / 256
		masterDown  = 3*advert + skew
		margin      = 2 * advert
		grace       = advert + margin
		lbCheck     = mc.check("master-0", "chk_ocp_lb")
		checkBound  = time.Duration(lbCheck.Fall)*lbCheck.Interval + lbCheck.Timeout + advert + masterDown + margin
		riseBound   = time.Duration(lbCheck.Rise)*lbCheck.Interval + lbCheck.Timeout + margin
		apiVIPs     = cfg.APIVIPs
		ingressVIPs = cfg.IngressVIPs
	)
	// The plan's names: the first entry's family is _0, the other _1.
	apiNames := []string{cfg.Name + "_API_0", cfg.Name + "_API_1"}
	ingNames := []string{cfg.Name + "_INGRESS_0", cfg.Name + "_INGRESS_1"}
	if apiVIPs[0].Is6() || !apiVIPs[1].Is6() || !mc.v6Instances[apiNames[1]] || mc.v6Instances[apiNames[0]] {
		t.Fatalf("the dual-stack plan changed: API VIPs %v, IPv6 instances %v", apiVIPs, mc.v6Instances)
	}
	stopWatch := mc.watchSplitBrain(slices.Concat(apiVIPs, ingressVIPs), grace)
	t.Cleanup(stopWatch)

	converge := riseBound + masterDown + 30*time.Second
	for _, name := range apiNames {
		for _, n := range []*mixedNode{m1, m2} {
			mc.waitPrio(n, name, apiUp, converge)
		}
	}
	for _, name := range ingNames {
		mc.waitPrio(w1, name, ingUp, converge)
	}
	for i, vip := range apiVIPs {
		holder := mc.waitSole(vip, masters, nil, 3*advert, converge)
		mc.waitMasterSeen(apiNames[i], holder, apiUp, []*mixedNode{m1, m2}, masterDown)
		t.Logf("converged: %s holds API VIP %s (%s)", holder.name, vip, apiNames[i])
	}
	for i, vip := range ingressVIPs {
		holder := mc.waitSole(vip, workers, nil, 3*advert, converge)
		mc.waitMasterSeen(ingNames[i], holder, ingUp, []*mixedNode{w1}, masterDown)
		t.Logf("converged: %s holds Ingress VIP %s (%s)", holder.name, vip, ingNames[i])
	}

	// 1. Both vipstack masters fail their LB check: keepalived's master-0,
	//    strictly higher, takes both API VIPs, over VRRPv2 and VRRPv3.
	//    They recover to an equal priority and must not take them back.
	for _, n := range []*mixedNode{m1, m2} {
		mc.setLBBlock(n, true)
	}
	for _, name := range apiNames {
		for _, n := range []*mixedNode{m1, m2} {
			mc.waitPrio(n, name, apiNoLB, checkBound)
		}
	}
	for i, vip := range apiVIPs {
		mc.waitSole(vip, masters, is(m0), 3*advert, checkBound)
		mc.waitMasterSeen(apiNames[i], m0, apiUp, []*mixedNode{m1, m2}, masterDown)
	}
	t.Logf("vipstack masters' LB check failing (%d): keepalived's master-0 holds both API VIPs", apiNoLB)
	for _, n := range []*mixedNode{m1, m2} {
		mc.setLBBlock(n, false)
	}
	for _, name := range apiNames {
		mc.keepsWhile(apiVIPs[0], masters, m0, riseBound+masterDown, func() bool {
			return mc.prio(m1, name) == apiUp && mc.prio(m2, name) == apiUp
		})
	}
	for _, vip := range apiVIPs {
		mc.keeps(vip, masters, m0, masterDown+advert)
	}
	t.Logf("vipstack masters back at %d: master-0 keeps both API VIPs", apiUp)

	// 2. keepalived on master-0 stops (SIGTERM: a priority-0 advert in
	//    each family): vipstack masters take both API VIPs.
	if err := m0.vrrp.Term(); err != nil {
		t.Fatal(err)
	}
	for _, vip := range apiVIPs {
		h := mc.waitSole(vip, masters, isVipstack, 3*advert, masterDown+margin)
		t.Logf("keepalived on master-0 stopped: %s holds API VIP %s", h.name, vip)
	}

	// 3. The Ingress VIPs move together with the router's readiness:
	//    worker-0's (keepalived) router stops being ready, and vipstack's
	//    worker-1 must hold both (or keep them).
	w0.router.Store(false)
	ingCheck := mc.check("worker-0", "chk_ingress")
	ingBound := time.Duration(ingCheck.Fall)*ingCheck.Interval + ingCheck.Timeout + advert + masterDown + margin
	for _, vip := range ingressVIPs {
		mc.waitSole(vip, workers, is(w1), 3*advert, ingBound)
	}
	t.Logf("worker-0's router not ready: worker-1 holds both Ingress VIPs")
}

func is(n *mixedNode) func(*mixedNode) bool { return func(m *mixedNode) bool { return m == n } }

func isVipstack(n *mixedNode) bool { return !n.upstream }

// logMark is where the node's VRRP log stands now.
func (n *mixedNode) logMark() string {
	if n.vrrp == nil {
		return ""
	}
	return n.vrrp.Log()
}

// check returns the plan's check of that name on the named node.
func (mc *mixedCluster) check(nodeName, name string) cluster.CheckSpec {
	mc.t.Helper()
	p, err := mc.cfg.PlanFor(nodeName)
	if err != nil {
		mc.t.Fatal(err)
	}
	for _, c := range p.Checks {
		if c.Name == name {
			return c
		}
	}
	mc.t.Fatalf("%s's plan has no check %s", nodeName, name)
	return cluster.CheckSpec{}
}

// startVRRP starts the node's VRRP speaker: keepalived with the rendered
// keepalived.conf, or `vipstack node`.
func (mc *mixedCluster) startVRRP(n *mixedNode) {
	mc.t.Helper()
	var err error
	if n.upstream {
		conf, rerr := os.ReadFile(filepath.Join(n.dir, filepath.FromSlash(render.KeepalivedConfPath)))
		if rerr != nil {
			mc.t.Fatal(rerr)
		}
		n.vrrp, err = peers.Start(n.host, peers.Keepalived, string(conf), filepath.Join(n.dir, "run"), "")
	} else {
		c := n.host.Command(mc.bin, "node", "--config", filepath.Join(filepath.Dir(n.dir), "cluster.yaml"),
			"--node", n.name, "--state-dir", n.dir, "--log-level", "debug")
		n.vrrp, err = peers.StartCmd(n.host, c)
	}
	if err != nil {
		mc.t.Fatal(err)
	}
}

// startHAProxy runs haproxy with the rendered haproxy.cfg, as its static
// pod does (master-worker, foreground).
func (mc *mixedCluster) startHAProxy(n *mixedNode) {
	mc.t.Helper()
	cfg := filepath.Join(n.dir, filepath.FromSlash(render.HAProxyCfgPath))
	p, err := peers.StartCmd(n.host, n.host.Command("haproxy", "-W", "-db", "-f", cfg))
	if err != nil {
		mc.t.Fatal(err)
	}
	n.haproxy = p
	if n.monitor == nil {
		mc.startMonitor(n)
	}
}

// startMonitor runs the haproxy pod's second container, haproxy-monitor,
// with the command line `vipstack render` wrote for it (the test's
// vipstack binary in place of the image's): it redirects the API VIP to
// haproxy while haproxy's monitor URI answers.
func (mc *mixedCluster) startMonitor(n *mixedNode) {
	mc.t.Helper()
	data, err := os.ReadFile(filepath.Join(n.dir, filepath.FromSlash(render.HAProxyPodPath)))
	if err != nil {
		mc.t.Fatal(err)
	}
	var pod struct {
		Spec struct {
			Containers []struct {
				Name    string   `yaml:"name"`
				Command []string `yaml:"command"`
			} `yaml:"containers"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(data, &pod); err != nil {
		mc.t.Fatalf("%s's haproxy pod: %v", n.name, err)
	}
	for _, c := range pod.Spec.Containers {
		if c.Name != "haproxy-monitor" {
			continue
		}
		if len(c.Command) < 2 || c.Command[0] != "vipstack" {
			mc.t.Fatalf("%s's haproxy-monitor runs %q, want vipstack", n.name, c.Command)
		}
		p, err := peers.StartCmd(n.host, n.host.Command(mc.bin, c.Command[1:]...))
		if err != nil {
			mc.t.Fatal(err)
		}
		n.monitor = p
		return
	}
	mc.t.Fatalf("%s's haproxy pod has no haproxy-monitor container", n.name)
}

// setLBBlock makes the node's load balancer port unreachable over
// loopback (block) or reachable again: its chk_ocp_lb fails, while
// chk_ocp_both still passes on the local API.
func (mc *mixedCluster) setLBBlock(n *mixedNode, block bool) {
	mc.t.Helper()
	mc.setPortBlock(n, "vipstack_mixed_lb_down", mc.cfg.Ports.LB, block)
}

// crash kills the node's daemons' process groups and pulls its cable; it
// is no longer sampled (its VIPs stay on a machine nobody reaches).
func (mc *mixedCluster) crash(n *mixedNode) {
	mc.t.Helper()
	mc.mu.Lock()
	mc.off[n.host] = true
	mc.mu.Unlock()
	for _, p := range []*peers.Node{n.vrrp, n.haproxy, n.monitor} {
		if p != nil {
			if err := p.Kill(); err != nil {
				mc.t.Fatal(err)
			}
		}
	}
	if err := n.host.Cut(true); err != nil {
		mc.t.Fatal(err)
	}
}

// holders returns the running, connected nodes among ns that hold vip.
func (mc *mixedCluster) holders(vip netip.Addr, ns []*mixedNode) ([]*mixedNode, error) {
	var out []*mixedNode
	for _, n := range ns {
		mc.mu.Lock()
		off := mc.off[n.host]
		mc.mu.Unlock()
		if off {
			continue
		}
		ok, err := n.host.HasAddr(vip)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, n)
		}
	}
	return out, nil
}

func nodeNames(ns []*mixedNode) []string {
	var s []string
	for _, n := range ns {
		s = append(s, n.name)
	}
	return s
}

// waitSole polls until exactly one node among ns holds vip, that node
// satisfies want (nil: any), and it stays so for stable; it fails the
// test after timeout.
func (mc *mixedCluster) waitSole(vip netip.Addr, ns []*mixedNode, want func(*mixedNode) bool, stable, timeout time.Duration) *mixedNode {
	mc.t.Helper()
	start := time.Now()
	var since time.Time
	var cur *mixedNode
	var last []*mixedNode
	for time.Since(start) < timeout+stable {
		hs, err := mc.holders(vip, ns)
		if err != nil {
			mc.t.Fatal(err)
		}
		last = hs
		if len(hs) == 1 && (want == nil || want(hs[0])) {
			if since.IsZero() || hs[0] != cur {
				since, cur = time.Now(), hs[0]
			}
			if time.Since(since) >= stable {
				return cur
			}
		} else {
			since = time.Time{}
			if time.Since(start) > timeout {
				break
			}
		}
		time.Sleep(50 * time.Millisecond) // polling the namespaces, bounded by timeout
	}
	mc.t.Fatalf("%v: after %v held by %v, want one holder (of the right kind) for %v", vip, timeout, nodeNames(last), stable)
	return nil
}

// keeps checks that n alone holds vip for d.
func (mc *mixedCluster) keeps(vip netip.Addr, ns []*mixedNode, n *mixedNode, d time.Duration) {
	mc.t.Helper()
	mc.keepsWhile(vip, ns, n, d, nil)
}

// keepsWhile checks that n alone holds vip until until reports true, and
// fails if that does not come within d. With until nil, it checks for d.
func (mc *mixedCluster) keepsWhile(vip netip.Addr, ns []*mixedNode, n *mixedNode, d time.Duration, until func() bool) {
	mc.t.Helper()
	start := time.Now()
	for time.Since(start) < d {
		hs, err := mc.holders(vip, ns)
		if err != nil {
			mc.t.Fatal(err)
		}
		if len(hs) != 1 || hs[0] != n {
			mc.t.Fatalf("%v should stay on %s, but is held by %v (after %v)", vip, n.name, nodeNames(hs), time.Since(start).Round(time.Millisecond))
		}
		if until != nil && until() {
			return
		}
		time.Sleep(100 * time.Millisecond) // polling the namespaces, bounded by d
	}
	if until != nil {
		mc.t.Fatalf("%v stayed on %s, but the awaited change did not come within %v", vip, n.name, d)
	}
}

// statusOf reads a vipstack node's /status.
func (mc *mixedCluster) statusOf(n *mixedNode) (node.Status, error) {
	var s node.Status
	resp, err := n.status.Get(fmt.Sprintf("http://127.0.0.1:%d/status", cluster.DefaultStatusPort))
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&s)
	return s, err
}

// prio is the effective priority of a vipstack node's instance, -1 if
// its status does not answer.
func (mc *mixedCluster) prio(n *mixedNode, inst string) int {
	s, err := mc.statusOf(n)
	if err != nil {
		return -1
	}
	for _, in := range s.VRRP {
		if in.Name == inst {
			return in.Effective
		}
	}
	return -1
}

func (mc *mixedCluster) waitPrio(n *mixedNode, inst string, want int, timeout time.Duration) {
	mc.t.Helper()
	start := time.Now()
	got := -1
	for time.Since(start) < timeout {
		if got = mc.prio(n, inst); got == want {
			return
		}
		time.Sleep(100 * time.Millisecond) // polling the agent, bounded by timeout
	}
	mc.t.Fatalf("%s's %s: effective priority %d after %v, want %d", n.name, inst, got, timeout, want)
}

// waitMasterSeen waits until every backup in ns reports holder as its
// instance's master, at prio: by holder's IPv4 address, or its IPv6 one
// for an instance whose name ends in v6.
func (mc *mixedCluster) waitMasterSeen(inst string, holder *mixedNode, prio int, ns []*mixedNode, timeout time.Duration) {
	mc.t.Helper()
	addr := holder.host.IPv4.Addr()
	if p, ok := mc.v6Instances[inst]; ok && p {
		addr = holder.host.IPv6.Addr()
	}
	want := fmt.Sprintf("master %s at %d", addr, prio)
	for _, n := range ns {
		if n == holder {
			continue
		}
		start := time.Now()
		got := ""
		for time.Since(start) < timeout {
			s, err := mc.statusOf(n)
			if err == nil {
				for _, in := range s.VRRP {
					if in.Name == inst {
						got = fmt.Sprintf("master %s at %d", in.Master, in.MasterPriority)
					}
				}
			}
			if got == want {
				break
			}
			time.Sleep(100 * time.Millisecond) // polling the agent, bounded by timeout
		}
		if got != want {
			mc.t.Fatalf("%s's %s: %s, want %s", n.name, inst, got, want)
		}
	}
}

var prioLine = regexp.MustCompile(`\((\S+)\) Changing effective priority from \d+ to (\d+)`)

// keepalivedPrioSince reports whether keepalived's log, past the prefix
// mark, last changed inst's effective priority to want. (keepalived
// logs only changes; with mark "" the whole log counts.)
func (mc *mixedCluster) keepalivedPrioSince(n *mixedNode, mark, inst string, want int) bool {
	log := strings.TrimPrefix(n.vrrp.Log(), mark)
	last := ""
	for _, m := range prioLine.FindAllStringSubmatch(log, -1) {
		if m[1] == inst {
			last = m[2]
		}
	}
	return last == fmt.Sprint(want)
}

func (mc *mixedCluster) waitKeepalivedPrio(n *mixedNode, mark, inst string, want int, timeout time.Duration) {
	mc.t.Helper()
	start := time.Now()
	for time.Since(start) < timeout {
		if mc.keepalivedPrioSince(n, mark, inst, want) {
			return
		}
		time.Sleep(100 * time.Millisecond) // polling the log, bounded by timeout
	}
	mc.t.Fatalf("keepalived on %s did not log %s's effective priority going to %d within %v", n.name, inst, want, timeout)
}

// watchSplitBrain samples the holders of every VIP every 100 ms until
// stopped, and fails the test when a VIP has two live holders for longer
// than grace.
func (mc *mixedCluster) watchSplitBrain(vips []netip.Addr, grace time.Duration) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		since := map[netip.Addr]time.Time{}
		reported := map[netip.Addr]bool{}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			// One address listing per node and tick, for every VIP.
			held := map[netip.Addr][]*mixedNode{}
			for _, n := range mc.nodes {
				mc.mu.Lock()
				off := mc.off[n.host]
				mc.mu.Unlock()
				if off {
					continue
				}
				addrs, err := n.host.Addrs()
				if err != nil {
					continue // a namespace going away at the end
				}
				for _, a := range addrs {
					if p, err := netip.ParsePrefix(a); err == nil {
						held[p.Addr()] = append(held[p.Addr()], n)
					}
				}
			}
			for _, v := range vips {
				hs := held[v]
				if len(hs) < 2 {
					delete(since, v)
					reported[v] = false
					continue
				}
				if since[v].IsZero() {
					since[v] = time.Now()
				}
				if d := time.Since(since[v]); d > grace && !reported[v] {
					reported[v] = true
					mc.t.Errorf("split brain: %v held by %v for %v (grace %v)", v, nodeNames(hs), d.Round(time.Millisecond), grace)
				}
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit); <-done }) }
}

// serveRouter starts a stand-in router's health endpoint on port inside
// h's namespace: /healthz/ready answers 200 while the returned flag is
// true (it starts true), 500 otherwise.
func serveRouter(t *testing.T, h *testnet.Host, port int) *atomic.Bool {
	t.Helper()
	ready := &atomic.Bool{}
	ready.Store(true)
	var ln net.Listener
	if err := h.Do(func() (err error) { ln, err = net.Listen("tcp", fmt.Sprintf(":%d", port)); return err }); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ready.Load() {
			http.Error(w, "not ready", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "ok")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ready
}
