// Package testnet builds throwaway multi-host networks out of Linux network
// namespaces for vipstack's root tests, benchmarks and demo.
//
// A topology is N hosts (and optionally a client) whose "eth0" interfaces are
// joined by a bridge that lives in a namespace of its own, so nothing touches
// the machine's own network stack. Every host gets one IPv4 address in
// 198.18.0.0/24 (inside the benchmarking range 198.18.0.0/15, RFC 2544) and
// one IPv6 address in fd00:bb::/64 (unique local, RFC 4193), plus its
// link-local address. No host has a route out of the topology.
//
// Namespace names carry a random tag so that several tests can run at once,
// and everything is removed again by Close, which tests register with
// t.Cleanup so that it runs even when the test fails.
package testnet
