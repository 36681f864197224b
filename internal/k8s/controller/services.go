package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vipstack/vipstack/internal/allocator"
	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/compat"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// Condition reasons on Services.
const (
	ReasonAllocated     = "Allocated"
	ReasonReleased      = "Released"
	ReasonPoolExhausted = "PoolExhausted"
	ReasonPoolForbidden = "PoolForbidden"
	ReasonIPInUse       = "IPInUse"
	ReasonIPNotInPool   = "IPNotInPool"
	ReasonNoPool        = "NoPool"
	ReasonInvalidGroup  = "InvalidGroup"
	ReasonGroupNotFound = "GroupNotFound"
	// ReasonGroupPending: the Service names a VIPGroup the controller is
	// making for foreign configuration (a KeepalivedGroup); no Warning.
	ReasonGroupPending = "GroupPending"
	// ReasonNotImplemented: an annotation of another load balancer
	// vipstack does not implement.
	ReasonNotImplemented = "NotImplemented"
	ReasonNoGroup        = "NoGroup"
	ReasonInvalidRequest = "InvalidRequest"
	ReasonAllowed        = "Allowed"
	// ReasonEndpointsInGroup and ReasonNoEndpointInGroup are the reasons
	// of ServiceConditionLocalEndpoints.
	ReasonEndpointsInGroup  = "EndpointsInGroup"
	ReasonNoEndpointInGroup = "NoEndpointInGroup"
)

// waitRetry is how often a Service that waits for an address is looked at
// again even when nothing seems to have changed.
const waitRetry = 30 * time.Second

// isOurLB reports whether s is a load balancer vipstack may serve: no
// class, or the controller's.
func (c *Controller) isOurLB(s *corev1.Service) bool {
	return s.DeletionTimestamp == nil && s.Spec.Type == corev1.ServiceTypeLoadBalancer &&
		(s.Spec.LoadBalancerClass == nil || *s.Spec.LoadBalancerClass == c.opts.LoadBalancerClass)
}

// ReasonDefaultGroup is the reason of a True ServiceConditionGroup on a
// Service that names no group and is served by the controller's default
// group (Options.DefaultGroup).
const ReasonDefaultGroup = "DefaultGroup"

// defaultGroupFor returns the default group when it serves svc: a
// LoadBalancer of no class or the controller's that names no group and is
// not served from MetalLB's or kube-vip's pools.
func (c *Controller) defaultGroupFor(svc *corev1.Service, group k8s.GroupRef, gerr error, foreignMode bool) (k8s.GroupRef, bool) {
	if c.opts.DefaultGroup.IsZero() || !group.IsZero() || gerr != nil || foreignMode || !c.isOurLB(svc) {
		return group, false
	}
	return c.opts.DefaultGroup, true
}

func extKey(key string) string { return key + " (externalIPs)" }

func hasCondition(cs []metav1.Condition, t string) bool {
	return meta.FindStatusCondition(cs, t) != nil
}

func findCondition(cs []metav1.Condition, t string) *metav1.Condition {
	return meta.FindStatusCondition(cs, t)
}

// problem is a refusal turned into a condition reason and an Event.
type problem struct {
	reason string
	msg    string
}

func problemOf(err error) problem {
	reason := ReasonInvalidRequest
	switch {
	case errors.Is(err, allocator.ErrExhausted):
		reason = ReasonPoolExhausted
	case errors.Is(err, allocator.ErrForbidden):
		reason = ReasonPoolForbidden
	case errors.Is(err, allocator.ErrInUse):
		reason = ReasonIPInUse
	case errors.Is(err, allocator.ErrNotInPool):
		reason = ReasonIPNotInPool
	case errors.Is(err, allocator.ErrNoPool):
		reason = ReasonNoPool
	}
	return problem{reason: reason, msg: err.Error()}
}

