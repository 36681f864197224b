package agent

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// Interfaces finds network interfaces on this node.
type Interfaces interface {
	// Exists reports whether the named interface exists.
	Exists(name string) bool
	// Holding returns the interface that has addr.
	Holding(addr netip.Addr) (string, error)
}

// HostInterfaces looks at the interfaces of the network namespace the
// process runs in.
type HostInterfaces struct{}

func (HostInterfaces) Exists(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}

func (HostInterfaces) Holding(addr netip.Addr) (string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("list interfaces: %w", err)
	}
	for _, ifi := range ifs {
		as, err := ifi.Addrs()
		if err != nil {
			continue
		}
		for _, a := range as {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == addr {
					return ifi.Name, nil
				}
			}
		}
	}
	return "", fmt.Errorf("no interface has %s", addr)
}

// Views reads what PlanNode needs from the API (through r, normally the
// agent's cache): every valid VIPGroup with its instances, the addresses
// of the Services that name it, the nodes' InternalIPs and, for Local
// Services, the nodes with a ready endpoint. Groups whose interface does
// not exist here are left out with a warning, so one wrong group never
// stops the others. The VRRP passwords of groups with authPassSecretRef
// are read from the controller's copies (pw); a group whose copy cannot be
// read is left out with a warning (running it without would split it).
func Views(ctx context.Context, r client.Reader, node string, ifs Interfaces, pw Passwords) ([]GroupView, []string, error) {
	if pw.Reader == nil {
		pw.Reader = r
	}
	if pw.Namespace == "" {
		pw.Namespace = k8s.DefaultNamespace
	}
	var warns []string
	var groups v1alpha1.VIPGroupList
	if err := r.List(ctx, &groups); err != nil {
		return nil, nil, fmt.Errorf("list VIPGroups: %w", err)
	}
	// Nodes, Services and EndpointSlices are read only, and listed after
	// every change of any: the cache's own objects, not copies of
	// thousands of them.
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, fmt.Errorf("list Nodes: %w", err)
	}
	addrs := map[string][]netip.Addr{}
	for _, n := range nodes.Items {
		if _, ok := n.Labels[corev1.LabelNodeExcludeBalancers]; ok && n.Name == node {
			// The controller leaves such a node out of every group; the
			// agent does not wait for it to say so.
			return nil, []string{fmt.Sprintf("node %s is labelled %s: it announces no Service address", node, corev1.LabelNodeExcludeBalancers)}, nil
		}
		for _, a := range n.Status.Addresses {
			if a.Type != corev1.NodeInternalIP {
				continue
			}
			if ip, err := netip.ParseAddr(a.Address); err == nil {
				addrs[n.Name] = append(addrs[n.Name], ip)
			}
		}
	}
	var svcs corev1.ServiceList
	if err := r.List(ctx, &svcs, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, fmt.Errorf("list Services: %w", err)
	}
	byGroup := map[k8s.GroupRef][]*corev1.Service{}
	needReady := map[string]bool{}
	for i := range svcs.Items {
		s := &svcs.Items[i]
		g, err := k8s.ServiceGroup(s.Namespace, s.Annotations, s.Status.Conditions, v1alpha1.ServiceConditionGroup)
		if err != nil || g.IsZero() {
			continue
		}
		byGroup[g] = append(byGroup[g], s)
		if s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
			needReady[s.Namespace+"/"+s.Name] = true
		}
	}
	ready := map[string][]string{}
	if len(needReady) > 0 {
		var slices discoveryv1.EndpointSliceList
		if err := r.List(ctx, &slices, client.UnsafeDisableDeepCopy); err != nil {
			return nil, nil, fmt.Errorf("list EndpointSlices: %w", err)
		}
		for _, sl := range slices.Items {
			key := k8s.EndpointSliceService(&sl)
			if !needReady[key] {
				continue
			}
			ready[key] = append(ready[key], k8s.ReadyNodes(&sl)...)
		}
	}
	var out []GroupView
	for _, g := range groups.Items {
		key := g.Namespace + "/" + g.Name
		member := false
		for _, in := range g.Status.Instances {
			if in.Node == node {
				member = true
			}
		}
		if !member || g.Spec.BGP != nil { // BGP groups: BGPView
			continue
		}
		if err := g.Spec.Validate(); err != nil {
			warns = append(warns, fmt.Sprintf("group %s is not served: %v", key, err))
			continue
		}
		iface := g.Spec.Interface
		if iface == "" {
			self, ok := addrOf(addrs[node], 4)
			if !ok {
				self, ok = addrOf(addrs[node], 6)
			}
			if !ok {
				warns = append(warns, fmt.Sprintf("group %s is not served: it names no interface and node %s has no InternalIP to find one by", key, node))
				continue
			}
			name, err := ifs.Holding(self)
			if err != nil {
				warns = append(warns, fmt.Sprintf("group %s is not served: it names no interface and %v (the node's InternalIP)", key, err))
				continue
			}
			iface = name
		} else if !ifs.Exists(iface) {
			warns = append(warns, fmt.Sprintf("group %s is not served: interface %s does not exist on node %s", key, iface, node))
			continue
		}
		v := GroupView{Key: key, Interface: iface, Unicast: g.Spec.Unicast, Version: g.Spec.Version(),
			Interval: g.Spec.Interval(), NodeAddrs: addrs, NoPreempt: g.Spec.NonRevertive,
			PreemptDelay: time.Duration(g.Spec.PreemptDelayMilliseconds) * time.Millisecond}
		if ref := g.Spec.AuthPassSecretRef; ref != nil {
			pass, err := pw.read(ctx, k8s.GroupRef{Namespace: g.Namespace, Name: g.Name}, ref)
			if err != nil {
				warns = append(warns, fmt.Sprintf("group %s is not served: %v", key, err))
				continue
			}
			v.AuthPass = pass
		}
		for _, in := range g.Status.Instances {
			v.Instances = append(v.Instances, k8s.Instance{Name: in.Name, VRID: int(in.VRID), Node: in.Node, Service: in.Service})
		}
		for _, s := range byGroup[k8s.GroupRef{Namespace: g.Namespace, Name: g.Name}] {
			v.VIPs = append(v.VIPs, vipsOf(s, ready)...)
		}
		sort.Slice(v.VIPs, func(i, j int) bool { return v.VIPs[i].Addr.Less(v.VIPs[j].Addr) })
		out = append(out, v)
	}
	return out, warns, nil
}

