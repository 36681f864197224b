package engine

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
)

// TestHealAnnouncesUnicastSource: when a unicast node's link comes back
// after a cut, it sends a gratuitous ARP for its own source address, so
// the peers that kept sending to it while it was away (their neighbour
// entry for it INCOMPLETE or FAILED) reach it at once instead of after
// the kernel's 1 s retransmit timer (bench/chaos finding 3). In namespaces
// the peer captured it with tcpdump; here the healed node's announcer
// records it.
func TestHealAnnouncesUnicastSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		addrs := []netip.Addr{netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")}
		n1, n2 := seg.node("node1", "198.18.0.1/24"), seg.node("node2", "198.18.0.2/24")
		nodes := []*simNode{n1, n2}
		vip := netip.MustParseAddr("198.18.0.100")
		var logs []interface{ String() string }
		for i, n := range nodes {
			c := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 51, Priority: []int{150, 100}[i],
				VIP: netip.PrefixFrom(vip, 32), Source: addrs[i], Peers: []netip.Addr{addrs[1-i]}}
			e, log := simEngine(t, n, simConf(t, c, n.name), nil)
			logs = append(logs, log)
			simRun(t, e)
		}
		simWaitSole(t, nodes, vip, n1, 300*time.Millisecond, 20*time.Second, "start")

		n2.setCarrier(simLinkName, false)
		simWaitFor(t, "node2 notices its link going down", func() (bool, string) {
			return strings.Contains(logs[1].String(), "up=false"), "not in its log"
		})
		before := len(n2.announcements())
		n2.setCarrier(simLinkName, true)
		synctest.Wait()
		if got := n2.announcements()[before:]; !slices.Contains(got, addrs[1]) {
			t.Fatalf("no gratuitous ARP for %s after its link came back (announced %v)", addrs[1], got)
		}
		simWaitSole(t, nodes, vip, n1, 300*time.Millisecond, 20*time.Second, "healed: node1 is the one master again")
	})
}
