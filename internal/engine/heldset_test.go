package engine

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/vipstack/vipstack/internal/netif"
)

// TestHeldSet runs a heldSet against a map keyed by addrKey (what the
// engine kept before) through random puts and removes of VIPs that share
// addresses across interfaces, prefix lengths and families, and two
// instances' copies of each: after each step both hold the same VIPs,
// each the pointer put last, and the set stays in order.
func TestHeldSet(t *testing.T) {
	var vips []vipRef
	for _, a := range []string{"198.18.0.1", "198.18.0.2", "198.18.1.1", "fd00::1", "fd00::2", "::ffff:198.18.0.1"} {
		addr := netip.MustParseAddr(a)
		for _, bits := range []int{addr.BitLen(), 24} {
			for _, dev := range []string{"eth0", "eth1", ""} {
				v := netif.VIP{Prefix: netip.PrefixFrom(addr, bits), Dev: dev}
				vips = append(vips, refOf(v), refOf(v)) // two instances' copies
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var h heldSet
	want := map[string]*vipRef{}
	for step := range 5000 {
		r := &vips[rng.IntN(len(vips))]
		k := addrKey(r.Prefix, r.Dev)
		switch rng.IntN(3) {
		case 0, 1:
			h.put(r)
			want[k] = r
		case 2:
			h.remove(r.Prefix, r.Dev)
			delete(want, k)
		}
		if h.len() != len(want) {
			t.Fatalf("step %d: %d held, want %d", step, h.len(), len(want))
		}
		for k, r := range want {
			if got := h.get(r.Prefix, r.Dev); got != r {
				t.Fatalf("step %d: get(%s) = %p, want %p", step, k, got, r)
			}
		}
		if !slices.IsSortedFunc(h.refs, func(a, b *vipRef) int { return compareHeld(a, b.Prefix, b.Dev) }) {
			t.Fatalf("step %d: not in order", step)
		}
	}
	for i := range vips {
		r := &vips[i]
		if _, ok := want[addrKey(r.Prefix, r.Dev)]; !ok && h.has(r.Prefix, r.Dev) {
			t.Errorf("%s on %q held, want not", r.Prefix, r.Dev)
		}
	}
	// keep drops what f refuses and keeps the order.
	n := h.len()
	h.keep(func(r *vipRef) bool { return r.Prefix.Addr().Is4() })
	for _, r := range h.refs {
		if !r.Prefix.Addr().Is4() {
			t.Errorf("keep left %s", r.Prefix)
		}
	}
	if h.len() == 0 || h.len() == n {
		t.Errorf("keep of IPv4 only: %d of %d left; the random steps should leave both families", h.len(), n)
	}
}
