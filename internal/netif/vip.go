package netif

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// ErrUnsupported is returned on systems without rtnetlink.
var ErrUnsupported = errors.New("netif: unsupported on this operating system (Linux only)")

// ErrNoLink is returned (wrapped) by Link when no interface has that name.
var ErrNoLink = errors.New("no such interface")

// ErrNoAddress is returned (wrapped) by PrimaryIPv4 and LinkLocalIPv6 when
// the interface has no usable address of that kind (yet).
var ErrNoAddress = errors.New("no usable address")

// maxNameLen is the longest interface name or IPv4 label the kernel accepts
// (IFNAMSIZ 16 minus the terminating NUL).
const maxNameLen = 15

// VIP is one address to hold.
type VIP struct {
	Prefix netip.Prefix // address and length (/32 or /128 typical); the address need not be masked
	Dev    string       // interface name
	// Label is the IPv4 label, e.g. "eth0:vip" ("" = none, the kernel then
	// uses Dev). It must start with Dev, as `ip addr` requires. IPv4 only.
	Label string
	// Scope is "global" (default when ""), "site", "link", "host" or
	// "nowhere". The kernel derives the scope of IPv6 addresses from the
	// address itself and ignores this for them.
	Scope string
	// Broadcast is the IPv4 broadcast address; the zero Addr means none (as
	// with `ip addr add` without `brd`, and keepalived without `brd`).
	Broadcast netip.Addr
	// NoPrefixRoute sets IFA_F_NOPREFIXROUTE: the kernel adds no route for
	// the prefix.
	NoPrefixRoute bool
	// Preferred keeps an IPv6 VIP preferred, so the kernel may choose it as
	// the source of outgoing connections. The default (false) adds it with
	// preferred_lft 0, "deprecated", as keepalived 2.2 does: it still receives
	// traffic and may be used as an explicit source. Ignored for IPv4.
	Preferred bool
}

// scopeValue maps VIP.Scope to the rtnetlink RT_SCOPE_* value.
func scopeValue(s string) (int, bool) {
	switch s {
	case "", "global":
		return 0, true
	case "site":
		return 200, true
	case "link":
		return 253, true
	case "host":
		return 254, true
	case "nowhere":
		return 255, true
	}
	return 0, false
}

// Validate checks v, naming the field, the bad value and what is accepted.
func (v VIP) Validate() error {
	if !v.Prefix.IsValid() {
		return fmt.Errorf("VIP.Prefix %q: not a valid address/length (want e.g. 198.18.0.100/32 or fd00::100/128)", v.Prefix)
	}
	a := v.Prefix.Addr()
	if a.Is4In6() {
		return fmt.Errorf("VIP.Prefix %s: IPv4-mapped IPv6 address not accepted (write the IPv4 address)", v.Prefix)
	}
	if a.IsUnspecified() || a.IsMulticast() {
		return fmt.Errorf("VIP.Prefix %s: unspecified or multicast address not accepted (want a unicast address)", v.Prefix)
	}
	if err := checkName("VIP.Dev", v.Dev); err != nil {
		return err
	}
	if v.Label != "" {
		if !a.Is4() {
			return fmt.Errorf("VIP.Label %q for %s: labels exist for IPv4 addresses only (leave it empty)", v.Label, v.Prefix)
		}
		if err := checkName("VIP.Label", v.Label); err != nil {
			return err
		}
		// Any name: the kernel takes a label that does not start with the
		// interface name (only the ip tool refuses one), and keepalived
		// 2.2.7 adds OpenShift's "label vip" as written (measured).
	}
	if _, ok := scopeValue(v.Scope); !ok {
		return fmt.Errorf("VIP.Scope %q: want global, site, link, host or nowhere", v.Scope)
	}
	if v.Broadcast.IsValid() {
		if !a.Is4() || !v.Broadcast.Is4() {
			return fmt.Errorf("VIP.Broadcast %s for %s: broadcast addresses are IPv4 only, for an IPv4 VIP", v.Broadcast, v.Prefix)
		}
	}
	return nil
}