func (c *Controller) reconcileService(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if err := c.prepare(ctx); err != nil {
		return reconcile.Result{}, err
	}
	var svc corev1.Service
	if err := c.client.Get(ctx, req.NamespacedName, &svc); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	key := req.NamespacedName.String()
	orig := svc.DeepCopy()
	group, groupFrom, gerr := k8s.GroupOf(svc.Namespace, svc.Annotations)
	c.mu.Lock()
	foreign := c.foreign
	c.mu.Unlock()
	// A Service that names no group and no class is served from
	// MetalLB's or kube-vip's pools when vipstack reads some; the group
	// then follows from the pool of its address.
	foreignMode := group.IsZero() && gerr == nil && svc.Spec.LoadBalancerClass == nil && !foreign.Empty()
	group, defaultMode := c.defaultGroupFor(&svc, group, gerr, foreignMode)
	now := metav1.NewTime(c.clk.Now())
	var (
		warnings []problem
		wait     bool
		newIPs   []netip.Addr
		released []netip.Addr
		// outcome is the condition reason to count in allocations_total
		// once the status is written: only what is new (an address given,
		// a condition that changed), not every look at the Service.
		outcome string
	)

	// Load-balancer addresses.
	if c.isOurLB(&svc) {
		cond := metav1.Condition{Type: v1alpha1.ServiceConditionAllocated, ObservedGeneration: svc.Generation, LastTransitionTime: now}
		var p *problem
		switch {
		case gerr != nil:
			p = &problem{ReasonInvalidGroup, gerr.Error()}
		case group.IsZero() && svc.Spec.LoadBalancerClass != nil:
			p = &problem{ReasonNoGroup, fmt.Sprintf("loadBalancerClass is %s but the Service names no group: add the annotation %s: NAMESPACE/NAME (or run the controller with --default-group)", c.opts.LoadBalancerClass, k8s.GroupAnnotation)}
		}
		if group.IsZero() && gerr == nil && svc.Spec.LoadBalancerClass == nil && !foreignMode {
			// Not ours: a LoadBalancer without our class and without a
			// group is left to whatever else serves load balancers, but
			// what we held for it (the group annotation was removed) goes,
			// whether or not a status showed it (the write may have failed).
			released = append(released, c.release(key)...)
			if hasCondition(svc.Status.Conditions, v1alpha1.ServiceConditionAllocated) {
				svc.Status.LoadBalancer.Ingress = nil
				meta.RemoveStatusCondition(&svc.Status.Conditions, v1alpha1.ServiceConditionAllocated)
			} else {
				// An address OpenShift auto-assigned to it stays reserved,
				// so no Service of ours is given it too.
				released = c.keepOpenShift(key, &svc, foreign, released)
			}
		} else {
			if p == nil && !foreignMode {
				var g v1alpha1.VIPGroup
				if err := c.client.Get(ctx, types.NamespacedName{Namespace: group.Namespace, Name: group.Name}, &g); err != nil {
					if !apierrors.IsNotFound(err) {
						return reconcile.Result{}, err
					}
					p = &problem{ReasonGroupNotFound, fmt.Sprintf("VIPGroup %s does not exist (named by the Service's annotation); addresses already held are kept", group)}
					if src, ok := foreign.MadeGroup(group); ok {
						// The foreign reconciler is making it: not a
						// mistake of the Service's, so no Warning.
						p = &problem{ReasonGroupPending, fmt.Sprintf("VIPGroup %s is being made for %s; addresses already held are kept", group, src)}
					}
				}
			}
			pc := poolChoice{name: strings.TrimSpace(svc.Annotations[k8s.PoolAnnotation]), from: k8s.PoolAnnotation}
			if pc.name == "" && groupFrom == k8s.KeepalivedGroupAnnotation && foreign.OpenShiftAutoAssign() {
				// As OpenShift gives keepalived-operator's Services
				// their addresses: from its autoAssignCIDRs.
				pc.candidates = []string{compat.OpenShiftAutoAssignPool}
			}
			if foreignMode {
				name, from, err := foreign.PoolRequest(svc.Annotations)
				if from == "" {
					// vipstack's own annotation, read too: an IPPool has
					// no group, which the group condition then says.
					name, from = pc.name, pc.from
				}
				pc = poolChoice{name: name, from: from, candidates: foreign.Candidates()}
				if err != nil && p == nil {
					p = &problem{ReasonInvalidRequest, err.Error()}
				}
			}
			var (
				shareWith string // the Service whose address this one shares
				sharedIPs []netip.Addr
				// bestEffort says which family PreferDualStack went
				// without, and why.
				bestEffort string
			)
			if p == nil {
				holder, ips, sp, err := c.sharing(ctx, &svc, group)
				if err != nil {
					return reconcile.Result{}, err
				}
				if sp != nil {
					p = sp
				}
				shareWith, sharedIPs = holder, ips
			}
			if p == nil && shareWith == "" {
				var probs []problem
				newIPs, released, probs = c.allocate(&svc, pc)
				if groupFrom == k8s.KeepalivedGroupAnnotation {
					for i := range probs {
						if probs[i].reason == ReasonNoPool {
							probs[i].msg += "; " + c.openShiftHint(foreign)
						}
					}
				}
				probs, bestEffort = c.dualStack(&svc, key, probs)
				if len(probs) > 0 {
					p = &probs[0]
					warnings = append(warnings, probs[1:]...)
				}
				if bestEffort != "" {
					wait = true // a pool of the other family may come
				}
			}
			ips := c.ips(key)
			if shareWith != "" {
				// The holder's nodes announce the address; this Service
				// holds none of its own.
				released = append(released, c.release(key)...)
				ips = sharedIPs
				wait = true // looked at again when the holder lets go
			}
			svc.Status.LoadBalancer.Ingress = ingressFor(ips, svc.Spec.IPFamilies)
			if foreignMode {
				gcond, w := c.foreignGroupCondition(&svc, ips, foreign, now)
				if g, err := k8s.ParseGroupRef(svc.Namespace, gcond.Message); err == nil && gcond.Status == metav1.ConditionTrue {
					group = g
				}
				if old := findCondition(orig.Status.Conditions, gcond.Type); w != nil && (old == nil || old.Message != gcond.Message) {
					warnings = append(warnings, *w)
				}
				meta.SetStatusCondition(&svc.Status.Conditions, gcond)
			}
			if p != nil {
				cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, p.reason, p.msg
				switch p.reason {
				case ReasonPoolExhausted, ReasonNoPool, ReasonPoolForbidden, ReasonIPInUse, ReasonIPNotInPool, ReasonGroupPending:
					// A release or a pool change may resolve it.
					wait = true
				}
			} else if shareWith != "" {
				skey, from := compat.SharingKey(svc.Annotations)
				cond.Status, cond.Reason = metav1.ConditionTrue, v1alpha1.ServiceReasonShared
				cond.Message = fmt.Sprintf("holds %s from group %s, shared with %s (annotation %s %q), which announces it", joinAddrs(ips), group, shareWith, from, skey)
			} else {
				cond.Status, cond.Reason = metav1.ConditionTrue, ReasonAllocated
				cond.Message = fmt.Sprintf("holds %s from group %s", joinAddrs(ips), group)
				if bestEffort != "" {
					cond.Message += "; " + bestEffort
				}
			}
			old := findCondition(orig.Status.Conditions, cond.Type)
			if p != nil && p.reason != ReasonGroupPending && (old == nil || old.Reason != p.reason || old.Message != p.msg) {
				warnings = append([]problem{*p}, warnings...)
			}
			meta.SetStatusCondition(&svc.Status.Conditions, cond)
			if len(newIPs) > 0 || old == nil || old.Status != cond.Status || old.Reason != cond.Reason || old.Message != cond.Message {
				outcome = cond.Reason
			}
		}
	}
	if defaultMode {
		// The agents read the group from this condition (k8s.ServiceGroup).
		meta.SetStatusCondition(&svc.Status.Conditions, metav1.Condition{Type: v1alpha1.ServiceConditionGroup, Status: metav1.ConditionTrue,
			Reason: ReasonDefaultGroup, Message: group.String(), ObservedGeneration: svc.Generation, LastTransitionTime: now})
	} else if !foreignMode || !c.isOurLB(&svc) {
		meta.RemoveStatusCondition(&svc.Status.Conditions, v1alpha1.ServiceConditionGroup)
	}
	// MetalLB's allow-shared-ip: whether the Service shares another's
	// address.
	if skey, from := compat.SharingKey(svc.Annotations); from != "" && c.isOurLB(&svc) {
		cond := metav1.Condition{Type: v1alpha1.ServiceConditionSharing, ObservedGeneration: svc.Generation, LastTransitionTime: now}
		if a := findCondition(svc.Status.Conditions, v1alpha1.ServiceConditionAllocated); a != nil && a.Reason == v1alpha1.ServiceReasonShared {
			cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, v1alpha1.ServiceReasonShared, a.Message
		} else {
			cond.Status, cond.Reason = metav1.ConditionFalse, ReasonNotShared
			cond.Message = fmt.Sprintf("holds its own addresses; Services with annotation %s %q on other ports (and the same externalTrafficPolicy, and for Local the same selector) may share them", from, skey)
		}
		meta.SetStatusCondition(&svc.Status.Conditions, cond)
	} else {
		meta.RemoveStatusCondition(&svc.Status.Conditions, v1alpha1.ServiceConditionSharing)
	}
	// The keepalived-operator's annotations vipstack lacks: said, never
	// passed over.
	if notes := compat.KeepalivedServiceNotes(svc.Annotations); len(notes) > 0 && !group.IsZero() && svc.DeletionTimestamp == nil {
		cond := metav1.Condition{Type: v1alpha1.ServiceConditionKeepalivedAnnotations, Status: metav1.ConditionFalse, Reason: ReasonNotImplemented,
			Message: strings.Join(notes, "; ") + "; the Service's addresses are served all the same", ObservedGeneration: svc.Generation, LastTransitionTime: now}
		if old := findCondition(orig.Status.Conditions, cond.Type); old == nil || old.Message != cond.Message {
			warnings = append(warnings, problem{ReasonNotImplemented, cond.Message})
		}
		meta.SetStatusCondition(&svc.Status.Conditions, cond)
	} else {
		meta.RemoveStatusCondition(&svc.Status.Conditions, v1alpha1.ServiceConditionKeepalivedAnnotations)
	}
	if c.isOurLB(&svc) {
		// Done above.
	} else if hasCondition(svc.Status.Conditions, v1alpha1.ServiceConditionAllocated) {
		// Deleted (with a finalizer of someone else), changed type or class.
		released = append(released, c.release(key)...)
		svc.Status.LoadBalancer.Ingress = nil
		meta.RemoveStatusCondition(&svc.Status.Conditions, v1alpha1.ServiceConditionAllocated)
	} else {
		released = append(released, c.release(key)...)
	}

	// spec.externalIPs of a Service in a group.
	extCond, extReleased, extWarn := c.externalIPs(&svc, group, gerr, now)
	released = append(released, extReleased...)
	if extCond != nil {
		old := findCondition(orig.Status.Conditions, extCond.Type)
		if extCond.Status == metav1.ConditionFalse && (old == nil || old.Message != extCond.Message) {
			warnings = append(warnings, extWarn)
		}
		meta.SetStatusCondition(&svc.Status.Conditions, *extCond)
	} else {
		meta.RemoveStatusCondition(&svc.Status.Conditions, v1alpha1.ServiceConditionExternalIPs)
	}

	// Local Services: does any node of the group announce them?
	localCond, err := c.localEndpoints(ctx, &svc, group, gerr, now)
	if err != nil {
		return reconcile.Result{}, err
	}
	var announce *problem // the Event to send, only on a change of status
	if localCond != nil {
		old := findCondition(orig.Status.Conditions, localCond.Type)
		switch {
		case localCond.Status == metav1.ConditionFalse && (old == nil || old.Status != metav1.ConditionFalse):
			announce = &problem{localCond.Reason, localCond.Message}
		case localCond.Status == metav1.ConditionTrue && old != nil && old.Status == metav1.ConditionFalse:
			announce = &problem{localCond.Reason, localCond.Message}
		}
		meta.SetStatusCondition(&svc.Status.Conditions, *localCond)
	} else {
		meta.RemoveStatusCondition(&svc.Status.Conditions, v1alpha1.ServiceConditionLocalEndpoints)
	}

	// Which node announces each address (the agents' status Leases), for
	// a Service a group serves: one of no group (its address only kept
	// from reuse, as OpenShift's own) gets no condition.
	var moved *problem
	var last map[netip.Addr]string // lastBy for this Service's addresses, as the condition leaves it
	var recheck time.Duration      // when the announcers may have changed
	if ips := c.ips(key); c.isOurLB(&svc) && len(ips) > 0 && gerr == nil && !group.IsZero() && svc.DeletionTimestamp == nil {
		by, expires, err := c.announcers(ctx)
		if err != nil {
			return reconcile.Result{}, err
		}
		for _, a := range ips {
			if len(by[a]) > 1 && !expires.IsZero() {
				// Two nodes say MASTER: one may be a dead agent whose
				// Lease has not expired yet; look again when it has.
				recheck = max(expires.Sub(c.clk.Now())+time.Second, time.Second)
			}
		}
		// On a copy of lastBy: kept only if the condition is written
		// (below), so a deferred write tells its move later.
		last = make(map[netip.Addr]string, len(ips))
		c.mu.Lock()
		for _, a := range ips {
			if n, ok := c.lastBy[a]; ok {
				last[a] = n
			}
		}
		c.mu.Unlock()
		var acond metav1.Condition
		acond, moved = announcedCondition(&svc, ips, by, findCondition(orig.Status.Conditions, v1alpha1.ServiceConditionAnnounced), last, now)
		if old := findCondition(orig.Status.Conditions, acond.Type); old != nil && old.Status == acond.Status && old.Reason == acond.Reason && old.Message == acond.Message {
			acond.LastTransitionTime = old.LastTransitionTime
		}
		meta.SetStatusCondition(&svc.Status.Conditions, acond)
	} else {
		meta.RemoveStatusCondition(&svc.Status.Conditions, v1alpha1.ServiceConditionAnnounced)
	}

	c.mu.Lock()
	if wait {
		c.waiting[req.NamespacedName] = true
	} else {
		delete(c.waiting, req.NamespacedName)
	}
	if len(released) > 0 {
		c.kickWaitingLocked()
	}
	c.mu.Unlock()

	// A write that only changes AnnouncedBy waits its turn (AnnouncedWrites);
	// the Service is looked at again then.
	if delay, ok := c.deferAnnounced(req.NamespacedName, orig.Status, svc.Status); ok {
		svc.Status = *orig.Status.DeepCopy()
		moved, last = nil, nil
		if recheck == 0 || delay < recheck {
			recheck = delay
		}
	}
	if !equality.Semantic.DeepEqual(orig.Status, svc.Status) {
		patch := client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
		if err := c.client.Status().Patch(ctx, &svc, patch); err != nil {
			if apierrors.IsNotFound(err) {
				c.forget(req.NamespacedName)
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, fmt.Errorf("write status of Service %s: %w", key, err)
		}
	}
	// Who announced last is kept once the condition that says so is
	// written: a write that failed (a conflict) is retried, and the retry
	// must still see the move and send its Event.
	if last != nil {
		c.mu.Lock()
		maps.Copy(c.lastBy, last)
		c.mu.Unlock()
	}
	if outcome != "" {
		c.m.allocations.WithLabelValues(outcome).Inc()
	}
	for _, a := range newIPs {
		c.log.Info("address assigned", "service", key, "address", a, "pool", c.poolOf(a), "group", group.String())
		c.events.Eventf(&svc, nil, corev1.EventTypeNormal, ReasonAllocated, "Allocate",
			"assigned %s from pool %s (group %s)", a, c.poolOf(a), group)
	}
	if len(released) > 0 {
		c.events.Eventf(&svc, nil, corev1.EventTypeNormal, ReasonReleased, "Release", "released %s", joinAddrs(released))
	}
	for _, w := range warnings {
		c.events.Eventf(&svc, nil, corev1.EventTypeWarning, w.reason, "Allocate", "%s", w.msg)
	}
	if announce != nil {
		typ := corev1.EventTypeNormal
		if announce.reason == ReasonNoEndpointInGroup {
			typ = corev1.EventTypeWarning
		}
		c.events.Eventf(&svc, nil, typ, announce.reason, "Announce", "%s", announce.msg)
	}
	if moved != nil {
		c.events.Eventf(&svc, nil, corev1.EventTypeNormal, moved.reason, "Announce", "%s", moved.msg)
	}
	res := reconcile.Result{RequeueAfter: recheck}
	if wait && (recheck == 0 || recheck > waitRetry) {
		res.RequeueAfter = waitRetry
	}
	return res, nil
}

// poolChoice is where a Service's new addresses may come from: the pool
// it names (by the annotation from), else the candidates in order (nil:
// every auto-assign pool).
type poolChoice struct {
	name, from string
	candidates []string
}

// allocate gives svc an address of each family it wants, honouring a
// requested address and a requested pool. It returns the addresses newly
// assigned, those given back, and the refusals.
func (c *Controller) allocate(svc *corev1.Service, pc poolChoice) (assigned, released []netip.Addr, probs []problem) {
	key := svc.Namespace + "/" + svc.Name
	as := allocator.Service{Key: key, Namespace: svc.Namespace, Labels: svc.Labels}
	families := wantedFamilies(svc)
	requested, err := k8s.RequestedIPs(svc.Spec.LoadBalancerIP, svc.Annotations)
	if err != nil {
		return nil, nil, []problem{{ReasonInvalidRequest, err.Error()}}
	}
	for _, r := range requested {
		if !slices.Contains(families, allocator.FamilyOf(r)) {
			return nil, nil, []problem{{ReasonInvalidRequest, fmt.Sprintf("requested address %s is %s but the Service's ipFamilies are %v", r, allocator.FamilyOf(r), svc.Spec.IPFamilies)}}
		}
	}
	pool := pc.name
	// What the status shows now, per family: kept when still allowed
	// (addresses a controller before us gave out).
	shown := map[allocator.Family]netip.Addr{}
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(ing.IP); err == nil {
			shown[allocator.FamilyOf(a)] = a
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	held := map[allocator.Family]netip.Addr{}
	for _, a := range c.alloc.IPs(key) {
		held[allocator.FamilyOf(a)] = a
	}
	for f, a := range held {
		if !slices.Contains(families, f) {
			c.alloc.ReleaseIP(key, a)
			released = append(released, a)
			delete(held, f)
		}
	}
	for _, f := range families {
		var want netip.Addr
		for _, r := range requested {
			if allocator.FamilyOf(r) == f {
				want = r
			}
		}
		cur, has := held[f]
		switch {
		case want.IsValid():
			if has && cur == want {
				continue
			}
			if _, err := c.alloc.Request(as, want); err != nil {
				probs = append(probs, problemOf(err))
				continue
			}
			if has {
				c.alloc.ReleaseIP(key, cur)
				released = append(released, cur)
			}
			assigned = append(assigned, want)
		case has && (pool == "" || c.alloc.PoolOf(cur) == pool || !c.alloc.HasPool(pool)):
			// Keep it. A named pool that is gone (deleted, invalid, or
			// refused for overlapping an older one) has nothing better to
			// offer: dropping the address would only take the Service
			// off the network, as it would for a Service without the
			// annotation, which keeps its address when its pool goes.
			if pool != "" && !c.alloc.HasPool(pool) {
				probs = append(probs, problem{ReasonNoPool, fmt.Sprintf("pool %s (annotation %s) does not exist or is not valid (see its status); the Service keeps %s meanwhile",
					pool, pc.from, cur)})
			}
		default:
			// The Service names another pool than its address's: move
			// it there, but give the old address back only once the new
			// one is found, so that a full pool leaves it where it is.
			if has {
				c.alloc.ReleaseIP(key, cur)
			}
			if s, ok := shown[f]; ok && s != cur {
				if p, err := c.alloc.Request(as, s); err == nil && (pool == "" || p == pool) {
					if has {
						released = append(released, cur)
					}
					continue // the status already shows it
				} else if err == nil {
					c.alloc.ReleaseIP(key, s)
				}
			}
			a, err := c.allocateFrom(as, f, pool, pc.candidates)
			if err != nil {
				if has {
					if rerr := c.alloc.Reserve(key, cur); rerr != nil {
						released = append(released, cur) // cannot happen: the lock is held throughout
					}
				}
				probs = append(probs, problemOf(err))
				continue
			}
			if has {
				released = append(released, cur)
			}
			assigned = append(assigned, a)
		}
	}
	return assigned, released, probs
}

// externalIPs checks spec.externalIPs of a Service that names a group: each
// must lie in a pool that admits the Service and be held by no other
// Service. It returns the condition to set (nil: none applies).
func (c *Controller) externalIPs(svc *corev1.Service, group k8s.GroupRef, gerr error, now metav1.Time) (*metav1.Condition, []netip.Addr, problem) {
	key := svc.Namespace + "/" + svc.Name
	ek := extKey(key)
	if svc.DeletionTimestamp != nil || len(svc.Spec.ExternalIPs) == 0 || group.IsZero() || gerr != nil {
		return nil, c.releaseKey(ek), problem{}
	}
	as := allocator.Service{Key: ek, Namespace: svc.Namespace, Labels: svc.Labels}
	c.mu.Lock()
	defer c.mu.Unlock()
	want := map[netip.Addr]bool{}
	var probs []string
	for i, s := range svc.Spec.ExternalIPs {
		a, err := netip.ParseAddr(s)
		if err != nil {
			probs = append(probs, fmt.Sprintf("spec.externalIPs[%d] %q is not an address", i, s))
			continue
		}
		want[a] = true
		if o, ok := c.alloc.Owner(a); ok && o == key {
			// Its own load-balancer address: OpenShift writes the
			// address it assigns to both status and spec.externalIPs.
			continue
		}
		if _, err := c.alloc.Request(as, a); err != nil {
			probs = append(probs, err.Error())
			delete(want, a)
		}
	}
	var released []netip.Addr
	for _, a := range c.alloc.IPs(ek) {
		if !want[a] || len(probs) > 0 {
			c.alloc.ReleaseIP(ek, a)
			released = append(released, a)
		}
	}
	cond := &metav1.Condition{Type: v1alpha1.ServiceConditionExternalIPs, ObservedGeneration: svc.Generation, LastTransitionTime: now}
	if len(probs) > 0 {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonIPNotInPool, strings.Join(probs, "; ")
		delete(c.extKeys, ek)
		return cond, released, problem{ReasonIPNotInPool, "spec.externalIPs refused: " + cond.Message}
	}
	c.extKeys[ek] = true
	cond.Status, cond.Reason = metav1.ConditionTrue, ReasonAllowed
	cond.Message = v1alpha1.ExternalIPsMessage(group.String(), svc.Spec.ExternalIPs)
	return cond, released, problem{}
}

// dualStack applies the Service's ipFamilyPolicy to the refusals of
// allocate. PreferDualStack is best effort: once the Service holds an
// address of one family, the refusal of the other is no failure but a note
// (returned) for the condition's message. RequireDualStack's refusals say
// that the policy needs both families.
func (c *Controller) dualStack(svc *corev1.Service, key string, probs []problem) ([]problem, string) {
	pol := svc.Spec.IPFamilyPolicy
	if pol == nil || len(probs) == 0 {
		return probs, ""
	}
	switch *pol {
	case corev1.IPFamilyPolicyPreferDualStack:
		if len(c.ips(key)) == 0 {
			return probs, ""
		}
		var notes []string
		for _, p := range probs {
			notes = append(notes, p.msg)
		}
		return nil, "ipFamilyPolicy PreferDualStack, best effort: " + strings.Join(notes, "; ")
	case corev1.IPFamilyPolicyRequireDualStack:
		for i := range probs {
			probs[i].msg = "ipFamilyPolicy RequireDualStack needs an address of each of " + familyList(svc.Spec.IPFamilies) + ": " + probs[i].msg
		}
	}
	return probs, ""
}

func familyList(fs []corev1.IPFamily) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, " and ")
}

