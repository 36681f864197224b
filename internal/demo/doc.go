// Package demo builds a throwaway OpenShift-style on-premise cluster out of
// Linux network namespaces and plays the story of its virtual IPs, for
// `vipstack demo` and for the node agent's end-to-end tests.
//
// The cluster is a bootstrap node, masters and workers on one bridge
// (internal/testnet), plus a client. Stand-in API servers (TLS, /readyz)
// run on the bootstrap and the masters, stand-in routers
// (:1936/healthz/ready and an HTTP app on :80) on the workers, and every
// node runs `vipstack node` with the same cluster file. The VIPs follow
// OpenShift's keepalived priorities (seed 000): the API VIP is the
// bootstrap's (70) until it leaves, then the masters' (40, +20 while the
// node's load balancer answers, +5 while its LB or its API answers); the
// Ingress VIP is 20, +50 while the node's router answers. VRRP itself is
// RFC 5798 (version 3, 100 ms adverts, to keep the story fast).
//
// A live view prints, on every change, who holds each VIP and why: each
// node's effective priority and which of its checks fail, read from the
// node agents' JSON status endpoints. It also reads each node's interface:
// a node that has a VIP's address but whose agent does not report MASTER
// for it (or does not answer) is shown as holding it too, so the view never
// shows one holder while the kernel has the VIP on several nodes; a step
// waiting for one holder names, when there are several, what each one's
// agent reports. Everything is removed on every exit path.
package demo
