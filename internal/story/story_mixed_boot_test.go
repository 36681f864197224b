//go:build linux

package story_test

import (
	"net/netip"
	"os/exec"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestStoryMixedBootstrap is seed 003's bootstrap pivot in a cluster that
// installs vipstack on its nodes while the installer's bootstrap node runs
// keepalived from the files `vipstack render` writes for it (its API
// instance at 70, no checks). The masters are mixed, as in
// TestStoryMixedCluster: keepalived (and haproxy) on master-0, vipstack
// node on master-1 and master-2. While the bootstrap runs it holds the API
// VIP against every master (65 at best) and the vipstack masters see it as
// their master at 70; its teardown (keepalived's priority-0 advert) hands
// the VIP to a master within the skew time; a bootstrap that comes back
// takes it again (70 preempts); its crash hands it over within the
// master-down interval. The API VIP has one holder throughout (up to a
// handover grace).
func TestStoryMixedBootstrap(t *testing.T) {
	testnet.RequireRoot(t)
	for _, p := range []string{"keepalived", "haproxy", "curl", "nft", "timeout"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("skipping: %s is not installed (the mixed cluster runs the rendered upstream configs)", p)
		}
	}
	yaml := mixedYAML + "  - {name: bootstrap, role: bootstrap, ips: [" + testnet.HostIPv4(6).String() + "]}\n"
	mc := startMixedClusterOn(t, yaml, testnet.Options{Hosts: 6, Prefix: "vsXb"})
	cfg := mc.cfg
	var (
		apiVIP     = cfg.APIVIPs[0]
		advert     = cfg.VRRP.AdvertInterval
		m0, m1, m2 = mc.nodes[0], mc.nodes[1], mc.nodes[2]
		boot       = mc.nodes[5]
		masters    = mc.nodes[:3]
		apiNodes   = []*mixedNode{m0, m1, m2, boot}
		apiName    = cfg.Name + "_API"
		apiUp      = cluster.PrioMasterAPI + cluster.WeightLB + cluster.WeightLBOrAPI
	)
	if boot.name != "bootstrap" || !boot.upstream {
		t.Fatalf("node 6 is %s (upstream %v), want the bootstrap running keepalived", boot.name, boot.upstream)
	}
	skew := func(prio int) time.Duration { return time.Duration(256-prio) * advert / 256 }
	masterDown := 3*advert + skew(cluster.PrioMasterAPI)
	margin := 2 * advert
	grace := advert + margin
	lbCheck := mc.check("master-0", "chk_ocp_lb")
	converge := time.Duration(lbCheck.Rise)*lbCheck.Interval + lbCheck.Timeout + masterDown + 30*time.Second

	stopWatch := mc.watchSplitBrain([]netip.Addr{apiVIP}, grace)
	t.Cleanup(stopWatch)

	// While it runs, the bootstrap holds the API VIP, and the vipstack
	// masters, healthy at 65, see it as their master at 70.
	for _, n := range []*mixedNode{m1, m2} {
		mc.waitPrio(n, apiName, apiUp, converge)
	}
	mc.waitSole(apiVIP, apiNodes, is(boot), 3*advert, converge)
	mc.waitMasterSeen(apiName, boot, cluster.PrioBootstrap, []*mixedNode{m1, m2}, masterDown)
	mc.keeps(apiVIP, apiNodes, boot, masterDown+advert)
	t.Logf("the bootstrap's keepalived holds the API VIP at %d; the vipstack masters wait at %d", cluster.PrioBootstrap, apiUp)

	// Teardown: keepalived's priority-0 advert; a master takes over
	// within its skew time (bounded here by one master-down interval).
	if err := boot.vrrp.Term(); err != nil {
		t.Fatal(err)
	}
	holder := mc.waitSole(apiVIP, masters, nil, 3*advert, masterDown+margin)
	mc.waitMasterSeen(apiName, holder, apiUp, []*mixedNode{m1, m2}, masterDown)
	t.Logf("bootstrap torn down: %s holds the API VIP", holder.name)

	// The bootstrap's keepalived comes back (its pod restarted): 70
	// preempts every master.
	mc.startVRRP(boot)
	mc.waitSole(apiVIP, apiNodes, is(boot), 3*advert, masterDown+margin+5*time.Second)
	t.Logf("bootstrap back: it holds the API VIP again")

	// The bootstrap crashes (process group killed, cable pulled): a master
	// takes over within the master-down interval.
	mc.crash(boot)
	holder = mc.waitSole(apiVIP, masters, nil, 3*advert, masterDown+margin)
	t.Logf("bootstrap crashed: %s holds the API VIP", holder.name)
}