// wantedFamilies are the families of the Service's ipFamilies that get an
// address: the first only for SingleStack, all for the dual-stack policies.
func wantedFamilies(svc *corev1.Service) []allocator.Family {
	var out []allocator.Family
	for _, f := range svc.Spec.IPFamilies {
		switch f {
		case corev1.IPv4Protocol:
			out = append(out, allocator.IPv4)
		case corev1.IPv6Protocol:
			out = append(out, allocator.IPv6)
		}
	}
	if len(out) == 0 {
		out = []allocator.Family{allocator.IPv4}
	}
	if svc.Spec.IPFamilyPolicy == nil || *svc.Spec.IPFamilyPolicy == corev1.IPFamilyPolicySingleStack {
		out = out[:1]
	}
	return out
}

// ingressFor orders the addresses as the Service's ipFamilies.
func ingressFor(ips []netip.Addr, fams []corev1.IPFamily) []corev1.LoadBalancerIngress {
	if len(ips) == 0 {
		return nil
	}
	sorted := slices.Clone(ips)
	first6 := len(fams) > 0 && fams[0] == corev1.IPv6Protocol
	slices.SortStableFunc(sorted, func(a, b netip.Addr) int {
		ra, rb := a.Is4() == first6, b.Is4() == first6
		switch {
		case ra == rb:
			return a.Compare(b)
		case ra:
			return 1
		}
		return -1
	})
	mode := corev1.LoadBalancerIPModeVIP
	out := make([]corev1.LoadBalancerIngress, len(sorted))
	for i, a := range sorted {
		out[i] = corev1.LoadBalancerIngress{IP: a.String(), IPMode: &mode}
	}
	return out
}

