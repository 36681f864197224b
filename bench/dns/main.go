// Command dns benchmarks `vipstack dns` (the bench/dns part of the DNS
// issue) and prints its figures as ratios of CoreDNS's own plugins measured
// in the same run.
//
// Part 1, query performance: the same vipstack binary runs two Corefiles on
// loopback inside a network namespace (internal/testnet), one with the
// clusterdns plugin and one with CoreDNS's template and hosts plugins
// serving the same answers (API and Ingress VIPs, node names, etcd-N, the
// etcd SRV record with its glue, NODATA for AAAA under apps), and stock
// CoreDNS (internal/peers/corednsstock, or -coredns) runs the template +
// hosts one as its own binary. Before measuring, every query of the mix is
// asked of the three servers and the answers must be identical. dnsperf
// (Debian package dnsperf) then drives each server for -l seconds,
// rotating their order in every round so all see the same machine load: once unthrottled (capped at -max-qps) for
// throughput, once at a fixed -rate for latency below saturation. With
// -pin (the default on 2+ CPUs) the server runs on CPU 1 and dnsperf on
// CPU 0. Printed: queries per second, average latency, and the ratios
// clusterdns/peer for QPS and peer/clusterdns for latency, for each peer
// (both >= 1.0 when clusterdns is at least as fast). dnsperf reports only
// the average latency, which on a shared machine a few multi-millisecond
// stalls decide; so a prober also sends -rtt-queries queries one at a time
// to each server (-rounds times) and reports the p50/p90/p99 round trip,
// judged on p50 and p99 against each peer.
//
// Part 2, mDNS join and leave: host 1 runs `vipstack dns -mdns-cluster`,
// which browses the cluster's nodes and feeds its clusterdns zone; a
// prober on host 1 asks for the etcd SRV record every -probe-every. Host 2
// then starts `vipstack dns -mdns-cluster` as master-1 (join) and later gets
// SIGTERM (leave: it sends goodbye packets). A multicast listener on host 1
// timestamps host 2's first announcement and its goodbye. Printed per event:
// the time from the event (process start / SIGTERM) and from the packet
// (announcement / goodbye) to the first SRV answer that reflects it. A
// joining node must first probe its names for about 0.75 s (RFC 6762
// section 8.1), so only the packet-to-answer figure can show what vipstack
// adds; the target is < 1 s for both leave figures and the join from the
// announcement.
//
// This program measures wall-clock time on purpose, so it uses the real
// clock directly; nothing in it is a state machine.
//
// Usage (root; Linux with dnsperf installed):
//
//	sudo go run ./bench/dns -markdown docs/dns.md   # about 5 minutes
//	sudo go run ./bench/dns -l 5 -rounds 1 -trials 3
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
