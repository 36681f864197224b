package proxyproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Header is one PROXY protocol header.
type Header struct {
	// Version is 1 (the text form) or 2 (the binary form).
	Version int
	// Local says the connection carries no client's: a v2 LOCAL command
	// (haproxy's health checks send it), a v1 "PROXY UNKNOWN". Src and
	// Dst are then unset.
	Local bool
	// Src is the client's address, Dst the one it connected to. Both of
	// one family: IPv4 ("TCP4", AF_INET) when both are IPv4, else IPv6,
	// an IPv4 address then written IPv4-mapped, as haproxy does.
	Src, Dst netip.AddrPort
	// TLVs are a v2 header's type-length-value fields after the
	// addresses, as read (haproxy's send-proxy-v2 writes none unless
	// proxy-v2-options asks).
	TLVs []byte
}

// sig is the v2 header's first 12 bytes.
var sig = []byte("\r\n\r\n\x00\r\nQUIT\n")

// MaxV1 is the longest v1 header, its CRLF included (the specification's
// 107 bytes).
const MaxV1 = 107

// Errors for input that is not a header, or not yet a whole one.
var (
	ErrNotProxy  = errors.New("proxyproto: not a PROXY protocol header")
	ErrTruncated = errors.New("proxyproto: header truncated")
)

// v6 reports whether the addresses are written as IPv6.
func (h Header) v6() bool { return !(h.Src.Addr().Is4() && h.Dst.Addr().Is4()) }

func as16(a netip.Addr) netip.Addr {
	if a.Is4() {
		return netip.AddrFrom16(a.As16())
	}
	return a
}

// MarshalBinary writes the header.
func (h Header) MarshalBinary() ([]byte, error) {
	if !h.Local && (!h.Src.IsValid() || !h.Dst.IsValid()) {
		return nil, errors.New("proxyproto: a PROXY header needs both addresses (or Local)")
	}
	switch h.Version {
	case 1:
		if len(h.TLVs) > 0 {
			return nil, errors.New("proxyproto: a v1 header has no TLVs")
		}
		if h.Local {
			return []byte("PROXY UNKNOWN\r\n"), nil
		}
		fam, src, dst := "TCP4", h.Src.Addr(), h.Dst.Addr()
		if h.v6() {
			fam, src, dst = "TCP6", as16(src), as16(dst)
		}
		return fmt.Appendf(nil, "PROXY %s %s %s %d %d\r\n", fam, src.WithZone(""), dst.WithZone(""), h.Src.Port(), h.Dst.Port()), nil
	case 2:
		b := append([]byte(nil), sig...)
		var addrs []byte
		switch {
		case h.Local:
			b = append(b, 0x20, 0x00)
		case h.v6():
			b = append(b, 0x21, 0x21)
			s, d := as16(h.Src.Addr()).As16(), as16(h.Dst.Addr()).As16()
			addrs = append(append(addrs, s[:]...), d[:]...)
		default:
			b = append(b, 0x21, 0x11)
			s, d := h.Src.Addr().As4(), h.Dst.Addr().As4()
			addrs = append(append(addrs, s[:]...), d[:]...)
		}
		if !h.Local {
			addrs = binary.BigEndian.AppendUint16(addrs, h.Src.Port())
			addrs = binary.BigEndian.AppendUint16(addrs, h.Dst.Port())
		}
		n := len(addrs) + len(h.TLVs)
		if n > 0xffff {
			return nil, fmt.Errorf("proxyproto: %d bytes after the v2 header's first 16 (accepted: at most 65535)", n)
		}
		b = binary.BigEndian.AppendUint16(b, uint16(n))
		return append(append(b, addrs...), h.TLVs...), nil
	}
	return nil, fmt.Errorf("proxyproto: version %d (accepted: 1, 2)", h.Version)
}

// UnmarshalBinary reads a header that is the whole of b.
func (h *Header) UnmarshalBinary(b []byte) error {
	got, n, err := Parse(b)
	if err != nil {
		return err
	}
	if n != len(b) {
		return fmt.Errorf("proxyproto: %d bytes after the header", len(b)-n)
	}
	*h = got
	return nil
}

// Parse reads the header at the start of b and returns it with its
// length. ErrTruncated says b holds only the start of one;
// ErrNotProxy that b does not start with one. Only TCP over IPv4 and
// IPv6, and the UNKNOWN / LOCAL forms, are read (haproxy sends no
// other).
func Parse(b []byte) (Header, int, error) {
	switch {
	case len(b) >= len(sig) && bytes.Equal(b[:len(sig)], sig):
		return parseV2(b)
	case len(b) < len(sig) && bytes.HasPrefix(sig, b):
		return Header{}, 0, ErrTruncated
	case bytes.HasPrefix(b, []byte("PROXY ")):
		return parseV1(b)
	case len(b) < 6 && bytes.HasPrefix([]byte("PROXY "), b):
		return Header{}, 0, ErrTruncated
	}
	return Header{}, 0, ErrNotProxy
}

