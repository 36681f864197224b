package engine

import (
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
)

// The backup in these tests was keepalived, in namespaces, when they ran
// there; the keepalived behaviour each cites was measured alone.

// TestInterfaceLosesItsAddress: the only IPv4 address of the master's
// interface is deleted (a lost DHCP lease, a network manager), the VIP a
// /32 beside it. keepalived 2.2.7 enters FAULT at once, sends priority 0 and
// removes its VIPs, and enters BACKUP when an address is assigned again
// (measured alone in a namespace: "Deassigned address", FAULT 8 ms after the
// deletion; "Assigned address", BACKUP 1 ms after the new one, MASTER after
// Master_Down_Interval). vipstack stayed MASTER, advertising from the gone
// address, with the VIP on a node without a route to the subnet. Now the
// backup takes the VIP, and vipstack takes it back (priority 100 over 90)
// once its interface has another address, which it sends from. Each step
// waited for at most 10 s of virtual time.
func TestInterfaceLosesItsAddress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		vs, ka := seg.node("vs", "198.18.0.1/24"), seg.node("ka", "198.18.0.2/24")
		nodes := []*simNode{vs, ka}
		vip := netip.MustParseAddr("198.18.0.100")
		conf := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 64, VIP: netip.PrefixFrom(vip, 32)}
		_, log := simOverPeer(t, nodes, vs, ka, conf)

		vs.delAddr(simLinkName, "198.18.0.1/24")
		simWaitSole(t, nodes, vip, ka, 500*time.Millisecond, 10*time.Second, "the master's interface has no address: the backup must hold the VIP alone")
		if !strings.Contains(log.String(), "no IPv4 address left to send from") {
			t.Errorf("vipstack's log must say why it is in FAULT")
		}

		vs.addAddr(simLinkName, "198.18.0.50/24", false)
		simWaitSole(t, nodes, vip, vs, 500*time.Millisecond, 10*time.Second, "the interface has an address again: the higher node must hold the VIP alone")
		if !strings.Contains(log.String(), "advertisements now come from it") {
			t.Errorf("vipstack's log must say it sends from the new address")
		}
	})
}

// TestStartWithoutAddress: vipstack starts on an interface with no address
// to send from yet (a DHCP lease that comes after the agent; for IPv6, no
// link-local address). keepalived 2.2.7 starts such an IPv4 instance in
// FAULT ("entering FAULT state (no IPv4 address for interface)") and enters
// BACKUP when an address is assigned, then MASTER after
// Master_Down_Interval (measured alone in a namespace, 2026-11-24).
// vipstack's engine exited at start ("no IPv4 address on eth0 to send
// from") and its supervisor restarted it, with a growing delay, until the
// address came. Now it runs in FAULT while the backup holds the VIP, and
// takes it (priority 100 over 90) once its interface has an address. Each
// step waited for at most 20 s of virtual time.
func TestStartWithoutAddress(t *testing.T) {
	for _, tc := range []struct {
		name   string
		vip    netip.Prefix
		del    func(n *simNode) string
		add    string
		reason string
	}{
		{
			name:   "IPv4",
			vip:    netip.MustParsePrefix("198.18.0.100/32"),
			del:    func(*simNode) string { return "198.18.0.1/24" },
			add:    "198.18.0.50/24",
			reason: "no IPv4 address to send from; instance in FAULT",
		},
		{
			name:   "IPv6",
			vip:    netip.MustParsePrefix("fd00:bb::100/128"),
			del:    func(n *simNode) string { return n.linkLocal(simLinkName) },
			add:    "fe80::5/64", // nodad
			reason: "no IPv6 link-local address to send from; instance in FAULT",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				seg := &simSegment{}
				vs, ka := seg.node("vs", "198.18.0.1/24"), seg.node("ka", "198.18.0.2/24")
				nodes := []*simNode{vs, ka}
				vip := tc.vip.Addr()
				conf := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 65, VIP: tc.vip}
				vs.delAddr(simLinkName, tc.del(vs))
				low := conf
				low.Priority = 90
				ke, _ := simEngine(t, ka, simConf(t, low, ka.name), nil)
				simRun(t, ke)
				high := conf
				high.Priority = 100
				e, log := simEngine(t, vs, simConf(t, high, vs.name), nil)
				simRun(t, e)
				simWaitSole(t, nodes, vip, ka, 500*time.Millisecond, 20*time.Second, "vipstack has no address to send from: the backup must hold the VIP alone")
				if !strings.Contains(log.String(), tc.reason) {
					t.Errorf("vipstack's log must say why the instance is in FAULT (%q)", tc.reason)
				}
				vs.addAddr(simLinkName, tc.add, false)
				simWaitSole(t, nodes, vip, vs, 500*time.Millisecond, 20*time.Second, "the interface has an address now: the higher node must hold the VIP alone")
				if !strings.Contains(log.String(), "advertisements now come from it") {
					t.Errorf("vipstack's log must say it sends from the new address")
				}
				select {
				case <-e.done:
					t.Errorf("the engine must wait in FAULT, not exit and be restarted by its supervisor")
				default:
				}
			})
		})
	}
}

