package compat

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/vipstack/vipstack/internal/allocator"
	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// MetalLB's API group and version.
const (
	MetalLBGroup   = "metallb.io"
	MetalLBVersion = "v1beta1"
)

// IPAddressPool is the part of MetalLB's IPAddressPool that vipstack reads.
// Objects are converted into it from their unstructured form, so fields
// vipstack does not know are not seen here: the ones MetalLB has are all
// listed (and refused where not implemented).
type IPAddressPool struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              IPAddressPoolSpec `json:"spec"`
}

// IPAddressPoolSpec is MetalLB's spec.
type IPAddressPoolSpec struct {
	Addresses         []string           `json:"addresses"`
	AutoAssign        *bool              `json:"autoAssign,omitempty"`
	AvoidBuggyIPs     bool               `json:"avoidBuggyIPs,omitempty"`
	ServiceAllocation *ServiceAllocation `json:"serviceAllocation,omitempty"`
}

// ServiceAllocation is MetalLB's spec.serviceAllocation.
type ServiceAllocation struct {
	Priority           int                    `json:"priority,omitempty"`
	Namespaces         []string               `json:"namespaces,omitempty"`
	NamespaceSelectors []metav1.LabelSelector `json:"namespaceSelectors,omitempty"`
	ServiceSelectors   []metav1.LabelSelector `json:"serviceSelectors,omitempty"`
}

// L2Advertisement is the part of MetalLB's L2Advertisement vipstack reads.
type L2Advertisement struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              L2AdvertisementSpec `json:"spec,omitempty"`
}

// L2AdvertisementSpec is MetalLB's spec.
type L2AdvertisementSpec struct {
	IPAddressPools         []string               `json:"ipAddressPools,omitempty"`
	IPAddressPoolSelectors []metav1.LabelSelector `json:"ipAddressPoolSelectors,omitempty"`
	NodeSelectors          []metav1.LabelSelector `json:"nodeSelectors,omitempty"`
	Interfaces             []string               `json:"interfaces,omitempty"`
}

// Pool is an address pool read from MetalLB or kube-vip, with the VIPGroup
// that serves its addresses (zero: none advertises them).
type Pool struct {
	allocator.Pool
	Group  k8s.GroupRef
	Source string // the object it came from, for messages
	// kubeVIPNamespace is the namespace of a kube-vip per-namespace pool,
	// "" for the global one and for MetalLB pools.
	kubeVIPNamespace string
	kubeVIP          bool
	// openShift: read from OpenShift's Network; its addresses go to the
	// Services that name a group (the keepalived-operator's annotation),
	// never to those that name none.
	openShift bool
}

// Group is a VIPGroup vipstack makes for an L2Advertisement or for
// kube-vip's ranges.
type Group struct {
	Ref    k8s.GroupRef
	Spec   v1alpha1.VIPGroupSpec
	Source string
	// MadeFor is the value of the vipstack.io/made-for label (MadeFor*).
	MadeFor string
}

// Problem is a piece of foreign configuration vipstack refuses, naming the
// object and field.
type Problem struct {
	Kind, Namespace, Name string // the object
	Err                   error
	// Refused: the object is left out. Otherwise it is served and Err
	// names a field that has no effect.
	Refused bool
}

func (p Problem) Error() string {
	if p.Namespace == "" { // cluster-scoped
		return fmt.Sprintf("%s %s: %v", p.Kind, p.Name, p.Err)
	}
	return fmt.Sprintf("%s %s/%s: %v", p.Kind, p.Namespace, p.Name, p.Err)
}

// MetalLBPoolName is the allocator's name of MetalLB's pool NAME in
// namespace NS: names of IPPools have no "/", so they never collide.
func MetalLBPoolName(ns, name string) string { return "metallb.io/" + ns + "/" + name }

// L2GroupName is the name of the VIPGroup made for an L2Advertisement,
// in the advertisement's namespace.
func L2GroupName(adv string) string { return "metallb-" + adv }

