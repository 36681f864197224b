// Package allocator hands out virtual IP addresses to Services from pools
// of address ranges, the way a cloud load balancer would assign its
// external addresses: a pool is a set of CIDR blocks (RFC 4632 for IPv4,
// RFC 4291 section 2.3 for IPv6) and first-last ranges, optionally limited
// to some namespaces or to Services whose labels match a selector.
//
// The allocator is pure bookkeeping with no Kubernetes types and no I/O:
// the controller rebuilds it from what the API server holds (Reserve),
// honours requested addresses (Request), picks free ones (Allocate) and
// gives them back (Release). It never records one address for two
// Services; every refusal is a typed error that says which pool, which
// address and why, so the controller can turn it into a condition and an
// Event.
package allocator
