package ipfailover_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/ipfailover"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestPoolOtherSettingsReported: while a change of settings rolls out
// (here the scale-up OPENSHIFT_HA_REPLICA_COUNT 2 -> 3, a third node
// joining two that still run the old value), the nodes lay the same VIPs
// out in other groups on other VRIDs, and VRRP cannot keep a VIP on one
// node across two VRIDs: the VIPs are held twice until every node runs the
// same settings. The joining node must say so, naming the pool's VIPs it
// heard in a layout it does not share; before, it only logged that it
// avoided a "foreign" VRID.
func TestPoolOtherSettingsReported(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: "vsab"})
	const vipList = "198.18.0.100-105"
	vips := mustExpand(t, vipList)
	base := []string{"OPENSHIFT_HA_CONFIG_NAME=vsab", "OPENSHIFT_HA_VIRTUAL_IPS=" + vipList,
		"OPENSHIFT_HA_MONITOR_PORT=0", "OPENSHIFT_HA_NETWORK_INTERFACE=eth0"}
	before := append(slices.Clone(base), "OPENSHIFT_HA_REPLICA_COUNT=2")
	startNode(t, topo.Hosts[0], before, fastFlags...)
	startNode(t, topo.Hosts[1], before, fastFlags...)
	waitSpread(t, "two nodes, REPLICA_COUNT=2", topo.Hosts[:2], vips, 500*time.Millisecond, 20*time.Second, even)

	joined := startNode(t, topo.Hosts[2], append(slices.Clone(base), "OPENSHIFT_HA_REPLICA_COUNT=3"), fastFlags...)
	var st ipfailover.Status
	deadline := time.Now().Add(15 * time.Second)
	for {
		var err error
		st, err = joined.status()
		if err == nil && st.Phase == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the joining node is not running after 15s: phase %q, %v", st.Phase, err)
		}
		time.Sleep(100 * time.Millisecond) // polling the status, bounded by deadline
	}
	var named []string
	for _, f := range st.Findings {
		for _, a := range f.VIPs {
			named = append(named, a.String())
		}
	}
	slices.Sort(named)
	var want []string
	for _, a := range vips {
		want = append(want, a.String())
	}
	if !slices.Equal(named, want) {
		t.Errorf("findings of the joining node name the pool's VIPs %v, want all of %v (findings: %+v)", named, want, st.Findings)
	}
	if log := joined.log.String(); !strings.Contains(log, "of this pool's VIPs") || !strings.Contains(log, "held twice") {
		t.Errorf("the joining node's log does not warn that the pool's VIPs are held in another layout:\n%s", tail(log, 30))
	}

	// What happens meanwhile, measured, not asserted: the joining node
	// masters the groups of its layout, which nobody else speaks.
	var s spread
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) { // bounded poll
		var err error
		if s, err = spreadOf(topo.Hosts, vips); err != nil || len(s.twice) == len(vips) {
			break
		}
	}
	t.Logf("three nodes, two with REPLICA_COUNT=2 and one with 3: %v", s)
}
