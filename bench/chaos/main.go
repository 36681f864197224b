// Command chaos runs a seeded, bounded schedule of faults against a
// namespace cluster of `vipstack node` processes and checks VRRP's
// invariants from outside (issue 8, item 1; see internal/chaos for the
// invariants and docs/reliability.md for a run's figures).
//
// The cluster is internal/demo's: 3 masters and the rest workers on one
// bridge, with stand-in API servers and routers, and the API, DNS and
// Ingress VIPs. The faults are kill -9 of the engine (the supervisor
// stays), kill -9 of the whole node agent and a restart, SIGSTOP/SIGCONT
// stalls of 1 to 5 s, a pulled cable, the interface set down, packet loss
// and delay (tc netem when the kernel has it, otherwise nftables drops and
// no delay), health checks that flap, and cluster-file reloads. Faults
// overlap on different nodes, at most 3 at once and at most 2 of them
// taking their node out. A sampler reads every node's addresses, nftables
// tables and processes every 10 ms; the checker then reports violations by
// invariant, the worst recovery against the protocol bound, the
// supervisor's reaction to an engine kill and the restart's sweep.
//
// With -k8s it drives Kubernetes agents instead (internal/k8s/k8slab): a
// real kube-apiserver and etcd, two `vipstack controller`s (leader and
// standby, a 6 s Lease), one `vipstack agent` per node under its
// supervisor with only the DaemonSet's NET_ADMIN and NET_RAW, a VIPGroup
// of every node and -services LoadBalancer Services (every other one with
// an address the controller picked). The faults are those an agent meets
// (chaos.AgentWeights): kill -9 of the agent and of its supervised child,
// stalls, cuts, ifdown, loss and delay; and cluster-wide ones, one at a
// time: kill -9 of the API server, of etcd, of the controller and of the
// leader (the standby takes over), each started again; a Service deleted
// and created again with its address; a Service edited for a while (to
// ClusterIP, to another loadBalancerClass, to another requested address,
// to externalTrafficPolicy Local) and back. The checker's Config comes
// from the agents' own plans (their status); the Services' status is read
// from the API every 200 ms and checked too (no address in two Services,
// none a Service did not ask for).
//
// With -mixed it drives a node-by-node migration's midpoint: keepalived
// 2.2.7 and `vipstack vrrp` nodes alternating on one bridge, all in one
// VRRPv2 IPv4 group (1 s) and two VRRPv3 groups (IPv4 and IPv6) at
// -advert, with the faults a keepalived node meets (chaos.MixedWeights:
// kill -9, stall, cut, ifdown, loss, delay, reload) and kill -9 of
// vipstack's supervised engine. With -mixed -frr, FRR 8.4's vrrpd (with
// its zebra) runs on every third node (keepalived, vipstack, FRR in turn)
// in the same three groups, and meets kill -9 of both daemons and a start
// again, stalls, cuts, ifdown, loss and reloads (`vtysh -f` of its
// rewritten vrrpd.conf); an FRR node holds a VIP while the VIP's macvlan
// is up with a carrier.
//
// With -bgp it drives `vipstack node`s that announce the API and Ingress
// VIPs by BGP instead of VRRP: internal/routedlab's lab, a router
// namespace running FRR 8.4's zebra, bfdd and bgpd (-router frr, the
// default) or BIRD 2 (-router bird: ECMP by `merge paths`, its own BFD)
// and 3 masters (-nodes) each alone on its subnet, peering by eBGP with
// BFD at 100 ms x 3 and a 30 s hold time, with stand-in API servers and
// Ingress health endpoints for the checks; the router spreads each VIP
// over every node that announces it (ECMP). With -family 6 or both the
// VIPs are IPv6 too, announced over a second session per node between
// the link's IPv6 addresses, with BFD over IPv6. The faults are
// chaos.BGPWeights': kill -9 of the engine and of the whole agent, a
// graceful stop (SIGTERM: the speaker withdraws first) and a start again,
// stalls, cuts (the router's end of the link), ifdown, loss, delay, the
// load balancer's checks failing (the node demotes its API route: routed
// only when no other node is), reloads, and, one at a time, the router's
// BGP daemon killed -9 and started again (FRR's bgpd, or BIRD) and its
// BFD killed and started again (FRR's bfdd; BIRD's BFD protocol disabled
// and enabled). The sampler reads the router's kernel routes to the VIPs
// (protocol bgp or bird, live nexthops) besides each node's loopback,
// nftables tables and processes, and the checker applies its Anycast
// invariants (chaos.Config.Anycast): no route to a node that cannot
// answer past BFD's detection and a margin (a gracefully stopped one
// included, BFD or not), a route to an eligible node for every VIP (a
// demoted one when no other is), no VIP left on the loopback by a dead
// engine; none of these while a router daemon is down and for
// RouterBound after, and then every eligible node routed again.
//
// It exits 1 on any violation or failed injection, 2 on bad flags. The seed
// is printed; -seed N replays the same schedule.
//
// This program measures wall-clock time on purpose, so it uses the real
// clock directly; nothing in it is a state machine.
//
// Usage (root, Linux):
//
//	sudo go run ./bench/chaos                  # 500 faults, random seed
//	sudo go run ./bench/chaos -seed 7 -faults 40 -v
//	sudo go run ./bench/chaos -k8s -faults 500 -seed 7
//	sudo go run ./bench/chaos -mixed -faults 500 -seed 7
//	sudo go run ./bench/chaos -mixed -frr -faults 100 -seed 7
//	sudo go run ./bench/chaos -bgp -faults 100 -seed 7 -prefix vbm -keep-logs
//	sudo go run ./bench/chaos -bgp -router bird -faults 100 -seed 7 -prefix vbm -keep-logs
//	sudo go run ./bench/chaos -bgp -family both -faults 100 -seed 7 -prefix vbm -keep-logs
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
