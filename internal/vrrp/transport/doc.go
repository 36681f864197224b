// Package transport sends and receives VRRP packets (IP protocol 112) on raw
// sockets, for IPv4 (RFC 3768 section 5.1, RFC 5798 section 5.1.1) and IPv6
// (RFC 5798 section 5.1.2).
//
// One socket per address family serves every interface of the network
// namespace; each received packet carries the interface it arrived on, its
// source and destination addresses and its TTL or hop limit, so the caller
// can apply the RFC's receive checks (TTL 255, interface, peers). Packets
// are sent with TTL / hop limit 255 and DSCP class selector 6 (TOS 0xc0),
// as keepalived does.
package transport
