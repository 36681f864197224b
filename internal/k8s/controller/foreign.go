package controller

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

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
	ipAddressPoolGVK   = schema.GroupVersionKind{Group: compat.MetalLBGroup, Version: compat.MetalLBVersion, Kind: "IPAddressPool"}
	l2AdvertisementGVK = schema.GroupVersionKind{Group: compat.MetalLBGroup, Version: compat.MetalLBVersion, Kind: "L2Advertisement"}
)

// foreignKey is the one request of the reconciler of foreign objects.
var foreignKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "foreign-configuration"}}

// readForeign reads MetalLB's objects (when its CRDs were installed when
// the controller started) and kube-vip's ConfigMap from the cache, and
// returns them with a signature that changes whenever one does. c.mu is
// held.
func (c *Controller) readForeign(ctx context.Context) (compat.Config, string, error) {
	if c.opts.NoForeign {
		return compat.Config{}, "", nil
	}
	var sig strings.Builder
	items := map[string][]unstructured.Unstructured{} // by kind
	if c.metallb {
		for _, gvk := range []schema.GroupVersionKind{ipAddressPoolGVK, l2AdvertisementGVK} {
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
	var data map[string]string
	var cm corev1.ConfigMap
	err := c.cache.Get(ctx, types.NamespacedName{Namespace: compat.KubeVIPConfigMapNamespace, Name: compat.KubeVIPConfigMapName}, &cm)
	switch {
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
		pools []compat.IPAddressPool
		advs  []compat.L2Advertisement
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
	return compat.Read(c.opts.MetalLBNamespace, pools, advs, data), sig.String(), nil
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
		if g.Labels[MadeByLabel] == "kube-vip" {
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
		made := "metallb"
		if ref == compat.KubeVIPGroup() {
			made = "kube-vip"
		}
		g := &v1alpha1.VIPGroup{Spec: w.Spec}
		g.Namespace, g.Name = ref.Namespace, ref.Name
		g.Labels = map[string]string{MadeByLabel: made}
		g.Annotations = map[string]string{sourceAnnotation: w.Source}
		if err := c.client.Create(ctx, g); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, fmt.Errorf("create VIPGroup %s for %s: %w", ref, w.Source, err)
		}
		c.log.Info("VIPGroup made", "group", ref.String(), "source", w.Source)
	}
	c.mu.Lock()
	report := cfg.Problems
	if c.reported == problemsKey(report) {
		report = nil
	} else {
		c.reported = problemsKey(report)
	}
	c.mu.Unlock()
	for _, p := range report {
		c.log.Warn("foreign configuration refused", "err", p.Error())
		obj := &unstructured.Unstructured{}
		switch p.Kind {
		case "ConfigMap":
			obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		default:
			obj.SetGroupVersionKind(schema.GroupVersionKind{Group: compat.MetalLBGroup, Version: compat.MetalLBVersion, Kind: p.Kind})
		}
		obj.SetNamespace(p.Namespace)
		obj.SetName(p.Name)
		c.events.Eventf(obj, nil, corev1.EventTypeWarning, "NotImplemented", "Read", "%v", p.Err)
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

// sourceAnnotation on a VIPGroup the controller made names the object it
// was made for.
const sourceAnnotation = "vipstack.io/made-from"

func equalSpec(a, b v1alpha1.VIPGroupSpec) bool {
	return maps.Equal(a.NodeSelector, b.NodeSelector) && a.Interface == b.Interface && a.Unicast == b.Unicast &&
		a.VRRPVersion == b.VRRPVersion && a.AdvertIntervalMilliseconds == b.AdvertIntervalMilliseconds && len(a.ExcludedVRIDs) == len(b.ExcludedVRIDs)
}

func problemsKey(ps []compat.Problem) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Error()
	}
	return strings.Join(s, "\n")
}

// hasMetalLB reports whether MetalLB's CRDs are served (checked once, at
// start: CRDs installed later need a restart of the controller).
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
