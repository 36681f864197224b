// Package bgpconfig is a BGP speaker's configuration as vipstack gives it
// (RFC 4271 sessions, RFC 1997 and RFC 8092 communities, RFC 4724 graceful
// restart, BFD), its validation, and the speaker's status as vipstack's
// commands report it. It is apart from package bgp, which runs the speaker
// with GoBGP, so that what only parses or reports BGP settings (`vipstack
// ipfailover`'s VRRP engine, which runs from the initialisation: see
// docs/design/memory.md) links neither GoBGP nor gRPC.
package bgpconfig
