package k8s

import (
	discoveryv1 "k8s.io/api/discovery/v1"
)

// EndpointSliceService returns "namespace/name" of the Service an
// EndpointSlice belongs to (its kubernetes.io/service-name label), or ""
// for a slice of no Service.
func EndpointSliceService(sl *discoveryv1.EndpointSlice) string {
	name := sl.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return ""
	}
	return sl.Namespace + "/" + name
}

// ReadyNodes returns the nodes of the slice's ready endpoints, in the
// slice's order, with repeats. An endpoint without a ready condition
// counts as ready (the EndpointSlice API says consumers should take an
// unknown state as ready); one without a node is left out. The agents
// hold a Local Service's addresses on exactly these nodes (those of the
// group), and the controller reports when none of them is in the group.
func ReadyNodes(sl *discoveryv1.EndpointSlice) []string {
	var out []string
	for _, ep := range sl.Endpoints {
		if ep.NodeName == nil || *ep.NodeName == "" || (ep.Conditions.Ready != nil && !*ep.Conditions.Ready) {
			continue
		}
		out = append(out, *ep.NodeName)
	}
	return out
}
