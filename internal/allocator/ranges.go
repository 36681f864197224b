package allocator

import (
	"fmt"
	"math/big"
	"net/netip"
	"strings"
)

// Range is an inclusive range of addresses of one family.
type Range struct {
	First, Last netip.Addr
}

// ParseRange reads "198.18.0.0/24" (every address of the block),
// "198.18.0.10-198.18.0.20" (both ends included) or a single address.
// Spaces around the dash are allowed.
func ParseRange(s string) (Range, error) {
	s = strings.TrimSpace(s)
	if first, last, ok := strings.Cut(s, "-"); ok {
		a, err1 := netip.ParseAddr(strings.TrimSpace(first))
		b, err2 := netip.ParseAddr(strings.TrimSpace(last))
		if err1 != nil || err2 != nil {
			return Range{}, fmt.Errorf("range %q: want FIRST-LAST with two addresses of one family, e.g. 198.18.0.10-198.18.0.20", s)
		}
		r := Range{First: a, Last: b}
		if err := r.validate(); err != nil {
			return Range{}, fmt.Errorf("range %q: %w", s, err)
		}
		return r, nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		r := Range{First: a, Last: a}
		if err := r.validate(); err != nil {
			return Range{}, fmt.Errorf("range %q: %w", s, err)
		}
		return r, nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return Range{}, fmt.Errorf("range %q: want a CIDR block (198.18.0.0/24, fd00::/120), FIRST-LAST or one address", s)
	}
	if p.Addr().Zone() != "" || p.Addr().Is4In6() {
		return Range{}, fmt.Errorf("range %q: want a plain IPv4 or IPv6 block, without zone or IPv4-mapped form", s)
	}
	if p.Masked() != p {
		return Range{}, fmt.Errorf("range %q: host bits are set; the block is %s", s, p.Masked())
	}
	return Range{First: p.Addr(), Last: lastOf(p)}, nil
}

// MustParseRange is ParseRange for tests and constants; it panics on error.
func MustParseRange(s string) Range {
	r, err := ParseRange(s)
	if err != nil {
		panic(err)
	}
	return r
}

func lastOf(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	bits := p.Bits()
	for i := range b {
		for j := 0; j < 8; j++ {
			if i*8+j >= bits {
				b[i] |= 0x80 >> j
			}
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func (r Range) validate() error {
	switch {
	case !r.First.IsValid() || !r.Last.IsValid():
		return fmt.Errorf("both ends must be addresses")
	case r.First.Zone() != "" || r.Last.Zone() != "" || r.First.Is4In6() || r.Last.Is4In6():
		return fmt.Errorf("want plain addresses, without zone or IPv4-mapped form")
	case r.First.Is4() != r.Last.Is4():
		return fmt.Errorf("%s and %s are of different families", r.First, r.Last)
	case r.Last.Less(r.First):
		return fmt.Errorf("the range ends (%s) before it starts (%s)", r.Last, r.First)
	}
	return nil
}

// Family returns the range's address family.
func (r Range) Family() Family { return FamilyOf(r.First) }

// Contains reports whether a is in the range.
func (r Range) Contains(a netip.Addr) bool {
	return a.Is4() == r.First.Is4() && r.First.Compare(a) <= 0 && a.Compare(r.Last) <= 0
}

// Overlaps reports whether r and s share an address.
func (r Range) Overlaps(s Range) bool {
	return r.First.Is4() == s.First.Is4() && r.First.Compare(s.Last) <= 0 && s.First.Compare(r.Last) <= 0
}

// Size returns the number of addresses, saturating at the largest uint64.
func (r Range) Size() uint64 {
	a := new(big.Int).SetBytes(r.First.AsSlice())
	b := new(big.Int).SetBytes(r.Last.AsSlice())
	n := b.Sub(b, a)
	n.Add(n, big.NewInt(1))
	if !n.IsUint64() {
		return ^uint64(0)
	}
	return n.Uint64()
}

// String returns "first-last", or the CIDR block when the range is one.
func (r Range) String() string {
	if r.First == r.Last {
		return r.First.String()
	}
	bits := r.First.BitLen()
	for l := 0; l <= bits; l++ {
		p := netip.PrefixFrom(r.First, l)
		if p.Masked().Addr() == r.First && lastOf(p) == r.Last {
			return p.String()
		}
	}
	return r.First.String() + "-" + r.Last.String()
}
