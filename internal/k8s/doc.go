// Package k8s holds what vipstack's Kubernetes controller and node agent
// share, with no I/O: which VIP group a Service picks (vipstack's own
// annotation, or the keepalived-operator's, accepted as is for migration),
// which addresses it asks for, how a group's VRRP (RFC 5798) instances and
// their VRIDs are laid out, and which instance carries each virtual
// address.
//
// Layout: every node of a group is the preferred master of one instance
// per address family ("node/NAME"), and each Service with
// externalTrafficPolicy Local gets an instance of its own
// ("service/NAMESPACE/NAME") that runs only on nodes with a ready endpoint.
// A Cluster-policy address goes to a node instance by rendezvous hashing
// (Place), so adding or removing an address touches one instance and
// adding a node moves only the addresses its new instance wins. VRIDs are
// handed out by the controller (PlanInstances), unique across the groups
// that may share a link (v1alpha1.SameLink), and recorded in each group's status, which the agents
// read: agents never pick VRIDs themselves.
//
// The API types are in package v1alpha1; the controller and the agent are
// in the packages of those names below this one.
package k8s