func (c *Controller) ips(key string) []netip.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.alloc.IPs(key)
}

func (c *Controller) poolOf(a netip.Addr) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.alloc.PoolOf(a); p != "" {
		return p
	}
	return "(none)"
}

func (c *Controller) release(key string) []netip.Addr { return c.releaseKey(key) }

func (c *Controller) releaseKey(key string) []netip.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.extKeys, key)
	out := c.alloc.Release(key)
	for _, a := range out {
		delete(c.lastBy, a)
	}
	return out
}

// forget releases everything a deleted Service held.
func (c *Controller) forget(n types.NamespacedName) {
	key := n.String()
	c.mu.Lock()
	a := c.alloc.Release(key)
	b := c.alloc.Release(extKey(key))
	for _, x := range a {
		delete(c.lastBy, x)
	}
	delete(c.extKeys, extKey(key))
	delete(c.waiting, n)
	delete(c.announceDue, n)
	if len(a)+len(b) > 0 {
		c.log.Info("Service deleted; addresses released", "service", key, "addresses", joinAddrs(append(a, b...)))
		c.kickWaitingLocked()
	}
	c.mu.Unlock()
}

func joinAddrs(as []netip.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

// allocateFrom allocates from the named pool, else from the first
// candidate with a free address (candidates nil: any auto-assign pool).
func (c *Controller) allocateFrom(as allocator.Service, f allocator.Family, pool string, candidates []string) (netip.Addr, error) {
	if pool != "" || candidates == nil {
		a, _, err := c.alloc.Allocate(as, f, pool)
		return a, err
	}
	var errs []error
	for _, name := range candidates {
		if !c.alloc.HasPool(name) {
			continue
		}
		a, _, err := c.alloc.Allocate(as, f, name)
		if err == nil {
			return a, nil
		}
		errs = append(errs, err)
	}
	for _, e := range errs {
		if errors.Is(e, allocator.ErrExhausted) {
			return netip.Addr{}, e
		}
	}
	if len(errs) > 0 {
		return netip.Addr{}, errors.Join(errs...)
	}
	return netip.Addr{}, &allocator.Error{Op: "allocate " + f.String(), Service: as.Key, Kind: allocator.ErrNoPool,
		Detail: "no auto-assign MetalLB IPAddressPool or kube-vip range is in effect; name a group with " + k8s.GroupAnnotation}
}

// Reasons of ServiceConditionGroup.
const (
	ReasonFromPool        = "FromPool"
	ReasonNoAdvertisement = "NoAdvertisement"
	ReasonNotShared       = "NotShared"
)

// foreignGroupCondition says which group serves a Service that names
// none, from the pools of the addresses it holds, and the Warning to send
// when none does.
func (c *Controller) foreignGroupCondition(svc *corev1.Service, ips []netip.Addr, cfg compat.Config, now metav1.Time) (metav1.Condition, *problem) {
	cond := metav1.Condition{Type: v1alpha1.ServiceConditionGroup, ObservedGeneration: svc.Generation, LastTransitionTime: now}
	if len(ips) == 0 {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonNoAdvertisement, "holds no address yet"
		return cond, nil
	}
	strs := make([]string, len(ips))
	for i, a := range ips {
		strs[i] = a.String()
	}
	g, _, err := c.foreignGroup(strs, cfg, func(ip string) string {
		a, _ := netip.ParseAddr(ip)
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.alloc.PoolOf(a)
	})
	if err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonNoAdvertisement, err.Error()+"; no node announces it"
		return cond, &problem{ReasonNoAdvertisement, cond.Message}
	}
	cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, ReasonFromPool, g.String()
	return cond, nil
}

