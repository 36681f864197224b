package ipfailover

import (
	"fmt"
	"math/big"
	"net/netip"
	"strconv"
	"strings"
)

// ExpandVIPs expands the image's VIP list syntax: entries separated by
// commas and/or spaces, each an address or a range. A range is
// START-END where END is either the last IPv4 octet in decimal
// (10.1.1.1-10) or the last IPv6 group in hex (fd00::1f39-1f3b), as the
// image accepts, or a whole address (10.1.1.250-10.1.2.5), which may cross
// octet boundaries. The result keeps the order given; a duplicate, a mixed
// address family, or more than MaxVIPs addresses is an error.
func ExpandVIPs(s string) ([]netip.Addr, error) {
	var out []netip.Addr
	seen := map[netip.Addr]bool{}
	add := func(a netip.Addr, item string) error {
		if err := checkVIP(a); err != nil {
			return fmt.Errorf("%q: %w", item, err)
		}
		if len(out) > 0 && a.Is4() != out[0].Is4() {
			return fmt.Errorf("%q: mixes IPv4 and IPv6 (one pool holds one address family; run one pool per family)", item)
		}
		if seen[a] {
			return fmt.Errorf("%q: %s is listed twice", item, a)
		}
		if len(out) == MaxVIPs {
			return fmt.Errorf("more than %d VIPs", MaxVIPs)
		}
		seen[a] = true
		out = append(out, a)
		return nil
	}
	items := strings.FieldsFunc(s, listSep)
	if len(items) == 0 {
		return nil, fmt.Errorf("no VIPs (want addresses or ranges like 10.1.1.1-10)")
	}
	for i, item := range items {
		// The image separates entries with spaces too, so "A - B" is three
		// entries; say so rather than that "-" is not an address.
		if strings.HasPrefix(item, "-") || (strings.HasSuffix(item, "-") && i+1 < len(items)) {
			return nil, fmt.Errorf("%q: spaces around '-' split a range into entries (commas and spaces both separate VIPs); write a range without spaces, e.g. 10.1.1.1-10", item)
		}
		startText, endText, isRange := strings.Cut(item, "-")
		start, err := netip.ParseAddr(startText)
		if err != nil || start.Zone() != "" {
			return nil, fmt.Errorf("%q: %q is not an IPv4 or IPv6 address (want A, A-LAST or A-B, e.g. 10.1.1.1-10; prefix lengths are not accepted: VIPs are /32 or /128)", item, startText)
		}
		if !isRange {
			if err := add(start, item); err != nil {
				return nil, err
			}
			continue
		}
		end, err := rangeEnd(start, endText)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		if end.Less(start) {
			return nil, fmt.Errorf("%q: the range ends (%s) before it starts (%s)", item, end, start)
		}
		if n := span(start, end); n.Cmp(big.NewInt(MaxVIPs)) > 0 {
			return nil, fmt.Errorf("%q: %s addresses, more than %d VIPs", item, n, MaxVIPs)
		}
		for a := start; ; a = a.Next() {
			if err := add(a, item); err != nil {
				return nil, err
			}
			if a == end {
				break
			}
		}
	}
	return out, nil
}

// rangeEnd reads the END of START-END.
func rangeEnd(start netip.Addr, s string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Is4() != start.Is4() || a.Zone() != "" {
			return netip.Addr{}, fmt.Errorf("the range end %s is not of the start's address family", s)
		}
		return a, nil
	}
	if start.Is4() {
		n, err := strconv.ParseUint(s, 10, 8)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("range end %q: want the last octet (0..255) or a whole IPv4 address", s)
		}
		b := start.As4()
		b[3] = byte(n)
		return netip.AddrFrom4(b), nil
	}
	n, err := strconv.ParseUint(s, 16, 16)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("range end %q: want the last group in hex (0..ffff) or a whole IPv6 address", s)
	}
	b := start.As16()
	b[14], b[15] = byte(n>>8), byte(n)
	return netip.AddrFrom16(b), nil
}

// span returns how many addresses start..end holds.
func span(start, end netip.Addr) *big.Int {
	s := new(big.Int).SetBytes(start.AsSlice())
	e := new(big.Int).SetBytes(end.AsSlice())
	return e.Sub(e, s).Add(e, big.NewInt(1))
}

func checkVIP(a netip.Addr) error {
	switch {
	case a.Is4In6():
		return fmt.Errorf("%s: IPv4-mapped IPv6 addresses are not accepted (write the IPv4 address)", a)
	case a.IsUnspecified(), a.IsMulticast(), a.IsLoopback(), a.IsLinkLocalUnicast(), a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return fmt.Errorf("%s: not a unicast address a VIP can be (unspecified, multicast, loopback, link-local and broadcast are refused)", a)
	}
	return nil
}
