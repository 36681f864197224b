// Package compat reads the configuration of the load balancers vipstack
// replaces, as those projects write it, so that a cluster can switch
// without rewriting an object: MetalLB's IPAddressPool and
// L2Advertisement (metallb.io/v1beta1, layer-2 mode) and its Service
// annotations, and kube-vip's Service annotation and the ranges of its
// "kubevip" ConfigMap (kube-vip-cloud-provider's format), the
// keepalived-operator's KeepalivedGroups (redhatcop.redhat.io/v1alpha1)
// and OpenShift's Network externalIP CIDRs (config.openshift.io/v1). It
// turns them into allocator pools and the VIPGroups that serve them, with
// no I/O.
package compat
