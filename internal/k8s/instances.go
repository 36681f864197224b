package k8s

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
	"sort"
	"strings"
)

// Instance is one VRRP instance of a group, as the group's status records
// it. The same VRID serves both address families (IPv4 and IPv6 VRRP
// routers are distinct, RFC 5798 section 5.2.3), so an instance that holds
// addresses of both runs twice on the wire.
type Instance struct {
	Name string `json:"name"`
	VRID int    `json:"vrid"`
	// Node is the node preferred as master, for a node instance.
	Node string `json:"node,omitempty"`
	// Service is "namespace/name" for the instance of a Service with
	// externalTrafficPolicy Local.
	Service string `json:"service,omitempty"`
}

// NodeInstance and ServiceInstance name a group's instances.
func NodeInstance(node string) string   { return "node/" + node }
func ServiceInstance(key string) string { return "service/" + key }

// VRIDPlan is what PlanInstances needs.
type VRIDPlan struct {
	Group string // "namespace/name", for messages
	// Nodes are the group's nodes (its node selector's matches).
	Nodes []string
	// Local are the keys of the group's Services with externalTrafficPolicy
	// Local that hold addresses.
	Local []string
	// Current is what the group's status records now.
	Current []Instance
	// Excluded are VRIDs the group must not use (its spec and the
	// controller's flags).
	Excluded []int
	// Taken are VRIDs other groups on the same link hold, with the holder
	// for messages.
	Taken map[int]string
}

// PlanInstances returns the group's instances: one per node and one per
// Local Service, each with a VRID. An instance recorded in Current keeps
// its VRID while it is still wanted and the VRID still free; new ones get
// the lowest free VRID. Instances that did not get a VRID are left out and
// reported in the error, which names what blocked them; the instances
// returned are usable either way. The result is sorted by name.
func PlanInstances(p VRIDPlan) ([]Instance, error) {
	want := map[string]Instance{}
	var order []string
	for _, n := range sortedUnique(p.Nodes) {
		name := NodeInstance(n)
		want[name] = Instance{Name: name, Node: n}
		order = append(order, name)
	}
	for _, k := range sortedUnique(p.Local) {
		name := ServiceInstance(k)
		want[name] = Instance{Name: name, Service: k}
		order = append(order, name)
	}
	blocked := map[int]string{}
	for v, who := range p.Taken {
		blocked[v] = "held by group " + who
	}
	for _, v := range p.Excluded {
		blocked[v] = "excluded"
	}
	used := map[int]bool{}
	got := map[string]Instance{}
	cur := slices.Clone(p.Current)
	sort.SliceStable(cur, func(i, j int) bool { return cur[i].Name < cur[j].Name })
	for _, in := range cur {
		w, ok := want[in.Name]
		if !ok || in.VRID < 1 || in.VRID > 255 || used[in.VRID] || blocked[in.VRID] != "" {
			continue
		}
		if _, dup := got[in.Name]; dup {
			continue
		}
		w.VRID = in.VRID
		got[in.Name] = w
		used[in.VRID] = true
	}
	next := 1
	var missing []string
	for _, name := range order {
		if _, ok := got[name]; ok {
			continue
		}
		for next <= 255 && (used[next] || blocked[next] != "") {
			next++
		}
		if next > 255 {
			missing = append(missing, name)
			continue
		}
		w := want[name]
		w.VRID = next
		got[name] = w
		used[next] = true
	}
	out := make([]Instance, 0, len(got))
	for _, in := range got {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(missing) > 0 {
		return out, fmt.Errorf("group %s needs %d VRIDs but only %d are free (%d held by other groups on its link, %d excluded); no VRID for %s",
			p.Group, len(order), len(order)-len(missing), len(p.Taken), len(p.Excluded), strings.Join(missing, ", "))
	}
	return out, nil
}

func sortedUnique(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// Place returns the node instance a Cluster-policy address belongs to: of
// the instances with a Node, the one with the highest rendezvous hash
// (HRW) for addr. An address's instance changes only when that instance
// goes away or a new one outranks it, so adding or removing a node moves
// about 1/N of the addresses and adding or removing an address touches
// only its own instance. ok is false when there is no node instance.
func Place(addr netip.Addr, instances []Instance) (Instance, bool) {
	var (
		best  Instance
		bestH uint64
		found bool
	)
	b := addr.AsSlice()
	for _, in := range instances {
		if in.Node == "" {
			continue
		}
		h := hash(in.Name, b)
		if !found || h > bestH || (h == bestH && in.Name < best.Name) {
			best, bestH, found = in, h, true
		}
	}
	return best, found
}

// Priority returns node's VRRP priority in an instance: 250 for the
// instance's own node, otherwise a number from 1 to 240 drawn from a hash
// of the instance and the node. It depends on nothing else, so a node
// joining or leaving changes no other node's priority (and no instance
// restarts); equal priorities are settled by the primary address, as RFC
// 5798 section 6.4.3 says.
func Priority(in Instance, node string) uint8 {
	if in.Node != "" && in.Node == node {
		return 250
	}
	return uint8(1 + hash(in.Name, []byte(node))%240)
}

// hash is FNV-1a over name, a zero byte and data, then a 64-bit finalizer
// (splitmix64's) so that nearby inputs spread over the whole range.
func hash(name string, data []byte) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(data)
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