// ConvertPool turns a MetalLB IPAddressPool into an allocator pool.
func ConvertPool(p *IPAddressPool) (allocator.Pool, error) {
	out := allocator.Pool{Name: MetalLBPoolName(p.Namespace, p.Name), AutoAssign: p.Spec.AutoAssign == nil || *p.Spec.AutoAssign}
	var errs []error
	if len(p.Spec.Addresses) == 0 {
		errs = append(errs, errors.New("spec.addresses: empty: want at least one CIDR block or FIRST-LAST range"))
	}
	for i, s := range p.Spec.Addresses {
		r, err := allocator.ParseRange(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.addresses[%d]: %w", i, err))
			continue
		}
		if p.Spec.AvoidBuggyIPs {
			rs, err := avoidBuggy(r)
			if err != nil {
				errs = append(errs, fmt.Errorf("spec.addresses[%d] with spec.avoidBuggyIPs: %w", i, err))
				continue
			}
			out.Ranges = append(out.Ranges, rs...)
			continue
		}
		out.Ranges = append(out.Ranges, r)
	}
	if sa := p.Spec.ServiceAllocation; sa != nil {
		if sa.Priority != 0 {
			errs = append(errs, fmt.Errorf("spec.serviceAllocation.priority %d: not implemented by vipstack (pools are tried in name order); remove it", sa.Priority))
		}
		if len(sa.NamespaceSelectors) > 0 {
			errs = append(errs, errors.New("spec.serviceAllocation.namespaceSelectors: not implemented by vipstack; list the namespaces in spec.serviceAllocation.namespaces instead"))
		}
		out.Namespaces = sa.Namespaces
		var sels anySelector
		for i := range sa.ServiceSelectors {
			s, err := metav1.LabelSelectorAsSelector(&sa.ServiceSelectors[i])
			if err != nil {
				errs = append(errs, fmt.Errorf("spec.serviceAllocation.serviceSelectors[%d]: %w", i, err))
				continue
			}
			sels = append(sels, s)
		}
		if len(sels) > 0 {
			out.Selector = sels
		}
	}
	if err := errors.Join(errs...); err != nil {
		return allocator.Pool{}, err
	}
	return out, nil
}

// anySelector matches when one of its selectors does (MetalLB ORs a
// pool's serviceSelectors).
type anySelector []labels.Selector

func (s anySelector) Matches(l map[string]string) bool {
	for _, x := range s {
		if x.Matches(labels.Set(l)) {
			return true
		}
	}
	return false
}

func (s anySelector) String() string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = x.String()
	}
	return strings.Join(out, " or ")
}

// maxBuggySplits bounds how many pieces avoidBuggyIPs may cut one range
// into (one per /24 it spans).
const maxBuggySplits = 1 << 16

// avoidBuggy cuts the IPv4 addresses ending in .0 and .255 out of r, as
// MetalLB's avoidBuggyIPs does. IPv6 ranges are kept whole.
func avoidBuggy(r allocator.Range) ([]allocator.Range, error) {
	if !r.First.Is4() {
		return []allocator.Range{r}, nil
	}
	if r.Size() > maxBuggySplits*256 {
		return nil, fmt.Errorf("range %s spans more than %d /24 blocks; split the pool", r, maxBuggySplits)
	}
	var out []allocator.Range
	a := r.First
	for {
		b := a.As4()
		first := a
		if b[3] == 0 {
			first = a.Next()
		}
		b[3] = 254
		last := netip.AddrFrom4(b)
		if r.Last.Less(last) {
			last = r.Last
			if last.As4()[3] == 255 {
				last = last.Prev()
			}
		}
		if !last.Less(first) {
			out = append(out, allocator.Range{First: first, Last: last})
		}
		b[3] = 255
		end := netip.AddrFrom4(b)
		if !end.Less(r.Last) {
			break
		}
		a = end.Next()
	}
	return out, nil
}

// ConvertL2 turns an L2Advertisement into the spec of its VIPGroup.
// vipstack's group has one label selector (matchLabels) and one
// interface, so an advertisement with several, or with matchExpressions,
// is refused.
func ConvertL2(a *L2Advertisement) (v1alpha1.VIPGroupSpec, error) {
	var spec v1alpha1.VIPGroupSpec
	var errs []error
	switch n := len(a.Spec.NodeSelectors); {
	case n > 1:
		errs = append(errs, fmt.Errorf("spec.nodeSelectors: %d selectors: vipstack supports one (matchLabels only); label the nodes so that one selector picks them", n))
	case n == 1:
		s := a.Spec.NodeSelectors[0]
		if len(s.MatchExpressions) > 0 {
			errs = append(errs, errors.New("spec.nodeSelectors[0].matchExpressions: not implemented by vipstack; use matchLabels"))
		}
		if len(s.MatchLabels) > 0 {
			spec.NodeSelector = s.MatchLabels
		}
	}
	switch n := len(a.Spec.Interfaces); {
	case n > 1:
		errs = append(errs, fmt.Errorf("spec.interfaces %v: vipstack announces on one interface per group; make one L2Advertisement per interface", a.Spec.Interfaces))
	case n == 1:
		spec.Interface = a.Spec.Interfaces[0]
	}
	if err := spec.Validate(); err != nil {
		errs = append(errs, err)
	}
	return spec, errors.Join(errs...)
}

