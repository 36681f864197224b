package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// Condition reasons on VIPGroups.
const (
	ReasonInstancesAssigned = "InstancesAssigned"
	ReasonVRIDsExhausted    = "VRIDsExhausted"
	ReasonInvalidSpec       = "InvalidSpec"
	ReasonNoNodes           = "NoNodes"
)

// reconcileGroup lays out a group's instances and VRIDs. VRIDs are unique
// across the groups that may share a link (v1alpha1.SameLink): the table
// of what each group holds, and on which link, is kept in memory (seeded
// from every group's status by prepare), so two groups reconciled one
// after the other never pick the same VRID even before the cache has seen
// the first one's status. Groups on different links may reuse VRIDs.
func (c *Controller) reconcileGroup(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if err := c.prepare(ctx); err != nil {
		return reconcile.Result{}, err
	}
	key := req.NamespacedName.String()
	var g v1alpha1.VIPGroup
	if err := c.client.Get(ctx, req.NamespacedName, &g); err != nil {
		if apierrors.IsNotFound(err) {
			c.mu.Lock()
			delete(c.groups, key)
			delete(c.links, key)
			delete(c.laidOut, key)
			c.mu.Unlock()
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	orig := g.DeepCopy()
	verr := g.Spec.Validate()

	var nodes corev1.NodeList
	if err := c.client.List(ctx, &nodes, client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(g.Spec.NodeSelector)}); err != nil {
		return reconcile.Result{}, fmt.Errorf("list nodes of group %s: %w", key, err)
	}
	var names, excludedNodes []string
	for _, n := range nodes.Items {
		if n.DeletionTimestamp != nil {
			continue
		}
		if _, ok := n.Labels[corev1.LabelNodeExcludeBalancers]; ok {
			// As the cloud service controllers: such a node never
			// announces a load balancer's address.
			excludedNodes = append(excludedNodes, n.Name)
			continue
		}
		names = append(names, n.Name)
	}
	var svcs corev1.ServiceList
	// Read only: the cache's own objects, not copies (a group may have
	// thousands of Services, and this runs after every change of one).
	if err := c.client.List(ctx, &svcs, client.MatchingFields{groupIndex: key}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, fmt.Errorf("list Services of group %s: %w", key, err)
	}
	c.mu.Lock()
	var local []string
	for _, s := range svcs.Items {
		sk := s.Namespace + "/" + s.Name
		// Local Services with addresses: load-balancer ones, or accepted
		// spec.externalIPs (the agents hold those only on nodes with a
		// ready endpoint too, in the Service's instance).
		held := (c.isOurLB(&s) && len(c.alloc.IPs(sk)) > 0) || len(c.alloc.IPs(extKey(sk))) > 0
		// A BGP group's agents announce a Local Service from the nodes
		// with a ready endpoint without an instance of its own.
		if s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal && held && g.Spec.BGP == nil {
			local = append(local, sk)
		}
	}
	link := g.Spec.LinkOf()
	c.links[key] = linkSpec(&g.Spec)
	taken := map[int]string{}
	for other, ins := range c.groups {
		if o, known := c.links[other]; other == key || (known && !v1alpha1.SameLink(&g.Spec, &o)) {
			continue
		}
		for _, in := range ins {
			if in.VRID > 0 { // a BGP group's instances have none
				taken[in.VRID] = other
			}
		}
	}
	excluded := append([]int(nil), c.opts.ExcludedVRIDs...)
	for _, v := range g.Spec.ExcludedVRIDs {
		excluded = append(excluded, int(v))
	}
	var planned []k8s.Instance
	var perr error
	if g.Spec.BGP != nil {
		// A BGP group's agents run no VRRP: its nodes are laid out, with
		// no VRIDs, and leave the link's VRIDs to the VRRP groups.
		for _, n := range slices.Sorted(slices.Values(names)) {
			planned = append(planned, k8s.Instance{Name: k8s.NodeInstance(n), Node: n})
		}
	} else {
		planned, perr = k8s.PlanInstances(k8s.VRIDPlan{Group: key, Nodes: names, Local: local, Current: c.groups[key],
			Excluded: excluded, Taken: taken})
	}
	c.groups[key] = planned
	c.laidOut[key] = true
	c.mu.Unlock()

	g.Status.ObservedGeneration = g.Generation
	g.Status.Nodes = int32(len(names))
	g.Status.Link = link
	g.Status.VRIDsAvailable = int32(vridsAvailable(planned, excluded, taken))
	g.Status.Instances = make([]v1alpha1.GroupInstance, len(planned))
	for i, in := range planned {
		g.Status.Instances[i] = v1alpha1.GroupInstance{Name: in.Name, VRID: int32(in.VRID), Node: in.Node, Service: in.Service}
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: g.Generation, LastTransitionTime: metav1.NewTime(c.clk.Now())}
	switch {
	case verr != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonInvalidSpec, verr.Error()
	case perr != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonVRIDsExhausted, perr.Error()
	case len(names) == 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonNoNodes
		cond.Message = fmt.Sprintf("no node matches the nodeSelector %s", labels.SelectorFromSet(g.Spec.NodeSelector))
	case g.Spec.BGP != nil:
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonInstancesAssigned
		cond.Message = fmt.Sprintf("%d nodes announce over BGP; no VRIDs taken", len(names))
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonInstancesAssigned
		cond.Message = fmt.Sprintf("%d nodes, %d instances, VRIDs %s %s", len(names), len(planned), vridList(planned), linkPhrase(link))
	}
	if len(excludedNodes) > 0 {
		cond.Message += fmt.Sprintf("; nodes labelled %s left out: %s", corev1.LabelNodeExcludeBalancers, strings.Join(excludedNodes, ", "))
	}
	old := meta.FindStatusCondition(orig.Status.Conditions, cond.Type)
	meta.SetStatusCondition(&g.Status.Conditions, cond)
	if !equality.Semantic.DeepEqual(orig.Status, g.Status) {
		patch := client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
		if err := c.client.Status().Patch(ctx, &g, patch); err != nil {
			if apierrors.IsNotFound(err) {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, fmt.Errorf("write status of VIPGroup %s: %w", key, err)
		}
	}
	if old == nil || old.Reason != cond.Reason || (cond.Status == metav1.ConditionFalse && old.Message != cond.Message) {
		typ := corev1.EventTypeNormal
		if cond.Status == metav1.ConditionFalse {
			typ = corev1.EventTypeWarning
		}
		c.events.Eventf(&g, nil, typ, cond.Reason, "AssignVRIDs", "%s", cond.Message)
	}
	return reconcile.Result{}, nil
}

// linkSpec keeps of a group's spec what says its link.
func linkSpec(s *v1alpha1.VIPGroupSpec) v1alpha1.VIPGroupSpec {
	return v1alpha1.VIPGroupSpec{Interface: s.Interface, Link: s.Link}
}

// linkPhrase says where a group's VRIDs are unique.
func linkPhrase(link string) string {
	if link == "" {
		return "(unique in the cluster: the group is on the interface of the nodes' InternalIPs)"
	}
	return "(unique on link " + link + ")"
}

func vridList(ins []k8s.Instance) string {
	vs := make([]int, len(ins))
	for i, in := range ins {
		vs[i] = in.VRID
	}
	sort.Ints(vs)
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ",")
}

// vridsAvailable is how many VRIDs (1 to 255) are neither the group's own
// (planned), excluded, nor another group's on the same link (taken).
func vridsAvailable(planned []k8s.Instance, excluded []int, taken map[int]string) int {
	used := map[int]bool{}
	for _, in := range planned {
		if in.VRID > 0 {
			used[in.VRID] = true
		}
	}
	for _, v := range excluded {
		used[v] = true
	}
	n := 0
	for v := 1; v <= 255; v++ {
		if _, other := taken[v]; !used[v] && !other {
			n++
		}
	}
	return n
}
