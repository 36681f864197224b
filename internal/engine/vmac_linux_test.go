package engine_test

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// vmacState is what `ip -d link` and `ip addr` say about a VMAC
// interface on h: whether it exists, its MAC and kind, its addresses.
type vmacState struct {
	exists bool
	mac    string
	detail string
	addrs  string
}

func vmacOn(t *testing.T, h *testnet.Host, dev string) vmacState {
	t.Helper()
	out, err := exec.Command("ip", "-n", h.Name, "-d", "-o", "link", "show", "dev", dev).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "does not exist") {
			return vmacState{}
		}
		t.Fatalf("ip link show %s on %s: %v: %s", dev, h.Name, err, out)
	}
	s := vmacState{exists: true, detail: string(out)}
	f := strings.Fields(string(out))
	for i, w := range f {
		if w == "link/ether" && i+1 < len(f) {
			s.mac = f[i+1]
		}
	}
	a, _ := exec.Command("ip", "-n", h.Name, "-o", "addr", "show", "dev", dev).CombinedOutput()
	s.addrs = string(a)
	return s
}

// waitVMACHolder waits until exactly the hosts want[i] have vip on their
// VMAC interface dev, stable for a second.
func waitVMACHolder(t *testing.T, hs []*testnet.Host, dev string, vip netip.Addr, want []bool, why string) {
	t.Helper()
	var since time.Time
	var got []bool
	for start := time.Now(); time.Since(start) < 30*time.Second; time.Sleep(50 * time.Millisecond) { // polls the kernel, bounded
		got = got[:0]
		for _, h := range hs {
			got = append(got, strings.Contains(vmacOn(t, h, dev).addrs, " "+vip.String()+"/"))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			since = time.Time{}
			continue
		}
		if since.IsZero() {
			since = time.Now()
		}
		if time.Since(since) >= time.Second {
			t.Logf("%s: VIP on %s of %v", why, dev, want)
			return
		}
	}
	t.Fatalf("%s: VIP %s on %s of the hosts is %v, want %v", why, vip, dev, got, want)
}

// clientMAC pings vip from the client and returns the MAC address its
// neighbour entry has for it, learnt from the ARP reply. The client first
// pings every host's own address, so that the master answers the ping to
// the VIP without an ARP request of its own: that one would go out of
// eth0 with the VIP as sender (arp_announce 0) and point the client's
// entry at eth0's MAC, with keepalived as with vipstack.
func clientMAC(t *testing.T, c *testnet.Host, hosts []*testnet.Host, vip netip.Addr) string {
	t.Helper()
	for _, h := range hosts {
		if out, err := c.Run("ping", "-c", "1", "-W", "2", h.IPv4.Addr().String()); err != nil {
			t.Fatalf("ping %s from the client: %v: %s", h.Name, err, out)
		}
	}
	if out, err := c.Run("ip", "neigh", "flush", "to", vip.String(), "dev", c.Link); err != nil {
		t.Fatalf("flush neighbours: %v: %s", err, out)
	}
	if out, err := c.Run("ping", "-c", "1", "-W", "2", vip.String()); err != nil {
		t.Fatalf("ping %s from the client: %v: %s", vip, err, out)
	}
	out, err := c.Run("ip", "neigh", "show", vip.String(), "dev", c.Link)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(out)
	for i, w := range f {
		if w == "lladdr" && i+1 < len(f) {
			return f[i+1]
		}
	}
	t.Fatalf("no neighbour entry for %s on the client: %q", vip, out)
	return ""
}

