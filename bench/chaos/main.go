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
// real kube-apiserver, `vipstack controller`, one `vipstack agent` per node
// under its supervisor with only the DaemonSet's NET_ADMIN and NET_RAW, a
// VIPGroup of every node and -services LoadBalancer Services. The faults
// are those an agent meets (chaos.AgentWeights): kill -9 of the agent and
// of its supervised child, stalls, cuts, ifdown, loss and delay, and two
// cluster-wide ones, a Service deleted and created again with the same
// address, and kill -9 of the controller and a restart. The checker's
// Config comes from the agents' own plans (their status).
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
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
