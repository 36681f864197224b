package engine

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/vrrp/transport"
)

// TestVIPRemovedFromMaster: something else (an `ip addr del`, a network
// manager) removes the VIP from the master's interface. keepalived 2.2.7
// steps down with priority 0 and, when no backup takes over, is master again
// after its Skew_Time with the VIP back (measured alone in a namespace:
// BACKUP 8 ms after the removal, MASTER 0.63 s later, advert 1 s, priority
// 100). vipstack went on advertising as master without the VIP: no node
// answered for it, and the backup (keepalived, when this test ran in
// namespaces; an engine here) never took it. Now the VIP is back on exactly
// one node, the higher one, and the log says why. Two removals, each waited
// for at most 10 s of virtual time.
func TestVIPRemovedFromMaster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		high, low := seg.node("high", "198.18.0.1/24"), seg.node("low", "198.18.0.2/24")
		nodes := []*simNode{high, low}
		vip := netip.MustParseAddr("198.18.0.100")
		conf := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 63, VIP: netip.PrefixFrom(vip, 24)}
		_, log := simOverPeer(t, nodes, high, low, conf)
		for i := range 2 {
			high.delAddr(simLinkName, conf.VIP.String())
			simWaitSole(t, nodes, vip, high, 500*time.Millisecond, 10*time.Second,
				fmt.Sprintf("removal %d: the VIP must be back on exactly one node, the higher one", i+1))
		}
		if !strings.Contains(log.String(), "removed from eth0 behind our back") {
			t.Errorf("the master's log must say why it stepped down; it does not")
		}
	})
}

// TestVIPStepDownAtStart plays the demo's start, where the API VIP was
// once left on two masters: three routers at one priority that cannot
// hear each other all take the VIP (their adverts are lost), then hear
// each other and the two lower addresses step down at once; then a router
// of higher priority starts and the last one steps down too. After each
// step exactly one node has the VIP on its interface.
func TestVIPStepDownAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		top := seg.node("top", "198.18.0.1/24")
		masters := []*simNode{seg.node("m2", "198.18.0.2/24"), seg.node("m3", "198.18.0.3/24"), seg.node("m4", "198.18.0.4/24")}
		all := append([]*simNode{top}, masters...)
		vip := netip.MustParseAddr("198.18.0.100")
		conf := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 61, VIP: netip.PrefixFrom(vip, 32)}

		// Every packet the masters send is lost (netem loss 100% on their
		// links, in namespaces).
		seg.mu.Lock()
		seg.drop = func(from, _ *simNode, _ transport.Packet) bool { return from != top }
		seg.mu.Unlock()
		for _, h := range masters {
			c := conf
			c.Priority = 65
			e, _ := simEngine(t, h, simConf(t, c, h.name), nil)
			simRun(t, e)
		}
		simWaitFor(t, "the masters all take the VIP while they cannot hear each other", func() (bool, string) {
			hs := simHolders(masters, vip)
			return len(hs) == len(masters), fmt.Sprintf("%d of %d have it", len(hs), len(masters))
		})
		seg.mu.Lock()
		seg.drop = nil
		seg.mu.Unlock()
		// Equal priorities: the highest address stays master.
		simWaitSole(t, all, vip, masters[len(masters)-1], 500*time.Millisecond, 20*time.Second, "after the masters hear each other")
		c := conf
		c.Priority = 70
		e, _ := simEngine(t, top, simConf(t, c, top.name), nil)
		simRun(t, e)
		simWaitSole(t, all, vip, top, 500*time.Millisecond, 20*time.Second, "after the higher router starts")
	})
}