// TestVMACWithKeepalived: use_vmac on a vipstack node and a keepalived
// 2.2.7 node. Each creates vrrp.51, a private macvlan with MAC
// 00:00:5e:00:01:33 on eth0, holds the VIP on it while master, and a
// client's neighbour entry for the VIP is that MAC whoever is master; the
// VIP moves to keepalived when vipstack stops, vipstack's vrrp.51 going
// with it, and back when vipstack starts again. The engine's VMAC decisions (the ledger, the sweep after a crash,
// a reload that drops use_vmac) are TestVMACLifecycle's, on the segment.
func TestVMACWithKeepalived(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Client: true, Prefix: "vkav"})
	vs, ka := topo.Hosts[0], topo.Hosts[1]
	const dev, mac = "vrrp.51", "00:00:5e:00:01:33"
	vip := netip.MustParseAddr("198.18.0.100")
	hs := []*testnet.Host{vs, ka}
	conf := func(h *testnet.Host, prio int, lines ...string) string {
		c := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 51, Priority: prio, VIP: netip.PrefixFrom(vip, 32)}
		return withLines(t, c, h, lines...)
	}
	n := startText(t, vs, peers.Vipstack, conf(vs, 150, "use_vmac"))
	startText(t, ka, peers.Keepalived, conf(ka, 100, "use_vmac"))

	waitVMACHolder(t, hs, dev, vip, []bool{true, false}, "vipstack master")
	for _, h := range hs {
		s := vmacOn(t, h, dev)
		if !s.exists || s.mac != mac || !strings.Contains(s.detail, "macvlan mode private") {
			t.Errorf("%s: %s is %+v, want a private macvlan with MAC %s", h.Name, dev, s, mac)
		}
	}
	if held, _ := vs.HasAddr(vip); held {
		t.Error("vipstack put the VIP on eth0 as well as on the VMAC")
	}
	if got := clientMAC(t, topo.Client, hs, vip); got != mac {
		t.Errorf("vipstack master: the client reaches the VIP at %s, want the VMAC %s", got, mac)
	}

	if err := n.Term(); err != nil {
		t.Fatal(err)
	}
	waitVMACHolder(t, hs, dev, vip, []bool{false, true}, "keepalived master after vipstack stopped")
	if s := vmacOn(t, vs, dev); s.exists {
		t.Errorf("vipstack stopped but left %s: %s", dev, s.detail)
	}
	if got := clientMAC(t, topo.Client, hs, vip); got != mac {
		t.Errorf("keepalived master: the client reaches the VIP at %s, want the VMAC %s", got, mac)
	}
	startText(t, vs, peers.Vipstack, conf(vs, 150, "use_vmac"))
	waitVMACHolder(t, hs, dev, vip, []bool{true, false}, "vipstack preempts back")
}

