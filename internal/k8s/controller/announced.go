package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vipstack/vipstack/internal/k8s/agent"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// Reasons of ServiceConditionAnnounced, and of the Event on a move.
const (
	ReasonAnnounced    = "Announced"
	ReasonNotAnnounced = "NotAnnounced"
	ReasonMoved        = "Moved"
)

// leaseAnnounces returns the addresses an agent's status Lease says its
// node announces (instances in state MASTER), and the node; ok false for a
// Lease that is not an agent's, cannot be read, or was not renewed in its
// duration (a silent agent).
func leaseAnnounces(l *coordinationv1.Lease, now time.Time) (node string, addrs []netip.Addr, ok bool) {
	node, addrs, ok = parseLease(l)
	if !ok || !leaseLive(l, now) {
		return node, nil, false
	}
	return node, addrs, true
}

// leaseLive says whether l was renewed within its duration.
func leaseLive(l *coordinationv1.Lease, now time.Time) bool {
	return l.Spec.RenewTime != nil && l.Spec.LeaseDurationSeconds != nil &&
		now.Sub(l.Spec.RenewTime.Time) <= time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second
}

// parseLease reads the node and the addresses it announces from an
// agent's status Lease, whether or not it is live; ok false for a Lease
// that is not an agent's or cannot be read.
func parseLease(l *coordinationv1.Lease) (node string, addrs []netip.Addr, ok bool) {
	name, isAgent := strings.CutPrefix(l.Name, agent.LeasePrefix)
	if !isAgent {
		return "", nil, false
	}
	var p agent.Published
	if err := json.Unmarshal([]byte(l.Annotations[agent.StatusAnnotation]), &p); err != nil {
		return name, nil, false
	}
	for _, in := range p.Instances {
		if in.State != "MASTER" {
			continue
		}
		for _, v := range in.VIPs {
			a, err := netip.ParsePrefix(v)
			if err != nil {
				b, err2 := netip.ParseAddr(v)
				if err2 != nil {
					continue
				}
				a = netip.PrefixFrom(b, b.BitLen())
			}
			addrs = append(addrs, a.Addr().Unmap())
		}
	}
	return name, addrs, true
}

// parsedLease is what parseLease read of one version of a Lease.
type parsedLease struct {
	version string // resourceVersion
	node    string
	addrs   []netip.Addr
	ok      bool
}

// cachedLease is parseLease of l, read once per version of the Lease:
// every Service's reconcile looks at every agent's Lease, whose status
// lists every address the node holds.
func (c *Controller) cachedLease(l *coordinationv1.Lease) (node string, addrs []netip.Addr, ok bool) {
	c.leaseMu.Lock()
	p, hit := c.parsed[l.Name]
	c.leaseMu.Unlock()
	if hit && p.version == l.ResourceVersion && l.ResourceVersion != "" {
		return p.node, p.addrs, p.ok
	}
	node, addrs, ok = parseLease(l)
	c.leaseMu.Lock()
	c.parsed[l.Name] = parsedLease{version: l.ResourceVersion, node: node, addrs: addrs, ok: ok}
	c.leaseMu.Unlock()
	return node, addrs, ok
}

