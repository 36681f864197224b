// Command soak runs vipstack's long-lived daemons for a bounded time under
// periodic faults and reloads and reports whether their resources grow
// (issue 33, item 3): a `vipstack node` cluster-file agent (internal/demo's
// cluster of masters), the Kubernetes agent and `vipstack controller`
// against a real kube-apiserver (internal/k8s/k8slab), `vipstack
// ipfailover` with a pool of -vips VIPs on -ipf-nodes nodes, and `vipstack
// lb` under a steady load of new connections from a client namespace.
// Everything runs in network namespaces named with -prefix; the lb and its
// backends listen on a namespace's addresses and loopback only.
//
// Every -interval it samples each daemon process's resident set (VmRSS),
// its open file descriptors (the entries of /proc/PID/fd) and, for the
// processes that serve metrics, go_goroutines from the metrics endpoint.
// Every -fault-every each part takes the next step of its own cycle:
//
//	node        SIGHUP with a comment edit; the stand-in API server of the
//	            sampled master down and up (its check fails: the API VIP
//	            moves); another master's cable pulled and plugged back (the
//	            VIPs move); a worker added to the cluster file and removed
//	ipfailover  the sampled node's monitor port closed and opened (its
//	            check fails: its VIPs move); another node's cable pulled and
//	            plugged back; SIGHUP (ignored, logged)
//	k8s         a Service deleted and created again; the API server cut off
//	            from the sampled agent and back; another node's cable pulled
//	            and plugged back
//	lb          SIGHUP; a server added to and removed from the backend (a
//	            config edit, picked up by the file watch); a backend stopped
//	            and started again (its check fails, then passes)
//
// After -warmup, each series gets a least-squares line: its slope per
// hour, its growth over the run (slope times the measured span) and the
// noise it is judged against (three standard deviations of the residuals
// about the line, and at least a floor per metric: 8 MiB of RSS, 10
// goroutines, 8 descriptors). A series that grew more than its noise is a
// leak. A sampled process that is replaced (its PID changes) is reported
// too: none of the faults should restart one.
//
// It exits 1 on a leak, a restart or a failed step, 2 on bad flags.
//
// This program measures wall-clock time on purpose, so it uses the real
// clock directly; nothing in it is a state machine.
//
// Usage (root, Linux; keepalived is not needed; kube-apiserver and etcd as
// hack/kube-binaries.sh fetches them for -parts k8s):
//
//	sudo go run ./bench/soak                          # an hour, every part
//	sudo go run ./bench/soak -duration 10m -warmup 2m -v
//	sudo go run ./bench/soak -parts node,lb -duration 5m -warmup 1m -interval 2s -fault-every 5s
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