// TestVMACXmitBase: without vmac_xmit_base, vipstack's adverts leave from
// the VMAC (source MAC 00:00:5e:00:01:VRID), as keepalived's do; with it,
// from eth0's own MAC.
func TestVMACXmitBase(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vkax"})
	src, listener := topo.Hosts[0], topo.Hosts[1]
	vip := netip.MustParseAddr("198.18.0.100")
	for i, tc := range []struct {
		impl    peers.Impl
		lines   []string
		wantMAC string
	}{
		{peers.Keepalived, []string{"use_vmac"}, "00:00:5e:00:01:34"},
		{peers.Vipstack, []string{"use_vmac"}, "00:00:5e:00:01:35"},
		{peers.Keepalived, []string{"use_vmac", "vmac_xmit_base"}, src.MAC},
		{peers.Vipstack, []string{"use_vmac", "vmac_xmit_base"}, src.MAC},
	} {
		vrid := 52 + i
		t.Run(fmt.Sprintf("%s-%s", tc.impl, strings.Join(tc.lines, "-")), func(t *testing.T) {
			dump := startTcpdump(t, listener, "timeout", "30", "tcpdump", "-i", listener.Link, "-e", "-n", "-l", "-c", "1",
				fmt.Sprintf("ip proto 112 and ip[21] == %d", vrid))
			c := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: vrid, Priority: 100, VIP: netip.PrefixFrom(vip, 32)}
			n := startText(t, src, tc.impl, withLines(t, c, src, tc.lines...))
			b := make([]byte, 4096)
			nr, _ := dump.Read(b)
			line := string(b[:nr])
			if f := strings.Fields(line); len(f) < 2 || f[1] != tc.wantMAC {
				t.Errorf("advert %q: source MAC is not %s", line, tc.wantMAC)
			}
			if err := n.Term(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestVMACIPv6WithKeepalived: an IPv6 instance with use_vmac gets
// 00:00:5e:00:02:VRID, adverts from it with the parent's link-local
// address copied onto it, in vipstack as in keepalived 2.2.7: each hears
// the other (one master), the VIP moves on SIGTERM, and a client reaches
// the VIP at the VMAC whoever holds it.
func TestVMACIPv6WithKeepalived(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Client: true, Prefix: "vka6"})
	vs, ka := topo.Hosts[0], topo.Hosts[1]
	const dev, mac = "vrrp.51", "00:00:5e:00:02:33"
	vip := netip.MustParseAddr("fd00:bb::100")
	hs := []*testnet.Host{vs, ka}
	conf := func(h *testnet.Host, prio int) string {
		c := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 51, Priority: prio, VIP: netip.PrefixFrom(vip, 128)}
		return withLines(t, c, h, "use_vmac")
	}
	n := startText(t, vs, peers.Vipstack, conf(vs, 150))
	startText(t, ka, peers.Keepalived, conf(ka, 100))
	waitVMACHolder(t, hs, dev, vip, []bool{true, false}, "vipstack master")
	for _, h := range hs {
		s := vmacOn(t, h, dev)
		if !s.exists || s.mac != mac || !strings.Contains(s.addrs, h.LinkLocal.String()) {
			t.Errorf("%s: %s is %+v, want MAC %s and the parent's link-local %s", h.Name, dev, s, mac, h.LinkLocal)
		}
	}
	neigh := func() string {
		t.Helper()
		c := topo.Client
		if out, err := c.Run("ip", "-6", "neigh", "flush", "to", vip.String(), "dev", c.Link); err != nil {
			t.Fatalf("flush: %v: %s", err, out)
		}
		if out, err := c.Run("ping", "-6", "-c", "1", "-W", "2", vip.String()); err != nil {
			t.Fatalf("ping %s: %v: %s", vip, err, out)
		}
		out, _ := c.Run("ip", "-6", "neigh", "show", vip.String(), "dev", c.Link)
		f := strings.Fields(out)
		for i, w := range f {
			if w == "lladdr" && i+1 < len(f) {
				return f[i+1]
			}
		}
		return out
	}
	if got := neigh(); got != mac {
		t.Errorf("vipstack master: the client reaches %s at %s, want %s", vip, got, mac)
	}
	if err := n.Term(); err != nil {
		t.Fatal(err)
	}
	waitVMACHolder(t, hs, dev, vip, []bool{false, true}, "keepalived master after vipstack stopped")
	if s := vmacOn(t, vs, dev); s.exists {
		t.Errorf("vipstack stopped but left %s", dev)
	}
	if got := neigh(); got != mac {
		t.Errorf("keepalived master: the client reaches %s at %s, want %s", vip, got, mac)
	}
}

// TestVMACUnicastWithKeepalived: use_vmac with unicast peers, where
// keepalived and vipstack both send from the base interface (keepalived:
// "unicast with use_vmac requires vmac_xmit_base - setting"): they hear
// each other, the VIP is on the VMAC of the master, and moves on SIGTERM.
func TestVMACUnicastWithKeepalived(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vkaw"})
	vs, ka := topo.Hosts[0], topo.Hosts[1]
	vip := netip.MustParseAddr("198.18.0.100")
	hs := []*testnet.Host{vs, ka}
	conf := func(h, peer *testnet.Host, prio int) string {
		c := peers.Conf{Version: 2, Interval: time.Second, VRID: 51, Priority: prio, Auth: "pw", VIP: netip.PrefixFrom(vip, 32),
			Source: h.IPv4.Addr(), Peers: []netip.Addr{peer.IPv4.Addr()}}
		return withLines(t, c, h, "use_vmac")
	}
	n := startText(t, vs, peers.Vipstack, conf(vs, ka, 150))
	k := startText(t, ka, peers.Keepalived, conf(ka, vs, 100))
	waitVMACHolder(t, hs, "vrrp.51", vip, []bool{true, false}, "vipstack master")
	if err := n.Term(); err != nil {
		t.Fatal(err)
	}
	waitVMACHolder(t, hs, "vrrp.51", vip, []bool{false, true}, "keepalived master after vipstack stopped")
	if !strings.Contains(k.Log(), "unicast with use_vmac requires vmac_xmit_base - setting") {
		t.Log("keepalived did not log that it set vmac_xmit_base")
	}
}
