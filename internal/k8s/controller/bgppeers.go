package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// ReasonOtherNamespace is the reason of a False Ready condition on a
// BGPPeer outside the release namespace, which the agents do not read.
const ReasonOtherNamespace = "OtherNamespace"

// reconcileBGPPeer writes a BGPPeer's Ready condition: whether the agents
// use it (it is in the release namespace and its spec is valid), with
// an Event when that changes. The agents check the same again, with
// each node's own address, and warn in their logs.
func (c *Controller) reconcileBGPPeer(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var p v1alpha1.BGPPeer
	if err := c.client.Get(ctx, req.NamespacedName, &p); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	orig := p.DeepCopy()
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: p.Generation,
		LastTransitionTime: metav1.NewTime(c.clk.Now()), Status: metav1.ConditionTrue, Reason: ReasonValid}
	switch err := p.Spec.Validate(); {
	case p.Namespace != c.opts.Namespace:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonOtherNamespace
		cond.Message = fmt.Sprintf("not used: the agents read the BGPPeers of namespace %s only (where they may read the password Secret); move it there", c.opts.Namespace)
	case err != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonInvalid, "not used: "+err.Error()
	default:
		var nodes corev1.NodeList
		if err := c.client.List(ctx, &nodes); err != nil {
			return reconcile.Result{}, err
		}
		n := 0
		for _, nd := range nodes.Items {
			if labels.SelectorFromSet(p.Spec.NodeSelector).Matches(labels.Set(nd.Labels)) {
				n++
			}
		}
		cond.Message = fmt.Sprintf("peer %s AS %d, nodes AS %d; %d nodes selected", p.Spec.PeerAddress, p.Spec.PeerASN, p.Spec.MyASN, n)
		if p.Spec.BFD != nil && p.Spec.GracefulRestartSeconds > 0 {
			// Valid, but the two work against each other (seen with FRR
			// 8.4 in TestBGPKubernetesDualStackBFD).
			cond.Message += fmt.Sprintf("; note: with bfd and gracefulRestartSeconds a router acting as graceful-restart helper (FRR does) keeps the routes of a session BFD took down as stale for %d s, so BFD does not remove a crashed node's routes; set one of the two", p.Spec.GracefulRestartSeconds)
		}
	}
	old := meta.FindStatusCondition(orig.Status.Conditions, cond.Type)
	p.Status.ObservedGeneration = p.Generation
	meta.SetStatusCondition(&p.Status.Conditions, cond)
	if !equality.Semantic.DeepEqual(orig.Status, p.Status) {
		patch := client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
		if err := c.client.Status().Patch(ctx, &p, patch); err != nil {
			if apierrors.IsNotFound(err) {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, fmt.Errorf("write status of BGPPeer %s: %w", req.NamespacedName, err)
		}
	}
	if old == nil || old.Reason != cond.Reason || (cond.Status == metav1.ConditionFalse && old.Message != cond.Message) {
		typ := corev1.EventTypeNormal
		if cond.Status == metav1.ConditionFalse {
			typ = corev1.EventTypeWarning
		}
		c.events.Eventf(&p, nil, typ, cond.Reason, "Validate", "%s", cond.Message)
	}
	return reconcile.Result{}, nil
}
