package cluster

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/vipstack/vipstack/internal/bgp"
)

// CheckSpec is one native health check. It succeeds when any of its URLs
// answers 2xx (TLS without verification for https, as the seeds' curl -k).
type CheckSpec struct {
	Name       string
	URLs       []string
	Interval   time.Duration
	Timeout    time.Duration
	Weight     int
	Rise, Fall int
}

// InstanceSpec is one VRRP instance a node runs.
type InstanceSpec struct {
	Name     string
	VIPs     []netip.Addr
	VRID     uint8
	Priority uint8
	Checks   []string // names of CheckSpecs
	Source   netip.Addr
	Peers    []netip.Addr // unicast peers; empty in multicast mode
	Version  int          // 2 or 3 (always 3 for IPv6)
	AuthPass string       // VRRPv2 only
	// Rivals are the addresses (of the VIPs' family) of the other nodes
	// running the instance at the same base priority, and Top that
	// priority with every check passing: the tie-break after a master's
	// priority 0 (fsm.TieBreak).
	Rivals []netip.Addr
	Top    uint8
}

// Plan is what one node runs.
type Plan struct {
	Node      Node
	Instances []InstanceSpec
	Checks    []CheckSpec
	RunLB     bool // the API load balancer (masters)
	RunDNS    bool // the cluster DNS (every node)
	// BGP is the node's speaker when it announces VIPs (nil otherwise).
	BGP *BGPSpec
}

// BGPSpec is what a node announces by BGP: the speaker's configuration
// and, per VIP, the checks that make the node eligible for it, the ones
// that would set the priority of the VRRP instance holding it.
type BGPSpec struct {
	Config bgp.Config
	// Checks are the names of the CheckSpecs deciding each VIP; a VIP
	// with none (the bootstrap node's) is always eligible.
	Checks map[netip.Addr][]string
	// Role names the role of each VIP (api, ingress, dns).
	Role map[netip.Addr]string
}

// Priorities and weights, as in OpenShift's on-premise keepalived.conf
// (seed 000). The bootstrap node outranks any master (40+20+5 = 65 < 70)
// until it is torn down.
const (
	PrioBootstrap     = 70
	PrioMasterAPI     = 40
	WeightLB          = 20 // the local load balancer serves the API
	WeightLBOrAPI     = 5  // the local LB or the local API answers
	PrioIngress       = 20
	WeightIngress     = 50 // the local router answers
	PrioMasterDNS     = 40
	WeightDNS         = 20 // the local DNS answers
	checkLB           = "chk_ocp_lb"
	checkBoth         = "chk_ocp_both"
	checkIngress      = "chk_ingress"
	checkDNS          = "chk_dns"
	DNSPort           = 53    // the cluster DNS, UDP and TCP, on every node
	DNSHealthPort     = 18080 // the seed Corefile's `health :18080`
	DefaultLBMonitor  = 50936 // haproxy's monitor listener in the seeds
	defaultTimeoutLB  = 1900 * time.Millisecond
	defaultTimeoutIng = 900 * time.Millisecond
)

// The ports of `vipstack node`'s default --metrics-addr and --status-addr
// (on 127.0.0.1), and of `vipstack agent`'s (and its --health-addr), which
// may run on the same host (the Kubernetes agent for LoadBalancer Services,
// beside the node's static pods). Validate keeps the file's ports off all
// five.
const (
	DefaultMetricsPort      = 9650
	DefaultStatusPort       = 9651
	DefaultAgentStatusPort  = 9653
	DefaultAgentMetricsPort = 9654
	DefaultAgentHealthPort  = 9655
)

