// Command upgrade replaces the binary of running `vipstack node`s
// (cluster-file mode) with a newer build and back, under steady load, and
// counts failed connections and VIP moves (issue 33, item 4).
//
// The cluster is internal/demo's: -masters masters and -workers workers on
// one bridge in network namespaces named with -prefix, the API VIP
// (198.18.0.5:6443, the masters' stand-in API servers), the DNS VIP
// (198.18.0.6:53, the node agents' DNS) and the Ingress VIP (198.18.0.7:80,
// the workers' stand-in routers), VRRP adverts every -advert. Two builds of
// ./cmd/vipstack stand in for old and new: their version differs, set by
// -ldflags as hack/build.sh sets it.
//
// From a client namespace, -rate new TCP connections a second go to every
// VIP (each connected, then closed; at most 256 in flight per VIP, a
// connect timeout of 5 s); the holders of every VIP are read every 20 ms.
// Every node in turn has its binary replaced, in rounds (-styles):
//
//   - systemd: a package upgrade under deploy/systemd/vipstack-node.service:
//     the other build is installed over the node's one binary path
//     (written beside it and renamed over it), then the service restarted:
//     SIGTERM to the agent's supervisor, and once it has exited the same
//     path started with the same arguments;
//   - static-pod: a static pod's new image: SIGTERM to the container's
//     process 1, and once it has exited the new image's binary (its own
//     path) started as process 1 of a PID namespace of its own.
//
// Each style upgrades every node (old to new), then downgrades it (new to
// old). The next node follows when every VIP has one holder again for
// -settle. The report gives, per replacement and VIP, the moves (a new sole
// holder), the samples without a holder and the failed connections. The
// target: no failed connection and no VIP moved twice by one replacement.
//
// It exits 1 when the target is missed, 2 on bad flags.
//
// This program measures wall-clock time on purpose, so it uses the real
// clock directly; nothing in it is a state machine.
//
// Usage (root, Linux):
//
//	sudo go run ./bench/upgrade
//	sudo go run ./bench/upgrade -masters 3 -workers 2 -rate 200 -advert 1s -styles systemd,static-pod
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
