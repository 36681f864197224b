package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/compat"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// MadeByLabel marks the VIPGroups the controller makes for MetalLB's
// L2Advertisements and kube-vip's ranges; its value is "metallb" or
// "kube-vip".
const MadeByLabel = "vipstack.io/made-for"

// DefaultMetalLBNamespace is where MetalLB's objects are read by default,
// the namespace MetalLB's own manifests install into.
const DefaultMetalLBNamespace = "metallb-system"

var (
	ipAddressPoolGVK    = schema.GroupVersionKind{Group: compat.MetalLBGroup, Version: compat.MetalLBVersion, Kind: "IPAddressPool"}
	l2AdvertisementGVK  = schema.GroupVersionKind{Group: compat.MetalLBGroup, Version: compat.MetalLBVersion, Kind: "L2Advertisement"}
	bgpAdvertisementGVK = schema.GroupVersionKind{Group: compat.MetalLBGroup, Version: compat.MetalLBVersion, Kind: "BGPAdvertisement"}
	bfdProfileGVK       = schema.GroupVersionKind{Group: compat.MetalLBGroup, Version: compat.MetalLBVersion, Kind: "BFDProfile"}
	metallbBGPPeerGVK   = schema.GroupVersionKind{Group: compat.MetalLBGroup, Version: compat.MetalLBBGPPeerVersion, Kind: "BGPPeer"}
	keepalivedGroupGVK  = schema.GroupVersionKind{Group: compat.KeepalivedGroupAPIGroup, Version: compat.KeepalivedGroupVersion, Kind: "KeepalivedGroup"}
	networkGVK          = schema.GroupVersionKind{Group: compat.OpenShiftConfigGroup, Version: compat.OpenShiftConfigVersion, Kind: "Network"}
)

// foreignKey is the one request of the reconciler of foreign objects.
var foreignKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "foreign-configuration"}}

