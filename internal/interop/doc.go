// Package interop holds tests that run vipstack's VRRP (RFC 3768, RFC 5798)
// against other real implementations in network namespaces: FRR's vrrpd
// here (keepalived's tests live beside the engine). It has no non-test code.
package interop
