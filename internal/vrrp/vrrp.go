package vrrp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// Protocol constants.
const (
	ProtocolNumber    = 112 // IP protocol number of VRRP
	TypeAdvertisement = 1   // the only VRRP message type

	AuthNone   = 0 // v2: no authentication
	AuthSimple = 1 // v2: simple text password ("PASS" in keepalived)
)

// Well-known destination groups (RFC 5798 section 5.1.1.2 and 5.1.2.2).
var (
	MulticastIPv4 = netip.MustParseAddr("224.0.0.18")
	MulticastIPv6 = netip.MustParseAddr("ff02::12")
)

// MulticastGroup returns the well-known group of family 4 or 6.
func MulticastGroup(family int) netip.Addr {
	if family == 6 {
		return MulticastIPv6
	}
	return MulticastIPv4
}

// Sizes and limits of the wire format.
const (
	headerLen   = 8 // version/type, VRID, priority, count, 2 bytes of interval/auth, checksum
	authDataLen = 8 // v2 only, after the addresses
	maxAddrs    = 255

	v2IntervalUnit = time.Second
	v2IntervalMax  = 255 // 8-bit field, seconds
	v3IntervalUnit = 10 * time.Millisecond
	v3IntervalMax  = 0x0fff // 12-bit field, centiseconds
)

// Advertisement is one VRRP advertisement, version 2 (RFC 3768) or 3
// (RFC 5798).
type Advertisement struct {
	Version  int // 2 or 3
	VRID     uint8
	Priority uint8
	// Interval is the advertisement interval: whole seconds 1..255 on the
	// wire for v2, centiseconds 1..4095 (10ms..40.95s) for v3.
	Interval time.Duration
	AuthType uint8   // v2 only (AuthNone or AuthSimple); must be 0 for v3
	AuthData [8]byte // v2 only; see Password
	// Addresses are the virtual addresses. v2: IPv4 only; v3: all IPv4 over
	// IPv4 transport or all IPv6 over IPv6 transport.
	Addresses []netip.Addr
	// Checksum is filled by Unmarshal (as read) and by Marshal (as written);
	// Marshal ignores its previous value.
	Checksum uint16
}

// Marshal encodes a as sent from src to dst and computes the checksum, which
// it also stores in a.Checksum. For v3 the checksum covers the IPv4 or IPv6
// pseudo-header built from src and dst; for v2 it covers the message only,
// but src and dst must still be valid addresses of the transport family.
// IPv4-mapped IPv6 src and dst are treated as IPv4.
//
// Marshal returns an error naming the field for any value that cannot be
// encoded, or that Unmarshal would reject.
func (a *Advertisement) Marshal(src, dst netip.Addr) ([]byte, error) {
	return a.AppendMarshal(nil, src, dst)
}

// AppendMarshal is Marshal appending the message to b: a sender that keeps
// b between advertisements (b[:0]) encodes each without allocating. On an
// error it returns b unchanged.
func (a *Advertisement) AppendMarshal(b []byte, src, dst netip.Addr) ([]byte, error) {
	src, dst = src.Unmap(), dst.Unmap()
	if err := a.validate(src, dst); err != nil {
		return b, fmt.Errorf("vrrp: marshal: %w", err)
	}
	alen := addrLen(src)
	n := headerLen + len(a.Addresses)*alen
	if a.Version == 2 {
		n += authDataLen
	}
	start := len(b)
	b = slices.Grow(b, n)[:start+n]
	m := b[start:]
	clear(m)
	m[0] = byte(a.Version)<<4 | TypeAdvertisement
	m[1] = a.VRID
	m[2] = a.Priority
	m[3] = byte(len(a.Addresses))
	if a.Version == 2 {
		m[4] = a.AuthType
		m[5] = byte(a.Interval / v2IntervalUnit)
		copy(m[n-authDataLen:], a.AuthData[:])
	} else {
		// The 4 reserved bits above the interval are zero.
		binary.BigEndian.PutUint16(m[4:], uint16(a.Interval/v3IntervalUnit))
	}
	for i, addr := range a.Addresses {
		if alen == 4 {
			v := addr.As4()
			copy(m[headerLen+i*alen:], v[:])
		} else {
			v := addr.As16()
			copy(m[headerLen+i*alen:], v[:])
		}
	}
	a.Checksum = checksum(a.Version, m, src, dst)
	binary.BigEndian.PutUint16(m[6:], a.Checksum)
	return b, nil
}

