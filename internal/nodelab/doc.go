// Package nodelab is the real-node test tier (issue 26): each node is a
// network namespace on one bridge (internal/testnet) with its own containerd
// and kubelet, so hostNetwork pods live on that node's link; optionally a
// controller-manager, scheduler and kube-proxy (nftables) beside
// internal/kubetest's API server, which the nodes reach through a forwarder
// at APIAddr. Images are OCI archives (internal/ociimage, hack/image)
// imported with ctr: there is no registry.
//
// Tests skip when not root or when containerd, runc, the CNI plugins or
// nsenter are missing (Debian: containerd runc containernetworking-plugins
// util-linux). Close kills every process of the lab by PID and removes its
// cgroups, mounts, namespaces and files. VIPSTACK_NODELAB_KEEP=1 keeps a
// failed test's directory. Design: docs/design/real-node-tier.md.
package nodelab
