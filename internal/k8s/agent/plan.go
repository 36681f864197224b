package agent

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"time"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/keepalived"
)

// GroupView is what the agent knows of one VIP group.
type GroupView struct {
	Key       string // "namespace/name"
	Interface string // resolved on this node
	Unicast   bool
	Version   int // 2 or 3; IPv6 instances always use 3
	Interval  time.Duration
	// AuthPass is the VRRPv2 simple password ("": none).
	AuthPass string
	// NoPreempt and PreemptDelay are the group's nonRevertive and
	// preemptDelayMilliseconds (keepalived's nopreempt, preempt_delay).
	NoPreempt    bool
	PreemptDelay time.Duration
	// Instances are the group's instances with their VRIDs, from its
	// status (the controller's choice; agents never pick VRIDs).
	Instances []k8s.Instance
	// NodeAddrs are the InternalIP addresses of the cluster's nodes, for
	// unicast sources and peers.
	NodeAddrs map[string][]netip.Addr
	VIPs      []VIP
}

// VIP is one address a Service of the group holds.
type VIP struct {
	Addr    netip.Addr
	Service string // "namespace/name"
	// Local is externalTrafficPolicy Local: the address may only be held
	// by a node in Ready.
	Local bool
	Ready []string // nodes with a ready endpoint of the Service
}

// Instance is one VRRP instance this node runs.
type Instance struct {
	Name      string // "GROUP/INSTANCE/v4" or ".../v6"
	Group     string
	Instance  string // the group's instance name, e.g. "node/n1"
	Interface string
	VRID      int
	Family    int
	Version   int
	Interval  time.Duration
	Priority  uint8
	AuthPass  string // VRRPv2 simple password; "": none
	NoPreempt bool   // keepalived's nopreempt
	// PreemptDelay is keepalived's preempt_delay.
	PreemptDelay time.Duration
	Src          netip.Addr   // unicast source; zero in multicast mode
	Peers        []netip.Addr // unicast peers; nil in multicast mode
	VIPs         []netip.Addr // sorted
}

// Plan is this node's share of every group.
type Plan struct {
	Node      string
	Instances []Instance // sorted by name
}

// MaxAdvertised is how many of an instance's addresses its advertisements
// carry (the lowest); the rest are held as keepalived's
// virtual_ipaddress_excluded. Peers drop adverts whose address list
// differs from theirs (RFC 5798 section 7.1 lets them), and agents apply a
// new Service a few milliseconds apart: carrying one address makes that
// disagreement rare (only when the lowest address of an instance comes or
// goes) and keeps adverts short with thousands of addresses.
const MaxAdvertised = 1

// PlanNode lays out what node runs: for each group whose status lists
// node, one IPv4 instance per node instance (with or without addresses),
// one IPv6 instance per node instance that holds IPv6 addresses,
// plus the instance of every Local Service for which node has a ready
// endpoint. Problems that leave an address unserved are returned as
// warnings, each naming the address, the Service and why.
func PlanNode(node string, groups []GroupView) (Plan, []string) {
	var warns []string
	warn := func(format string, args ...any) { warns = append(warns, fmt.Sprintf(format, args...)) }
	p := Plan{Node: node}
	held := map[netip.Addr]string{} // address -> instance, across groups
	gs := slices.Clone(groups)
	sort.Slice(gs, func(i, j int) bool { return gs[i].Key < gs[j].Key })
	for _, g := range gs {
		member := false
		byName := map[string]k8s.Instance{}
		var members []string
		for _, in := range g.Instances {
			byName[in.Name] = in
			if in.Node != "" {
				members = append(members, in.Node)
				if in.Node == node {
					member = true
				}
			}
		}
		if !member {
			continue
		}
		type key struct {
			inst string
			fam  int
		}
		vips := map[key][]netip.Addr{}
		runners := map[string][]string{} // instance -> nodes that run it
		for _, v := range g.VIPs {
			fam := 4
			if v.Addr.Is6() {
				fam = 6
			}
			var in k8s.Instance
			local, pending := v.Local, false
			if local {
				in, local = byName[k8s.ServiceInstance(v.Service)]
				pending = !local
			}
			if pending {
				// Make before break: a Service just turned Local keeps its
				// address where it was, on the node instances, until the
				// controller gives its own instance a VRID; dropping it
				// meanwhile would leave nobody holding it.
				warn("%s of %s (externalTrafficPolicy Local): group %s has no instance for it yet (the controller gives it a VRID); the group's node instances hold it meanwhile", v.Addr, v.Service, g.Key)
			}
			if local {
				var ready []string
				for _, n := range v.Ready {
					if slices.Contains(members, n) {
						ready = append(ready, n)
					}
				}
				if !slices.Contains(ready, node) {
					continue // not eligible here
				}
				runners[in.Name] = sortedUnique(ready)
			} else {
				var ok bool
				in, ok = k8s.Place(v.Addr, g.Instances)
				if !ok {
					continue // no node instances; cannot happen while node is a member
				}
				runners[in.Name] = members
			}
			vips[key{in.Name, fam}] = append(vips[key{in.Name, fam}], v.Addr)
		}
		// Every node instance runs for IPv4 even before it holds an address,
		// so the group's masters are elected when its first Service
		// arrives and that address is up at once instead of one election
		// later. (keepalived refuses an IPv6 instance without addresses, so
		// IPv6 instances start with their first address.)
		for _, in := range g.Instances {
			if in.Node == "" {
				continue
			}
			if _, ok := vips[key{in.Name, 4}]; !ok {
				vips[key{in.Name, 4}] = nil
				runners[in.Name] = members
			}
		}
		keys := make([]key, 0, len(vips))
		for k := range vips {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if keys[i].inst != keys[j].inst {
				return keys[i].inst < keys[j].inst
			}
			return keys[i].fam < keys[j].fam
		})
		for _, k := range keys {
			gi := byName[k.inst]
			name := fmt.Sprintf("%s/%s/v%d", g.Key, gi.Name, k.fam)
			ver := g.Version
			if k.fam == 6 || ver == 0 {
				ver = 3
			}
			inst := Instance{Name: name, Group: g.Key, Instance: gi.Name, Interface: g.Interface, VRID: gi.VRID, Family: k.fam,
				Version: ver, Interval: g.Interval, Priority: k8s.Priority(gi, node), NoPreempt: g.NoPreempt, PreemptDelay: g.PreemptDelay}
			if ver == 2 {
				inst.AuthPass = g.AuthPass // VRRPv3 (and so IPv6) has no authentication
			}
			wanted := len(vips[k])
			for _, a := range sortedAddrs(vips[k]) {
				if other, dup := held[a]; dup {
					warn("%s is wanted by %s and %s; %s keeps it (two Services or groups claim one address)", a, other, name, other)
					continue
				}
				held[a] = name
				inst.VIPs = append(inst.VIPs, a)
			}
			if wanted > 0 && len(inst.VIPs) == 0 {
				continue // every address it wanted is held elsewhere
			}
			if g.Unicast {
				src, ok := addrOf(g.NodeAddrs[node], k.fam)
				if !ok {
					warn("%s: unicast needs an IPv%d InternalIP on node %s; it has none, so the instance is not run", name, k.fam, node)
					for _, a := range inst.VIPs {
						delete(held, a)
					}
					continue
				}
				inst.Src = src
				inst.Peers = []netip.Addr{}
				for _, n := range runners[k.inst] {
					if n == node {
						continue
					}
					if a, ok := addrOf(g.NodeAddrs[n], k.fam); ok {
						inst.Peers = append(inst.Peers, a)
					} else {
						warn("%s: node %s has no IPv%d InternalIP and cannot be a unicast peer", name, n, k.fam)
					}
				}
				inst.Peers = sortedAddrs(inst.Peers)
			}
			p.Instances = append(p.Instances, inst)
		}
	}
	sort.Slice(p.Instances, func(i, j int) bool { return p.Instances[i].Name < p.Instances[j].Name })
	return p, warns
}

