package engine

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
)

// heldSet is the VIPs this node holds for its instances: for each address
// (with its prefix length) and interface, the VIP of the instance that
// took it last. It is a list sorted by address, then interface, searched
// by halves: a map keyed by the text "address/length%interface" took, at
// 10,000 VIPs, 0.43 MB of tables beside the key texts each takeover made
// for it, for the engine's life; the list held 0.7 MiB less anonymous
// memory at bench/scale's 1,000 instances (docs/design/memory.md). An instance taking over adds
// its VIPs one by one, each moving the entries after it: at bench/scale's
// 1,000 instances of 10 VIPs, at most 10,000 pointers moved per VIP.
type heldSet struct {
	refs []*vipRef // sorted by compareHeld
}

// compareHeld orders r against the address p on the interface dev: by
// address, prefix length, then interface (equal exactly when addrKey's
// texts are).
func compareHeld(r *vipRef, p netip.Prefix, dev string) int {
	if c := r.Prefix.Addr().Compare(p.Addr()); c != 0 {
		return c
	}
	if c := cmp.Compare(r.Prefix.Bits(), p.Bits()); c != 0 {
		return c
	}
	return strings.Compare(r.Dev, dev)
}

// search returns where p on dev is in the list, or would be.
func (h *heldSet) search(p netip.Prefix, dev string) (int, bool) {
	return slices.BinarySearchFunc(h.refs, p, func(r *vipRef, p netip.Prefix) int { return compareHeld(r, p, dev) })
}

// get returns the VIP held as p on dev, or nil.
func (h *heldSet) get(p netip.Prefix, dev string) *vipRef {
	if i, ok := h.search(p, dev); ok {
		return h.refs[i]
	}
	return nil
}

// has reports whether p is held on dev.
func (h *heldSet) has(p netip.Prefix, dev string) bool {
	_, ok := h.search(p, dev)
	return ok
}

// put records r as held, in place of the VIP of the same address and
// interface if one was.
func (h *heldSet) put(r *vipRef) {
	i, ok := h.search(r.Prefix, r.Dev)
	if ok {
		h.refs[i] = r
		return
	}
	h.refs = slices.Insert(h.refs, i, r)
}

// remove forgets p on dev, if held.
func (h *heldSet) remove(p netip.Prefix, dev string) {
	if i, ok := h.search(p, dev); ok {
		h.refs = slices.Delete(h.refs, i, i+1)
	}
}

// keep forgets every VIP for which f returns false, in order.
func (h *heldSet) keep(f func(r *vipRef) bool) {
	h.refs = slices.DeleteFunc(h.refs, func(r *vipRef) bool { return !f(r) })
}

// len is how many VIPs are held.
func (h *heldSet) len() int { return len(h.refs) }
