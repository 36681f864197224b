package engine_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// withGlobal adds lines to the global_defs block of a rendered
// keepalived.conf.
func withGlobal(t *testing.T, text string, lines ...string) string {
	t.Helper()
	const open = "global_defs {\n"
	i := strings.Index(text, open)
	if i < 0 {
		t.Fatalf("no global_defs block in\n%s", text)
	}
	i += len(open)
	return text[:i] + "    " + strings.Join(lines, "\n    ") + "\n" + text[i:]
}

// TestMcastGroupWithKeepalived: with vrrp_mcast_group4 224.0.0.19 (IPv4)
// or vrrp_mcast_group6 ff02::13 (IPv6) on both sides, keepalived 2.2.7 and
// vipstack hear each other: the higher priority is the only holder of the
// VIP for longer than a master-down interval, whichever of the two it is,
// and the adverts go to that group (IPv4: tcpdump sees none to
// 224.0.0.18). With the group set on one side only, neither hears the
// other and both hold the VIP. The reload that changes the group, and the
// drop of adverts to another group, are TestMcastGroupOnSegment's.
func TestMcastGroupWithKeepalived(t *testing.T) {
	testnet.RequireRoot(t)
	for _, fam := range []int{4, 6} {
		group, vip := "vrrp_mcast_group4 224.0.0.19", netip.MustParseAddr("198.18.0.100")
		if fam == 6 {
			group, vip = "vrrp_mcast_group6 ff02::13", netip.MustParseAddr("fd00:bb::100")
		}
		render := func(t *testing.T, h *testnet.Host, prio int, lines ...string) string {
			c := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 71, Priority: prio,
				VIP: netip.PrefixFrom(vip, vip.BitLen())}
			text, err := c.Render(h.Name)
			if err != nil {
				t.Fatal(err)
			}
			if len(lines) > 0 {
				text = withGlobal(t, text, lines...)
			}
			return text
		}
		for _, tc := range []struct {
			name        string
			impls       [2]peers.Impl
			groups      [2]bool // whether each node sets the group
			wantHolders []bool
		}{
			{name: "keepalived master", impls: [2]peers.Impl{peers.Keepalived, peers.Vipstack}, groups: [2]bool{true, true}, wantHolders: []bool{true, false}},
			{name: "vipstack master", impls: [2]peers.Impl{peers.Vipstack, peers.Keepalived}, groups: [2]bool{true, true}, wantHolders: []bool{true, false}},
			{name: "keepalived on another group", impls: [2]peers.Impl{peers.Keepalived, peers.Vipstack}, groups: [2]bool{true, false}, wantHolders: []bool{true, true}},
			{name: "vipstack on another group", impls: [2]peers.Impl{peers.Vipstack, peers.Keepalived}, groups: [2]bool{true, false}, wantHolders: []bool{true, true}},
		} {
			t.Run(fmt.Sprintf("ipv%d/%s", fam, strings.ReplaceAll(tc.name, " ", "-")), func(t *testing.T) {
				topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vkag"})
				var onGroup, onDefault *vrrpCapture
				if fam == 4 {
					onGroup = captureVRRP(t, topo.Hosts[1], "dst host 224.0.0.19")
					onDefault = captureVRRP(t, topo.Hosts[1], "dst host 224.0.0.18")
				}
				for i, h := range topo.Hosts {
					var lines []string
					if tc.groups[i] {
						lines = []string{group}
					}
					startText(t, h, tc.impls[i], render(t, h, 150-50*i, lines...))
				}
				// The master-down interval is about 0.35 s at advert_int 0.1:
				// a node that does not hear the master holds the VIP long
				// before 3 s have passed.
				vips := []netip.Addr{vip, vip}
				waitHolders(t, topo.Hosts, vips, tc.wantHolders, 3*time.Second, 30*time.Second, tc.name)
				if onGroup == nil {
					return
				}
				if len(onGroup.Lines()) == 0 {
					t.Error("tcpdump saw no advert to 224.0.0.19")
				}
				if l := onDefault.Lines(); tc.groups[1] && len(l) > 0 {
					t.Errorf("adverts went to 224.0.0.18 while both nodes use 224.0.0.19: %q", l)
				}
			})
		}
	}
}

// TestCheckUnicastSrcWithKeepalived: an instance with check_unicast_src
// drops unicast adverts from a source that is not in its unicast_peer
// list, in keepalived 2.2.7 and vipstack alike: the sender's higher
// priority does not make it a backup, both hold the VIP, and the log says
// so in keepalived's words. Without check_unicast_src keepalived takes
// such an advert (vipstack drops it anyway, docs/design/vrrp.md).
func TestCheckUnicastSrcWithKeepalived(t *testing.T) {
	testnet.RequireRoot(t)
	vip := netip.MustParseAddr("198.18.0.100")
	stranger := netip.MustParseAddr("198.18.0.99") // a peer that never speaks
	for _, tc := range []struct {
		name        string
		checker     peers.Impl // the instance told to check; at priority 100
		check       bool
		wantHolders []bool // checker, sender
		wantLog     string
	}{
		{name: "vipstack checks", checker: peers.Vipstack, check: true, wantHolders: []bool{true, true},
			wantLog: "(VI_1) unicast source address 198.18.0.12 not a unicast peer"},
		{name: "keepalived checks", checker: peers.Keepalived, check: true, wantHolders: []bool{true, true},
			wantLog: "(VI_1) unicast source address 198.18.0.12 not a unicast peer"},
		{name: "keepalived does not check", checker: peers.Keepalived, wantHolders: []bool{false, true}},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "-"), func(t *testing.T) {
			topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vkau"})
			checker, sender := topo.Hosts[0], topo.Hosts[1]
			other := peers.Vipstack
			if tc.checker == peers.Vipstack {
				other = peers.Keepalived
			}
			conf := func(h *testnet.Host, prio int, peer netip.Addr) peers.Conf {
				return peers.Conf{Version: 2, Interval: time.Second, VRID: 72, Priority: prio, Auth: "pw",
					VIP: netip.PrefixFrom(vip, 32), Source: h.IPv4.Addr(), Peers: []netip.Addr{peer}}
			}
			var lines []string
			if tc.check {
				lines = []string{"check_unicast_src"}
			}
			n := startText(t, checker, tc.checker, withLines(t, conf(checker, 100, stranger), checker, lines...))
			startText(t, sender, other, withLines(t, conf(sender, 200, checker.IPv4.Addr()), sender))
			// advert_int 1: the master-down interval is about 3.6 s.
			waitHolders(t, topo.Hosts, []netip.Addr{vip, vip}, tc.wantHolders, 5*time.Second, 40*time.Second, tc.name)
			if tc.wantLog != "" && !strings.Contains(n.Log(), tc.wantLog) {
				t.Errorf("%s log has no %q:\n%s", tc.checker, tc.wantLog, tail(n.Log(), 30))
			}
		})
	}
}
