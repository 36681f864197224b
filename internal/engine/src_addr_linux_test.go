package engine_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestInterfaceLosesItsAddress: the only IPv4 address of the master's
// interface is deleted (a lost DHCP lease, a network manager), the VIP a
// /32 beside it. keepalived 2.2.7 enters FAULT at once, sends priority 0 and
// removes its VIPs, and enters BACKUP when an address is assigned again
// (measured alone in a namespace: "Deassigned address", FAULT 8 ms after the
// deletion; "Assigned address", BACKUP 1 ms after the new one, MASTER after
// Master_Down_Interval). vipstack stayed MASTER, advertising from the gone
// address, with the VIP on a node without a route to the subnet. Now the
// keepalived backup takes the VIP, and vipstack takes it back (priority 100
// over 90) once its interface has another address, which it sends from.
// Bounded: each step waited for at most 10 s.
func TestInterfaceLosesItsAddress(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsz"})
	vs, ka := topo.Hosts[0], topo.Hosts[1]
	vip := netip.MustParseAddr("198.18.0.100")
	conf := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 64, VIP: netip.PrefixFrom(vip, 32)}
	n := startOverKeepalived(t, bin, topo.Hosts, vs, ka, conf)

	if out, err := vs.Run("ip", "addr", "del", vs.IPv4.String(), "dev", vs.Link); err != nil {
		t.Fatalf("deleting the master's address: %v: %s", err, out)
	}
	if _, err := peers.WaitSoleHolder(topo.Hosts, vip, ka, 500*time.Millisecond, 10*time.Second); err != nil {
		t.Fatalf("the master's interface has no address: the backup must hold the VIP alone: %v", err)
	}
	if !strings.Contains(n.Log(), "no IPv4 address left to send from") {
		t.Errorf("vipstack's log must say why it is in FAULT")
	}

	other := netip.PrefixFrom(netip.MustParseAddr("198.18.0.50"), 24)
	if out, err := vs.Run("ip", "addr", "add", other.String(), "dev", vs.Link); err != nil {
		t.Fatalf("adding another address: %v: %s", err, out)
	}
	if _, err := peers.WaitSoleHolder(topo.Hosts, vip, vs, 500*time.Millisecond, 10*time.Second); err != nil {
		t.Fatalf("the interface has an address again: the higher node must hold the VIP alone: %v", err)
	}
	if !strings.Contains(n.Log(), "advertisements now come from it") {
		t.Errorf("vipstack's log must say it sends from the new address")
	}
}

// TestStartWithoutAddress: vipstack starts on an interface with no address
// to send from yet (a DHCP lease that comes after the agent; for IPv6, no
// link-local address). keepalived 2.2.7 starts such an IPv4 instance in
// FAULT ("entering FAULT state (no IPv4 address for interface)") and enters
// BACKUP when an address is assigned, then MASTER after
// Master_Down_Interval (measured alone in a namespace, 2026-11-24).
// vipstack's engine exited at start ("no IPv4 address on eth0 to send
// from") and its supervisor restarted it, with a growing delay, until the
// address came. Now it runs in FAULT while the keepalived backup holds the
// VIP, and takes it (priority 100 over 90) once its interface has an
// address. Bounded: each step waited for at most 20 s.
func TestStartWithoutAddress(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	for _, tc := range []struct {
		name   string
		vip    netip.Prefix
		del    func(h *testnet.Host) netip.Prefix
		add    []string
		reason string
	}{
		{
			name:   "IPv4",
			vip:    netip.MustParsePrefix("198.18.0.100/32"),
			del:    func(h *testnet.Host) netip.Prefix { return h.IPv4 },
			add:    []string{"198.18.0.50/24"},
			reason: "no IPv4 address to send from; instance in FAULT",
		},
		{
			name:   "IPv6",
			vip:    netip.MustParsePrefix("fd00:bb::100/128"),
			del:    func(h *testnet.Host) netip.Prefix { return linkLocal(t, h) },
			add:    []string{"fe80::5/64", "nodad"},
			reason: "no IPv6 link-local address to send from; instance in FAULT",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsL"})
			vs, ka := topo.Hosts[0], topo.Hosts[1]
			vip := tc.vip.Addr()
			conf := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 65, VIP: tc.vip}
			if out, err := vs.Run("ip", "addr", "del", tc.del(vs).String(), "dev", vs.Link); err != nil {
				t.Fatalf("deleting the address before the start: %v: %s", err, out)
			}
			low := conf
			low.Priority = 90
			text, err := low.Render(ka.Name)
			if err != nil {
				t.Fatal(err)
			}
			startText(t, ka, peers.Keepalived, text)
			high := conf
			high.Priority = 100
			n := startVipstack(t, bin, vs, high)
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, ka, 500*time.Millisecond, 20*time.Second); err != nil {
				t.Fatalf("vipstack has no address to send from: keepalived must hold the VIP alone: %v", err)
			}
			if !strings.Contains(n.Log(), tc.reason) {
				t.Errorf("vipstack's log must say why the instance is in FAULT (%q)", tc.reason)
			}
			args := append([]string{"addr", "add"}, tc.add[0], "dev", vs.Link)
			if out, err := vs.Run("ip", append(args, tc.add[1:]...)...); err != nil {
				t.Fatalf("adding an address: %v: %s", err, out)
			}
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, vs, 500*time.Millisecond, 20*time.Second); err != nil {
				t.Fatalf("the interface has an address now: the higher node must hold the VIP alone: %v", err)
			}
			if !strings.Contains(n.Log(), "advertisements now come from it") {
				t.Errorf("vipstack's log must say it sends from the new address")
			}
			if strings.Contains(n.Log(), "engine died") {
				t.Errorf("the engine must wait in FAULT, not exit and be restarted by its supervisor")
			}
		})
	}
}

