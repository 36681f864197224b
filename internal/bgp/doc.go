// Package bgp announces the VIPs a node is eligible for as host routes
// (/32, /128) to BGP routers, as described in RFC 4271, with multiprotocol
// extensions for IPv6 (RFC 4760, RFC 2545), TCP MD5 signatures (RFC 2385),
// standard and large communities (RFC 1997, RFC 8092) and graceful restart
// (RFC 4724). The BGP protocol itself is GoBGP's, used as a library; this
// package is a thin adapter around it: a validated Config (package
// bgpconfig's, which links no GoBGP), a pure plan from eligibility to
// announce and withdraw, and a Speaker that runs the plan and takes a peer
// down when its BFD session (package bfd) goes down.
// See docs/design/bgp.md.
package bgp
