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
// both, and the VmRSS and VmHWM (peak) of the controller and each agent
// after -settle.
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
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
