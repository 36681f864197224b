// Package nodelab runs vipstack the way a cluster does: a real container
// runtime (containerd and runc) and a real kubelet per node, each node its
// own network namespace on one L2 segment (internal/testnet), so that
// hostNetwork pods live on that node's link. It is the real-node test tier
// (issue 26): static pods that `vipstack render` writes, and, with the
// control plane on, DaemonSets and Deployments scheduled and rolled by a
// kube-controller-manager and kube-scheduler beside internal/kubetest's API
// server.
//
// Every node has its own containerd (root, state, socket and config in the
// lab's directory; the CRI plugin's sandbox image is the pause program in
// ./pause, built here; restrict_oom_score_adj, as root lacks
// CAP_SYS_RESOURCE on this machine kind) and its own kubelet (cgroupfs,
// failCgroupV1 off, a cgroupRoot of its own, its own root, log and static
// pod directories), both run inside the node's namespace and sharing one
// mount namespace, so the kubelet's volume mounts are the runtime's. Nodes
// reach the API server (which listens on loopback only) through a forwarder
// on the lab's bridge at APIAddr; pods on the nodes' small bridge network
// (198.19.N.0/24 on node N, routed between nodes) reach it the same way.
// Images are OCI archives (internal/ociimage, hack/image) imported with
// `ctr images import`: there is no registry.
//
// Tests skip with a message when not run as root, or when containerd, runc,
// the CNI plugins or nsenter are missing (Debian: containerd runc
// containernetworking-plugins util-linux); the Kubernetes binaries come from
// hack/kube-binaries.sh through internal/kubetest (built when not cached).
// Close, registered with t.Cleanup, kills every process of the lab by PID,
// removes its cgroups, mounts, namespaces and files, and restores the
// kernel settings the kubelet changes.
package nodelab
