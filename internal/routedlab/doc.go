// Package routedlab builds, for root tests, a routed network in network
// namespaces: a router namespace, nodes each alone on their own subnet
// behind it (node i is 198.18.i.10/24 and fd00:i::10/64, the router .1
// and ::1), and a client on subnet 100; and runs FRR (zebra, bfdd, bgpd)
// as the router. internal/bgp tests the speaker in it and internal/story
// the node agents. Every namespace is removed when the test ends (New),
// or by Close (Build, for a caller that is not a test: bench/chaos -bgp).
package routedlab
