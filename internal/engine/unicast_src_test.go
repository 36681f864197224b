package engine

import (
	"fmt"
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

// TestCheckUnicastSrcLogged: an instance with check_unicast_src (or
// global_defs vrrp_check_unicast_src) drops the unicast adverts of a
// source that is not in its unicast_peer list, so two senders of higher
// priority do not make it a backup, and logs each source in keepalived's
// words once a minute, not at every advert (keepalived logs every one).
// Without check_unicast_src the drop is logged at debug level only.
// TestCheckUnicastSrcWithKeepalived is the interop test.
func TestCheckUnicastSrcLogged(t *testing.T) {
	for _, tc := range []struct {
		name          string
		global, local bool
		wantLogged    bool
	}{
		{name: "instance", local: true, wantLogged: true},
		{name: "global_defs", global: true, wantLogged: true},
		{name: "unchecked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				seg := &simSegment{}
				checker := seg.node("checker", "198.18.0.1/24")
				senders := []*simNode{seg.node("s2", "198.18.0.2/24"), seg.node("s3", "198.18.0.3/24")}
				vip := netip.MustParseAddr("198.18.0.100")
				conf := func(src string, prio int, peer string) peers.Conf {
					return peers.Conf{Version: 2, Interval: time.Second, VRID: 72, Priority: prio, Auth: "pw",
						VIP: netip.PrefixFrom(vip, 32), Source: netip.MustParseAddr(src), Peers: []netip.Addr{netip.MustParseAddr(peer)}}
				}
				text := simConf(t, conf("198.18.0.1", 100, "198.18.0.99"), checker.name) // a peer that never speaks
				if tc.local {
					text = simWithLines(text, "check_unicast_src")
				}
				if tc.global {
					text = replaceFirst(t, text, "global_defs {\n", "global_defs {\n    vrrp_check_unicast_src\n")
				}
				e, log := simEngine(t, checker, text, nil)
				simRun(t, e)
				for i, s := range senders {
					se, _ := simEngine(t, s, simConf(t, conf(fmt.Sprintf("198.18.0.%d", i+2), 200, "198.18.0.1"), s.name), nil)
					simRun(t, se)
				}
				count := func(src string) int {
					return strings.Count(log.String(), "(VI_1) unicast source address "+src+" not a unicast peer")
				}
				// advert_int 1: the master-down interval is about 3.6 s; 50
				// s later each sender has sent about 50 adverts.
				// From 5 s on the checker holds the VIP in every sample.
				for i := range 50 * 10 {
					time.Sleep(100 * time.Millisecond)
					synctest.Wait()
					if i >= 50 && !checker.has(simLinkName, vip) {
						t.Fatalf("after %d ms the checker does not hold the VIP: a source that is not its peer made it a backup", (i+1)*100)
					}
				}
				want := 0
				if tc.wantLogged {
					want = 1
				}
				for _, src := range []string{"198.18.0.2", "198.18.0.3"} {
					if got := count(src); got != want {
						t.Errorf("after 50 s: %s logged %d times, want %d", src, got, want)
					}
				}
				time.Sleep(15 * time.Second) // past a minute since the first line
				synctest.Wait()
				if tc.wantLogged {
					want = 2
				}
				for _, src := range []string{"198.18.0.2", "198.18.0.3"} {
					if got := count(src); got != want {
						t.Errorf("after 65 s: %s logged %d times, want %d", src, got, want)
					}
				}
			})
		})
	}
}