func parseV1(b []byte) (Header, int, error) {
	end := bytes.Index(b, []byte("\r\n"))
	if end < 0 {
		if len(b) >= MaxV1 {
			return Header{}, 0, fmt.Errorf("proxyproto: v1 header without CRLF in its first %d bytes", MaxV1)
		}
		return Header{}, 0, ErrTruncated
	}
	if end+2 > MaxV1 {
		return Header{}, 0, fmt.Errorf("proxyproto: v1 header of %d bytes (accepted: at most %d)", end+2, MaxV1)
	}
	words := strings.Split(string(b[:end]), " ")
	h := Header{Version: 1}
	if words[1] == "UNKNOWN" {
		h.Local = true
		return h, end + 2, nil
	}
	if len(words) != 6 || (words[1] != "TCP4" && words[1] != "TCP6") {
		return Header{}, 0, fmt.Errorf("proxyproto: v1 header %q (accepted: PROXY TCP4|TCP6 SRC DST SPORT DPORT, or PROXY UNKNOWN)", b[:end])
	}
	var addrs [2]netip.Addr
	for i, w := range words[2:4] {
		a, err := netip.ParseAddr(w)
		if err != nil || a.Zone() != "" || a.Is4() != (words[1] == "TCP4") {
			return Header{}, 0, fmt.Errorf("proxyproto: v1 address %q is not an %s address", w, words[1])
		}
		addrs[i] = a
	}
	var ports [2]uint16
	for i, w := range words[4:6] {
		p, err := strconv.ParseUint(w, 10, 16)
		if err != nil || (len(w) > 1 && w[0] == '0') {
			return Header{}, 0, fmt.Errorf("proxyproto: v1 port %q is not a number 0..65535 without leading zeros", w)
		}
		ports[i] = uint16(p)
	}
	h.Src, h.Dst = netip.AddrPortFrom(addrs[0], ports[0]), netip.AddrPortFrom(addrs[1], ports[1])
	return h, end + 2, nil
}

func parseV2(b []byte) (Header, int, error) {
	if len(b) < 16 {
		return Header{}, 0, ErrTruncated
	}
	verCmd, fam := b[12], b[13]
	n := int(binary.BigEndian.Uint16(b[14:16]))
	if verCmd>>4 != 2 {
		return Header{}, 0, fmt.Errorf("proxyproto: v2 version %d (accepted: 2)", verCmd>>4)
	}
	if len(b) < 16+n {
		return Header{}, 0, ErrTruncated
	}
	body := b[16 : 16+n]
	h := Header{Version: 2}
	switch cmd := verCmd & 0xf; {
	case cmd == 0:
		// LOCAL: the receiver ignores the address block; so does this.
		h.Local = true
		if fam == 0 && n > 0 {
			h.TLVs = append([]byte(nil), body...)
		}
		if fam != 0 {
			return Header{}, 0, fmt.Errorf("proxyproto: v2 LOCAL header with family 0x%02x (accepted: LOCAL with AF_UNSPEC, as haproxy sends)", fam)
		}
		return h, 16 + n, nil
	case cmd != 1:
		return Header{}, 0, fmt.Errorf("proxyproto: v2 command %d (accepted: 0 LOCAL, 1 PROXY)", cmd)
	}
	var alen int
	switch fam {
	case 0x11:
		alen = 12
	case 0x21:
		alen = 36
	default:
		return Header{}, 0, fmt.Errorf("proxyproto: v2 family 0x%02x (accepted: 0x11 TCP over IPv4, 0x21 TCP over IPv6)", fam)
	}
	if n < alen {
		return Header{}, 0, fmt.Errorf("proxyproto: v2 address block of %d bytes, family 0x%02x needs %d", n, fam, alen)
	}
	var src, dst netip.Addr
	if alen == 12 {
		src, dst = netip.AddrFrom4([4]byte(body[0:4])), netip.AddrFrom4([4]byte(body[4:8]))
	} else {
		src, dst = netip.AddrFrom16([16]byte(body[0:16])), netip.AddrFrom16([16]byte(body[16:32]))
	}
	ports := body[alen-4 : alen]
	h.Src = netip.AddrPortFrom(src, binary.BigEndian.Uint16(ports[0:2]))
	h.Dst = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(ports[2:4]))
	if n > alen {
		h.TLVs = append([]byte(nil), body[alen:]...)
	}
	return h, 16 + n, nil
}