// sharing decides whether svc shares the address of another Service
// under MetalLB's allow-shared-ip rules (compat.CanShare): the address it
// asks for, or shows, is held by a Service it may share with, or, asking
// for none, a Service with the same key it may share with holds one. It
// returns that Service's key and addresses, or a refusal; "" and no
// refusal when the Service takes addresses of its own.
func (c *Controller) sharing(ctx context.Context, svc *corev1.Service, group k8s.GroupRef) (string, []netip.Addr, *problem, error) {
	skey, _ := compat.SharingKey(svc.Annotations)
	if skey == "" {
		return "", nil, nil, nil
	}
	key := svc.Namespace + "/" + svc.Name
	want, err := k8s.RequestedIPs(svc.Spec.LoadBalancerIP, svc.Annotations)
	if err != nil {
		return "", nil, nil, nil // allocate says why
	}
	if len(want) == 0 {
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			if a, err := netip.ParseAddr(ing.IP); err == nil {
				want = append(want, a)
			}
		}
	}
	owners := map[string]bool{}
	c.mu.Lock()
	for _, a := range want {
		if o, ok := c.alloc.Owner(a); ok && o != key {
			owners[o] = true
		}
	}
	c.mu.Unlock()
	sameGroup := func(h *corev1.Service) bool {
		g, _, err := k8s.GroupOf(h.Namespace, h.Annotations)
		return err == nil && g == group
	}
	var holder *corev1.Service
	switch {
	case len(owners) > 1:
		return "", nil, &problem{ReasonIPInUse, fmt.Sprintf("%s are held by several Services; one Service's addresses can be shared, not a mix", joinAddrs(want))}, nil
	case len(owners) == 1:
		var owner string
		for o := range owners {
			owner = o
		}
		ns, name, ok := strings.Cut(owner, "/")
		if !ok || strings.HasSuffix(owner, extKey("")) {
			return "", nil, nil, nil // externalIPs: allocate says IPInUse
		}
		var h corev1.Service
		if err := c.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &h); err != nil {
			if apierrors.IsNotFound(err) {
				return "", nil, nil, nil
			}
			return "", nil, nil, err
		}
		if err := compat.CanShare(&h, svc); err != nil {
			return "", nil, &problem{ReasonIPInUse, fmt.Sprintf("%s is held by %s and may not be shared: %v", joinAddrs(want), owner, err)}, nil
		}
		if !sameGroup(&h) {
			return "", nil, &problem{ReasonIPInUse, fmt.Sprintf("%s is held by %s, which is in another group", joinAddrs(want), owner)}, nil
		}
		holder = &h
	case len(want) > 0:
		return "", nil, nil, nil // nobody else holds them
	default:
		// A new Service: share the address of one with the same key, as
		// MetalLB does, when the rules allow.
		var list corev1.ServiceList
		if err := c.client.List(ctx, &list); err != nil {
			return "", nil, nil, err
		}
		sort.Slice(list.Items, func(i, j int) bool {
			return list.Items[i].Namespace+"/"+list.Items[i].Name < list.Items[j].Namespace+"/"+list.Items[j].Name
		})
		for i := range list.Items {
			h := &list.Items[i]
			hk := h.Namespace + "/" + h.Name
			if k, _ := compat.SharingKey(h.Annotations); k != skey || hk == key || !c.isOurLB(h) || len(c.ips(hk)) == 0 {
				continue
			}
			if compat.CanShare(h, svc) == nil && sameGroup(h) {
				holder = h
				break
			}
		}
		if holder == nil {
			return "", nil, nil, nil
		}
	}
	hk := holder.Namespace + "/" + holder.Name
	ips := c.ips(hk)
	for _, a := range want {
		if !slices.Contains(ips, a) {
			return "", nil, &problem{ReasonIPInUse, fmt.Sprintf("%s shares addresses with %s, which holds %s, not %s", key, hk, joinAddrs(ips), a)}, nil
		}
	}
	return hk, ips, nil, nil
}