// PlanFor derives what the named node runs.
func (c *Cluster) PlanFor(name string) (*Plan, error) {
	self, ok := c.NodeByName(name)
	if !ok {
		var names []string
		for _, n := range c.Nodes {
			names = append(names, n.Name)
		}
		return nil, fmt.Errorf("node %q is not in the cluster file (nodes: %v)", name, names)
	}
	ids := c.VRIDs()
	p := &Plan{Node: self, RunDNS: true, RunLB: self.Role == Master}
	apiNodes := c.withRoles(Bootstrap, Master)
	ingressNodes := c.withRoles(Master, Worker)
	if cfg, ok := c.bgpConfigFor(self); ok {
		p.BGP = &BGPSpec{Config: cfg, Checks: map[netip.Addr][]string{}, Role: map[netip.Addr]string{}}
	}
	add := func(kind string, all []netip.Addr, vrid uint8, prio uint8, members []Node, checks ...string) error {
		// VIPs BGP announces leave the VRRP instance; their checks
		// decide the announcement instead.
		var held []netip.Addr
		for _, v := range all {
			if c.BGP.Announced[v] {
				p.BGP.Checks[v] = checks
				p.BGP.Role[v] = kind
				continue
			}
			held = append(held, v)
		}
		all = held
		ov := c.override(kind)
		if ov.Priority != 0 && self.Role != Bootstrap {
			prio = ov.Priority
		}
		// One instance per address family, both with the same VRID (IPv4
		// and IPv6 VRRP routers are distinct, RFC 5798 section 5.2.3), as
		// OpenShift runs dual-stack VIPs: "<name>_API_0" for the first
		// entry's family and "<name>_API_1" for the other. A single-family
		// list keeps the plain "<name>_API".
		fams := Families(all)
		for i, fam := range fams {
			var vips []netip.Addr
			for _, v := range all {
				if v.Is4() == (fam == 4) {
					vips = append(vips, v)
				}
			}
			src, ok := addrOfFamily(self.IPs, vips[0])
			if !ok {
				return fmt.Errorf("node %s has no %s address for the %s VIP %s", self.Name, family(vips[0]), kind, vips[0])
			}
			name := c.Name + "_" + upper(kind)
			if len(fams) > 1 {
				name += "_" + strconv.Itoa(i)
			}
			in := InstanceSpec{
				Name: name, VIPs: vips, VRID: vrid, Priority: prio, Checks: checks, Source: src,
				Version: c.VersionFor(vips[0]), Top: top(prio, p.Checks, checks),
			}
			for _, m := range members {
				if a, ok := addrOfFamily(m.IPs, vips[0]); ok && m.Name != self.Name && (m.Role == Bootstrap) == (self.Role == Bootstrap) {
					// Every node of the instance but the bootstrap has the
					// same base priority (overrides included).
					in.Rivals = append(in.Rivals, a)
				}
			}
			if c.VRRP.Unicast {
				for _, m := range members {
					if m.Name == self.Name {
						continue
					}
					if a, ok := addrOfFamily(m.IPs, vips[0]); ok {
						in.Peers = append(in.Peers, a)
					}
				}
			}
			if in.Version == 2 {
				in.AuthPass = c.Name + "_" + kind + "_vip"
				if ov.Password != "" {
					in.AuthPass = ov.Password
				}
			}
			p.Instances = append(p.Instances, in)
		}
		return nil
	}
	https := func(port int) string { return "https://localhost:" + strconv.Itoa(port) + "/readyz" }
	switch self.Role {
	case Bootstrap:
		if err := add("api", c.APIVIPs, ids.API, PrioBootstrap, apiNodes); err != nil {
			return nil, err
		}
		if c.DNSVIP.IsValid() {
			if err := add("dns", []netip.Addr{c.DNSVIP}, ids.DNS, PrioBootstrap, apiNodes); err != nil {
				return nil, err
			}
		}
	case Master:
		p.Checks = append(p.Checks,
			CheckSpec{Name: checkLB, URLs: []string{https(c.Ports.LB)}, Interval: 2 * time.Second, Timeout: defaultTimeoutLB, Weight: WeightLB, Rise: 3, Fall: 2},
			CheckSpec{Name: checkBoth, URLs: []string{https(c.Ports.LB), https(c.Ports.API)}, Interval: 2 * time.Second, Timeout: defaultTimeoutLB, Weight: WeightLBOrAPI, Rise: 3, Fall: 2},
			CheckSpec{Name: checkIngress, URLs: []string{"http://localhost:" + strconv.Itoa(c.Ports.IngressHealth) + "/healthz/ready"}, Interval: time.Second, Timeout: defaultTimeoutIng, Weight: WeightIngress, Rise: 1, Fall: 1},
		)
		if err := add("api", c.APIVIPs, ids.API, PrioMasterAPI, apiNodes, checkLB, checkBoth); err != nil {
			return nil, err
		}
		if err := add("ingress", c.IngressVIPs, ids.Ingress, PrioIngress, ingressNodes, checkIngress); err != nil {
			return nil, err
		}
		if c.DNSVIP.IsValid() {
			p.Checks = append(p.Checks, CheckSpec{Name: checkDNS, URLs: []string{"http://localhost:" + strconv.Itoa(DNSHealthPort) + "/health"}, Interval: time.Second, Timeout: defaultTimeoutIng, Weight: WeightDNS, Rise: 1, Fall: 1})
			if err := add("dns", []netip.Addr{c.DNSVIP}, ids.DNS, PrioMasterDNS, apiNodes, checkDNS); err != nil {
				return nil, err
			}
		}
	case Worker:
		p.Checks = append(p.Checks, CheckSpec{Name: checkIngress, URLs: []string{"http://localhost:" + strconv.Itoa(c.Ports.IngressHealth) + "/healthz/ready"}, Interval: time.Second, Timeout: defaultTimeoutIng, Weight: WeightIngress, Rise: 1, Fall: 1})
		if err := add("ingress", c.IngressVIPs, ids.Ingress, PrioIngress, ingressNodes, checkIngress); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// top is the priority of an instance at base priority prio whose checks
// (named from all) all pass: positive weights add, as keepalived's do.
func top(prio uint8, all []CheckSpec, names []string) uint8 {
	t := int(prio)
	for _, ch := range all {
		if slices.Contains(names, ch.Name) && ch.Weight > 0 {
			t += ch.Weight
		}
	}
	return uint8(min(t, 254))
}

// override returns the overrides of the instance of kind (api, ingress,
// dns).
func (c *Cluster) override(kind string) Override {
	switch kind {
	case "api":
		return c.VRRP.API
	case "ingress":
		return c.VRRP.Ingress
	case "dns":
		return c.VRRP.DNS
	}
	return Override{}
}

func (c *Cluster) withRoles(roles ...Role) []Node {
	var out []Node
	for _, n := range c.Nodes {
		for _, r := range roles {
			if n.Role == r {
				out = append(out, n)
			}
		}
	}
	return out
}

func addrOfFamily(addrs []netip.Addr, like netip.Addr) (netip.Addr, bool) {
	for _, a := range addrs {
		if a.Is4() == like.Is4() {
			return a, true
		}
	}
	return netip.Addr{}, false
}

func family(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
