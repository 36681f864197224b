package dns

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vipstack/vipstack/internal/discovery"
)

func TestRegistries(t *testing.T) {
	cmpAddr := cmp.Comparer(func(a, b netip.Addr) bool { return a == b })
	m0 := discovery.Node{Name: "master-0", Role: discovery.Master, Addrs: addrs("198.18.0.11")}
	m1 := discovery.Node{Name: "master-1", Role: discovery.Master, Addrs: addrs("198.18.0.12")}
	r := NewRegistries()
	a := r.For("a.example.")
	if r.For("a.example.") != a {
		t.Fatalf("For returned a new registry for the same zone")
	}
	a.Set("static", []discovery.Node{m0})

	steps := []struct {
		name   string
		do     func()
		zone   string
		wantIn []discovery.Node
	}{
		{name: "static stays in its zone", do: func() {}, zone: "b.example.", wantIn: []discovery.Node{}},
		{name: "live source reaches existing zones", do: func() { r.Set("mdns", []discovery.Node{m1}) }, zone: "a.example.", wantIn: []discovery.Node{m0, m1}},
		{name: "and zones created later", do: func() {}, zone: "c.example.", wantIn: []discovery.Node{m1}},
		{name: "a leave reaches every zone", do: func() { r.Set("mdns", nil) }, zone: "c.example.", wantIn: []discovery.Node{}},
		{name: "static untouched by the leave", do: func() {}, zone: "a.example.", wantIn: []discovery.Node{m0}},
	}
	for _, s := range steps {
		s.do()
		got := r.For(s.zone).Nodes()
		if diff := cmp.Diff(s.wantIn, got, cmpAddr, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: %s nodes (-want +got):\n%s", s.name, s.zone, diff)
		}
	}
}
