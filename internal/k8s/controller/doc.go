// Package controller is vipstack's Kubernetes controller. While it holds
// the leader-election Lease it gives Services of type LoadBalancer (and
// Services with spec.externalIPs that name a group) their virtual
// addresses from IPPools, writes status.loadBalancer.ingress with a
// condition and Events, releases addresses when a Service goes away or
// changes type, and gives every VIPGroup its VRRP instances (RFC 5798)
// with VRIDs unique across the cluster, recorded in the group's status for
// the node agents. A Service with externalTrafficPolicy Local that no
// node of its group can hold (no ready endpoint there) gets a False
// vipstack.io/LocalEndpointsInGroup condition and a Warning Event, from
// the EndpointSlices it watches (indexed by Service).
//
// An IPPool edited into a spec it refuses keeps its last valid version
// in effect while the controller runs (in memory: not after a restart);
// its Ready condition says which.
//
// The VRRP password a VIPGroup's authPassSecretRef names is copied into
// a Secret of the release namespace, the only one the agents may read
// (passwords.go).
//
// Its state lives in the API: after a restart (or a new leader) the first
// reconcile rebuilds the allocator from every Service's status and every
// group's status before anything new is handed out, so nothing moves.
package controller
