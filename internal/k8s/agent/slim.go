package agent

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// slim is the agent's informer transform: slimService, k8s.SlimNode,
// k8s.SlimEndpointSlice, and no managed fields on anything else. One
// default transform rather than controller-runtime's ByObject, which asks
// the API server's discovery which kinds are namespaced when the manager
// is made: the agent must start (serve its probes, remove what a crashed
// run left) while the API server is out of reach.
func slim(o any) (any, error) {
	switch o.(type) {
	case *corev1.Service:
		return slimService(o)
	case *corev1.Node:
		return k8s.SlimNode(o)
	case *discoveryv1.EndpointSlice:
		return k8s.SlimEndpointSlice(o)
	}
	return k8s.StripManagedFields(o)
}

// slimService keeps of a Service what the agent reads (Views, BGPView,
// vipsOf): its name, namespace and deletion, the two annotations that name
// a group, spec.type, externalTrafficPolicy and externalIPs,
// status.loadBalancer, and the controller's conditions the agent obeys
// (address allocated, group, externalIPs allowed) without their times.
// The agent never writes a Service.
func slimService(o any) (any, error) {
	s, ok := o.(*corev1.Service)
	if !ok {
		return k8s.StripManagedFields(o)
	}
	out := &corev1.Service{TypeMeta: s.TypeMeta, ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, UID: s.UID,
		ResourceVersion: s.ResourceVersion, DeletionTimestamp: s.DeletionTimestamp}}
	for _, key := range []string{k8s.GroupAnnotation, k8s.KeepalivedGroupAnnotation} {
		if v, ok := s.Annotations[key]; ok {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[key] = v
		}
	}
	out.Spec = corev1.ServiceSpec{Type: s.Spec.Type, ExternalTrafficPolicy: s.Spec.ExternalTrafficPolicy, ExternalIPs: s.Spec.ExternalIPs}
	out.Status.LoadBalancer = s.Status.LoadBalancer
	for _, c := range s.Status.Conditions {
		switch c.Type {
		case v1alpha1.ServiceConditionAllocated, v1alpha1.ServiceConditionGroup, v1alpha1.ServiceConditionExternalIPs:
			out.Status.Conditions = append(out.Status.Conditions, metav1.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
		}
	}
	return out, nil
}

// keptChanged passes an update only when something the agent's cache keeps
// of the object changed (k8s.Unchanged): not the AnnouncedBy condition the
// controller writes after the agents announce a Service, nor a Node's
// heartbeat. Every update that passes makes the whole plan again.
var keptChanged = builder.WithPredicates(predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool { return !k8s.Unchanged(e.ObjectOld, e.ObjectNew) },
})
