package lb

import (
	"net/netip"
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestConsistentHash: with hash-type consistent, a server going DOWN
// moves only its own clients, and they come back when it does; with
// map-based hashing most clients move.
func TestConsistentHash(t *testing.T) {
	clients := make([]netip.Addr, 1000)
	for i := range clients {
		clients[i] = netip.AddrFrom4([4]byte{198, 18, byte(i / 250), byte(i % 250)})
	}
	moved := func(hashType string) (moved, ofDown, back int) {
		p := testPool(lbconfig.Source, 1, 1, 1, 1)
		b := lbconfig.Backend{HashType: hashType}
		for _, s := range p.servers {
			b.Servers = append(b.Servers, lbconfig.Server{Name: s.name, Weight: 1})
		}
		p.ring = newRing(b)
		first := map[netip.Addr]string{}
		for _, c := range clients {
			first[c] = picks(p, 1, c, 0)
		}
		p.servers[1].up.Store(false)
		for _, c := range clients {
			got := picks(p, 1, c, 0)
			switch {
			case got == "b" || got == "-":
				t.Fatalf("%s: client %v picked %q with b DOWN", hashType, c, got)
			case first[c] == "b":
				ofDown++
			case got != first[c]:
				moved++
			}
		}
		p.servers[1].up.Store(true)
		for _, c := range clients {
			if picks(p, 1, c, 0) == first[c] {
				back++
			}
		}
		return moved, ofDown, back
	}
	if m, down, back := moved("consistent"); m != 0 || down < 150 || back != len(clients) {
		t.Errorf("consistent: %d clients of UP servers moved (want 0), %d of the DOWN one (want a share), %d back (want all)", m, down, back)
	}
	if m, _, _ := moved("map-based"); m < 300 {
		t.Errorf("map-based: only %d clients of UP servers moved: the test does not tell the two apart", m)
	}
}