func addrOf(addrs []netip.Addr, fam int) (netip.Addr, bool) {
	for _, a := range sortedAddrs(addrs) {
		if a.Is4() == (fam == 4) {
			return a, true
		}
	}
	return netip.Addr{}, false
}

func sortedAddrs(a []netip.Addr) []netip.Addr {
	out := slices.Clone(a)
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

func sortedUnique(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// VIPCount returns the number of addresses in the plan.
func (p Plan) VIPCount() int {
	n := 0
	for _, in := range p.Instances {
		n += len(in.VIPs)
	}
	return n
}

// Model returns the plan as the typed keepalived model, not yet checked
// (Config checks it).
func (p Plan) Model() *keepalived.Config {
	cfg := keepalived.NewConfig()
	cfg.Comment = fmt.Sprintf("vipstack agent, node %s: %d instances, %d addresses", p.Node, len(p.Instances), p.VIPCount())
	cfg.Global.RouterID = p.Node
	vips := func(as []netip.Addr, dev string) []keepalived.VIP {
		var out []keepalived.VIP
		for _, a := range as {
			out = append(out, keepalived.MakeVIP(netip.PrefixFrom(a, a.BitLen()), keepalived.VIPOptions{Dev: dev}))
		}
		return out
	}
	for _, in := range p.Instances {
		ki := cfg.NewInstance(in.Name)
		ki.Interface, ki.VRID, ki.Priority = in.Interface, uint8(in.VRID), in.Priority
		ki.Version, ki.AdvertInterval = in.Version, in.Interval
		ki.Preempt, ki.PreemptDelay = !in.NoPreempt, in.PreemptDelay
		if in.AuthPass != "" {
			ki.AuthType, ki.AuthPass = "PASS", in.AuthPass
		}
		if in.Peers != nil {
			ki.UnicastSrcIP = in.Src
			if len(in.Peers) > 0 { // nil when empty, as the reader leaves it
				ki.UnicastPeers = slices.Clone(in.Peers)
			}
		}
		adv := in.VIPs[:min(len(in.VIPs), MaxAdvertised)]
		ki.VIPs, ki.ExcludedVIPs = vips(adv, in.Interface), vips(in.VIPs[len(adv):], in.Interface)
		cfg.Instances = append(cfg.Instances, ki)
	}
	return cfg
}

// Render returns the plan as keepalived.conf text: what the engine runs
// (Config) as keepalived would run it.
func (p Plan) Render() string { return string(keepalived.Format(p.Model())) }

// Config returns the plan as the engine runs it: the model checked by the
// keepalived.conf reader's rules.
func (p Plan) Config() (*keepalived.Config, error) {
	cfg := p.Model()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("agent %s: generated configuration rejected (a bug): %w", p.Node, err)
	}
	return cfg, nil
}
