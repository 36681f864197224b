// Package vrrp implements the wire format of the Virtual Router Redundancy
// Protocol, versions 2 (RFC 3768) and 3 (RFC 5798): encoding and decoding of
// the advertisement that follows the IP header (IP protocol 112).
//
// Marshal and Unmarshal are pure functions of their arguments. The caller
// passes the IP source and destination addresses because VRRPv3 checksums
// cover an IPv4 or IPv6 pseudo-header, and because some rules depend on the
// transport family.
//
// # What Unmarshal checks
//
// Every rule that needs no configuration:
//   - the message is at least one header long (8 bytes; 16 for v2, which always
//     carries 8 bytes of authentication data);
//   - version 2 or 3, type 1 (advertisement);
//   - v2 only over IPv4 (keepalived's non-standard v2-over-IPv6 is rejected),
//     and source and destination of the same family;
//   - v3 over IPv6 comes from a link-local source (RFC 5798 section 5.1.2.1);
//   - the length is exactly what the address count implies: v2 8+4n+8 bytes,
//     v3 8+4n (IPv4) or 8+16n (IPv6). Trailing bytes are rejected, like
//     keepalived does: its receive path drops any packet whose length differs
//     from the expected one, and no VRRP version defines anything after the
//     addresses (v2's authentication data is the fixed last 8 bytes);
//   - the checksum, over the message for v2 and with the pseudo-header for v3.
//     The checksum field must equal the computed value exactly; the other
//     ones'-complement encoding of the same sum (0xffff for 0x0000), which a
//     sum-to-zero check such as keepalived's would accept, is rejected. No
//     sender produces it, and rejecting it keeps decode/encode a bijection;
//   - v2 authentication type 0 (none) or 1 (simple text password); 2 (IPsec
//     AH, removed by RFC 3768) and any other value are rejected;
//   - an advertisement interval other than zero.
//
// An address count of zero is accepted: keepalived sends it for an instance
// without virtual addresses, and the daemon's address list comparison decides.
// The four reserved bits of a v3 message are ignored on reception, as RFC 5798
// section 5.2.6 says, so Marshal (which writes them as zero) reproduces a
// decoded message exactly unless a sender set them.
//
// # What the daemon checks
//
// Everything that needs configuration or the IP header is the receiving
// daemon's job: the IP TTL or hop limit is 255, the VRID is one it runs, the
// authentication type and password match (compare AuthData with Password of
// the configured auth_pass), a v2 advertisement interval equals the configured
// one, and the address list matches the configured one (SameAddresses). A
// daemon talking to pre-2.0 keepalived over unicast VRRPv3 may retry a
// ReasonChecksum failure with dst set to MulticastIPv4: those versions computed
// the pseudo-header with the multicast group even when sending unicast.
package vrrp
