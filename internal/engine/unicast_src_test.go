package engine

import (
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
)

// TestUnicastSourceNotLocal: a vipstack instance whose unicast_src_ip is
// not an address of its node stays in FAULT, as keepalived does ("src
// address not configured"), instead of sending from it unheard and taking
// the VIP beside the real master (a router of lower priority: keepalived
// in namespaces, an engine here); once the address is added the instance
// runs and takes over.
func TestUnicastSourceNotLocal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		node, peer := seg.node("node", "198.18.0.1/24"), seg.node("peer", "198.18.0.2/24")
		nodes := []*simNode{node, peer}
		vip := netip.MustParseAddr("198.18.0.100")
		src := netip.MustParseAddr("198.18.0.99") // on no node yet
		base := peers.Conf{Version: 2, Interval: time.Second, VRID: 51, VIP: netip.PrefixFrom(vip, 32), Auth: "managed_api_vip"}
		ours, theirs := base, base
		ours.Priority, ours.Source, ours.Peers = 200, src, []netip.Addr{netip.MustParseAddr("198.18.0.2")}
		theirs.Priority, theirs.Source, theirs.Peers = 100, netip.MustParseAddr("198.18.0.2"), []netip.Addr{src}
		pe, _ := simEngine(t, peer, simConf(t, theirs, peer.name), nil)
		simRun(t, pe)
		e, log := simEngine(t, node, simConf(t, ours, node.name), nil)
		simRun(t, e)

		// The peer alone holds the VIP, for longer than vipstack's
		// master-down interval.
		simWaitSole(t, nodes, vip, peer, 6*time.Second, 30*time.Second, "with vipstack's unicast_src_ip absent")
		for _, want := range []string{
			`msg="unicast_src_ip is not an address of this node; its instances stay in FAULT until it is" source=198.18.0.99`,
			`msg="VRRP state change" instance=VI_1 from=INIT to=FAULT reason="start: unicast_src_ip 198.18.0.99 failing"`,
		} {
			if !strings.Contains(log.String(), want) {
				t.Errorf("vipstack's log lacks %s", want)
			}
		}

		node.addAddr(simLinkName, netip.PrefixFrom(src, 24).String(), false)
		simWaitSole(t, nodes, vip, node, 2*time.Second, 20*time.Second, "after adding unicast_src_ip 198.18.0.99 to vipstack's node")
	})
}