// validate reports the first field of a that cannot be sent from src to dst.
func (a *Advertisement) validate(src, dst netip.Addr) error {
	if !src.IsValid() || !dst.IsValid() || src.Is4() != dst.Is4() {
		return fmt.Errorf("src %v and dst %v: want two valid addresses of the same family", src, dst)
	}
	switch a.Version {
	case 2:
		if !src.Is4() {
			return badField("Version", 2, "VRRPv2 is IPv4 only, use version 3 over IPv6")
		}
		if err := CheckAdvertInterval(2, a.Interval); err != nil {
			return badField("Interval", a.Interval, "VRRPv2 accepts "+err.(*IntervalError).Accepted())
		}
		if a.AuthType != AuthNone && a.AuthType != AuthSimple {
			return badField("AuthType", a.AuthType, "want 0 (none) or 1 (simple password)")
		}
	case 3:
		if !src.Is4() && !src.IsLinkLocalUnicast() && dst.IsMulticast() {
			return badField("src", src, "VRRPv3 over IPv6 multicast must come from a link-local address (RFC 5798 section 5.1.2.1)")
		}
		if err := CheckAdvertInterval(3, a.Interval); err != nil {
			return badField("Interval", a.Interval, "VRRPv3 accepts "+err.(*IntervalError).Accepted())
		}
		if a.AuthType != 0 {
			return badField("AuthType", a.AuthType, "VRRPv3 has no authentication, want 0")
		}
		if a.AuthData != [8]byte{} {
			return badField("AuthData", "non-zero", "VRRPv3 has no authentication, want all zero")
		}
	default:
		return badField("Version", a.Version, "want 2 or 3")
	}
	if len(a.Addresses) > maxAddrs {
		return badField("Addresses", fmt.Sprintf("(%d addresses)", len(a.Addresses)), "at most 255 fit")
	}
	for i, addr := range a.Addresses {
		// An IPv4-mapped IPv6 address is a legitimate 16-byte value over IPv6.
		if !addr.IsValid() || addr.Zone() != "" || addr.Is4() != src.Is4() {
			return badField(fmt.Sprintf("Addresses[%d]", i), addr, "want an "+family(src)+" address without zone, the family of src "+src.String())
		}
	}
	return nil
}

// badField is the error for a field that cannot be encoded.
func badField(field string, value any, want string) error {
	return fmt.Errorf("%s %v: %s", field, value, want)
}

// Unmarshal decodes and validates b, a VRRP message without its IP header,
// received from src to dst. It enforces every rule that can be checked
// without configuration (see the package documentation) and returns a
// *ParseError for a packet it rejects. IPv4-mapped IPv6 src and dst are
// treated as IPv4. Unmarshal does not retain or modify b.
func Unmarshal(b []byte, src, dst netip.Addr) (*Advertisement, error) {
	a := &Advertisement{}
	if err := UnmarshalTo(a, b, src, dst); err != nil {
		return nil, err
	}
	if len(a.Addresses) == 0 {
		a.Addresses = nil
	}
	return a, nil
}