// readForeign reads MetalLB's objects (when its CRDs were installed when
// the controller started) and kube-vip's ConfigMap from the cache, and
// returns them with a signature that changes whenever one does. c.mu is
// held.
func (c *Controller) readForeign(ctx context.Context) (compat.Config, string, error) {
	if c.opts.NoForeign && !c.keepalived && !c.openshift {
		return compat.Config{}, "", nil
	}
	var sig strings.Builder
	items := map[string][]unstructured.Unstructured{} // by kind
	if c.metallb {
		kinds := []schema.GroupVersionKind{ipAddressPoolGVK, l2AdvertisementGVK}
		if c.metallbBGP {
			kinds = append(kinds, metallbBGPKinds...)
		}
		for _, gvk := range kinds {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := c.cache.List(ctx, list, client.InNamespace(c.opts.MetalLBNamespace)); err != nil {
				return compat.Config{}, "", fmt.Errorf("list MetalLB %ss: %w", gvk.Kind, err)
			}
			for _, u := range list.Items {
				sig.WriteString(gvk.Kind + "/" + u.GetName() + "@" + u.GetResourceVersion() + ",")
			}
			items[gvk.Kind] = list.Items
		}
	}
	var (
		kitems []unstructured.Unstructured
		netObj *unstructured.Unstructured
	)
	if c.keepalived {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(keepalivedGroupGVK.GroupVersion().WithKind("KeepalivedGroupList"))
		if err := c.cache.List(ctx, list); err != nil {
			return compat.Config{}, "", fmt.Errorf("list KeepalivedGroups: %w", err)
		}
		for _, u := range list.Items {
			sig.WriteString("KeepalivedGroup/" + u.GetNamespace() + "/" + u.GetName() + "@" + u.GetResourceVersion() + ",")
		}
		kitems = list.Items
	}
	if c.openshift {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(networkGVK)
		err := c.cache.Get(ctx, types.NamespacedName{Name: compat.OpenShiftNetworkName}, u)
		switch {
		case err == nil:
			sig.WriteString("Network@" + u.GetResourceVersion() + ",")
			netObj = u
		case !apierrors.IsNotFound(err):
			return compat.Config{}, "", fmt.Errorf("read OpenShift Network %s: %w", compat.OpenShiftNetworkName, err)
		}
	}
	var data map[string]string
	var cm corev1.ConfigMap
	var err error
	if !c.opts.NoForeign {
		err = c.cache.Get(ctx, types.NamespacedName{Namespace: compat.KubeVIPConfigMapNamespace, Name: compat.KubeVIPConfigMapName}, &cm)
	}
	switch {
	case c.opts.NoForeign:
	case err == nil:
		data = cm.Data
		if data == nil {
			data = map[string]string{}
		}
		sig.WriteString("ConfigMap@" + cm.ResourceVersion)
	case !apierrors.IsNotFound(err):
		return compat.Config{}, "", fmt.Errorf("read ConfigMap %s/%s: %w", compat.KubeVIPConfigMapNamespace, compat.KubeVIPConfigMapName, err)
	}
	if c.built && sig.String() == c.foreignSig {
		return c.foreign, c.foreignSig, nil // unchanged: not converted again
	}
	var (
		pools    []compat.IPAddressPool
		advs     []compat.L2Advertisement
		bgpAdvs  []compat.BGPAdvertisement
		bgpPeers []compat.MetalLBBGPPeer
		profiles []compat.BFDProfile
	)
	for kind, us := range items {
		for _, u := range us {
			var err error
			switch kind {
			case ipAddressPoolGVK.Kind:
				var p compat.IPAddressPool
				if err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err == nil {
					pools = append(pools, p)
				}
			case bgpAdvertisementGVK.Kind:
				var a compat.BGPAdvertisement
				if err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &a); err == nil {
					bgpAdvs = append(bgpAdvs, a)
				}
			case metallbBGPPeerGVK.Kind:
				var p compat.MetalLBBGPPeer
				if err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err == nil {
					bgpPeers = append(bgpPeers, p)
				}
			case bfdProfileGVK.Kind:
				var b compat.BFDProfile
				if err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err == nil {
					profiles = append(profiles, b)
				}
			default:
				var a compat.L2Advertisement
				if err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &a); err == nil {
					advs = append(advs, a)
				}
			}
			if err != nil {
				c.log.Warn("MetalLB object not read", "kind", kind, "name", u.GetNamespace()+"/"+u.GetName(), "err", err)
			}
		}
	}
	var (
		kgroups []compat.KeepalivedGroup
		network *compat.OpenShiftNetwork
	)
	for _, u := range kitems {
		var g compat.KeepalivedGroup
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &g); err != nil {
			c.log.Warn("KeepalivedGroup not read", "name", u.GetNamespace()+"/"+u.GetName(), "err", err)
			continue
		}
		kgroups = append(kgroups, g)
	}
	if netObj != nil {
		var n compat.OpenShiftNetwork
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(netObj.Object, &n); err != nil {
			c.log.Warn("OpenShift Network not read", "name", netObj.GetName(), "err", err)
		} else {
			network = &n
		}
	}
	cfg := compat.Read(c.opts.MetalLBNamespace, pools, advs, data)
	if c.metallbBGP {
		cfg.AddMetalLBBGP(pools, bgpAdvs, bgpPeers, profiles, c.opts.Namespace)
	}
	cfg.AddKeepalived(kgroups, network)
	return cfg, sig.String(), nil
}

