// Command node measures vipstack's node agent (`vipstack node`) on a master
// against what it replaces there, keepalived + haproxy + CoreDNS running
// the configurations `vipstack render` produces for the same node, in one
// run and one topology (the issue's "node agent memory (RSS) for a master,
// against keepalived + haproxy + CoreDNS running the rendered configs, in
// the same run; the time from a cluster-file change to the new state").
//
// The topology (internal/testnet, namespaces named vsP...) is three
// masters of the demo-like cluster "managed.example.com" (198.18.0.11-13;
// API VIP 198.18.0.5, Ingress VIP 198.18.0.7; VRRPv2 unicast, advert 1 s)
// and a client on one bridge. Every master has a stand-in API server (TLS,
// :6443, answers /readyz); master-0 alone has a stand-in router (:1936), so
// the Ingress VIP belongs on master-0 and the API VIP on one of the others;
// the client also serves the cluster's upstream resolver (198.18.0.53,
// NXDOMAIN for everything). master-1 and master-2 run `vipstack node` (a
// copy of the binary, so master-0 shares no page-cache pages with them)
// throughout.
//
// Part 1, at rest: master-0 runs, in turn, `vipstack node` and the
// upstream trio with the files render.Files wrote for master-0, started
// the way the rendered static pods start them: keepalived --dont-fork
// --vrrp --log-console --log-detail (Debian's keepalived), haproxy -W -db
// (Debian's haproxy) and a stock CoreDNS built from the module cache
// (github.com/coredns/coredns at the version go.mod pins, every in-tree
// plugin, built in its own module directory with its own go.sum). Each
// daemon's executable is dropped from the page cache before it starts, as
// on a freshly booted node (a binary go build has just written is cached in
// large folios that mmap maps whole, which adds some 30 MB of file-backed
// RSS to a Go binary the size of CoreDNS or vipstack). Each is ready when master-0 holds the Ingress VIP, exactly one master holds the
// API VIP, master-0's effective priorities are 65 (API) and 70 (Ingress),
// so every check passes, the client gets /readyz through master-0's load
// balancer on :9445 and master-0's DNS answers api.managed.example.com.
// After -settle, the RSS (VmRSS) and PSS of every process of the daemon
// (vipstack's supervisor and agent; keepalived's parent and VRRP child;
// haproxy's master and worker; CoreDNS) is sampled -samples times over
// -window and the CPU time (user+system, with reaped children: the check
// scripts keepalived forks) consumed over the window is read from
// /proc/PID/stat. The VIPs must not move during the window. Printed:
// medians, and vipstack / (keepalived + haproxy + CoreDNS).
//
// Part 2, reload latency: with `vipstack node` on all three masters
// (--watch-interval at its default, 1 s), the cluster file is replaced
// (write to a temporary file, rename) and the time to the new state is
// measured from the rename, once left to the watcher and once with SIGHUP
// sent to every node right after the rename: (a) ingressVIPs switched
// between 198.18.0.7 and 198.18.0.8: the new VIP held by a master, the
// final state (new VIP on master-0 alone, old VIP released everywhere),
// and *.apps.managed.example.com answered with the new VIP by all three
// masters' DNS, asked from the client every 5 ms; (b) a worker added: its
// name answered by all three masters' DNS. The upstream trio has no single
// equivalent operation (re-render three files and reload three daemons),
// so only vipstack's figures are printed.
//
// This program measures wall-clock time on purpose, so it uses the real
// clock directly; nothing in it is a state machine.
//
// Usage (root; Linux with keepalived, haproxy and curl installed; the
// first run builds CoreDNS, several minutes on 2 CPUs):
//
//	sudo go run ./bench/node                    # about 3 minutes after the builds
//	sudo go run ./bench/node -trials 3 -settle 10s -window 20s -v
//	sudo go run ./bench/node -coredns /path/to/coredns -rounds 2
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
