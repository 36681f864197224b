// Command k8s measures vipstack's Kubernetes side at scale (the issue's
// "1,000 Services created at once: time until every one has an IP in
// status and answers on the wire, p50 and p99 per Service (target p99
// under 1 s), controller and agent memory").
//
// The cluster is a k8slab lab (internal/k8s/k8slab): a real etcd and
// kube-apiserver (internal/kubetest; the binaries come from
// hack/kube-binaries.sh's cache) with deploy/crds.yaml and
// deploy/rbac.yaml, and cmd/vipstack built once. `vipstack controller`
// runs as a process in the root namespace as its ServiceAccount (an
// impersonating kubeconfig, leader election on as deployed); three
// `vipstack agent --no-supervisor` processes run in three network
// namespaces of one bridge (internal/testnet, names bk8...; nodes n1..n3
// at 198.18.0.11-13), each reaching the API through a loopback proxy
// inside its namespace, and a fourth namespace is the client. The cluster
// has one IPPool of 1,024 addresses (198.18.16.0/22, autoAssign) and the
// lab's VIPGroup infra/lab selecting the three nodes (advert interval
// -advert).
//
// Once every node is master of its own (empty) instance of the group and
// the agents have settled, -warm Services (default none) are created and
// awaited on the wire (the agents run each node instance before it holds
// an address, so the group's masters are elected before the first Service:
// -warm measures nothing new unless that changes); then -services
// LoadBalancer Services annotated for the group are created at once by
// -clients (8) concurrent clients. For each Service it records, from the
// moment its Create call returned: the first watch event showing an
// address in status.loadBalancer.ingress, and the first ARP reply to the
// client for that address. "On the wire" is ARP (RFC 826): the client
// sends a broadcast who-has for every address shown in status and not yet
// answered, every 20 to 100 ms (fewer, wider rounds when many are
// pending), from a packet socket, so the client's neighbour table (shared
// gc_thresh3 of 1,024 entries) is not involved; a reply can only come from
// a node whose interface carries the address. Printed: p50, p99 and max of
// both, and the VmRSS (anonymous and file pages) and VmHWM (peak) of the
// controller and each agent, judged against issue 32's 50 MiB RSS: read
// -settle after the burst's work is over, when the controller has written
// its last AnnouncedBy condition (rate-limited by --announced-writes, so
// it trails the addresses by up to a minute), and again at rest, -rest
// (60 s) after it: the figure that matters to a cluster, whose Services
// change now and then. The binary is dropped from the page cache before
// the daemons start (-evict), as bench/node does: a binary go build has
// just written sits there in large folios, which every fault maps whole.
// -controller-args and -agent-args add to the daemons' command
// lines (a --memory-limit to compare, a --pprof-addr to take profiles).
//
// -scenario default-pool does the same with Services that carry no
// annotation: the controller runs with --default-group infra/lab, so the
// lab's group and its auto-assigning pool serve them. -scenario
// from-keepalived and from-metallb measure a migration: before vipstack
// starts, the cluster gets the other load balancer's CRDs (their own
// files: the keepalived-operator's and OpenShift's from
// internal/k8s/compat/testdata, MetalLB's from -thirdparty) and
// configuration (a KeepalivedGroup on eth0 and OpenShift's Network
// auto-assigning 198.18.16.0/22; or an IPAddressPool of that block and an
// L2Advertisement), and -services LoadBalancer Services whose status
// already shows the address it gave (OpenShift's also in
// spec.externalIPs, and never the block's network or broadcast address).
// Then the controller and the agents start; printed: per address, the
// time from the controller's start until it answers ARP from the client
// (which starts asking once every node is master of its own instance),
// and how many Services' addresses changed once the controller has looked
// at every one (PASS: every address answers and none changed).
//
// -markdown FILE writes the results into the scenario's block of FILE
// (k8s, k8s-default-pool, k8s-from-keepalived, k8s-from-metallb; the
// block's marker lines must be there already).
//
// Everything is bounded by -timeout; the processes are killed by PID and
// the namespaces deleted on every exit path (including SIGINT/SIGTERM).
// This program measures wall-clock time on purpose, so it uses the real
// clock directly; nothing in it is a state machine.
//
// Usage (root, Linux):
//
//	sudo go run ./bench/k8s                   # 1,000 Services, about 2 minutes
//	sudo go run ./bench/k8s -warm 20 -clients 32 -v
//	sudo go run ./bench/k8s -services 200 -advert 200
//	sudo go run ./bench/k8s -scenario default-pool
//	sudo go run ./bench/k8s -scenario from-metallb -thirdparty ../shared/thirdparty
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
