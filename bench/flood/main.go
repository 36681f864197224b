// Command flood measures vipstack under floods and load next to the real
// peers, in one run (vipstack issue 8, item 4), and prints vipstack's
// figures as ratios of theirs. Everything runs in throwaway network
// namespaces (internal/testnet, prefix "vf"), on 198.18.0.0/15 and
// loopback.
//
//   - vrrp: a master (priority 150) and a backup (100), each with a
//     multicast instance (VRID 51) and a unicast one (VRID 52), VRRPv3 at
//     0.1 s, are flooded from a third namespace with protocol-112 packets
//     that would each make the master step down if accepted: wrong VRID,
//     bad checksum, TTL 64, truncated, wrong version, VRRPv2 on the v3
//     VRID from spoofed sources in 198.18.0.0/15, random bytes, and valid
//     adverts for the unicast VRID from a host that is not a peer. The
//     same packets (same seed, count and rate) hit keepalived 2.2.7 and
//     vipstack in turn. CPU seconds (utime + stime from /proc/PID/stat,
//     summed over the process group: keepalived's parent and VRRP child,
//     vipstack's supervisor and engine) are taken over the flood and over
//     an idle window as long, before it; the VIPs are sampled every 10 ms
//     to see whether mastership moved. Neither daemon logs in detail
//     (keepalived without -D, vipstack at info).
//   - lb: 10,000 concurrent slow clients (they connect and never read;
//     every second one sends a byte a second, the others nothing) against
//     haproxy 2.6 and `vipstack lb` with the same haproxy.cfg: frontend
//     maxconn 7000, global maxconn 9000 (the open-file hard limit here is
//     20000 and haproxy needs two descriptors per connection; its global
//     limit counts the stats listener too). The backend greets each
//     connection. The
//     figures: the balancer's RSS before the clients, with them connected
//     (VmRSS) and its peak (VmHWM), and the FRONTEND row of its stats CSV
//     (scur, smax, slim).
//   - dns: `vipstack dns` serves the cluster zone on 127.0.0.1 while
//     dnsperf sends at most -dns-qps queries a second for -dns-seconds; a
//     prober sends GET /health every 20 ms and a real query over TCP every
//     100 ms, before and during the flood. The figures: dnsperf's QPS, the
//     health latency p50/p99 idle and under the flood, and any failed
//     probe. There is no peer here (CoreDNS itself is not installed).
//
// The benchmark measures wall-clock rates and resource use on purpose, so
// it uses the real clock directly.
//
// Usage (root, Linux, with keepalived, haproxy and dnsperf installed):
//
//	sudo go run ./bench/flood                 # all three
//	sudo go run ./bench/flood -only vrrp -vrrp-packets 100000
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