// selects reports whether the advertisement announces the pool.
func selects(a *L2Advertisement, p *IPAddressPool) (bool, error) {
	if len(a.Spec.IPAddressPools) == 0 && len(a.Spec.IPAddressPoolSelectors) == 0 {
		return true, nil
	}
	if slices.Contains(a.Spec.IPAddressPools, p.Name) {
		return true, nil
	}
	for i := range a.Spec.IPAddressPoolSelectors {
		s, err := metav1.LabelSelectorAsSelector(&a.Spec.IPAddressPoolSelectors[i])
		if err != nil {
			return false, fmt.Errorf("spec.ipAddressPoolSelectors[%d]: %w", i, err)
		}
		if s.Matches(labels.Set(p.Labels)) {
			return true, nil
		}
	}
	return false, nil
}

// MetalLB reads MetalLB's pools and advertisements (of one namespace, as
// MetalLB does). Each valid L2Advertisement becomes a VIPGroup; a pool is
// served by the group of one valid advertisement that selects it: of
// several, the first (by name) whose nodes and interface take in every
// other's (servingAdv), as MetalLB announces a pool from every
// advertisement's nodes; when none does, the first, and each other that
// announces where it does not is reported. Objects refused are left out
// and reported.
func MetalLB(pools []IPAddressPool, advs []L2Advertisement) ([]Pool, []Group, []Problem) {
	var probs []Problem
	pools = slices.Clone(pools)
	advs = slices.Clone(advs)
	sort.Slice(pools, func(i, j int) bool { return pools[i].Name < pools[j].Name })
	sort.Slice(advs, func(i, j int) bool { return advs[i].Name < advs[j].Name })
	var groups []Group
	var okAdvs []*L2Advertisement
	specs := map[*L2Advertisement]v1alpha1.VIPGroupSpec{}
	for i := range advs {
		a := &advs[i]
		spec, err := ConvertL2(a)
		if err != nil {
			probs = append(probs, Problem{Kind: "L2Advertisement", Namespace: a.Namespace, Name: a.Name, Err: err})
			continue
		}
		groups = append(groups, Group{Ref: k8s.GroupRef{Namespace: a.Namespace, Name: L2GroupName(a.Name)}, Spec: spec,
			Source: "L2Advertisement " + a.Namespace + "/" + a.Name, MadeFor: MadeForMetalLB})
		okAdvs = append(okAdvs, a)
		specs[a] = spec
	}
	var out []Pool
	for i := range pools {
		p := &pools[i]
		ap, err := ConvertPool(p)
		if err != nil {
			probs = append(probs, Problem{Kind: "IPAddressPool", Namespace: p.Namespace, Name: p.Name, Err: err})
			continue
		}
		cp := Pool{Pool: ap, Source: "IPAddressPool " + p.Namespace + "/" + p.Name}
		var sel []*L2Advertisement
		for _, a := range okAdvs {
			ok, err := selects(a, p)
			if err != nil {
				probs = append(probs, Problem{Kind: "L2Advertisement", Namespace: a.Namespace, Name: a.Name, Err: err})
				continue
			}
			if ok {
				sel = append(sel, a)
			}
		}
		if a, left := servingAdv(sel, specs); a != nil {
			cp.Group = k8s.GroupRef{Namespace: a.Namespace, Name: L2GroupName(a.Name)}
			for _, o := range left {
				probs = append(probs, Problem{Kind: "L2Advertisement", Namespace: o.Namespace, Name: o.Name,
					Err: fmt.Errorf("selects IPAddressPool %s, which L2Advertisement %s serves: vipstack serves a pool from one group, and this one's nodes or interface are not within that one's, so the pool is not announced from them; make one advertisement take in the others' nodes and interface", p.Name, a.Name)})
			}
		}
		out = append(out, cp)
	}
	return out, groups, probs
}

// servingAdv picks, of the advertisements that select a pool (sorted by
// name), the one whose group serves it: the first whose interface is
// every other's and whose node selector takes in every other's (no
// selector, or matchLabels that are a subset of the other's). When none
// does, the first, and left are those whose nodes or interface it does
// not take in.
func servingAdv(sel []*L2Advertisement, specs map[*L2Advertisement]v1alpha1.VIPGroupSpec) (chosen *L2Advertisement, left []*L2Advertisement) {
	if len(sel) == 0 {
		return nil, nil
	}
	covers := func(a, b *L2Advertisement) bool {
		sa, sb := specs[a], specs[b]
		if sa.Interface != sb.Interface {
			return false
		}
		for k, v := range sa.NodeSelector {
			if w, ok := sb.NodeSelector[k]; !ok || w != v {
				return false
			}
		}
		return true
	}
	for _, a := range sel {
		all := true
		for _, b := range sel {
			if !covers(a, b) {
				all = false
				break
			}
		}
		if all {
			return a, nil
		}
	}
	for _, b := range sel[1:] {
		if !covers(sel[0], b) {
			left = append(left, b)
		}
	}
	return sel[0], left
}
