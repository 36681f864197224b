// Package kubetest runs a real, throwaway Kubernetes control plane (etcd and
// kube-apiserver, no controller-manager, scheduler or kubelet) for tests that
// need an API server: the controller, the agent's Kubernetes sources and the
// deploy/ manifests.
//
// The binaries come from the tools/kube module (k8s.io/kubernetes and
// go.etcd.io/etcd/server/v3 at the versions its go.mod pins, today v1.36.3
// and v3.6.8), built once by hack/kube-binaries.sh into a cache directory
// keyed by that module's go.sum (BinDir), with the kubelet,
// kube-controller-manager, kube-scheduler and kube-proxy internal/nodelab
// runs. Both processes listen on 127.0.0.1 only, on
// free ports, with data in a temporary directory; the API server advertises
// 127.0.0.1 and runs no endpoint reconciler, so nothing it writes points off
// the machine.
//
// StartWith's ServingIPs add addresses to the serving certificate for
// clients that reach the API server through a forwarder (internal/nodelab's
// nodes, from their network namespaces); it still listens on loopback only.
//
// Authentication is a static token for an admin user in system:masters and
// authorization is RBAC, so tests can check least-privilege roles by
// impersonating other users ([Env.ConfigAs]). The API server is served over
// TLS with a certificate from a CA generated per environment.
//
// Environment:
//
//	VIPSTACK_KUBE_BIN=dir   use the kube-apiserver and etcd binaries in dir
//	VIPSTACK_SKIP_KUBE=1    skip every test that calls Start
//
// Otherwise Start runs hack/kube-binaries.sh, which returns at once when the
// binaries are cached and builds them (about 20 minutes on 2 cores) when not.
package kubetest