// announcers reads every agent's status Lease (from the cache: the
// release namespace, label agent.LeaseLabel) and returns the nodes that
// announce each address.
// expires is when the first of the Leases that announce something
// expires (zero: none does): a killed agent's Lease keeps saying MASTER
// until then, and the Service is looked at again at that moment.
func (c *Controller) announcers(ctx context.Context) (by map[netip.Addr][]string, expires time.Time, err error) {
	var leases coordinationv1.LeaseList
	// Read only (no copies): this runs for every Service reconciled.
	if err := c.client.List(ctx, &leases, client.InNamespace(c.opts.Namespace), client.MatchingLabels{agent.LeaseLabel: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, time.Time{}, fmt.Errorf("list the agents' status Leases: %w", err)
	}
	out := map[netip.Addr][]string{}
	now := c.clk.Now()
	for i := range leases.Items {
		l := &leases.Items[i]
		node, addrs, ok := c.cachedLease(l)
		if !ok || !leaseLive(l, now) {
			continue
		}
		if len(addrs) > 0 {
			end := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
			if expires.IsZero() || end.Before(expires) {
				expires = end
			}
		}
		for _, a := range addrs {
			if !slices.Contains(out[a], node) {
				out[a] = append(out[a], node)
			}
		}
	}
	for a := range out {
		sort.Strings(out[a])
	}
	return out, expires, nil
}

// servicesOfLease maps an agent's Lease to the Services of the addresses
// its node started or stopped announcing since its last look: only their
// condition can change. (A Lease is renewed every few seconds, and during
// a burst of new Services each agent's changes every second: looking
// again at every Service its node announces swamped the queue.)
func (c *Controller) servicesOfLease(_ context.Context, o client.Object) []reconcile.Request {
	l, ok := o.(*coordinationv1.Lease)
	if !ok {
		return nil
	}
	node, addrs, ok := leaseAnnounces(l, c.clk.Now())
	if node == "" {
		return nil
	}
	if !ok {
		addrs = nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	var out []reconcile.Request
	for _, a := range changedAddrs(c.lastAnnounced[node], addrs) {
		owner, held := c.alloc.Owner(a)
		owner = strings.TrimSuffix(owner, extKey(""))
		if !held || seen[owner] {
			continue
		}
		seen[owner] = true
		ns, name, _ := strings.Cut(owner, "/")
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
	}
	if c.lastAnnounced == nil {
		c.lastAnnounced = map[string][]netip.Addr{}
	}
	c.lastAnnounced[node] = addrs
	c.watchExpiryLocked(l, node, len(addrs) > 0)
	return out
}

// changedAddrs returns the addresses in one of was and now but not in
// the other.
func changedAddrs(was, now []netip.Addr) []netip.Addr {
	in := func(as []netip.Addr) map[netip.Addr]bool {
		m := make(map[netip.Addr]bool, len(as))
		for _, a := range as {
			m[a] = true
		}
		return m
	}
	inWas, inNow := in(was), in(now)
	var out []netip.Addr
	for _, a := range now {
		if !inWas[a] {
			out = append(out, a)
		}
	}
	for _, a := range was {
		if !inNow[a] {
			out = append(out, a)
		}
	}
	return out
}

// leaseExpiryMargin is how long after a Lease's expiry its timer fires,
// so that the Lease is expired when the Services are looked at.
const leaseExpiryMargin = 100 * time.Millisecond

// watchExpiryLocked arms the timer of node's Lease to fire when l expires
// (announcing: it says the node announces something), or stops it.
// Each event of the Lease re-arms it, so it fires only for an agent that
// stopped renewing. c.mu is held.
func (c *Controller) watchExpiryLocked(l *coordinationv1.Lease, node string, announcing bool) {
	if t, ok := c.leaseTimers[node]; ok {
		t.Stop()
		delete(c.leaseTimers, node)
	}
	if !announcing {
		return
	}
	end := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
	key := client.ObjectKeyFromObject(l)
	c.leaseTimers[node] = c.clk.AfterFunc(end.Sub(c.clk.Now())+leaseExpiryMargin, func() {
		ev := event.GenericEvent{Object: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
		select {
		case c.leaseExpired <- ev:
		default:
			// One entry per node fits unless the queue is stalled; the
			// Lease's next event looks again.
			c.log.Warn("the queue of expired agent Leases is full", "lease", key.String())
		}
	})
}

// servicesOfExpiredLease maps the Lease whose timer fired to the Services
// its node announced, reading the Lease as it is now: renewed since, it
// re-arms the timer; expired or gone, the node announces nothing.
func (c *Controller) servicesOfExpiredLease(ctx context.Context, o client.Object) []reconcile.Request {
	var l coordinationv1.Lease
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(o), &l); err != nil {
		if !apierrors.IsNotFound(err) {
			c.log.Warn("reading an agent's status Lease failed", "lease", client.ObjectKeyFromObject(o).String(), "err", err)
			return nil
		}
		// Gone: as expired (an empty Lease announces nothing).
		l = coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: o.GetNamespace(), Name: o.GetName()}}
	}
	return c.servicesOfLease(ctx, &l)
}

// announcedCondition says which node announces each of the Service's
// addresses, and the Event to send when one moved since old said.
// last holds the nodes that last announced each address (kept across a
// moment when none does, as during a failover); the condition's message
// seeds it after a restart.
func announcedCondition(svc *corev1.Service, ips []netip.Addr, by map[netip.Addr][]string, old *metav1.Condition, last map[netip.Addr]string, now metav1.Time) (metav1.Condition, *problem) {
	cond := metav1.Condition{Type: v1alpha1.ServiceConditionAnnounced, ObservedGeneration: svc.Generation, LastTransitionTime: now}
	var parts, none, moves []string
	prev := v1alpha1.AnnouncedNodes(conditionMessage(old))
	for _, a := range ips {
		if n, ok := last[a]; ok {
			prev[a.String()] = n
		}
	}
	for _, a := range ips {
		nodes := by[a]
		if len(nodes) == 0 {
			none = append(none, a.String())
			continue
		}
		now := strings.Join(nodes, ",")
		parts = append(parts, a.String()+" by "+now)
		if len(nodes) > 1 {
			continue // during a failover: the move is told once it is over
		}
		if was, ok := prev[a.String()]; ok && was != now && !strings.Contains(was, ",") {
			moves = append(moves, fmt.Sprintf("%s moved from %s to %s", a, was, now))
		}
		last[a] = now
	}
	switch {
	case len(parts) == 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonNotAnnounced
		cond.Message = "no agent reports announcing " + strings.Join(none, ", ")
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonAnnounced
		cond.Message = strings.Join(parts, "; ")
		if len(none) > 0 {
			cond.Message += "; not announced: " + strings.Join(none, ", ")
		}
	}
	if len(moves) > 0 {
		return cond, &problem{ReasonMoved, strings.Join(moves, "; ")}
	}
	return cond, nil
}

func conditionMessage(c *metav1.Condition) string {
	if c == nil || c.Status != metav1.ConditionTrue {
		return ""
	}
	return c.Message
}
