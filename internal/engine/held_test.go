package engine

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/netif"
)

// refOf is the vipRef of a VIP configured as v.
func refOf(v netif.VIP) vipRef {
	kv := keepalived.MakeVIP(v.Prefix, keepalived.VIPOptions{Dev: v.Dev, Label: v.Label, Scope: v.Scope, Broadcast: v.Broadcast, NoPrefixRoute: v.NoPrefixRoute})
	return vipRef{VIP: &kv, Dev: v.Dev}
}

// TestHeldOf: the held list follows the engine's held set, and while it
// does not change, computing it again (after every turn of the loop, over
// every VIP) allocates nothing.
func TestHeldOf(t *testing.T) {
	in := &instance{}
	for i := range 2000 {
		v := netif.VIP{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(16 + i/250), byte(1 + i%250)}), 32), Dev: "eth0"}
		in.vips = append(in.vips, refOf(v))
		in.vipText = append(in.vipText, v.Prefix.String())
	}
	in.vips = append(in.vips, refOf(netif.VIP{Prefix: netip.MustParsePrefix("fd00::5/128"), Dev: "eth1"}))
	in.vipText = append(in.vipText, "fd00::5/128")
	e := &Engine{}
	if got := e.heldOf(in); got != nil {
		t.Fatalf("nothing held: heldOf = %v, want nil", got)
	}
	for _, i := range []int{3, 1999, 2000} {
		v := in.vips[i]
		e.held.put(&v)
	}
	want := []string{"198.18.16.4/32", "198.18.23.250/32", "fd00::5/128"}
	if diff := cmp.Diff(want, e.heldOf(in)); diff != "" {
		t.Fatalf("heldOf (-want +got):\n%s", diff)
	}
	if allocs := testing.AllocsPerRun(20, func() { e.heldOf(in) }); allocs != 0 {
		t.Errorf("heldOf with nothing changed: %v allocations, want 0", allocs)
	}
	e.held.remove(in.vips[1999].Prefix, "eth0")
	if diff := cmp.Diff([]string{"198.18.16.4/32", "fd00::5/128"}, e.heldOf(in)); diff != "" {
		t.Errorf("heldOf after a release (-want +got):\n%s", diff)
	}
	// All held, as a master holds them: the list of every VIP's text
	// itself, no copy.
	for i := range in.vips {
		e.held.put(&in.vips[i])
	}
	if all := e.heldOf(in); len(all) != len(in.vipText) || &all[0] != &in.vipText[0] {
		t.Errorf("all %d held: heldOf returned %d texts, not the instance's list", len(in.vipText), len(all))
	}
	// The key addrKey builds and the one looked up are the same.
	for _, p := range []netip.Prefix{netip.MustParsePrefix("198.18.0.5/24"), netip.MustParsePrefix("::ffff:198.18.0.5/128"), {}} {
		if got, want := string(appendAddrKey(nil, p, "eth0")), fmt.Sprint(p.String(), "%eth0"); got != want {
			t.Errorf("appendAddrKey(%v) = %q, want %q", p, got, want)
		}
	}
}
