package k8s

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Informer transforms: what the controller's and the agents' caches keep
// of each object (controller-runtime's cache.Options.DefaultTransform and
// ByObject.Transform). Each runs on every object an informer lists or is
// told about, before it is stored and before any handler sees it, and may
// change the object in place. Fields they drop must never be read from the
// cache; an object written back must never be built from a slimmed copy
// (docs/design/memory.md).

// StripManagedFields drops metadata.managedFields: the server-side apply
// bookkeeping, one entry per writer with the JSON of the fields it set,
// often larger than the rest of the object, and never read by vipstack.
// An Update or a patch built from such a copy leaves the server's managed
// fields as they are (the API server keeps them when a request omits
// them).
func StripManagedFields(o any) (any, error) {
	if m, err := meta.Accessor(o); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return o, nil
}

// SlimEndpointSlice keeps of an EndpointSlice what the controller and the
// agents read: its Service label and, per endpoint, the node and the ready
// condition (EndpointSliceService, ReadyNodes); addresses, ports, hints,
// annotations and managed fields go.
func SlimEndpointSlice(o any) (any, error) {
	sl, ok := o.(*discoveryv1.EndpointSlice)
	if !ok {
		return StripManagedFields(o)
	}
	sl.ManagedFields, sl.Annotations, sl.Ports = nil, nil, nil
	for i, ep := range sl.Endpoints {
		sl.Endpoints[i] = discoveryv1.Endpoint{NodeName: ep.NodeName, Conditions: discoveryv1.EndpointConditions{Ready: ep.Conditions.Ready}}
	}
	return sl, nil
}

// SlimNode keeps of a Node what the controller and the agents read: its
// name, labels (group and BGPPeer node selectors, the exclusion label),
// deletion, InternalIPs and other addresses, and its Ready condition
// without the kubelet's heartbeat and transition times. A Node's status
// otherwise holds every image on the node, its capacity and system
// information, and changes with every heartbeat.
func SlimNode(o any) (any, error) {
	n, ok := o.(*corev1.Node)
	if !ok {
		return StripManagedFields(o)
	}
	out := &corev1.Node{TypeMeta: n.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID,
		ResourceVersion: n.ResourceVersion, DeletionTimestamp: n.DeletionTimestamp, Labels: n.Labels}}
	out.Status.Addresses = n.Status.Addresses
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			c.LastHeartbeatTime, c.LastTransitionTime = metav1.Time{}, metav1.Time{}
			out.Status.Conditions = []corev1.NodeCondition{c}
		}
	}
	return out, nil
}

// Unchanged reports whether two versions of a Service, Node or
// EndpointSlice, as the transforms above left them, differ in nothing
// but their resourceVersion: a change the reader dropped (a heartbeat, a
// condition it does not read). For other kinds it reports false.
func Unchanged(old, new any) bool {
	switch o := old.(type) {
	case *corev1.Service:
		return sameButVersion(o, new)
	case *corev1.Node:
		return sameButVersion(o, new)
	case *discoveryv1.EndpointSlice:
		return sameButVersion(o, new)
	}
	return false
}

// sameButVersion compares shallow copies of o and n (of o's type) with
// their resourceVersions blanked; neither object is changed.
func sameButVersion[T any, PT interface {
	*T
	metav1.Object
}](o PT, n any) bool {
	np, ok := n.(PT)
	if !ok || o == nil || np == nil {
		return false
	}
	a, b := *o, *np
	PT(&a).SetResourceVersion("")
	PT(&b).SetResourceVersion("")
	return equality.Semantic.DeepEqual(a, b)
}