// linkLocal returns the link-local address of h's interface, or fails.
func linkLocal(t *testing.T, h *testnet.Host) netip.Prefix {
	t.Helper()
	out, err := h.Run("ip", "-6", "-o", "addr", "show", "dev", h.Link, "scope", "link")
	if err != nil {
		t.Fatalf("ip addr: %v: %s", err, out)
	}
	for _, f := range strings.Fields(out) {
		if p, err := netip.ParsePrefix(f); err == nil && p.Addr().IsLinkLocalUnicast() {
			return p
		}
	}
	t.Fatalf("no link-local address on %s: %s", h.Link, out)
	return netip.Prefix{}
}

// TestInterfaceLosesItsLinkLocal: the IPv6 link-local address a master
// sends its VRRPv3 adverts from is deleted, then another one is assigned.
// keepalived 2.2.7, measured alone in a namespace (2026-11-24): "Deassigned
// address fe80::...", FAULT at once ("send advert error 22"), priority 0
// sent, VIPs removed; "Assigned address fe80::5": BACKUP at once, MASTER
// after Master_Down_Interval. Here the keepalived backup must hold the VIP
// alone while vipstack has no link-local address, and vipstack (priority
// 100 over 90) takes it back once it has a new one, sending from it.
// Bounded: each step waited for at most 10 s.
func TestInterfaceLosesItsLinkLocal(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsL"})
	vs, ka := topo.Hosts[0], topo.Hosts[1]
	vip := netip.MustParseAddr("fd00:bb::100")
	conf := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 66, VIP: netip.PrefixFrom(vip, 128)}
	n := startOverKeepalived(t, bin, topo.Hosts, vs, ka, conf)

	ll := linkLocal(t, vs)
	if out, err := vs.Run("ip", "addr", "del", ll.String(), "dev", vs.Link); err != nil {
		t.Fatalf("deleting the master's link-local address: %v: %s", err, out)
	}
	if _, err := peers.WaitSoleHolder(topo.Hosts, vip, ka, 500*time.Millisecond, 10*time.Second); err != nil {
		t.Fatalf("the master has no link-local address: the backup must hold the VIP alone: %v", err)
	}
	if !strings.Contains(n.Log(), "no IPv6 link-local address left to send from") {
		t.Errorf("vipstack's log must say why it is in FAULT")
	}
	if out, err := vs.Run("ip", "addr", "add", "fe80::5/64", "dev", vs.Link, "nodad"); err != nil {
		t.Fatalf("adding another link-local address: %v: %s", err, out)
	}
	if _, err := peers.WaitSoleHolder(topo.Hosts, vip, vs, 500*time.Millisecond, 10*time.Second); err != nil {
		t.Fatalf("the interface has a link-local address again: the higher node must hold the VIP alone: %v", err)
	}
	if !strings.Contains(n.Log(), "advertisements now come from it") {
		t.Errorf("vipstack's log must say it sends from the new address")
	}
}