func checkName(field, s string) error {
	if s == "" {
		return fmt.Errorf("%s is empty: want an interface name such as eth0", field)
	}
	if len(s) > maxNameLen {
		return fmt.Errorf("%s %q: %d bytes, the kernel accepts at most %d", field, s, len(s), maxNameLen)
	}
	if strings.ContainsAny(s, " \t\r\n/") || s == "." || s == ".." {
		return fmt.Errorf("%s %q: contains whitespace or '/', which interface names cannot", field, s)
	}
	return nil
}

// String formats v as one ledger line, in `ip addr` words:
// "198.18.0.100/32 dev eth0 label eth0:vip scope link broadcast 198.18.0.255 noprefixroute preferred".
// Defaults are left out.
func (v VIP) String() string {
	var buf [96]byte
	return string(v.Append(buf[:0]))
}

// Append appends String's text to b.
func (v VIP) Append(b []byte) []byte {
	b = appendPrefixText(b, v.Prefix)
	b = append(b, " dev "...)
	b = append(b, v.Dev...)
	if v.Label != "" {
		b = append(b, " label "...)
		b = append(b, v.Label...)
	}
	if v.Scope != "" && v.Scope != "global" {
		b = append(b, " scope "...)
		b = append(b, v.Scope...)
	}
	if v.Broadcast.IsValid() {
		b = append(b, " broadcast "...)
		b = v.Broadcast.AppendTo(b)
	}
	if v.NoPrefixRoute {
		b = append(b, " noprefixroute"...)
	}
	if v.Preferred {
		b = append(b, " preferred"...)
	}
	return b
}

// appendPrefixText appends p.String() to b.
func appendPrefixText(b []byte, p netip.Prefix) []byte {
	if !p.IsValid() {
		return append(b, p.String()...)
	}
	return p.AppendTo(b)
}

// ParseVIP parses the form String writes and validates the result.
func ParseVIP(s string) (VIP, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return VIP{}, errors.New("empty VIP: want e.g. \"198.18.0.100/32 dev eth0\"")
	}
	p, err := netip.ParsePrefix(f[0])
	if err != nil {
		return VIP{}, fmt.Errorf("address %q: want address/length such as 198.18.0.100/32: %w", f[0], err)
	}
	v := VIP{Prefix: p}
	seen := map[string]bool{}
	for i := 1; i < len(f); i++ {
		w := f[i]
		if seen[w] {
			return VIP{}, fmt.Errorf("word %q given twice", w)
		}
		seen[w] = true
		switch w {
		case "noprefixroute":
			v.NoPrefixRoute = true
			continue
		case "preferred":
			v.Preferred = true
			continue
		case "dev", "label", "scope", "broadcast":
		default:
			return VIP{}, fmt.Errorf("unknown word %q: want dev, label, scope, broadcast, noprefixroute or preferred", w)
		}
		if i+1 >= len(f) {
			return VIP{}, fmt.Errorf("%q needs a value", w)
		}
		i++
		val := f[i]
		switch w {
		case "dev":
			v.Dev = val
		case "label":
			v.Label = val
		case "scope":
			v.Scope = val
		case "broadcast":
			b, err := netip.ParseAddr(val)
			if err != nil {
				return VIP{}, fmt.Errorf("broadcast %q: want an IPv4 address: %w", val, err)
			}
			v.Broadcast = b
		}
	}
	if err := v.Validate(); err != nil {
		return VIP{}, err
	}
	return v, nil
}

// LinkInfo describes one link.
type LinkInfo struct {
	Name  string
	Index int
	// Up is true when the link is administratively up (IFF_UP) and has
	// carrier (IFF_RUNNING), keepalived's test for a usable interface.
	Up  bool
	MAC net.HardwareAddr
	MTU int
}
