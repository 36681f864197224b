// Command failover measures VRRP failover of keepalived and of vipstack, in
// one run and in one topology, and prints vipstack's figures as ratios of
// keepalived's (the issue "bench/failover").
//
// Three hosts and a client are built in network namespaces
// (internal/testnet). Every host runs a tiny TCP listener on port 8080 that
// greets each connection with one byte, the host's index, so the client
// knows who answered. For each timer set (VRRPv3 advert 0.05 s; VRRPv2
// advert 1 s with PASS authentication; both multicast) and each event
// (kill -9 of the master's whole process group; SIGTERM; its check
// failing), three nodes of one
// implementation start at priorities 150/100/50, node1 becomes the sole
// holder of the VIP, a prober in the client namespace opens a connection to
// the VIP every 10 ms, the event hits node1 at T0, and the outage is the time
// from T0 to the first connection answered by node2. A crashed node keeps
// the VIP in its kernel (neither keepalived nor vipstack can remove it when
// killed), so answers from node1 after T0 do not count: the client's ARP
// entry has to move. keepalived and vipstack trials alternate, so both see
// the same machine load. Crashes are also measured from node1's last
// advertisement before the kill (seen by the client on 224.0.0.18), where
// the backup's Master_Down timer started, which takes out where in the
// advertisement interval the kill fell.
//
// The third event, "check fails", gives node1 a tracked script (weight
// -60, interval 1 s, fall 2) and makes it fail at T0: node1 drops to 90,
// below node2. Its bound is fall x interval + skew (the target):
// keepalived advertises the drop on its next regular advertisement and its
// backups then wait their whole master-down timer; vipstack sends priority
// 0 and the lowered priority at once (fsm.SetPriority).
//
// The protocol bound printed for reference is 3 x advert + skew for a crash
// (the backup's Master_Down_Interval, RFC 3768 section 6.1, RFC 5798
// section 6.1) and the skew alone for SIGTERM (the master's priority-0
// advertisement makes the backup wait Skew_Time only, RFC 5798 section
// 6.4.2), with the backup at priority 100.
//
// This program measures wall-clock time on purpose, so it uses the real
// clock directly; nothing in it is a state machine.
//
// Usage (root; Linux with keepalived installed):
//
//	sudo go run ./bench/failover            # 5 trials per scenario
//	sudo go run ./bench/failover -quick     # the demo: 1 trial each, narrated
//	sudo go run ./bench/failover -only 'v3.*kill' -trials 9 -v
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
