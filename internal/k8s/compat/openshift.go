package compat

import (
	"fmt"
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vipstack/vipstack/internal/allocator"
)

// OpenShift's cluster network configuration (openshift/api
// config/v1 Network, the cluster-scoped object "cluster").
const (
	OpenShiftConfigGroup   = "config.openshift.io"
	OpenShiftConfigVersion = "v1"
	OpenShiftNetworkName   = "cluster"
)

// Allocator names of the pools read from OpenShift's Network.
const (
	OpenShiftAutoAssignPool = "config.openshift.io/autoAssignCIDRs"
	OpenShiftAllowedPool    = "config.openshift.io/allowedCIDRs"
)

// OpenShiftNetwork is the part of OpenShift's Network that vipstack reads:
// spec.externalIP.
type OpenShiftNetwork struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		ExternalIP *ExternalIPConfig `json:"externalIP,omitempty"`
	} `json:"spec"`
}

// ExternalIPConfig is OpenShift's spec.externalIP.
type ExternalIPConfig struct {
	// AutoAssignCIDRs give addresses to LoadBalancer Services; OpenShift
	// writes them to status.loadBalancer.ingress and spec.externalIPs.
	AutoAssignCIDRs []string          `json:"autoAssignCIDRs,omitempty"`
	Policy          *ExternalIPPolicy `json:"policy,omitempty"`
}

// ExternalIPPolicy is OpenShift's spec.externalIP.policy: which
// spec.externalIPs its admission lets users set.
type ExternalIPPolicy struct {
	AllowedCIDRs  []string `json:"allowedCIDRs,omitempty"`
	RejectedCIDRs []string `json:"rejectedCIDRs,omitempty"`
}

// OpenShiftPools reads spec.externalIP of OpenShift's Network as two
// pools that no group serves by themselves (the Services name their
// group, keepalived-operator's annotation): autoAssignCIDRs, from which
// the controller gives addresses to the Services with that annotation,
// without the network and broadcast addresses of IPv4 blocks (OpenShift
// gives neither), and policy.allowedCIDRs less rejectedCIDRs and the
// auto-assign blocks (pools may not overlap), for the spec.externalIPs
// users set, which OpenShift's admission has checked. A nil network gives
// none.
func OpenShiftPools(n *OpenShiftNetwork) ([]Pool, []Problem) {
	if n == nil || n.Spec.ExternalIP == nil {
		return nil, nil
	}
	var probs []Problem
	prob := func(err error) {
		probs = append(probs, Problem{Kind: "Network", Name: n.Name, Err: err})
	}
	parse := func(field string, cidrs []string, inner bool) []allocator.Range {
		var out []allocator.Range
		for i, s := range cidrs {
			p, err := netip.ParsePrefix(s)
			if err != nil || p.Addr().Zone() != "" {
				prob(fmt.Errorf("%s[%d] %q: not a CIDR block (want e.g. 198.18.6.32/27)", field, i, s))
				continue
			}
			// OpenShift reads the block as net.ParseCIDR does: host bits
			// set (its own docs write 172.21.6.33/27) mean the block.
			r, err := allocator.ParseRange(p.Masked().String())
			if err != nil {
				prob(fmt.Errorf("%s[%d]: %w", field, i, err))
				continue
			}
			if inner && r.First.Is4() && p.Bits() < 31 {
				r.First, r.Last = r.First.Next(), r.Last.Prev()
			}
			out = append(out, r)
		}
		return out
	}
	ext := n.Spec.ExternalIP
	src := "Network " + n.Name + " (" + OpenShiftConfigGroup + ")"
	var out []Pool
	auto := parse("spec.externalIP.autoAssignCIDRs", ext.AutoAssignCIDRs, true)
	if len(auto) > 0 {
		// Not AutoAssign in the allocator: it gives addresses only to
		// the Services that name a KeepalivedGroup (the controller lists
		// it as their candidate), never to other Services of a group.
		out = append(out, Pool{Pool: allocator.Pool{Name: OpenShiftAutoAssignPool, Ranges: auto},
			Source: src + " spec.externalIP.autoAssignCIDRs", openShift: true})
	}
	if ext.Policy != nil {
		allowed := parse("spec.externalIP.policy.allowedCIDRs", ext.Policy.AllowedCIDRs, false)
		rejected := parse("spec.externalIP.policy.rejectedCIDRs", ext.Policy.RejectedCIDRs, false)
		whole := parse("spec.externalIP.autoAssignCIDRs", ext.AutoAssignCIDRs, false)
		allowed = subtract(allowed, append(rejected, whole...))
		if len(allowed) > 0 {
			out = append(out, Pool{Pool: allocator.Pool{Name: OpenShiftAllowedPool, Ranges: allowed},
				Source: src + " spec.externalIP.policy.allowedCIDRs", openShift: true})
		}
	}
	return out, probs
}

// subtract returns rs without the addresses of cuts.
func subtract(rs, cuts []allocator.Range) []allocator.Range {
	for _, c := range cuts {
		var next []allocator.Range
		for _, r := range rs {
			if r.First.Is4() != c.First.Is4() || c.Last.Less(r.First) || r.Last.Less(c.First) {
				next = append(next, r)
				continue
			}
			if r.First.Less(c.First) {
				next = append(next, allocator.Range{First: r.First, Last: c.First.Prev()})
			}
			if c.Last.Less(r.Last) {
				next = append(next, allocator.Range{First: c.Last.Next(), Last: r.Last})
			}
		}
		rs = next
	}
	return rs
}
