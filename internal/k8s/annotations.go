package k8s

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations and names a Service uses to talk to vipstack.
const (
	// GroupAnnotation names the VIPGroup that serves the Service:
	// "namespace/name", or "name" for a group in the Service's namespace.
	GroupAnnotation = "vipstack.io/group"
	// KeepalivedGroupAnnotation is the keepalived-operator's annotation
	// (redhat-cop/keepalived-operator), accepted as is: its value names a
	// VIPGroup the same way, so Services migrate without an edit once a
	// VIPGroup of the KeepalivedGroup's namespace and name exists.
	KeepalivedGroupAnnotation = "keepalived-operator.redhat-cop.io/keepalivedgroup"
	// PoolAnnotation names the IPPool to take the address from (the pool
	// need not auto-assign).
	PoolAnnotation = "vipstack.io/pool"
	// IPsAnnotation requests addresses: a comma-separated list, at most one
	// per family. spec.loadBalancerIP is honoured as well.
	IPsAnnotation = "vipstack.io/loadBalancerIPs"
	// LoadBalancerClass is the spec.loadBalancerClass vipstack answers to.
	// Services with another class are left alone; Services without one are
	// served when they name a group, and left to whatever else serves load
	// balancers when they do not.
	LoadBalancerClass = "vipstack.io/vip"
	// FieldManager is the controller's name in managedFields and Events.
	FieldManager = "vipstack-controller"

	// MetalLB's and kube-vip's address requests, read as they are (a
	// comma-separated list each, like IPsAnnotation).
	MetalLBIPsAnnotation       = "metallb.io/loadBalancerIPs"
	LegacyMetalLBIPsAnnotation = "metallb.universe.tf/loadBalancerIPs"
	KubeVIPIPsAnnotation       = "kube-vip.io/loadbalancerIPs"
)

// ipsAnnotations are the annotations RequestedIPs reads, in order.
var ipsAnnotations = []string{IPsAnnotation, MetalLBIPsAnnotation, LegacyMetalLBIPsAnnotation, KubeVIPIPsAnnotation}

// GroupRef names a VIPGroup.
type GroupRef struct {
	Namespace, Name string
}

func (g GroupRef) String() string { return g.Namespace + "/" + g.Name }

// IsZero reports whether g names no group.
func (g GroupRef) IsZero() bool { return g.Name == "" }

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// ParseGroupRef reads "namespace/name" or "name" (in namespace ns).
func ParseGroupRef(ns, value string) (GroupRef, error) {
	v := strings.TrimSpace(value)
	g := GroupRef{Namespace: ns, Name: v}
	if a, b, ok := strings.Cut(v, "/"); ok {
		g = GroupRef{Namespace: a, Name: b}
	}
	if !dnsLabel.MatchString(g.Namespace) {
		return GroupRef{}, fmt.Errorf("%q: namespace %q is not a DNS label (lower-case letters, digits and '-', at most 63); want NAMESPACE/NAME or NAME", value, g.Namespace)
	}
	if len(g.Name) > 253 || !dnsSubdomain.MatchString(g.Name) {
		return GroupRef{}, fmt.Errorf("%q: name %q is not a DNS subdomain (lower-case letters, digits, '-' and '.'); want NAMESPACE/NAME or NAME", value, g.Name)
	}
	return g, nil
}

// GroupOf returns the group a Service in namespace ns names in its
// annotations, and the annotation it came from. With neither annotation it
// returns the zero GroupRef and no error. Both annotations may be present
// when they name the same group.
func GroupOf(ns string, annotations map[string]string) (GroupRef, string, error) {
	var (
		got  GroupRef
		from string
	)
	for _, key := range []string{GroupAnnotation, KeepalivedGroupAnnotation} {
		v, ok := annotations[key]
		if !ok {
			continue
		}
		g, err := ParseGroupRef(ns, v)
		if err != nil {
			return GroupRef{}, key, fmt.Errorf("annotation %s: %w", key, err)
		}
		if from != "" && g != got {
			return GroupRef{}, key, fmt.Errorf("annotation %s names group %s but %s names %s; remove one", from, got, key, g)
		}
		if from == "" {
			got, from = g, key
		}
	}
	return got, from, nil
}

// RequestedIPs returns the addresses a Service asks for: spec.loadBalancerIP
// (given as lbIP), the IPsAnnotation list and MetalLB's and kube-vip's
// equivalents, at most one per family: annotations that disagree are an
// error.
func RequestedIPs(lbIP string, annotations map[string]string) ([]netip.Addr, error) {
	var out []netip.Addr
	add := func(field, s string) error {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil
		}
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" || a.Is4In6() {
			return fmt.Errorf("%s: %q is not an IPv4 or IPv6 address", field, s)
		}
		for _, b := range out {
			if b == a {
				return nil
			}
			if b.Is4() == a.Is4() {
				return fmt.Errorf("%s: %s and %s are both IPv%d; ask for at most one address per family", field, b, a, family(a))
			}
		}
		out = append(out, a)
		return nil
	}
	if err := add("spec.loadBalancerIP", lbIP); err != nil {
		return nil, err
	}
	for _, key := range ipsAnnotations {
		v, ok := annotations[key]
		if !ok {
			continue
		}
		for _, s := range strings.Split(v, ",") {
			if err := add("annotation "+key, s); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func family(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}

// ServiceGroup returns the group that serves a Service: the one its
// annotations name (GroupOf) or, when they name none, the one the
// controller recorded in a True condition of type condType (for Services
// served from MetalLB's or kube-vip's pools, which name no group).
func ServiceGroup(ns string, annotations map[string]string, conds []metav1.Condition, condType string) (GroupRef, error) {
	g, _, err := GroupOf(ns, annotations)
	if err != nil || !g.IsZero() {
		return g, err
	}
	c := meta.FindStatusCondition(conds, condType)
	if c == nil || c.Status != metav1.ConditionTrue {
		return GroupRef{}, nil
	}
	return ParseGroupRef(ns, c.Message)
}
