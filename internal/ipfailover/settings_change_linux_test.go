package ipfailover_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/ipfailover"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestPoolSettingsRollout rolls a change of settings out over a running
// pool: the scale-up OPENSHIFT_HA_REPLICA_COUNT 2 -> 3, a third node
// joining two that run the old value, which are then restarted with the
// new one, one at a time. The two layouts put the same VIPs in different
// groups on different VRIDs, and VRRP elects per VRID: before the layout
// guard, the joining node mastered its own groups and every VIP was held
// twice (measured: counts [3 3 6], 6 VIPs held twice). Now a node that
// hears the pool's VIPs in another layout names them and holds its groups
// back until that layout is gone: no VIP is ever held twice, and the
// rollout ends with the new layout's spread.
func TestPoolSettingsRollout(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: "vsab"})
	const vipList = "198.18.0.100-105"
	vips := mustExpand(t, vipList)
	base := []string{"OPENSHIFT_HA_CONFIG_NAME=vsab", "OPENSHIFT_HA_VIRTUAL_IPS=" + vipList,
		"OPENSHIFT_HA_MONITOR_PORT=0", "OPENSHIFT_HA_NETWORK_INTERFACE=eth0"}
	before := append(slices.Clone(base), "OPENSHIFT_HA_REPLICA_COUNT=2")
	after := append(slices.Clone(base), "OPENSHIFT_HA_REPLICA_COUNT=3")
	hs := topo.Hosts
	nodes := []*node{startNode(t, hs[0], before, fastFlags...), startNode(t, hs[1], before, fastFlags...)}
	waitSpread(t, "two nodes, REPLICA_COUNT=2", hs[:2], vips, 500*time.Millisecond, 20*time.Second, even)

	nodes = append(nodes, startNode(t, hs[2], after, fastFlags...))
	st := waitRunning(t, nodes[2])
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
	if log := nodes[2].log.String(); !strings.Contains(log, "of this pool's VIPs") || !strings.Contains(log, "held twice") {
		t.Errorf("the joining node's log does not warn that the pool's VIPs are held in another layout:\n%s", tail(log, 30))
	}
	// Its master-down timers (about 0.4 s at 100 ms adverts) run out many
	// times over in 2 s: it holds nothing meanwhile.
	neverTwice(t, "third node joined with REPLICA_COUNT=3", hs, vips, 2*time.Second, func(s spread) bool { return s.counts[2] == 0 })

	// Node 1 restarts with the new settings: node 2 (old) takes its groups;
	// the restarted node hears the old layout and holds back too.
	nodes[0].term(t)
	nodes[0] = startNode(t, hs[0], after, fastFlags...)
	waitRunning(t, nodes[0])
	neverTwice(t, "node 1 restarted with REPLICA_COUNT=3", hs, vips, 2*time.Second,
		func(s spread) bool { return slices.Equal(s.counts, []int{0, 6, 0}) })

	// The last node of the old layout stops (priority 0): the new layout
	// takes every VIP, each once.
	nodes[1].term(t)
	waitSpread(t, "node 2 (old settings) stopped", hs, vips, 500*time.Millisecond, 15*time.Second,
		func(s spread) bool { return once(s) && s.counts[1] == 0 })
	nodes[1] = startNode(t, hs[1], after, fastFlags...)
	waitSpread(t, "every node on REPLICA_COUNT=3", hs, vips, 500*time.Millisecond, 20*time.Second,
		func(s spread) bool { return once(s) && slices.Equal(s.counts, []int{2, 2, 2}) })
}

// waitRunning polls n's status until the pool runs (at most 15 s).
func waitRunning(t *testing.T, n *node) ipfailover.Status {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, err := n.status()
		if err == nil && st.Phase == "running" {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is not running after 15s: phase %q, %v", n.h.Name, st.Phase, err)
		}
		time.Sleep(100 * time.Millisecond) // polling the status, bounded by deadline
	}
}

// neverTwice samples the spread every 50 ms for d: no VIP may be held by
// two hosts, and every sample must satisfy ok once the first one does
// (ok describes the settled state; a failover may be under way at first).
func neverTwice(t *testing.T, why string, hs []*testnet.Host, vips []netip.Addr, d time.Duration, ok func(spread) bool) {
	t.Helper()
	settled := false
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) { // bounded sampling
		s, err := spreadOf(hs, vips)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.twice) > 0 {
			t.Fatalf("%s: %v", why, s)
		}
		switch {
		case ok(s):
			settled = true
		case settled:
			t.Fatalf("%s: left the settled state: %v", why, s)
		}
	}
	if !settled {
		s, _ := spreadOf(hs, vips)
		t.Fatalf("%s: not settled within %v: %v", why, d, s)
	}
	t.Logf("%s: never held twice for %v", why, d)
}
