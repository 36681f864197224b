//go:build linux

package story_test

import (
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/render"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// mixedDNSYAML is mixedYAML with a DNS VIP, as OpenShift on OpenStack ran
// it before 4.6: a keepalived instance on the masters, tracked by the
// local CoreDNS's health endpoint. The upstream resolver is an address of
// the test network that nobody holds, so that neither DNS forwards a
// query anywhere else.
var mixedDNSYAML = strings.Replace(mixedYAML, "nodes:\n", "dnsVIP: 198.18.0.6\nupstreamDNS: [198.18.0.250]\nnodes:\n", 1)

// TestStoryMixedDNSVIP is the migration promise for the DNS VIP: master-0
// runs keepalived and stock CoreDNS (peers.BuildCoreDNS) with the Corefile
// `vipstack render` writes, master-1 and master-2 run `vipstack node` (its embedded DNS).
// The DNS VIP must move on each side's DNS health, over the wire between
// keepalived and vipstack, and the resolver behind the VIP must answer the
// cluster's names whichever kind of node holds it; one holder throughout
// (up to a handover grace).
func TestStoryMixedDNSVIP(t *testing.T) {
	testnet.RequireRoot(t)
	for _, p := range []string{"keepalived", "haproxy", "curl", "nft", "timeout", "dig"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("skipping: %s is not installed (the mixed cluster runs the rendered upstream configs)", p)
		}
	}
	coredns, err := peers.BuildCoreDNS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mc := startMixedClusterOn(t, mixedDNSYAML, testnet.Options{Hosts: 5, Client: true, Prefix: "vsXn"})
	cfg := mc.cfg
	var (
		dnsVIP     = cfg.DNSVIP
		advert     = cfg.VRRP.AdvertInterval
		m0, m1, m2 = mc.nodes[0], mc.nodes[1], mc.nodes[2]
		masters    = mc.nodes[:3]
		dnsName    = cfg.Name + "_DNS"
		dnsUp      = cluster.PrioMasterDNS + cluster.WeightDNS
		dnsDown    = cluster.PrioMasterDNS
		skew       = time.Duration(256-cluster.PrioMasterDNS) * advert / 256
		masterDown = 3*advert + skew
		margin     = 2 * advert
		grace      = advert + margin
		dnsCheck   = mc.check("master-0", "chk_dns")
		checkBound = time.Duration(dnsCheck.Fall)*dnsCheck.Interval + dnsCheck.Timeout + advert + masterDown + margin
		riseBound  = time.Duration(dnsCheck.Rise)*dnsCheck.Interval + dnsCheck.Timeout + margin
	)
	if !dnsVIP.IsValid() {
		t.Fatal("the cluster file has no DNS VIP")
	}
	stopCoreDNS := mc.startCoreDNS(m0, coredns)
	stopWatch := mc.watchSplitBrain([]netip.Addr{dnsVIP}, grace)
	t.Cleanup(stopWatch)

	converge := riseBound + masterDown + 30*time.Second
	mc.waitKeepalivedPrio(m0, "", dnsName, dnsUp, converge)
	for _, n := range []*mixedNode{m1, m2} {
		mc.waitPrio(n, dnsName, dnsUp, converge)
	}
	holder := mc.waitSole(dnsVIP, masters, nil, 3*advert, converge)
	mc.waitMasterSeen(dnsName, holder, dnsUp, []*mixedNode{m1, m2}, masterDown)
	mc.resolvesThroughVIP(holder)
	t.Logf("converged: %s holds the DNS VIP at %d, and answers through it", holder.name, dnsUp)

	// 1. CoreDNS on master-0 stops: keepalived's chk_dns fails, master-0
	//    drops to 40, and the VIP is (or stays) on a vipstack master,
	//    whose embedded DNS answers through it.
	mark := m0.vrrp.Log()
	stopCoreDNS()
	mc.waitKeepalivedPrio(m0, mark, dnsName, dnsDown, checkBound)
	holder = mc.waitSole(dnsVIP, masters, isVipstack, 3*advert, advert+masterDown+margin)
	mc.resolvesThroughVIP(holder)
	t.Logf("CoreDNS stopped on master-0 (%d): %s holds the DNS VIP and answers", dnsDown, holder.name)

	// 2. CoreDNS is back: master-0 at 60 again, equal, and the vipstack
	//    holder keeps the VIP.
	mark = m0.vrrp.Log()
	mc.startCoreDNS(m0, coredns)
	mc.keepsWhile(dnsVIP, masters, holder, riseBound+masterDown, func() bool {
		return mc.keepalivedPrioSince(m0, mark, dnsName, dnsUp)
	})
	mc.keeps(dnsVIP, masters, holder, masterDown+advert)
	t.Logf("CoreDNS back on master-0 (%d): %s keeps the DNS VIP", dnsUp, holder.name)

	// 3. Both vipstack masters' DNS health fails (its port refused over
	//    loopback): keepalived's master-0, now strictly higher, takes the
	//    VIP, and CoreDNS answers through it. Back healthy, they are
	//    equal and must not take it back.
	for _, n := range []*mixedNode{m1, m2} {
		mc.setPortBlock(n, "vipstack_mixed_dns_down", cluster.DNSHealthPort, true)
	}
	for _, n := range []*mixedNode{m1, m2} {
		mc.waitPrio(n, dnsName, dnsDown, checkBound)
	}
	mc.waitSole(dnsVIP, masters, is(m0), 3*advert, checkBound)
	mc.waitMasterSeen(dnsName, m0, dnsUp, []*mixedNode{m1, m2}, masterDown)
	mc.resolvesThroughVIP(m0)
	t.Logf("vipstack masters' DNS health failing (%d): keepalived's master-0 takes the DNS VIP; CoreDNS answers", dnsDown)
	for _, n := range []*mixedNode{m1, m2} {
		mc.setPortBlock(n, "vipstack_mixed_dns_down", cluster.DNSHealthPort, false)
	}
	mc.keepsWhile(dnsVIP, masters, m0, riseBound+masterDown, func() bool {
		return mc.prio(m1, dnsName) == dnsUp && mc.prio(m2, dnsName) == dnsUp
	})
	mc.keeps(dnsVIP, masters, m0, masterDown+advert)
	t.Logf("vipstack masters' DNS healthy again (%d): master-0 keeps the DNS VIP", dnsUp)
}

