// Command bgp measures BGP announcement of a VIP by vipstack's speaker
// (internal/bgp, as `vipstack node` runs it) and by FRR (bgpd, bfdd and
// zebra on the nodes), in one run, in one topology, and prints vipstack's
// figures beside FRR's with the ratio (issue 30, "bench/bgp").
//
// A router namespace runs FRR 8.4 (bgpd, bfdd, zebra; ECMP over 8 paths)
// or BIRD 2 (bgp and bfd protocols, its kernel protocol merging paths),
// the kernel hashing on the 5-tuple; -router both (the default) runs
// every trial with FRR, then again with BIRD, each in a lab of its own.
// Nodes n1 and n2 are each on their own subnet behind it and
// announce the same VIP (198.19.0.10/32, on their loopback, where a
// greeter answers each connection with the node's name); a client on
// another subnet opens a connection to the VIP every 10 ms (each given
// 200 ms), so about half of them go to each node.
//
// Crash trials, with BFD (50 ms x 3 by default, the BGP hold timer at
// 30 s) and without (the hold timer at 3 s by default): at T0 n1 is
// killed (nothing leaves its namespace any more, then its BGP daemons get
// SIGKILL) or its link is cut (the router drops everything on it). The
// router's kernel route change is read from `ip -ts monitor route`; the
// client's traffic has moved at the first answered connection started
// after the last failed one. The bound is the protocol's detection time
// (multiplier x interval, or the hold time), before route programming.
// With BFD the router's log dates its BFD session going down, so the
// router's own programming time (BFD down to kernel route) is printed
// apart.
//
// Graceful stop: SIGTERM to n1's daemon (vipstack's speaker, FRR's bgpd)
// under the client's connections; once it has exited the VIP leaves n1's
// loopback. Every connection started after T0 must be answered.
//
// Routes to a new peer: n3 runs with -routes VIP routes (10,000) and the
// router's session to it shut down; at T0 the router brings it up, and
// vtysh is polled until every route is received. The same with no routes
// gives the daemon's resident memory without them, and so the memory per
// 1,000 routes.
//
// Implementations alternate trial by trial, so both see the same machine
// load. This program measures wall-clock time on purpose.
//
// Usage (root; Linux with frr and bird2 installed):
//
//	sudo go run ./bench/bgp -markdown docs/benchmarks.md   # 3 trials each, about 4 min per router
//	sudo go run ./bench/bgp -router bird -parts crash -v   # BIRD as the router, crashes only
//	sudo go run ./bench/bgp -trials 1 -routes 1000 -v      # quick, narrated
//	sudo go run ./bench/bgp -parts stop -trials 5 -v       # only the graceful stops
package main

import "os"

func main() {
	if code := helperMain(); code >= 0 {
		os.Exit(code)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
