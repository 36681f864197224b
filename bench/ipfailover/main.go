// Command ipfailover measures an IP failover pool of 10,000 VIPs on three
// nodes, run by vipstack and, in the same run and topology, by keepalived
// with the configuration OpenShift's ipfailover image would generate for the
// same environment, and prints vipstack's figures as ratios of keepalived's
// (the issue "bench/ipfailover").
//
// Each trial builds three hosts and a client on one bridge in network
// namespaces (internal/testnet); every host runs a TCP listener on the
// monitor port. The pool's environment is the same for both:
//
//	OPENSHIFT_HA_VIRTUAL_IPS=198.18.16.1-250,...,198.18.55.1-250 (10,000)
//	OPENSHIFT_HA_VIP_GROUPS=6  OPENSHIFT_HA_REPLICA_COUNT=3
//	OPENSHIFT_HA_MONITOR_PORT=8080  OPENSHIFT_HA_NETWORK_INTERFACE=eth0
//	OPENSHIFT_HA_VRRP_ID_OFFSET=10 (and the image's defaults: VRRPv2,
//	advert 1 s, preempt_delay 300, check every 2 s)
//
// vipstack runs `vipstack ipfailover` with that environment. keepalived runs
// ipfailover.OriginConfig's rendering of the image's generator, with the
// image's RANDOM fixed at its maximum so that, as with vipstack, the killed
// node holds a third of the VIPs in two groups.
//
// A trial: start the three nodes; wait until every VIP is held by exactly
// one node and the client has heard no gratuitous ARP for 6 s (at rest:
// longer than the 5 s after which keepalived's pattern repeats its burst);
// measure for 10 s the CPU time (user+system, children included: the check
// scripts keepalived forks) and the proportional set size of each node's
// processes, and the VRRP packets per second the client hears; then kill
// node 1 (SIGKILL to its process group and its switch port cut: the node is
// gone) at T0. The client captures ARP: a VIP of the dead node "answers
// again" when a surviving node has announced it (gratuitous ARP): that is
// what moves the clients that were talking to it. The trial reports the
// time from T0 to the first and to the last such announcement, then ARP
// probes all 10,000 VIPs from the client and checks that each is answered
// by exactly one live node.
//
// This program measures wall-clock time on purpose, so it uses the real
// clock directly; nothing in it is a state machine.
//
// Usage (root; Linux with keepalived and nft installed):
//
//	sudo go run ./bench/ipfailover                 # 3 trials each (median)
//	sudo go run ./bench/ipfailover -trials 1 -v    # one trial each, narrated
//	sudo go run ./bench/ipfailover -vips 1000 -only vipstack
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