// UnmarshalTo is Unmarshal decoding into a, whose Addresses it reuses
// (a.Addresses[:0], grown when too short): a receiver that keeps a between
// packets decodes each without allocating. On an error a holds
// unspecified values.
func UnmarshalTo(a *Advertisement, b []byte, src, dst netip.Addr) error {
	src, dst = src.Unmap(), dst.Unmap()
	fail := func(r Reason, format string, args ...any) error {
		return &ParseError{Reason: r, Detail: fmt.Sprintf(format, args...) + " from " + src.String()}
	}
	if !src.IsValid() || !dst.IsValid() || src.Is4() != dst.Is4() {
		return fail(ReasonFamily, "packet to %v: source and destination are not valid addresses of one family", dst)
	}
	if len(b) < headerLen {
		return fail(ReasonShort, "packet of %d bytes: a VRRP header is %d bytes", len(b), headerLen)
	}
	ver, typ := int(b[0]>>4), b[0]&0x0f
	if ver != 2 && ver != 3 {
		return fail(ReasonVersion, "version %d: want 2 or 3", ver)
	}
	if typ != TypeAdvertisement {
		return fail(ReasonType, "type %d: want %d (advertisement)", typ, TypeAdvertisement)
	}
	if ver == 2 && !src.Is4() {
		return fail(ReasonFamily, "VRRPv2 over IPv6: v2 is IPv4 only")
	}
	// Unicast (keepalived's unicast_src_ip) may use a global source; the
	// multicast form must come from the link-local address.
	if ver == 3 && !src.Is4() && !src.IsLinkLocalUnicast() && dst.IsMulticast() {
		return fail(ReasonSource, "VRRPv3 over IPv6 multicast: source must be link-local (RFC 5798 section 5.1.2.1)")
	}

	count, alen := int(b[3]), addrLen(src)
	fixed := headerLen
	if ver == 2 {
		fixed += authDataLen
	}
	if len(b) < fixed {
		return fail(ReasonShort, "VRRPv2 packet of %d bytes: want at least %d (header and authentication data)", len(b), fixed)
	}
	if want := fixed + count*alen; len(b) != want {
		return fail(ReasonLength, "%d %s addresses need %d bytes, got %d", count, family(src), want, len(b))
	}

	got, want := binary.BigEndian.Uint16(b[6:]), checksum(ver, b, src, dst)
	if got != want {
		return fail(ReasonChecksum, "bad checksum %#04x (want %#04x)", got, want)
	}

	addrs := a.Addresses[:0]
	*a = Advertisement{Version: ver, VRID: b[1], Priority: b[2], Checksum: got}
	var units int
	if ver == 2 {
		a.AuthType = b[4]
		if a.AuthType != AuthNone && a.AuthType != AuthSimple {
			return fail(ReasonAuthType, "auth type %d: want %d (none) or %d (simple password); IPsec AH and others are not supported",
				a.AuthType, AuthNone, AuthSimple)
		}
		copy(a.AuthData[:], b[len(b)-authDataLen:])
		units = int(b[5])
		a.Interval = time.Duration(units) * v2IntervalUnit
	} else {
		// The top 4 bits are reserved and ignored on reception.
		units = int(binary.BigEndian.Uint16(b[4:]) & v3IntervalMax)
		a.Interval = time.Duration(units) * v3IntervalUnit
	}
	if units == 0 {
		return fail(ReasonInterval, "advertisement interval 0: want at least 1")
	}

	addrs = slices.Grow(addrs, count)
	for i := range count {
		var addr netip.Addr
		if at := b[headerLen+i*alen:]; alen == 4 {
			addr = netip.AddrFrom4([4]byte(at))
		} else {
			addr = netip.AddrFrom16([16]byte(at))
		}
		addrs = append(addrs, addr)
	}
	a.Addresses = addrs
	return nil
}

// String formats a for logs, e.g. "v3 vrid 51 prio 100 int 100ms addrs
// [198.18.0.10]". It never prints the password.
func (a *Advertisement) String() string {
	auth := ""
	if a.Version == 2 {
		switch a.AuthType {
		case AuthNone:
			auth = " auth none"
		case AuthSimple:
			auth = " auth simple"
		default:
			auth = fmt.Sprintf(" auth %d", a.AuthType)
		}
	}
	return fmt.Sprintf("v%d vrid %d prio %d int %v%s addrs %v", a.Version, a.VRID, a.Priority, a.Interval, auth, a.Addresses)
}

// Password returns the 8 authentication bytes keepalived sends for auth_pass
// s: s truncated to 8 bytes and zero padded.
func Password(s string) [8]byte {
	var p [8]byte
	copy(p[:], s)
	return p
}

// SameAddresses reports whether a and b hold the same set of addresses,
// ignoring order and repetitions. Addresses compare with ==, so an
// IPv4-mapped IPv6 address differs from its IPv4 form.
func SameAddresses(a, b []netip.Addr) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

// addrLen is the size of one address in a message carried over src's family.
func addrLen(src netip.Addr) int {
	if src.Is4() {
		return 4
	}
	return 16
}

func family(src netip.Addr) string {
	if src.Is4() {
		return "IPv4"
	}
	return "IPv6"
}
