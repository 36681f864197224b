package engine

import (
	"net/netip"
	"testing"

	"github.com/vipstack/vipstack/internal/keepalived"
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
