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

func TestMerge(t *testing.T) {
	a := netip.MustParseAddr
	tests := []struct {
		name  string
		lists [][]Node
		want  []Node
	}{
		{
			name:  "union of addresses, first non-empty role",
			lists: [][]Node{{{Name: "m0", Addrs: []netip.Addr{a("fd00::11")}}}, {{Name: "m0", Role: Master, Addrs: []netip.Addr{a("198.18.0.11"), a("fd00::11")}}}},
			want:  []Node{{Name: "m0", Role: Master, Addrs: []netip.Addr{a("198.18.0.11"), a("fd00::11")}}},
		},
		{
			// A host name is case-insensitive: an mDNS peer that spells
			// its name in capitals is the node of the cluster file, not a
			// second node that clusterdns would have to drop.
			name:  "names match case-insensitively, the first spelling wins",
			lists: [][]Node{{{Name: "master-0", Role: Master, Addrs: []netip.Addr{a("198.18.0.11")}}}, {{Name: "Master-0", Role: Worker, Addrs: []netip.Addr{a("fd00::11")}}}},
			want:  []Node{{Name: "master-0", Role: Master, Addrs: []netip.Addr{a("198.18.0.11"), a("fd00::11")}}},
		},
		{
			// One source that knows the node runs (mDNS answers) outweighs
			// one that says it does not (a Node whose kubelet is down).
			name: "not ready only if every list says so",
			lists: [][]Node{
				{{Name: "m0", Role: Master, NotReady: true}, {Name: "m1", Role: Master, NotReady: true}},
				{{Name: "m0", Role: Master}},
			},
			want: []Node{{Name: "m0", Role: Master}, {Name: "m1", Role: Master, NotReady: true}},
		},
		{name: "nothing", want: []Node{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Merge(tt.lists...)
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(x, y netip.Addr) bool { return x == y })); diff != "" {
				t.Errorf("Merge (-want +got):\n%s", diff)
			}
		})
	}
}