// vipsOf returns the addresses a Service of a group holds: its
// load-balancer addresses (written by the controller, with its condition)
// and those of its externalIPs that the controller's condition allows.
func vipsOf(s *corev1.Service, ready map[string][]string) []VIP {
	if s.DeletionTimestamp != nil {
		return nil
	}
	key := s.Namespace + "/" + s.Name
	local := s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	var out []VIP
	add := func(ip string) {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return
		}
		v := VIP{Addr: a.Unmap(), Service: key, Local: local}
		if local {
			v.Ready = ready[key]
		}
		out = append(out, v)
	}
	// The controller writes the condition only on Services of its class
	// (which the agent is not told: --load-balancer-class) and removes it
	// when the class changes.
	ours := s.Spec.Type == corev1.ServiceTypeLoadBalancer
	// A Service sharing another's address (MetalLB's allow-shared-ip)
	// leaves it to the holder, which announces it.
	if c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ServiceConditionAllocated); ours && c != nil && c.Reason != v1alpha1.ServiceReasonShared {
		for _, ing := range s.Status.LoadBalancer.Ingress {
			add(ing.IP)
		}
	}
	if c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ServiceConditionExternalIPs); c != nil && c.Status == "True" {
		allowed := v1alpha1.AllowedExternalIPs(c.Message)
		for _, ip := range s.Spec.ExternalIPs {
			if slices.Contains(allowed, ip) {
				add(ip)
			}
		}
	}
	return out
}

// Passwords reads the copies of the VRRP passwords that the controller
// keeps in the release namespace (k8s.PasswordSecretName). The agent may
// get Secrets there and nowhere else; it never reads the Secret a group
// names.
type Passwords struct {
	// Reader reads the copies, by name (the agent's is uncached: it may
	// not list or watch Secrets); nil: Views' reader.
	Reader client.Reader
	// Namespace is the release namespace; "": k8s.DefaultNamespace.
	Namespace string
}

// read reads group g's password from its copy.
func (pw Passwords) read(ctx context.Context, g k8s.GroupRef, src *v1alpha1.SecretKeyRef) (string, error) {
	name := k8s.PasswordSecretName(g)
	what := fmt.Sprintf("VRRP password: Secret %s/%s (the controller's copy of Secret %s/%s, key %s)", pw.Namespace, name, g.Namespace, src.Name, src.Key)
	var sec corev1.Secret
	if err := pw.Reader.Get(ctx, client.ObjectKey{Namespace: pw.Namespace, Name: name}, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Errorf("%s does not exist; the controller's Events on the VIPGroup say why", what)
		}
		return "", fmt.Errorf("%s: %w", what, err)
	}
	b := sec.Data[k8s.PasswordKey]
	if len(b) == 0 {
		return "", fmt.Errorf("%s has no key %q, or it is empty", what, k8s.PasswordKey)
	}
	return string(b), nil
}
