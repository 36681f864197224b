package main

import (
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestMixedImpl: without -frr keepalived and vipstack alternate (as
// before FRR joined); with it keepalived, vipstack and FRR take turns,
// and only keepalived is AdvertFirst.
func TestMixedImpl(t *testing.T) {
	K, V, F := peers.Keepalived, peers.Vipstack, peers.FRR
	tests := []struct {
		name  string
		frr   bool
		nodes int
		want  []peers.Impl
	}{
		{name: "keepalived and vipstack", nodes: 5, want: []peers.Impl{K, V, K, V, K}},
		{name: "with FRR, 5 nodes", frr: true, nodes: 5, want: []peers.Impl{K, V, F, K, V}},
		{name: "with FRR, 6 nodes", frr: true, nodes: 6, want: []peers.Impl{K, V, F, K, V, F}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []peers.Impl
			for i := range tt.nodes {
				got = append(got, mixedImpl(i, tt.frr))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("implementations (-want +got):\n%s", diff)
			}
		})
	}
	for impl, want := range map[peers.Impl]bool{K: true, V: false, F: false} {
		if got := advertsFirst(impl); got != want {
			t.Errorf("advertsFirst(%s) = %v, want %v", impl, got, want)
		}
	}
}

// TestFRRRoutersOfNode: an FRR node joins every group of the run at the
// priorities the other implementations get for its index; VRRPv2 at whole
// seconds whatever -advert is, and every router renders for FRR.
func TestFRRRoutersOfNode(t *testing.T) {
	tests := []struct {
		name   string
		advert time.Duration
		nodes  int
		node   int
		want   []peers.FRRConf
	}{
		{name: "third of 5 at 100ms", advert: 100 * time.Millisecond, nodes: 5, node: 2, want: []peers.FRRConf{
			{Version: 2, Interval: time.Second, VRID: 51, Priority: 154, Interface: "eth0", VIPs: []netip.Addr{netip.MustParseAddr("198.18.0.100")}},
			{Version: 3, Interval: 100 * time.Millisecond, VRID: 52, Priority: 202, Interface: "eth0", VIPs: []netip.Addr{netip.MustParseAddr("198.18.0.101")}},
			{Version: 3, Interval: 100 * time.Millisecond, VRID: 53, Priority: 250, Interface: "eth0", VIPs: []netip.Addr{netip.MustParseAddr("fd00:bb::100")}},
		}},
		{name: "sixth of 6 at 2.5s", advert: 2500 * time.Millisecond, nodes: 6, node: 5, want: []peers.FRRConf{
			{Version: 2, Interval: 3 * time.Second, VRID: 51, Priority: 50, Interface: "eth0", VIPs: []netip.Addr{netip.MustParseAddr("198.18.0.100")}},
			{Version: 3, Interval: 2500 * time.Millisecond, VRID: 52, Priority: 90, Interface: "eth0", VIPs: []netip.Addr{netip.MustParseAddr("198.18.0.101")}},
			{Version: 3, Interval: 2500 * time.Millisecond, VRID: 53, Priority: 130, Interface: "eth0", VIPs: []netip.Addr{netip.MustParseAddr("fd00:bb::100")}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &mixedMode{o: options{Advert: tt.advert}, topo: &testnet.Topology{}}
			for range tt.nodes {
				h := &testnet.Host{Link: "eth0"}
				m.topo.Hosts = append(m.topo.Hosts, h)
				m.nodes = append(m.nodes, &mixedNode{host: h})
			}
			got := m.frrRouters(tt.node)
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("routers (-want +got):\n%s", diff)
			}
			if _, err := peers.RenderFRRRouters(got); err != nil {
				t.Errorf("FRR would refuse them: %v", err)
			}
		})
	}
}

// TestFRRHeld: a VIP is held on an FRR node only while its macvlan is up
// with a carrier (vrrpd's protodown, or a downed parent, takes the
// carrier); addresses on other links or not VIPs do not count.
func TestFRRHeld(t *testing.T) {
	const up, running = unix.IFF_UP, unix.IFF_RUNNING
	link := func(idx int, name string, flags uint32) netlink.Link {
		return &netlink.Macvlan{LinkAttrs: netlink.LinkAttrs{Index: idx, Name: name, RawFlags: flags}}
	}
	addr := func(idx int, s string) netlink.Addr {
		p := netip.MustParsePrefix(s)
		return netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}, LinkIndex: idx}
	}
	v4, v4b, v6 := netip.MustParseAddr("198.18.0.100"), netip.MustParseAddr("198.18.0.101"), netip.MustParseAddr("fd00:bb::100")
	vips := []netip.Addr{v4, v4b, v6}
	macvlans := []string{"vrrp4-51", "vrrp4-52", "vrrp6-53"}
	addrs := []netlink.Addr{addr(1, "198.18.0.13/24"), addr(2, "198.18.0.100/32"), addr(3, "198.18.0.101/32"), addr(4, "fd00:bb::100/128")}
	tests := []struct {
		name  string
		links []netlink.Link
		want  []netip.Addr
	}{
		{name: "backup everywhere: protodown", links: []netlink.Link{link(1, "eth0", up|running), link(2, "vrrp4-51", up), link(3, "vrrp4-52", up), link(4, "vrrp6-53", up)}},
		{name: "master of two", links: []netlink.Link{link(1, "eth0", up|running), link(2, "vrrp4-51", up|running), link(3, "vrrp4-52", up), link(4, "vrrp6-53", up|running)},
			want: []netip.Addr{v4, v6}},
		{name: "macvlan set down", links: []netlink.Link{link(2, "vrrp4-51", running), link(3, "vrrp4-52", up|running)}, want: []netip.Addr{v4b}},
		{name: "a VIP on another running link", links: []netlink.Link{link(2, "other", up|running)}},
		{name: "parent's own address", links: []netlink.Link{link(1, "vrrp4-51", up|running)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := frrHeld(tt.links, addrs, macvlans, vips)
			slices.SortFunc(got, netip.Addr.Compare)
			if !slices.Equal(got, tt.want) {
				t.Errorf("frrHeld = %v, want %v", got, tt.want)
			}
		})
	}
}
