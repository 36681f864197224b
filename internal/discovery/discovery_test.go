package discovery

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRegistryMergesSources(t *testing.T) {
	a := netip.MustParseAddr
	r := NewRegistry()
	ch := r.Changed()
	r.Set("static", []Node{{Name: "m0", Role: Master, Addrs: []netip.Addr{a("198.18.0.11")}}, {Name: "w0", Role: Worker, Addrs: []netip.Addr{a("198.18.0.21")}}})
	r.Set("mdns", []Node{{Name: "m0", Addrs: []netip.Addr{a("fd00::11"), a("198.18.0.11")}}, {Name: "m1", Role: Master, Addrs: []netip.Addr{a("198.18.0.12")}}})
	select {
	case <-ch:
	default:
		t.Fatal("no change notification")
	}
	want := []Node{
		{Name: "m0", Role: Master, Addrs: []netip.Addr{a("198.18.0.11"), a("fd00::11")}},
		{Name: "m1", Role: Master, Addrs: []netip.Addr{a("198.18.0.12")}},
		{Name: "w0", Role: Worker, Addrs: []netip.Addr{a("198.18.0.21")}},
	}
	if diff := cmp.Diff(want, r.Nodes(), cmp.Comparer(func(x, y netip.Addr) bool { return x == y })); diff != "" {
		t.Fatalf("Nodes (-want +got):\n%s", diff)
	}
	r.Set("mdns", nil)
	if got := len(r.Nodes()); got != 2 {
		t.Fatalf("after mdns forgot its nodes: %d nodes, want 2", got)
	}
	if r.Version() != 3 {
		t.Fatalf("Version = %d, want 3", r.Version())
	}
}