// openShiftHint says where a Service with the keepalived-operator's
// annotation gets an address, and why it got none.
func (c *Controller) openShiftHint(cfg compat.Config) string {
	why := "the auto-assign pool of OpenShift's Network is in effect but gave none"
	switch {
	case c.opts.NoKeepalivedOperator:
		why = "reading it is turned off (--read-keepalived-operator=false)"
	case !c.openshift:
		why = "its CRD (config.openshift.io/v1 Network) was not served when the controller started (restart the controller once it is)"
	case !cfg.OpenShiftAutoAssign():
		why = "Network " + compat.OpenShiftNetworkName + " has no valid spec.externalIP.autoAssignCIDRs"
	}
	return "keepalived-operator Services get their addresses from OpenShift's Network spec.externalIP.autoAssignCIDRs, as on OpenShift, and " + why +
		": set autoAssignCIDRs, create an IPPool, give the Service spec.loadBalancerIP, or list its addresses in spec.externalIPs"
}

// keepOpenShift reserves for key the addresses of svc's status that lie
// in OpenShift's pools (OpenShift gave them: the Service is not ours),
// and returns released without them.
func (c *Controller) keepOpenShift(key string, svc *corev1.Service, cfg compat.Config, released []netip.Addr) []netip.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		a, err := netip.ParseAddr(ing.IP)
		if err != nil {
			continue
		}
		if p, ok := cfg.InPool(a); !ok || !p.OpenShift() {
			continue
		}
		if c.alloc.Reserve(key, a) == nil {
			released = slices.DeleteFunc(released, func(r netip.Addr) bool { return r == a })
		}
	}
	return released
}

// deferAnnounced reports whether the status write from was to now changes
// nothing but the AnnouncedBy condition and its turn under
// Options.AnnouncedWrites has not come yet, and if so how long until it
// does. A Service keeps its place in line (announceDue) across the
// requeue, so a burst of conditions is written in turn at that rate
// rather than retried all at once.
func (c *Controller) deferAnnounced(n types.NamespacedName, was, now corev1.ServiceStatus) (time.Duration, bool) {
	t := c.clk.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	due, queued := c.announceDue[n]
	delete(c.announceDue, n)
	if equality.Semantic.DeepEqual(was, now) {
		return 0, false
	}
	rest := func(st corev1.ServiceStatus) corev1.ServiceStatus {
		st = *st.DeepCopy()
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ServiceConditionAnnounced)
		return st
	}
	if !equality.Semantic.DeepEqual(rest(was), rest(now)) {
		return 0, false // addresses or other conditions change: write now
	}
	if queued {
		if t.Before(due) {
			c.announceDue[n] = due
			return due.Sub(t), true
		}
		return 0, false
	}
	delay := c.announceRate.ReserveN(t, 1).DelayFrom(t)
	if delay <= 0 {
		return 0, false
	}
	c.announceDue[n] = t.Add(delay)
	return delay, true
}
