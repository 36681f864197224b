package compat

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/vipstack/vipstack/internal/allocator"
	"github.com/vipstack/vipstack/internal/k8s"
)

// Where kube-vip-cloud-provider keeps its ranges, and the group vipstack
// makes to serve them (every node, the interface of the node's
// InternalIP; an administrator may edit it: vipstack makes it when it is
// missing and never overwrites it).
const (
	KubeVIPConfigMapNamespace = "kube-system"
	KubeVIPConfigMapName      = "kubevip"
	KubeVIPGroupName          = "kube-vip"
)

// KubeVIPGroup is the VIPGroup serving kube-vip's ranges.
func KubeVIPGroup() k8s.GroupRef {
	return k8s.GroupRef{Namespace: KubeVIPConfigMapNamespace, Name: KubeVIPGroupName}
}

// KubeVIPPoolName is the allocator's name of the kube-vip pool of a
// namespace ("" for range-global and cidr-global).
func KubeVIPPoolName(ns string) string {
	if ns == "" {
		return "kube-vip.io/global"
	}
	return "kube-vip.io/namespace/" + ns
}

// KubeVIP reads the data of the kubevip ConfigMap: "range-global",
// "cidr-global", "range-NAMESPACE" and "cidr-NAMESPACE", each a
// comma-separated list of FIRST-LAST ranges or CIDR blocks. A namespace's
// pool serves only that namespace and comes before the global one, as
// in kube-vip. Keys vipstack does not implement are reported (and the
// key left out; "search-order" changes only which free address is
// picked, so its ranges are read all the same). A CIDR block with host
// bits set, as in kube-vip's examples, means the whole block.
func KubeVIP(data map[string]string) ([]Pool, []Problem) {
	prob := func(err error) Problem {
		return Problem{Kind: "ConfigMap", Namespace: KubeVIPConfigMapNamespace, Name: KubeVIPConfigMapName, Err: err}
	}
	var probs []Problem
	byNS := map[string]*Pool{}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		val := data[key]
		kind, ns, ok := strings.Cut(key, "-")
		if !ok || (kind != "range" && kind != "cidr") || ns == "" {
			switch {
			case key == "search-order" && val == "asc":
			case key == "search-order":
				probs = append(probs, prob(fmt.Errorf("data.search-order %q: not implemented by vipstack, which takes the lowest free address; Services keep the addresses they have", val)))
			case kind == "allow" && strings.HasPrefix(ns, "share-"):
				probs = append(probs, prob(fmt.Errorf("data.%s: address sharing is not implemented by vipstack; each Service gets its own address", key)))
			default:
				probs = append(probs, prob(fmt.Errorf("data.%s: unknown key; vipstack reads range-global, cidr-global, range-NAMESPACE and cidr-NAMESPACE", key)))
			}
			continue
		}
		if ns == "global" {
			ns = ""
		}
		var ranges []allocator.Range
		bad := false
		for _, s := range strings.Split(val, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			var (
				r   allocator.Range
				err error
			)
			switch {
			case kind == "cidr":
				// kube-vip's own examples set host bits
				// ("192.168.0.220/29"): the block is meant.
				pfx, perr := netip.ParsePrefix(s)
				if perr != nil {
					err = fmt.Errorf("%q is not a CIDR block (want e.g. 198.18.0.200/29)", s)
					break
				}
				r, err = allocator.ParseRange(pfx.Masked().String())
			case strings.Contains(s, "/"):
				err = fmt.Errorf("%q is a CIDR block; put it under cidr-%s", s, strings.TrimPrefix(key, "range-"))
			default:
				r, err = allocator.ParseRange(s)
			}
			if err != nil {
				probs = append(probs, prob(fmt.Errorf("data.%s: %w", key, err)))
				bad = true
				continue
			}
			ranges = append(ranges, r)
		}
		if bad || len(ranges) == 0 {
			continue
		}
		p := byNS[ns]
		if p == nil {
			p = &Pool{Pool: allocator.Pool{Name: KubeVIPPoolName(ns), AutoAssign: true}, Group: KubeVIPGroup(),
				Source: "ConfigMap " + KubeVIPConfigMapNamespace + "/" + KubeVIPConfigMapName, kubeVIPNamespace: ns, kubeVIP: true}
			if ns != "" {
				p.Namespaces = []string{ns}
			}
			byNS[ns] = p
		}
		p.Ranges = append(p.Ranges, ranges...)
	}
	var out []Pool
	for _, p := range byNS {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, probs
}
