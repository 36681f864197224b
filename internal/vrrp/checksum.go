package vrrp

import (
	"encoding/binary"
	"net/netip"
)

// checksum returns the Internet checksum (RFC 1071) of the VRRP message b as
// version ver sends it from src to dst, treating the checksum field b[6:8] as
// zero. Version 3 covers the IPv4 (RFC 768 style) or IPv6 (RFC 8200 section
// 8.1) pseudo-header; version 2 covers the message only (RFC 3768 section
// 5.3.8). b must be at least 8 bytes long; src and dst must be of one family.
func checksum(ver int, b []byte, src, dst netip.Addr) uint16 {
	var acc uint32
	if ver == 3 {
		acc = pseudoHeaderSum(src, dst, len(b))
	}
	acc = sum(acc, b[:6])
	acc = sum(acc, b[8:])
	// Fold the carries back in (twice covers every carry out of the first fold).
	acc = acc&0xffff + acc>>16
	acc = acc&0xffff + acc>>16
	return ^uint16(acc)
}

// pseudoHeaderSum is the unfolded sum of the pseudo-header for an
// upper-layer message of length n with protocol ProtocolNumber.
func pseudoHeaderSum(src, dst netip.Addr, n int) uint32 {
	var acc uint32
	if src.Is4() {
		s, d := src.As4(), dst.As4()
		acc = sum(acc, s[:])
		acc = sum(acc, d[:])
	} else {
		s, d := src.As16(), dst.As16()
		acc = sum(acc, s[:])
		acc = sum(acc, d[:])
	}
	// The IPv4 form has a 16-bit length and the IPv6 form a 32-bit one, but
	// n is at most 8+255*16, so both contribute the same two words.
	return acc + uint32(n) + ProtocolNumber
}

// sum adds b to acc as big-endian 16-bit words, padding an odd final byte
// with zero. acc cannot overflow for inputs of VRRP size.
func sum(acc uint32, b []byte) uint32 {
	for len(b) >= 2 {
		acc += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint32(b[0]) << 8
	}
	return acc
}