// reconcileForeign makes, updates and deletes the VIPGroups that serve
// MetalLB's and kube-vip's pools, reports what it refuses, and asks for
// another look at every Service those pools may serve.
func (c *Controller) reconcileForeign(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if err := c.prepare(ctx); err != nil {
		return reconcile.Result{}, err
	}
	c.mu.Lock()
	cfg := c.foreign
	c.mu.Unlock()
	want := map[k8s.GroupRef]compat.Group{}
	for _, g := range cfg.Groups {
		want[g.Ref] = g
	}
	var have v1alpha1.VIPGroupList
	if err := c.client.List(ctx, &have, client.HasLabels{MadeByLabel}); err != nil {
		return reconcile.Result{}, fmt.Errorf("list VIPGroups made for MetalLB and kube-vip: %w", err)
	}
	for i := range have.Items {
		g := &have.Items[i]
		ref := k8s.GroupRef{Namespace: g.Namespace, Name: g.Name}
		w, ok := want[ref]
		if !ok {
			if err := c.client.Delete(ctx, g); err != nil && !apierrors.IsNotFound(err) {
				return reconcile.Result{}, fmt.Errorf("delete VIPGroup %s (its %s is gone): %w", ref, g.Annotations[sourceAnnotation], err)
			}
			c.log.Info("VIPGroup deleted: what it was made for is gone", "group", ref.String(), "source", g.Annotations[sourceAnnotation])
			continue
		}
		delete(want, ref)
		if g.Labels[MadeByLabel] == compat.MadeForKubeVIP {
			continue // made once; the administrator may edit it
		}
		if !equalSpec(g.Spec, w.Spec) {
			g.Spec = w.Spec
			if err := c.client.Update(ctx, g); err != nil {
				return reconcile.Result{}, fmt.Errorf("update VIPGroup %s from %s: %w", ref, w.Source, err)
			}
			c.events.Eventf(g, nil, corev1.EventTypeNormal, "Updated", "Update", "spec follows %s", w.Source)
		}
	}
	refs := make([]k8s.GroupRef, 0, len(want))
	for r := range want {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
	for _, ref := range refs {
		w := want[ref]
		g := &v1alpha1.VIPGroup{Spec: w.Spec}
		g.Namespace, g.Name = ref.Namespace, ref.Name
		g.Labels = map[string]string{MadeByLabel: w.MadeFor}
		g.Annotations = map[string]string{sourceAnnotation: w.Source}
		if err := c.client.Create(ctx, g); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, fmt.Errorf("create VIPGroup %s for %s: %w", ref, w.Source, err)
		}
		c.log.Info("VIPGroup made", "group", ref.String(), "source", w.Source)
	}
	if err := c.syncMadePeers(ctx, cfg.Peers); err != nil {
		return reconcile.Result{}, err
	}
	c.mu.Lock()
	report := cfg.Problems
	if c.reported == problemsKey(report) {
		report = nil
	} else {
		c.reported = problemsKey(report)
	}
	c.mu.Unlock()
	// One Event per object and kind of problem, every problem in its
	// note: the events API folds Events that differ only in their note
	// into a series that keeps the first note.
	type eventKey struct {
		kind, ns, name string
		refused        bool
	}
	var order []eventKey
	notes := map[eventKey][]string{}
	for _, p := range report {
		msg := "foreign configuration has no effect"
		if p.Refused || p.Kind != keepalivedGroupGVK.Kind {
			msg = "foreign configuration refused"
		}
		c.log.Warn(msg, "err", p.Error())
		k := eventKey{p.Kind, p.Namespace, p.Name, p.Refused}
		if _, ok := notes[k]; !ok {
			order = append(order, k)
		}
		notes[k] = append(notes[k], p.Err.Error())
	}
	for _, k := range order {
		obj := &unstructured.Unstructured{}
		reason := "NotImplemented"
		switch k.kind {
		case "ConfigMap":
			obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		case keepalivedGroupGVK.Kind:
			obj.SetGroupVersionKind(keepalivedGroupGVK)
			if k.refused {
				reason = ReasonKeepalivedRefused
			}
		case networkGVK.Kind:
			obj.SetGroupVersionKind(networkGVK)
		case metallbBGPPeerGVK.Kind:
			obj.SetGroupVersionKind(metallbBGPPeerGVK)
		default:
			obj.SetGroupVersionKind(schema.GroupVersionKind{Group: compat.MetalLBGroup, Version: compat.MetalLBVersion, Kind: k.kind})
		}
		obj.SetNamespace(k.ns)
		obj.SetName(k.name)
		note := strings.Join(notes[k], "; ")
		if len(note) > maxNote {
			note = note[:maxNote-len(" (more in the log)")] + " (more in the log)"
		}
		c.events.Eventf(obj, nil, corev1.EventTypeWarning, reason, "Read", "%s", note)
	}
	if c.keepalived {
		if err := c.keepalivedConditions(ctx, cfg); err != nil {
			return reconcile.Result{}, err
		}
	}
	// Every Service that names no group may now be served differently.
	var svcs corev1.ServiceList
	if err := c.client.List(ctx, &svcs); err != nil {
		return reconcile.Result{}, err
	}
	for i := range svcs.Items {
		s := &svcs.Items[i]
		if g, _, _ := k8s.GroupOf(s.Namespace, s.Annotations); !g.IsZero() || s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		o := &corev1.Service{}
		o.Namespace, o.Name = s.Namespace, s.Name
		select {
		case c.retry <- event.GenericEvent{Object: o}:
		default:
		}
	}
	return reconcile.Result{}, nil
}

