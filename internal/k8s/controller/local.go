package controller

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// sliceIndex indexes EndpointSlices by their Service ("namespace/name").
const sliceIndex = "vipstack.io/service"

// maxNamesShown bounds the node lists in a condition message: a group or a
// Deployment may span hundreds of nodes.
const maxNamesShown = 10

func indexSlice(o client.Object) []string {
	sl, ok := o.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil
	}
	if k := k8s.EndpointSliceService(sl); k != "" {
		return []string{k}
	}
	return nil
}

// serviceOfSlice maps an EndpointSlice to its Service, only when that
// Service is one whose announcement depends on where its endpoints are:
// externalTrafficPolicy Local, in a group. On a big cluster most slices
// belong to other Services, and their churn costs one cache read each.
func (c *Controller) serviceOfSlice(ctx context.Context, o client.Object) []reconcile.Request {
	sl, ok := o.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil
	}
	name := sl.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return nil
	}
	n := types.NamespacedName{Namespace: sl.Namespace, Name: name}
	var svc corev1.Service
	if err := c.client.Get(ctx, n, &svc); err != nil {
		return nil // gone, or not seen yet: its own event brings it
	}
	if g, err := serviceGroup(&svc); err != nil || g.IsZero() ||
		svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		return nil
	}
	return []reconcile.Request{{NamespacedName: n}}
}

// readyNodesChanged passes an EndpointSlice update only when the set of
// nodes with a ready endpoint (or the Service it belongs to) changed:
// pods replaced on the same nodes, address or port edits do not matter.
var readyNodesChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		a, ok1 := e.ObjectOld.(*discoveryv1.EndpointSlice)
		b, ok2 := e.ObjectNew.(*discoveryv1.EndpointSlice)
		if !ok1 || !ok2 {
			return true
		}
		return k8s.EndpointSliceService(a) != k8s.EndpointSliceService(b) ||
			!slices.Equal(sortedSet(k8s.ReadyNodes(a)), sortedSet(k8s.ReadyNodes(b)))
	},
}

// keptChanged passes an update only when something the cache keeps of the
// object changed (k8s.Unchanged): not a Node's heartbeat.
var keptChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool { return !k8s.Unchanged(e.ObjectOld, e.ObjectNew) },
}

func sortedSet(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// localEndpoints returns the ServiceConditionLocalEndpoints condition of
// svc, or nil when none applies: the Service's policy is not Local, it is
// in no group (or one the controller has not laid out yet), or it holds no
// address. The agents hold a Local Service's addresses only on the nodes
// of its group that have a ready endpoint of it (agent.PlanNode); when
// there is none, nobody announces them, and the condition says why.
func (c *Controller) localEndpoints(ctx context.Context, svc *corev1.Service, group k8s.GroupRef, gerr error, now metav1.Time) (*metav1.Condition, error) {
	if svc.DeletionTimestamp != nil || gerr != nil || group.IsZero() ||
		svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		return nil, nil
	}
	key := svc.Namespace + "/" + svc.Name
	c.mu.Lock()
	var held []netip.Addr
	if c.isOurLB(svc) {
		held = append(held, c.alloc.IPs(key)...)
	}
	held = append(held, c.alloc.IPs(extKey(key))...)
	// Until the group is laid out its node list says nothing (it would
	// read "no nodes"): the group's status write brings the Service back.
	ins, known := c.groups[group.String()], c.laidOut[group.String()]
	var members []string
	for _, in := range ins {
		if in.Node != "" {
			members = append(members, in.Node)
		}
	}
	c.mu.Unlock()
	if len(held) == 0 || !known {
		return nil, nil
	}
	members = sortedSet(members)
	var list discoveryv1.EndpointSliceList
	if err := c.client.List(ctx, &list, client.InNamespace(svc.Namespace), client.MatchingFields{sliceIndex: key}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list EndpointSlices of Service %s: %w", key, err)
	}
	var ready []string
	for i := range list.Items {
		ready = append(ready, k8s.ReadyNodes(&list.Items[i])...)
	}
	ready = sortedSet(ready)
	var in []string
	for _, n := range ready {
		if slices.Contains(members, n) {
			in = append(in, n)
		}
	}
	cond := &metav1.Condition{Type: v1alpha1.ServiceConditionLocalEndpoints, ObservedGeneration: svc.Generation, LastTransitionTime: now}
	if len(in) > 0 {
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonEndpointsInGroup
		cond.Message = fmt.Sprintf("%s announced by the nodes of group %s with a ready endpoint: %s", joinAddrs(held), group, names(in))
		return cond, nil
	}
	nodes := names(members)
	if len(members) == 0 {
		nodes = "none (the group has no nodes)"
	}
	where := "there is no ready endpoint"
	if len(ready) > 0 {
		where = "ready endpoints are on: " + names(ready)
	}
	cond.Status, cond.Reason = metav1.ConditionFalse, ReasonNoEndpointInGroup
	cond.Message = fmt.Sprintf("no ready endpoint on the nodes of group %s: %s; %s; so no node announces %s (externalTrafficPolicy Local: only the group's nodes with a ready endpoint hold it)",
		group, nodes, where, joinAddrs(held))
	return cond, nil
}

// names lists up to maxNamesShown names and counts the rest.
func names(s []string) string {
	if len(s) <= maxNamesShown {
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(s[:maxNamesShown], ", "), len(s)-maxNamesShown)
}
