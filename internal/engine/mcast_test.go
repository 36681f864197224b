package engine

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/vrrp"
	"github.com/vipstack/vipstack/internal/vrrp/transport"
)

// TestMcastGroup: the group of a multicast instance is global_defs'
// vrrp_mcast_group4/6, else the well-known one; a reload that changes it
// rebuilds the instance; a packet to another group is not the instance's.
func TestMcastGroup(t *testing.T) {
	def := keepalived.NewConfig()
	set := keepalived.NewConfig()
	set.Global.McastGroup4 = netip.MustParseAddr("224.0.0.19")
	set.Global.McastGroup6 = netip.MustParseAddr("ff02::13")
	v4 := def.NewInstance("A")
	v4.VIPs = []keepalived.VIP{{Prefix: netip.MustParsePrefix("198.18.0.1/32")}}
	v6 := def.NewInstance("B")
	v6.VIPs = []keepalived.VIP{{Prefix: netip.MustParsePrefix("fd00::1/128")}}
	uni := def.NewInstance("C")
	uni.VIPs, uni.UnicastPeers = v4.VIPs, []netip.Addr{netip.MustParseAddr("198.18.0.2")}

	for _, tc := range []struct {
		cfg  *keepalived.Config
		fam  int
		want string
	}{
		{def, 4, "224.0.0.18"}, {def, 6, "ff02::12"}, {set, 4, "224.0.0.19"}, {set, 6, "ff02::13"},
	} {
		if got := mcastGroup(&tc.cfg.Global, tc.fam); got.String() != tc.want {
			t.Errorf("mcastGroup(IPv%d) = %v, want %s", tc.fam, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name      string
		old, next *keepalived.Config
		in        *keepalived.Instance
		want      bool
	}{
		{"first start", nil, set, v4, true},
		{"unchanged", set, set, v4, true},
		{"IPv4 group changed", def, set, v4, false},
		{"IPv6 group changed", set, def, v6, false},
		{"unicast instance", def, set, uni, true},
	} {
		if got := sameGroup(tc.old, tc.next, tc.in); got != tc.want {
			t.Errorf("%s: sameGroup = %v, want %v", tc.name, got, tc.want)
		}
	}
	in := &instance{dsts: []netip.Addr{netip.MustParseAddr("224.0.0.19")}}
	for dst, want := range map[string]bool{"224.0.0.19": false, "224.0.0.18": true, "198.18.0.1": false} {
		if got := in.otherGroup(netip.MustParseAddr(dst)); got != want {
			t.Errorf("otherGroup(%s) = %v, want %v", dst, got, want)
		}
	}
	unicast := &instance{dsts: []netip.Addr{netip.MustParseAddr("198.18.0.2")}, peers: map[netip.Addr]bool{netip.MustParseAddr("198.18.0.2"): true}}
	if unicast.otherGroup(netip.MustParseAddr("224.0.0.18")) {
		t.Error("otherGroup is true for a unicast instance")
	}
}

// withMcastGroup4 puts vrrp_mcast_group4 group in text's global_defs.
func withMcastGroup4(t *testing.T, text, group string) string {
	return replaceFirst(t, text, "global_defs {\n", "global_defs {\n    vrrp_mcast_group4 "+group+"\n")
}

// joinedNow replays a node's memberships log: the groups joined at the
// end, sorted.
func joinedNow(log []string) []string {
	in := map[string]bool{}
	for _, l := range log {
		f := strings.Fields(l)
		in[f[1]] = f[0] == "join"
	}
	var out []string
	for g, ok := range in {
		if ok {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

// TestMcastGroupOnSegment: vrrp_mcast_group4 on one node only (a, at
// priority 150, on 224.0.0.19; b at 100 on 224.0.0.18): each joins its
// group alone, neither hears the other (the interface filters out the
// other group's adverts, counted here) and both hold the VIP. An advert to
// 224.0.0.18 that reaches a anyway (its interface joined for another
// socket; vipstack's socket is shared) is dropped and counted as
// other_group, and a stays master over its priority 254. A reload that
// moves b to 224.0.0.19 makes it leave 224.0.0.18 and join 224.0.0.19 (in
// namespaces, `ip maddr` showed the same), after which b hears a and only
// a holds the VIP. TestMcastGroupWithKeepalived is the interop test.
func TestMcastGroupOnSegment(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		a, b := seg.node("a", "198.18.0.1/24"), seg.node("b", "198.18.0.2/24")
		nodes := []*simNode{a, b}
		vip := netip.MustParseAddr("198.18.0.100")
		c := func(prio int) peers.Conf {
			return peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 76, Priority: prio, VIP: netip.PrefixFrom(vip, 32)}
		}
		reg := prometheus.NewRegistry()
		ae, _ := simEngine(t, a, withMcastGroup4(t, simConf(t, c(150), a.name), "224.0.0.19"), nil, func(o *Options) { o.Registry = reg })
		simRun(t, ae)
		be, _ := simEngine(t, b, simConf(t, c(100), b.name), nil)
		simRun(t, be)

		// The master-down interval is about 0.35 s: both hold the VIP for
		// 3 s once both do.
		simWaitFor(t, "both nodes hold the VIP", func() (bool, string) {
			h := simHolders(nodes, vip)
			return len(h) == 2, fmt.Sprintf("%d holders", len(h))
		})
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			synctest.Wait()
			if h := simHolders(nodes, vip); len(h) != 2 {
				t.Fatalf("on different groups, %d nodes hold the VIP, want 2", len(h))
			}
		}
		for _, tc := range []struct {
			n     *simNode
			group string
		}{{a, "224.0.0.19"}, {b, "224.0.0.18"}} {
			log, filtered := tc.n.membershipLog()
			if got := joinedNow(log); !slices.Equal(got, []string{tc.group}) {
				t.Errorf("%s joined %v (log %q), want only %s", tc.n.name, got, log, tc.group)
			}
			if filtered == 0 {
				t.Errorf("%s's interface filtered out no advert of the other group", tc.n.name)
			}
		}

		adv := vrrp.Advertisement{Version: 3, VRID: 76, Priority: 254, Interval: 100 * time.Millisecond, Addresses: []netip.Addr{vip}}
		other := netip.MustParseAddr("198.18.0.2")
		payload, err := adv.Marshal(other, vrrp.MulticastIPv4)
		if err != nil {
			t.Fatal(err)
		}
		simWaitFor(t, "an advert to 224.0.0.18 counted as other_group", func() (bool, string) {
			if !a.deliver(4, transport.Packet{Payload: payload, Src: other, Dst: vrrp.MulticastIPv4, TTL: 255}) {
				t.Fatal("a has no IPv4 VRRP socket")
			}
			synctest.Wait()
			n := metricBy(t, reg, "vipstack_vrrp_packets_dropped_total", "reason")["other_group"]
			return n > 0, fmt.Sprintf("%v counted", n)
		})
		if !a.has(simLinkName, vip) {
			t.Error("a gave up the VIP for an advert to another group")
		}

		if err := os.WriteFile(be.opts.ConfigPath, []byte(withMcastGroup4(t, simConf(t, c(100), b.name), "224.0.0.19")), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := be.Reload(); err != nil {
			t.Fatalf("reload: %v", err)
		}
		simWaitSole(t, nodes, vip, a, 2*time.Second, 20*time.Second, "b on 224.0.0.19 after its reload")
		log, _ := b.membershipLog()
		if got := joinedNow(log); !slices.Equal(got, []string{"224.0.0.19"}) {
			t.Errorf("after the reload b joined %v (log %q), want only 224.0.0.19", got, log)
		}
		if !slices.ContainsFunc(log, func(l string) bool { return strings.HasPrefix(l, "leave 224.0.0.18 ") }) {
			t.Errorf("b never left 224.0.0.18: %q", log)
		}
	})
}
