package compat

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/vipstack/vipstack/internal/k8s"
)

// Service annotations of MetalLB (current and legacy) and kube-vip.
const (
	MetalLBPoolAnnotation         = "metallb.io/address-pool"
	MetalLBSharedAnnotation       = "metallb.io/allow-shared-ip"
	LegacyMetalLBPoolAnnotation   = "metallb.universe.tf/address-pool"
	LegacyMetalLBSharedAnnotation = "metallb.universe.tf/allow-shared-ip"
)

// The annotations requesting addresses are read by k8s.RequestedIPs
// (k8s.MetalLBIPsAnnotation and the others).

// Config is the foreign configuration read at one time.
type Config struct {
	Pools  []Pool // kube-vip's (namespace pools first), then MetalLB's by name
	Groups []Group
	// Peers are the vipstack BGPPeers made for MetalLB's.
	Peers    []Peer
	Problems []Problem
	// MetalLBNamespace is where MetalLB's pools were read.
	MetalLBNamespace string
}

// Read combines MetalLB's objects (nil: the CRDs are not installed) and
// the kubevip ConfigMap's data (nil: no ConfigMap).
func Read(metallbNS string, pools []IPAddressPool, advs []L2Advertisement, kubevip map[string]string) Config {
	c := Config{MetalLBNamespace: metallbNS}
	if kubevip != nil {
		ps, probs := KubeVIP(kubevip)
		// Namespace pools before the global one.
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].kubeVIPNamespace != "" && ps[j].kubeVIPNamespace == "" })
		c.Pools = append(c.Pools, ps...)
		c.Problems = append(c.Problems, probs...)
		if len(ps) > 0 {
			c.Groups = append(c.Groups, Group{Ref: KubeVIPGroup(), Source: "ConfigMap " + KubeVIPConfigMapNamespace + "/" + KubeVIPConfigMapName, MadeFor: MadeForKubeVIP})
		}
	}
	ps, gs, probs := MetalLB(pools, advs)
	c.Pools = append(c.Pools, ps...)
	c.Groups = append(c.Groups, gs...)
	c.Problems = append(c.Problems, probs...)
	return c
}

// AddKeepalived adds the keepalived-operator's KeepalivedGroups (nil: the
// CRD is not installed) and the pools of OpenShift's Network (nil: none).
func (c *Config) AddKeepalived(groups []KeepalivedGroup, network *OpenShiftNetwork) {
	gs, probs := KeepalivedGroups(groups)
	c.Groups = append(c.Groups, gs...)
	c.Problems = append(c.Problems, probs...)
	ps, probs := OpenShiftPools(network)
	c.Pools = append(c.Pools, ps...)
	c.Problems = append(c.Problems, probs...)
}

// MadeGroup reports whether the controller makes the VIPGroup ref for
// foreign configuration, and for what.
func (c *Config) MadeGroup(ref k8s.GroupRef) (string, bool) {
	for _, g := range c.Groups {
		if g.Ref == ref {
			return g.Source, true
		}
	}
	return "", false
}

// Empty reports whether there is no foreign pool for Services that name
// no group (MetalLB's or kube-vip's): those Services are then left to
// whatever else serves load balancers. OpenShift's pools do not count:
// OpenShift gives their addresses to such Services itself.
func (c *Config) Empty() bool {
	for _, p := range c.Pools {
		if !p.openShift {
			return false
		}
	}
	return true
}

// OpenShiftAutoAssign reports whether OpenShift's autoAssignCIDRs are read.
func (c *Config) OpenShiftAutoAssign() bool {
	_, ok := c.Pool(OpenShiftAutoAssignPool)
	return ok
}

// Pool returns the pool of the given allocator name.
func (c *Config) Pool(name string) (Pool, bool) {
	for _, p := range c.Pools {
		if p.Name == name {
			return p, true
		}
	}
	return Pool{}, false
}

// GroupOfPool returns the group that serves the pool (zero: none, or not
// a foreign pool).
func (c *Config) GroupOfPool(name string) k8s.GroupRef {
	p, _ := c.Pool(name)
	return p.Group
}

// PoolRequest returns the pool a Service names with MetalLB's
// address-pool annotation (current or legacy), as an allocator name, and
// the annotation it came from; "" when it names none.
func (c *Config) PoolRequest(annotations map[string]string) (string, string, error) {
	var got, from string
	for _, key := range []string{MetalLBPoolAnnotation, LegacyMetalLBPoolAnnotation} {
		v, ok := annotations[key]
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if from != "" && v != got {
			return "", key, fmt.Errorf("annotation %s names pool %q but %s names %q; remove one", from, got, key, v)
		}
		got, from = v, key
	}
	if from == "" {
		return "", "", nil
	}
	return MetalLBPoolName(c.MetalLBNamespace, got), from, nil
}

// Candidates are the pools, in the order to try them, that may give a
// new address to a Service that names none: the auto-assign foreign
// pools.
func (c *Config) Candidates() []string {
	var out []string
	for _, p := range c.Pools {
		if p.AutoAssign && !p.openShift {
			out = append(out, p.Name)
		}
	}
	return out
}

// SharingKey returns the allow-shared-ip key a Service carries (MetalLB's
// current or legacy annotation), or "".
func SharingKey(annotations map[string]string) (string, string) {
	for _, key := range []string{MetalLBSharedAnnotation, LegacyMetalLBSharedAnnotation} {
		if v, ok := annotations[key]; ok {
			return strings.TrimSpace(v), key
		}
	}
	return "", ""
}

// OpenShift reports whether the pool was read from OpenShift's Network.
func (p Pool) OpenShift() bool { return p.openShift }

// InPool reports whether a lies in a foreign pool.
func (c *Config) InPool(a netip.Addr) (Pool, bool) {
	for _, p := range c.Pools {
		for _, r := range p.Ranges {
			if r.Contains(a) {
				return p, true
			}
		}
	}
	return Pool{}, false
}
