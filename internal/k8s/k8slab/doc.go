// Package k8slab builds a Kubernetes lab for root tests and benchmarks: a
// real kube-apiserver (package kubetest), nodes in network namespaces on
// one bridge (package testnet), each running `vipstack agent` (optionally
// under its supervisor and with only the DaemonSet's NET_ADMIN and
// NET_RAW), `vipstack controller` as a process of its own, an IPPool, a
// VIPGroup and LoadBalancer Services with fixed addresses (or none, and a
// pool of the caller's, for a program that creates its own, such as
// bench/k8s), optionally a client namespace. Agents reach the API through a
// proxy on their namespace's loopback, so nothing needs a route out.
//
// It also acts on the lab from outside, as an operator or a failing machine
// would: kill -9 of an agent, of its supervised child or of the
// controller, SIGSTOP/SIGCONT, a pulled cable, an interface set down,
// packet loss and delay, Services deleted and created again; and it
// samples who holds which address (Sampler) for bench/chaos's invariant
// checker.
//
// Its functions take a testing.TB because kubetest does; a program uses
// Program.
package k8slab
