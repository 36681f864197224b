package engine

import (
	"net/netip"
	"testing"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/netif"
)

// TestVIPRoom: the lists build takes are disjoint parts of one array,
// each as long as asked and no longer (an append past it copies instead
// of writing into the next instance's list); none for no VIPs; a list
// past the room is a slice of its own.
func TestVIPRoom(t *testing.T) {
	vip := func(s string) keepalived.VIP { return keepalived.VIP{Prefix: netip.MustParsePrefix(s)} }
	ics := []*keepalived.Instance{
		{Name: "a", VIPs: []keepalived.VIP{vip("198.18.0.1/32"), vip("198.18.0.2/32")}, ExcludedVIPs: []keepalived.VIP{vip("198.18.0.3/32")}},
		{Name: "none"},
		{Name: "b", VIPs: []keepalived.VIP{vip("198.18.0.4/32")}},
	}
	r := roomFor(ics)
	if cap(r.vips) != 4 {
		t.Fatalf("room for %d VIPs, want 4", cap(r.vips))
	}
	av := r.take(3)
	nv := r.take(0)
	bv := r.take(1)
	if nv != nil {
		t.Errorf("an instance without VIPs took %v, want nil", nv)
	}
	for _, c := range []struct {
		name     string
		len, cap int
		want     int
	}{
		{"a's VIPs", len(av), cap(av), 3}, {"b's VIPs", len(bv), cap(bv), 1},
	} {
		if c.len != 0 || c.cap != c.want {
			t.Errorf("%s: len %d cap %d, want 0 and %d", c.name, c.len, c.cap, c.want)
		}
	}
	av = append(av, vipRef{Dev: "a1"}, vipRef{Dev: "a2"}, vipRef{Dev: "a3"})
	bv = append(bv, vipRef{Dev: "b1"})
	if &av[0] != &r.vips[0] || &bv[0] != &r.vips[3] {
		t.Error("the lists are not the parts of the room's array in order")
	}
	grown := append(av, vipRef{Dev: "a4"})
	if bv[0].Dev != "b1" || &grown[0] == &av[0] {
		t.Errorf("an append past a's room wrote into b's list (b's first VIP: %q)", bv[0].Dev)
	}
	if over := r.take(2); cap(over) != 2 || len(r.vips) != 4 {
		t.Errorf("past the room: cap %d and the room's length %d, want a slice of its own (2) and 4", cap(over), len(r.vips))
	}
}

// TestTextParts: prefixTexts says what Prefix.String says for each VIP.
func TestTextParts(t *testing.T) {
	vips := []vipRef{
		refOf(netif.VIP{Prefix: netip.MustParsePrefix("198.18.0.1/32"), Dev: "eth0"}),
		refOf(netif.VIP{Prefix: netip.MustParsePrefix("fd00::5/64"), Dev: "vrrp.7"}),
		refOf(netif.VIP{Prefix: netip.MustParsePrefix("198.18.1.0/24"), Dev: ""}),
	}
	texts := prefixTexts(vips)
	if len(texts) != len(vips) {
		t.Fatalf("%d texts for %d VIPs", len(texts), len(vips))
	}
	for i, v := range vips {
		if texts[i] != v.Prefix.String() {
			t.Errorf("text %d: %q, want %q", i, texts[i], v.Prefix.String())
		}
	}
	if prefixTexts(nil) != nil {
		t.Error("texts of no VIPs: want nil")
	}
}

// TestVIPRefs: an instance's references are its configuration's VIPs,
// then its excluded VIPs, each on its own dev or the instance's; in the
// kernel's form they say what the configuration says. pointAt moves them
// to a new configuration with the same VIPs, so that the one replaced is
// no longer held, and leaves them when the lists differ in length.
func TestVIPRefs(t *testing.T) {
	vip := func(s, dev string) keepalived.VIP {
		return keepalived.MakeVIP(netip.MustParsePrefix(s), keepalived.VIPOptions{Dev: dev, Label: dev, Scope: "link", NoPrefixRoute: true})
	}
	conf := func() *keepalived.Instance {
		return &keepalived.Instance{Name: "a", Interface: "eth0",
			VIPs: []keepalived.VIP{vip("198.18.0.1/32", ""), vip("198.18.0.2/24", "eth1")}, ExcludedVIPs: []keepalived.VIP{vip("fd00::3/128", "")}}
	}
	old := conf()
	in := &instance{cfg: old, vips: appendRefs(nil, old, "vrrp.7")}
	want := []netif.VIP{
		{Prefix: netip.MustParsePrefix("198.18.0.1/32"), Dev: "vrrp.7", Scope: "link", NoPrefixRoute: true},
		{Prefix: netip.MustParsePrefix("198.18.0.2/24"), Dev: "eth1", Label: "eth1", Scope: "link", NoPrefixRoute: true},
		{Prefix: netip.MustParsePrefix("fd00::3/128"), Dev: "vrrp.7", Scope: "link", NoPrefixRoute: true},
	}
	got := netifVIPs(in.vips)
	if len(got) != len(want) {
		t.Fatalf("%d VIPs, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("VIP %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	next := conf()
	in.pointAt(next)
	for i, p := range []*keepalived.VIP{&next.VIPs[0], &next.VIPs[1], &next.ExcludedVIPs[0]} {
		if in.vips[i].VIP != p {
			t.Errorf("after pointAt, reference %d is not the new configuration's VIP", i)
		}
	}
	if got := netifVIPs(in.vips); got[1] != want[1] {
		t.Errorf("after pointAt, VIP 1 reads %+v, want %+v", got[1], want[1])
	}
	shorter := &keepalived.Instance{Name: "a", Interface: "eth0", VIPs: []keepalived.VIP{next.VIPs[0]}}
	in.pointAt(shorter)
	if in.vips[0].VIP != &next.VIPs[0] {
		t.Error("pointAt moved references to a configuration with other VIPs")
	}
}
