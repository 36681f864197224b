// Command scale runs one keepalived.conf with many vrrp_instances and VIPs
// on one node, under keepalived 2.2.7 and under `vipstack vrrp`, one after
// the other in the same run, and prints vipstack's figures as ratios of
// keepalived's (issue 32, "Scale on one node").
//
// The file (written by internal/keepalived's Format) has -instances
// instances, VRRPv2 at advert 1 s, priority 100, spread over veth
// interfaces (250 VRIDs each; the peer ends only listen) in a network namespace of their own, and
// -vips addresses from 198.19.0.0/16 shared out evenly. Alone on their
// links, every instance becomes master after its Master_Down_Interval. For
// each implementation the bench measures:
//
//   - start-up: from starting the process to every VIP on the interfaces
//     (every instance settled as master);
//   - CPU at rest: user + system time of the whole process group over
//     -rest, once the second burst of gratuitous ARPs (5 s after takeover)
//     is over;
//   - RSS and PSS of the process group at the end of that window (each
//     binary evicted from the page cache before its start, as on a
//     freshly booted node);
//   - for vipstack (-scrape, every 15 s by default), CPU over a second
//     window as long as the first, with its /metrics fetched at that
//     interval as Prometheus would (gzipped), and RSS at its end:
//     reported without a target, as keepalived serves no metrics;
//   - then (-crash, on by default) kill -9 of the process that runs the
//     instances, keepalived's VRRP child or vipstack's engine: from the
//     kill to every VIP on the interfaces again, after they were released
//     (keepalived's parent starts a new child; vipstack's supervisor
//     releases the engine's VIPs and starts a new engine).
//
// Targets (issue 32): start-up, CPU and RSS each at most keepalived's
// (ratio <= 1.0); PSS and the restart after a kill are reported.
//
// This program measures wall-clock time on purpose; nothing in it is a
// state machine.
//
// Usage (root; Linux with keepalived installed):
//
//	sudo go run ./bench/scale
//	sudo go run ./bench/scale -instances 100 -vips 1000 -rest 10s
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