// TestInterfaceLosesItsLinkLocal: the IPv6 link-local address a master
// sends its VRRPv3 adverts from is deleted, then another one is assigned.
// keepalived 2.2.7, measured alone in a namespace (2026-11-24): "Deassigned
// address fe80::...", FAULT at once ("send advert error 22"), priority 0
// sent, VIPs removed; "Assigned address fe80::5": BACKUP at once, MASTER
// after Master_Down_Interval. Here the backup must hold the VIP alone while
// vipstack has no link-local address, and vipstack (priority 100 over 90)
// takes it back once it has a new one, sending from it. Each step waited
// for at most 10 s of virtual time.
func TestInterfaceLosesItsLinkLocal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		vs, ka := seg.node("vs", "198.18.0.1/24"), seg.node("ka", "198.18.0.2/24")
		nodes := []*simNode{vs, ka}
		vip := netip.MustParseAddr("fd00:bb::100")
		conf := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 66, VIP: netip.PrefixFrom(vip, 128)}
		_, log := simOverPeer(t, nodes, vs, ka, conf)

		vs.delAddr(simLinkName, vs.linkLocal(simLinkName))
		simWaitSole(t, nodes, vip, ka, 500*time.Millisecond, 10*time.Second, "the master has no link-local address: the backup must hold the VIP alone")
		if !strings.Contains(log.String(), "no IPv6 link-local address left to send from") {
			t.Errorf("vipstack's log must say why it is in FAULT")
		}
		vs.addAddr(simLinkName, "fe80::5/64", false) // nodad
		simWaitSole(t, nodes, vip, vs, 500*time.Millisecond, 10*time.Second, "the interface has a link-local address again: the higher node must hold the VIP alone")
		if !strings.Contains(log.String(), "advertisements now come from it") {
			t.Errorf("vipstack's log must say it sends from the new address")
		}
	})
}

// TestSourcesLookedUpOncePerInterface: the instances one apply builds
// share one look at each interface's source address, an address dump on a
// real node: a look per instance made 13.6 of the 88 MB the engine
// allocated to start bench/scale's 1,000 instances. Six IPv4 and four IPv6
// instances on one interface: at most one look per family for the builds
// and one for the address watcher's first report (checkPrimaries), where
// a look per instance made six and four at least; each instance still
// sends from its interface's primary IPv4 or link-local IPv6 address.
func TestSourcesLookedUpOncePerInterface(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		n := seg.node("vs", "198.18.0.1/24")
		ll := netip.MustParsePrefix(n.linkLocal(simLinkName)).Addr()
		var conf strings.Builder
		for i := 1; i <= 10; i++ {
			vip := fmt.Sprintf("198.18.0.%d/32", 100+i)
			if i > 6 {
				vip = fmt.Sprintf("fd00:bb::%d/128", i)
			}
			fmt.Fprintf(&conf, "vrrp_instance VI_%d {\n interface %s\n virtual_router_id %d\n priority 100\n advert_int 1\n virtual_ipaddress {\n  %s\n }\n}\n",
				i, simLinkName, i, vip)
		}
		e, _ := simEngine(t, n, conf.String(), nil)
		simRun(t, e)
		want := map[string]string{"4": "198.18.0.1", "6": ll.WithZone(simLinkName).String()}
		simWaitFor(t, "every instance has a source", func() (bool, string) {
			st := e.Status()
			if len(st) != 10 {
				return false, fmt.Sprintf("%d instances", len(st))
			}
			for _, s := range st {
				family := "4"
				if strings.Contains(s.VIPs[0], ":") {
					family = "6"
				}
				if s.Source != want[family] {
					return false, fmt.Sprintf("%s sends from %q, want %q", s.Name, s.Source, want[family])
				}
			}
			return true, ""
		})
		n.mu.Lock()
		looks := maps.Clone(n.sourceLooks)
		n.mu.Unlock()
		for _, family := range []string{"4", "6"} {
			if looks[family] > 2 {
				t.Errorf("IPv%s sources looked up %d times, want at most 2 (one for the builds, one for the first address report)", family, looks[family])
			}
		}
		t.Logf("source looks: %v", looks)
	})
}
