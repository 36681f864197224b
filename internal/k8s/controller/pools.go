package controller

import (
	"context"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// Condition reasons on IPPools.
const (
	ReasonValid         = "Valid"
	ReasonInvalid       = "Invalid"
	ReasonAllAssigned   = "AllAssigned"
	ReasonAddressesFree = "AddressesFree"
)

// reconcilePool writes a pool's validity and fill level.
func (c *Controller) reconcilePool(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if err := c.prepare(ctx); err != nil {
		return reconcile.Result{}, err
	}
	var p v1alpha1.IPPool
	if err := c.client.Get(ctx, req.NamespacedName, &p); err != nil {
		if apierrors.IsNotFound(err) {
			c.m.poolSize.DeleteLabelValues(req.Name)
			c.m.poolUsed.DeleteLabelValues(req.Name)
			c.m.poolStale.DeleteLabelValues(req.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	orig := p.DeepCopy()
	c.mu.Lock()
	st := c.poolState[p.Name]
	var size uint64
	used := 0
	for _, st := range c.alloc.Stats() {
		if st.Name == p.Name {
			size, used = st.Size, st.Used
		}
	}
	c.mu.Unlock()
	now := metav1.NewTime(c.clk.Now())
	p.Status.ObservedGeneration = p.Generation
	p.Status.Size = int64(min(size, math.MaxInt64))
	p.Status.Assigned = int64(used)
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: p.Generation, LastTransitionTime: now,
		Status: metav1.ConditionTrue, Reason: ReasonValid, Message: fmt.Sprintf("%d addresses", size)}
	switch {
	case st.err != nil && st.fallback > 0:
		ready.Status, ready.Reason = metav1.ConditionFalse, ReasonInvalid
		ready.Message = fmt.Sprintf("%v; generation %d (the last valid one) is still in effect: %s (%d addresses)", st.err, st.fallback, st.ranges, size)
	case st.err != nil:
		ready.Status, ready.Reason = metav1.ConditionFalse, ReasonInvalid
		ready.Message = fmt.Sprintf("%v; no valid version of the pool is in effect (none seen since the controller started: the last valid version is not kept across restarts), so it gives no new addresses; Services keep the addresses they hold", st.err)
	}
	exh := metav1.Condition{Type: v1alpha1.ConditionExhausted, ObservedGeneration: p.Generation, LastTransitionTime: now,
		Status: metav1.ConditionFalse, Reason: ReasonAddressesFree, Message: fmt.Sprintf("%d of %d addresses assigned", used, size)}
	if (st.err == nil || st.fallback > 0) && size > 0 && uint64(used) >= size {
		exh.Status, exh.Reason = metav1.ConditionTrue, ReasonAllAssigned
	}
	oldReady := meta.FindStatusCondition(orig.Status.Conditions, ready.Type)
	oldExh := meta.FindStatusCondition(orig.Status.Conditions, exh.Type)
	meta.SetStatusCondition(&p.Status.Conditions, ready)
	meta.SetStatusCondition(&p.Status.Conditions, exh)
	if !equality.Semantic.DeepEqual(orig.Status, p.Status) {
		patch := client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
		if err := c.client.Status().Patch(ctx, &p, patch); err != nil {
			if apierrors.IsNotFound(err) {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, fmt.Errorf("write status of IPPool %s: %w", p.Name, err)
		}
	}
	c.m.poolSize.WithLabelValues(p.Name).Set(float64(size))
	c.m.poolUsed.WithLabelValues(p.Name).Set(float64(used))
	stale := 0.0
	if st.fallback > 0 {
		stale = 1
	}
	c.m.poolStale.WithLabelValues(p.Name).Set(stale)
	if ready.Status == metav1.ConditionFalse && (oldReady == nil || oldReady.Message != ready.Message) {
		c.events.Eventf(&p, nil, corev1.EventTypeWarning, ReasonInvalid, "Validate", "%s", ready.Message)
	}
	if exh.Status == metav1.ConditionTrue && (oldExh == nil || oldExh.Status != metav1.ConditionTrue) {
		c.events.Eventf(&p, nil, corev1.EventTypeWarning, "PoolExhausted", "Allocate", "all %d addresses are assigned; Services asking for more wait", size)
	}
	return reconcile.Result{}, nil
}
