// Command fastvrrp runs VRRPv3 at advert_int 0.01 (10 ms, the protocol's
// smallest interval) beside a CPU-bound load: a vipstack pair and a
// keepalived pair at the same settings, side by side in one run (issue 32,
// "VRRP timing").
//
// Four hosts and a client share one bridge in network namespaces: hosts 1
// and 2 run vipstack at priorities 150 and 100 (VRID 51), hosts 3 and 4
// keepalived 2.2.7 at the same priorities (VRID 52), both with
// vrrp_rt_priority -rt-priority (SCHED_RR, as keepalived offers it against
// CPU starvation; 0 leaves it out). -without-rt adds a pair of each
// without it on hosts 5 to 8. The client runs -load busy loops (bounded by
// the run's length) and records every VRRP advertisement it hears, at the
// time its kernel received it, with a histogram of each master's gaps.
// Two phases, both under the load:
//
//   - soak (-duration, 10 min by default): any advertisement from a backup
//     while its master lives is a false failover (the backup's
//     Master_Down timer, 3 x 10 ms + skew, ran out); the longest gap
//     between the master's advertisements is reported too;
//   - crashes (-trials): kill -9 of the master's process group, alternating
//     vipstack and keepalived; the failover time is from the master's last
//     advertisement to the backup's first, against 3 x advert + skew +
//     10 ms (46 ms).
//
// This program measures wall-clock time on purpose; nothing in it is a
// state machine.
//
// Usage (root; Linux with keepalived installed):
//
//	sudo go run ./bench/fastvrrp                   # 10 min soak, 5 crashes each
//	sudo go run ./bench/fastvrrp -duration 1m -trials 3 -prefix vrt
//	sudo go run ./bench/fastvrrp -without-rt      # and pairs without SCHED_RR
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
