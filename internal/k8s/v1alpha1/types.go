package v1alpha1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VIPGroup is a set of nodes that hold the virtual addresses of the
// Services that name it, with VRRP. It is namespaced so that Services can
// name it as NAMESPACE/NAME, as the keepalived-operator's KeepalivedGroup.
type VIPGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VIPGroupSpec   `json:"spec"`
	Status VIPGroupStatus `json:"status,omitempty"`
}

// VIPGroupSpec says which nodes hold the addresses and how they speak VRRP.
type VIPGroupSpec struct {
	// NodeSelector picks the group's nodes by label; empty selects every
	// node.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Interface carries the addresses and the adverts; empty means the
	// interface holding the node's InternalIP.
	Interface string `json:"interface,omitempty"`
	// Link names the layer-2 network Interface is on, for VRIDs (VRRP
	// tells instances apart by link and VRID): groups that name
	// different interfaces may use the same VRIDs unless they name the
	// same link. Empty: the link is named by Interface. A group that
	// names no interface shares VRIDs with no group (SameLink).
	Link string `json:"link,omitempty"`
	// Unicast sends adverts to the other nodes' InternalIPs instead of
	// the VRRP multicast group (for networks that drop multicast).
	Unicast bool `json:"unicast,omitempty"`
	// VRRPVersion is 2 (RFC 3768, IPv4 only, whole-second intervals) or 3
	// (RFC 5798, the default). IPv6 addresses always use 3.
	VRRPVersion int32 `json:"vrrpVersion,omitempty"`
	// AdvertIntervalMilliseconds is the advertisement interval: 10 to
	// 40950 in steps of 10 with version 3, whole seconds up to 255 with
	// version 2. Default 1000.
	AdvertIntervalMilliseconds int32 `json:"advertIntervalMilliseconds,omitempty"`
	// NonRevertive is keepalived's nopreempt: a node that comes back (its
	// agent restarted) does not take back the addresses it is preferred
	// master of from the node that took them; they stay there until that
	// node fails.
	NonRevertive bool `json:"nonRevertive,omitempty"`
	// PreemptDelayMilliseconds is keepalived's preempt_delay: a node that
	// comes back waits this long before taking its addresses back (0 to
	// 1000000; 0: at once). Not with NonRevertive.
	PreemptDelayMilliseconds int32 `json:"preemptDelayMilliseconds,omitempty"`
	// ExcludedVRIDs are VRIDs other routers use on the network; the
	// controller never gives them to this group.
	ExcludedVRIDs []int32 `json:"excludedVRIDs,omitempty"`
	// AuthPassSecretRef names the key of a Secret in the group's
	// namespace whose value is the VRRP password (VRRPv2's simple
	// password, keepalived's auth_type PASS; only its first 8 bytes are
	// sent). It needs VRRPVersion 2. The agents read the Secret.
	AuthPassSecretRef *SecretKeyRef `json:"authPassSecretRef,omitempty"`
	// BGP, when set, announces the group's addresses by BGP instead of
	// VRRP: every eligible node of the group announces a host route (/32,
	// /128) with its own InternalIP as the next hop to the BGPPeers that
	// select it, and the routers spread the traffic over them (ECMP). The
	// VRRP fields above are then unused.
	BGP *GroupBGP `json:"bgp,omitempty"`
}

// GroupBGP are the path attributes of a BGP group's announcements.
type GroupBGP struct {
	// Communities are standard communities, "ASN:value" (RFC 1997).
	Communities []string `json:"communities,omitempty"`
	// LargeCommunities are "global:local1:local2" (RFC 8092).
	LargeCommunities []string `json:"largeCommunities,omitempty"`
	// LocalPref is the LOCAL_PREF sent to iBGP peers; unset: the peer's
	// default.
	LocalPref *uint32 `json:"localPref,omitempty"`
}