// startCoreDNS runs CoreDNS on n with the Corefile `vipstack render` wrote
// for it, as its static pod does; stop ends it.
func (mc *mixedCluster) startCoreDNS(n *mixedNode, bin string) (stop func()) {
	mc.t.Helper()
	conf := filepath.Join(n.dir, filepath.FromSlash(render.CorefilePath))
	p, err := peers.StartCmd(n.host, n.host.Command(bin, "-conf", conf))
	if err != nil {
		mc.t.Fatal(err)
	}
	mc.t.Cleanup(func() {
		if mc.t.Failed() {
			mc.t.Logf("---- CoreDNS on %s, last lines:\n%s", n.name, testutil.Tail(p.Log(), 30))
		}
	})
	return func() {
		if err := p.Kill(); err != nil {
			mc.t.Fatal(err)
		}
	}
}

// resolvesThroughVIP asks the DNS VIP, from the client, for the API name
// and a node name, and checks the answers are the cluster's; holder is
// who should hold the VIP meanwhile, and must still hold it after.
func (mc *mixedCluster) resolvesThroughVIP(holder *mixedNode) {
	mc.t.Helper()
	dom := mc.cfg.Name + "." + mc.cfg.BaseDomain
	for _, q := range []struct{ name, want string }{
		{"api." + dom, mc.cfg.APIVIPs[0].String()},
		{"master-1." + dom, mc.nodes[1].host.IPv4.Addr().String()},
		{"console-openshift-console.apps." + dom, mc.cfg.IngressVIPs[0].String()},
	} {
		out, err := mc.topo.Client.Run("dig", "+short", "+time=2", "+tries=3", "@"+mc.cfg.DNSVIP.String(), q.name, "A")
		if got := strings.Fields(out); err != nil || !slices.Equal(got, []string{q.want}) {
			mc.t.Fatalf("dig @%s %s A (VIP on %s): %q, %v; want %s", mc.cfg.DNSVIP, q.name, holder.name, out, err, q.want)
		}
	}
	hs, err := mc.holders(mc.cfg.DNSVIP, mc.nodes[:3])
	if err != nil {
		mc.t.Fatal(err)
	}
	if len(hs) != 1 || hs[0] != holder {
		mc.t.Fatalf("the DNS VIP moved while it was asked: held by %v, want %s", nodeNames(hs), holder.name)
	}
}

// setPortBlock refuses TCP port on n's loopback (a reset) while block,
// in an nftables table of its own name: a local health check on that
// port fails.
func (mc *mixedCluster) setPortBlock(n *mixedNode, table string, port int, block bool) {
	mc.t.Helper()
	var cmds [][]string
	if block {
		cmds = [][]string{
			{"add", "table", "inet", table},
			{"add", "chain", "inet", table, "input", "{ type filter hook input priority filter; policy accept; }"},
			{"add", "rule", "inet", table, "input", "iifname", "lo", "tcp", "dport", fmt.Sprint(port), "reject", "with", "tcp", "reset"},
		}
	} else {
		cmds = [][]string{{"delete", "table", "inet", table}}
	}
	for _, c := range cmds {
		if _, err := n.host.Run("nft", c...); err != nil {
			mc.t.Fatal(err)
		}
	}
}