// maxNote is the longest note an Event may have (events.k8s.io/v1).
const maxNote = 1024

// sourceAnnotation on a VIPGroup the controller made names the object it
// was made for.
const sourceAnnotation = "vipstack.io/made-from"

func equalSpec(a, b v1alpha1.VIPGroupSpec) bool {
	return maps.Equal(a.NodeSelector, b.NodeSelector) && a.Interface == b.Interface && a.Link == b.Link && a.Unicast == b.Unicast &&
		a.VRRPVersion == b.VRRPVersion && a.AdvertIntervalMilliseconds == b.AdvertIntervalMilliseconds && slices.Equal(a.ExcludedVRIDs, b.ExcludedVRIDs) &&
		(a.AuthPassSecretRef == nil) == (b.AuthPassSecretRef == nil) && (a.AuthPassSecretRef == nil || *a.AuthPassSecretRef == *b.AuthPassSecretRef)
}

func problemsKey(ps []compat.Problem) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Error()
	}
	return strings.Join(s, "\n")
}

// ForeignCRDRecheck is how often, by default, the controller asks whether
// MetalLB's CRDs are served while they are not.
const ForeignCRDRecheck = 30 * time.Second

// awaitMetalLB waits, asking every Options.ForeignCRDRecheck, until
// MetalLB's CRDs are served, then reads them as if they had been there at
// start: the reconciler of foreign objects watches them (through one),
// the addresses MetalLB gave that Services show are reserved for them
// before MetalLB's pools are applied, and every Service is looked at
// again. It runs on the leader only.
func (c *Controller) awaitMetalLB(ctx context.Context, mgr manager.Manager, one handler.EventHandler) error {
	tick := time.NewTicker(c.opts.ForeignCRDRecheck)
	defer tick.Stop()
	for !hasMetalLB(mgr.GetRESTMapper()) {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
	c.log.Info("MetalLB's CRDs are served now: reading its IPAddressPools and L2Advertisements", "namespace", c.opts.MetalLBNamespace)
	kinds := []schema.GroupVersionKind{ipAddressPoolGVK, l2AdvertisementGVK}
	bgp := hasMetalLBBGP(mgr.GetRESTMapper())
	if bgp {
		kinds = append(kinds, metallbBGPKinds...)
	}
	for _, gvk := range kinds {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := c.foreignCtl.Watch(source.Kind[client.Object](mgr.GetCache(), u, one)); err != nil {
			return fmt.Errorf("watch MetalLB %ss: %w", gvk.Kind, err)
		}
	}
	var svcs corev1.ServiceList
	if err := c.client.List(ctx, &svcs); err != nil {
		return fmt.Errorf("list Services once MetalLB's CRDs appeared: %w", err)
	}
	// Older Services first, as at a start.
	sort.Slice(svcs.Items, func(i, j int) bool {
		ti, tj := svcs.Items[i].CreationTimestamp, svcs.Items[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return svcs.Items[i].Namespace+"/"+svcs.Items[i].Name < svcs.Items[j].Namespace+"/"+svcs.Items[j].Name
	})
	c.mu.Lock()
	c.metallb, c.metallbBGP = true, bgp
	n := 0
	if c.built {
		// Before that, the rebuild reserves them.
		foreign, _, err := c.readForeign(ctx)
		if err != nil {
			c.mu.Unlock()
			return fmt.Errorf("read MetalLB's objects once its CRDs appeared: %w", err)
		}
		for i := range svcs.Items {
			n += c.reserveForeignLocked(&svcs.Items[i], foreign)
		}
		if err := c.syncPoolsLocked(ctx); err != nil {
			c.log.Warn("applying MetalLB's pools failed; retried with the next Service", "err", err)
		}
	}
	c.mu.Unlock()
	c.log.Info("MetalLB's addresses reserved for the Services that show them", "addresses", n)
	select {
	case c.foreignKick <- event.GenericEvent{Object: &corev1.ConfigMap{}}:
	default: // a kick is pending already
	}
	for i := range svcs.Items {
		s := &corev1.Service{}
		s.Namespace, s.Name = svcs.Items[i].Namespace, svcs.Items[i].Name
		select {
		case c.retry <- event.GenericEvent{Object: s}:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

// hasKind reports whether the API serves gvk (checked once, at start:
// CRDs installed later need a restart of the controller; MetalLB's are
// the exception, see awaitMetalLB).
func hasKind(m meta.RESTMapper, gvk schema.GroupVersionKind) bool {
	_, err := m.RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil
}

// metallbBGPKinds are MetalLB's BGP objects, read with its pools when
// their CRDs are served too.
var metallbBGPKinds = []schema.GroupVersionKind{bgpAdvertisementGVK, metallbBGPPeerGVK, bfdProfileGVK}

// hasMetalLBBGP reports whether MetalLB's BGP CRDs are served.
func hasMetalLBBGP(m meta.RESTMapper) bool {
	for _, gvk := range metallbBGPKinds {
		if !hasKind(m, gvk) {
			return false
		}
	}
	return true
}

// syncMadePeers makes, updates and deletes the vipstack BGPPeers made for
// MetalLB's (labelled MadeByLabel, in the release namespace).
func (c *Controller) syncMadePeers(ctx context.Context, want []compat.Peer) error {
	var have v1alpha1.BGPPeerList
	if err := c.client.List(ctx, &have, client.InNamespace(c.opts.Namespace), client.HasLabels{MadeByLabel}); err != nil {
		return fmt.Errorf("list BGPPeers made for MetalLB: %w", err)
	}
	byName := map[string]compat.Peer{}
	for _, p := range want {
		byName[p.Name] = p
	}
	for i := range have.Items {
		p := &have.Items[i]
		w, ok := byName[p.Name]
		if !ok {
			if err := c.client.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete BGPPeer %s/%s (its %s is gone): %w", p.Namespace, p.Name, p.Annotations[sourceAnnotation], err)
			}
			c.log.Info("BGPPeer deleted: what it was made for is gone", "peer", p.Namespace+"/"+p.Name, "source", p.Annotations[sourceAnnotation])
			continue
		}
		delete(byName, p.Name)
		if !equality.Semantic.DeepEqual(p.Spec, w.Spec) {
			p.Spec = w.Spec
			if err := c.client.Update(ctx, p); err != nil {
				return fmt.Errorf("update BGPPeer %s/%s from %s: %w", p.Namespace, p.Name, w.Source, err)
			}
			c.events.Eventf(p, nil, corev1.EventTypeNormal, "Updated", "Update", "spec follows %s", w.Source)
		}
	}
	for _, w := range want {
		if _, ok := byName[w.Name]; !ok {
			continue
		}
		p := &v1alpha1.BGPPeer{Spec: w.Spec}
		p.Namespace, p.Name = w.Namespace, w.Name
		p.Labels = map[string]string{MadeByLabel: compat.MadeForMetalLB}
		p.Annotations = map[string]string{sourceAnnotation: w.Source}
		if err := c.client.Create(ctx, p); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create BGPPeer %s/%s for %s: %w", w.Namespace, w.Name, w.Source, err)
		}
		c.log.Info("BGPPeer made", "peer", w.Namespace+"/"+w.Name, "source", w.Source)
	}
	return nil
}

// hasMetalLB reports whether MetalLB's CRDs are served.
func hasMetalLB(m meta.RESTMapper) bool {
	for _, gvk := range []schema.GroupVersionKind{ipAddressPoolGVK, l2AdvertisementGVK} {
		if _, err := m.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return false
		}
	}
	return true
}

// foreignGroup decides which group serves a Service that names none, from
// the pools of the addresses it holds. It returns the condition to set.
func (c *Controller) foreignGroup(ips []string, cfg compat.Config, poolOf func(string) string) (k8s.GroupRef, string, error) {
	var got k8s.GroupRef
	var from string
	for _, ip := range ips {
		name := poolOf(ip)
		p, ok := cfg.Pool(name)
		switch {
		case name == "":
			return k8s.GroupRef{}, "", fmt.Errorf("%s lies in no pool", ip)
		case !ok:
			return k8s.GroupRef{}, "", fmt.Errorf("%s is of the IPPool %s, which no group serves by itself: name a group with the annotation %s", ip, name, k8s.GroupAnnotation)
		case p.Group.IsZero():
			return k8s.GroupRef{}, "", fmt.Errorf("%s is of %s, which no valid L2Advertisement announces", ip, p.Source)
		case !got.IsZero() && got != p.Group:
			return k8s.GroupRef{}, "", fmt.Errorf("%s is served by group %s (%s) but %s by group %s (%s); give the Service addresses of pools one L2Advertisement announces", ips[0], got, from, ip, p.Group, p.Source)
		}
		got, from = p.Group, p.Source
	}
	return got, from, nil
}

// KeepalivedConditionType is the condition the controller sets on each
// KeepalivedGroup: True while a VIPGroup of the same namespace and name
// serves it (reason ReasonKeepalivedServed, or ReasonKeepalivedNotes when
// some fields have no effect, each named in the message), False when it
// is refused (ReasonKeepalivedRefused).
const KeepalivedConditionType = "vipstack.io/Served"

// Reasons of KeepalivedConditionType.
const (
	ReasonKeepalivedServed  = "ServedByVIPGroup"
	ReasonKeepalivedNotes   = "ServedWithFieldsNotInEffect"
	ReasonKeepalivedRefused = "Refused"
)

// keepalivedConditions writes KeepalivedConditionType on every
// KeepalivedGroup, from the problems of cfg.
func (c *Controller) keepalivedConditions(ctx context.Context, cfg compat.Config) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(keepalivedGroupGVK.GroupVersion().WithKind("KeepalivedGroupList"))
	if err := c.cache.List(ctx, list); err != nil {
		return fmt.Errorf("list KeepalivedGroups: %w", err)
	}
	now := metav1.NewTime(c.clk.Now())
	for i := range list.Items {
		u := &list.Items[i]
		var notes, refusals []string
		for _, p := range cfg.Problems {
			if p.Kind != keepalivedGroupGVK.Kind || p.Namespace != u.GetNamespace() || p.Name != u.GetName() {
				continue
			}
			if p.Refused {
				refusals = append(refusals, p.Err.Error())
			} else {
				notes = append(notes, p.Err.Error())
			}
		}
		ref := k8s.GroupRef{Namespace: u.GetNamespace(), Name: u.GetName()}
		cond := metav1.Condition{Type: KeepalivedConditionType, ObservedGeneration: u.GetGeneration(), LastTransitionTime: now}
		switch {
		case len(refusals) > 0:
			cond.Status, cond.Reason = metav1.ConditionFalse, ReasonKeepalivedRefused
			cond.Message = "not served (no VIPGroup is made for it): " + strings.Join(refusals, "; ")
		case len(notes) > 0:
			cond.Status, cond.Reason = metav1.ConditionTrue, ReasonKeepalivedNotes
			cond.Message = fmt.Sprintf("served by VIPGroup %s; not in effect: %s", ref, strings.Join(notes, "; "))
		default:
			cond.Status, cond.Reason = metav1.ConditionTrue, ReasonKeepalivedServed
			cond.Message = fmt.Sprintf("served by VIPGroup %s", ref)
		}
		raw, _, err := unstructured.NestedSlice(u.Object, "status", "conditions")
		if err != nil {
			raw = nil
		}
		var conds []metav1.Condition
		for _, r := range raw {
			m, ok := r.(map[string]any)
			if !ok {
				continue
			}
			var x metav1.Condition
			if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &x) == nil {
				conds = append(conds, x)
			}
		}
		if old := meta.FindStatusCondition(conds, cond.Type); old != nil && old.Status == cond.Status && old.Reason == cond.Reason &&
			old.Message == cond.Message && old.ObservedGeneration == cond.ObservedGeneration {
			continue
		}
		meta.SetStatusCondition(&conds, cond)
		out := make([]any, len(conds))
		for j := range conds {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[j])
			if err != nil {
				return err
			}
			out[j] = m
		}
		u = u.DeepCopy()
		if err := unstructured.SetNestedSlice(u.Object, out, "status", "conditions"); err != nil {
			return err
		}
		if err := c.client.Status().Update(ctx, u); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("write condition %s of KeepalivedGroup %s: %w", cond.Type, ref, err)
		}
	}
	return nil
}