// SecretKeyRef names a key of a Secret in the referring object's
// namespace.
type SecretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// VIPGroupStatus is what the controller decided for the group.
type VIPGroupStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Nodes is the number of nodes the selector matches.
	Nodes int32 `json:"nodes,omitempty"`
	// Link is the link the group's VRIDs are unique on (spec.link, else
	// spec.interface); empty: the interface of the nodes' InternalIPs,
	// which may be any, so they are unique in the cluster.
	Link string `json:"link,omitempty"`
	// VRIDsAvailable is the group's VRID budget: how many more VRIDs it
	// could take (1 to 255 less the excluded ones, those of every other
	// group on its link and its own). A node takes one, and so does each
	// Service with externalTrafficPolicy Local.
	VRIDsAvailable int32 `json:"vridsAvailable"`
	// Instances are the group's VRRP instances with their VRIDs: one per
	// node (preferred master on it) and one per Service with
	// externalTrafficPolicy Local. VRIDs are unique across the groups on
	// the same link (SameLink).
	Instances  []GroupInstance    `json:"instances,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// GroupInstance is one VRRP instance of a group.
type GroupInstance struct {
	Name string `json:"name"`
	// VRID is the instance's VRRP virtual router ID; 0 (omitted) in a BGP
	// group, whose agents run no VRRP.
	VRID int32 `json:"vrid,omitempty"`
	// Node is the node preferred as master (node instances).
	Node string `json:"node,omitempty"`
	// Service is NAMESPACE/NAME (Local-policy Service instances).
	Service string `json:"service,omitempty"`
}

// VIPGroupList is a list of VIPGroups.
type VIPGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VIPGroup `json:"items"`
}

// IPPool is a set of addresses Services may get. It is cluster-scoped: an
// address belongs to one pool whatever the namespace.
type IPPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   IPPoolSpec   `json:"spec"`
	Status IPPoolStatus `json:"status,omitempty"`
}

// IPPoolSpec lists the addresses and who may have them.
type IPPoolSpec struct {
	// Addresses are CIDR blocks ("198.18.0.0/24", "fd00::/120"; every
	// address of the block), ranges ("198.18.0.10-198.18.0.20") or single
	// addresses.
	Addresses []string `json:"addresses"`
	// AutoAssign lets the controller pick addresses from this pool for
	// Services that did not ask for a pool or an address. Default true.
	AutoAssign *bool `json:"autoAssign,omitempty"`
	// Namespaces, when set, are the only namespaces whose Services may
	// use the pool.
	Namespaces []string `json:"namespaces,omitempty"`
	// ServiceSelector, when set, must match the Service's labels.
	ServiceSelector *metav1.LabelSelector `json:"serviceSelector,omitempty"`
}

// IPPoolStatus says how full the pool is.
type IPPoolStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Size is the number of addresses (saturating at 2^63-1).
	Size int64 `json:"size,omitempty"`
	// Assigned is the number of addresses Services hold.
	Assigned   int64              `json:"assigned,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// IPPoolList is a list of IPPools.
type IPPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []IPPool `json:"items"`
}

// Condition types and reasons.
const (
	// ConditionReady on a VIPGroup: every instance has a VRID. On an
	// IPPool: the pool is valid and in use; False (reason Invalid) when
	// its current spec is refused, the message saying whether its last
	// valid generation is still in effect.
	ConditionReady = "Ready"
	// ConditionExhausted on an IPPool: every address is assigned.
	ConditionExhausted = "Exhausted"

	// ServiceConditionAllocated on a Service: it holds its load-balancer
	// addresses (True) or why not (False).
	ServiceConditionAllocated = "vipstack.io/IPAllocated"
	// ServiceConditionExternalIPs on a Service with spec.externalIPs and
	// a group: the addresses may be held (True) or why not (False). Agents
	// hold the externalIPs its message lists (ExternalIPsMessage) while it
	// is True.
	ServiceConditionExternalIPs = "vipstack.io/ExternalIPsAllowed"
	// ServiceConditionLocalEndpoints on a Service with
	// externalTrafficPolicy Local that holds addresses in a group: some
	// node of the group has a ready endpoint, so the agents there hold
	// the addresses (True), or none has and nobody announces them (False,
	// naming the group's nodes and where the ready endpoints are).
	ServiceConditionLocalEndpoints = "vipstack.io/LocalEndpointsInGroup"
	// ServiceConditionGroup on a Service that names no group but holds
	// addresses of a MetalLB or kube-vip pool (package compat): True, its
	// message the group (NAMESPACE/NAME) that serves them, for the agents
	// and the controller's index; False when no group serves the pool.
	ServiceConditionGroup = "vipstack.io/ServedByGroup"
	// ServiceConditionSharing on a Service with MetalLB's allow-shared-ip
	// annotation: True (reason ServiceReasonShared) while it shares the
	// address another Service holds, False while it holds its own.
	ServiceConditionSharing = "vipstack.io/IPShared"
	// ServiceConditionKeepalivedAnnotations on a Service with the
	// keepalived-operator's spreadvips or verbatimconfig annotation,
	// which vipstack does not implement: False (reason NotImplemented),
	// naming each.
	ServiceConditionKeepalivedAnnotations = "vipstack.io/KeepalivedAnnotations"
	// ServiceConditionAnnounced on a Service that holds load-balancer
	// addresses: which node announces each (True, message "ADDR by NODE;
	// ..."), from the agents' status Leases, or that none does (False).
	// A Normal Event (reason Moved) says each move.
	ServiceConditionAnnounced = "vipstack.io/AnnouncedBy"
	// ServiceReasonShared is the reason of a True
	// ServiceConditionAllocated (and ServiceConditionSharing) on a Service
	// that shares another's address: the agents leave that address to the
	// holder's entry, which announces it.
	ServiceReasonShared = "Shared"
)

// ExternalIPsMessage is the message of a True ServiceConditionExternalIPs
// condition: it lists the addresses the controller allowed. Services have
// no metadata.generation, so the agents read the list (AllowedExternalIPs)
// rather than trust spec.externalIPs, which may have changed since.
func ExternalIPsMessage(group string, ips []string) string {
	return "group " + group + " holds " + strings.Join(ips, ", ")
}

// AllowedExternalIPs returns the addresses an ExternalIPsMessage lists.
func AllowedExternalIPs(msg string) []string {
	_, list, ok := strings.Cut(msg, " holds ")
	if !ok {
		return nil
	}
	return strings.Split(list, ", ")
}

// AnnouncedNodes reads the message of a True ServiceConditionAnnounced:
// each address with the nodes (comma-separated) that announce it.
func AnnouncedNodes(msg string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(msg, "; ") {
		if a, nodes, ok := strings.Cut(part, " by "); ok {
			out[a] = nodes
		}
	}
	return out
}
