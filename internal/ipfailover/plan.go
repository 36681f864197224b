package ipfailover

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
)

// Ranks says where this node stands among the pool's nodes. Every node
// computes the same Plan; its rank picks its priorities in that plan.
type Ranks struct {
	Self  int `json:"self"`  // this node's rank, 0-based
	Count int `json:"count"` // number of ranks in the plan
	// Members are the pool's nodes in rank order, when known (unicast
	// peers, or the node list given in multicast mode).
	Members []netip.Addr `json:"members,omitempty"`
	// Basis says how the rank was derived, for the status and the log.
	Basis string `json:"basis"`
}

// RankOf derives this node's rank from what every node of the pool knows.
//
// With a node list (the unicast peers, or nodes given explicitly in
// multicast mode) the rank is the position of self in the sorted list
// (self included if missing): distinct on every node. Without one (the
// image's multicast mode), the rank is self, read as a number, modulo
// OPENSHIFT_HA_REPLICA_COUNT: distinct for nodes with consecutive
// addresses (the usual case); two nodes with the same rank share their
// preference, VRRP's address tie-break then decides, and the spread is
// uneven but every VIP is still held once.
func RankOf(self netip.Addr, spec *Spec, nodes []netip.Addr) (Ranks, error) {
	if !self.IsValid() {
		return Ranks{}, fmt.Errorf("rank: no address for this node")
	}
	self = self.WithZone("")
	src := "node list"
	if len(nodes) == 0 && spec.Unicast() {
		nodes, src = spec.Peers, EnvUnicastPeers
	}
	if len(nodes) > 0 {
		members := append([]netip.Addr(nil), nodes...)
		if !slices.Contains(members, self) {
			members = append(members, self)
		}
		slices.SortFunc(members, netip.Addr.Compare)
		members = slices.Compact(members)
		if len(members) > MaxReplicas {
			return Ranks{}, fmt.Errorf("rank: %s has %d nodes, at most %d are supported", src, len(members), MaxReplicas)
		}
		i := slices.Index(members, self)
		return Ranks{Self: i, Count: len(members), Members: members,
			Basis: fmt.Sprintf("position of %s in the sorted %s (%d of %d)", self, src, i+1, len(members))}, nil
	}
	n := spec.ReplicaCount
	if n < 1 {
		n = 1
	}
	b := self.AsSlice()
	v := binary.BigEndian.Uint32(b[len(b)-4:])
	r := int(v % uint32(n))
	return Ranks{Self: r, Count: n,
		Basis: fmt.Sprintf("%s read as a number, modulo %s %d = %d (multicast without a node list)", self, EnvReplicaCount, n, r)}, nil
}

// Group is one VRRP instance of the pool.
type Group struct {
	Index int    `json:"index"` // 0-based
	Name  string `json:"name"`  // the image's instance name: <config>_VIP_<index+1>
	VRID  uint8  `json:"vrid"`  // 0 until AssignVRIDs
	// VIPs the group holds, in the order they were given.
	VIPs []netip.Addr `json:"-"`
	// Order lists the ranks from the most preferred (the group's master
	// while it is up) to the least.
	Order []int `json:"order"`
	// n is how many VIPs the group holds once VIPs was dropped
	// (WithoutVIPs).
	n int
}

// NumVIPs returns how many VIPs the group holds.
func (g *Group) NumVIPs() int {
	if g.VIPs == nil {
		return g.n
	}
	return len(g.VIPs)
}

// MaxAdvertised is how many of a group's VIPs its advertisements carry; the
// others are held as keepalived's virtual_ipaddress_excluded. keepalived
// moves what does not fit in a packet (255 IPv4 addresses) to excluded
// addresses the same way; a short list keeps adverts small.
const MaxAdvertised = 20

// Advertised returns the VIPs carried in the group's advertisements.
func (g *Group) Advertised() []netip.Addr {
	return g.VIPs[:min(len(g.VIPs), MaxAdvertised)]
}

// Priority returns the VRRP priority of rank in this group: 250 for the
// preferred rank, then down in steps, so that every rank's priority is
// distinct and between 1 and 250.
func (g *Group) Priority(rank int) uint8 {
	pos := slices.Index(g.Order, rank)
	if pos < 0 {
		pos = len(g.Order)
	}
	step := max(1, min(20, 240/max(len(g.Order), 1)))
	return uint8(max(250-pos*step, 1))
}

// Plan is the layout every node of the pool computes from the same
// configuration.
type Plan struct {
	Ranks  int     `json:"ranks"`
	Groups []Group `json:"groups"`
}

// WithoutVIPs returns the plan without its groups' lists of VIPs, their
// counts kept (NumVIPs): for a pool whose engine holds the VIPs in its
// configuration from then on. At 10,000 VIPs the lists are 0.24 MB kept
// beside the configuration's for nothing.
func (p *Plan) WithoutVIPs() *Plan {
	q := &Plan{Ranks: p.Ranks, Groups: slices.Clone(p.Groups)}
	for i := range q.Groups {
		g := &q.Groups[i]
		g.n, g.VIPs = g.NumVIPs(), nil
	}
	return q
}

// DefaultGroups is the number of groups when OPENSHIFT_HA_VIP_GROUPS is not
// set: ranks x (ranks - 1), so that each node is preferred master of
// ranks-1 groups whose second choices are the other nodes in turn; when a
// node fails, each survivor takes one of its groups. Never more groups
// than VIPs.
func DefaultGroups(vips, ranks int) int {
	g := ranks * max(ranks-1, 1)
	return max(min(g, vips), 1)
}

// NewPlan spreads the VIPs over groups and gives each group its preference
// order. VIP i goes to rank i mod R (R: the ranks that are preferred for
// at least one group), so with every node up the shares differ by at most
// one VIP, whatever the group count; within a rank the VIPs go round its
// groups. Group g is preferred by rank g mod R; its second and later
// choices are the other ranks rotated by the group's index among its
// rank's groups, so a failed node's groups go to different survivors.
func NewPlan(spec *Spec, ranks int) *Plan {
	ranks = max(ranks, 1)
	n := spec.VIPGroups
	if n == 0 {
		n = DefaultGroups(len(spec.VIPs), ranks)
	}
	n = max(min(n, len(spec.VIPs)), 1)
	active := min(ranks, n) // ranks preferred by at least one group
	p := &Plan{Ranks: ranks, Groups: make([]Group, n)}
	stem := scrub(spec.ConfigName)
	for g := range p.Groups {
		pref, k := g%active, g/active
		others := make([]int, 0, ranks-1)
		for d := 1; d < ranks; d++ {
			others = append(others, (pref+d)%ranks)
		}
		if len(others) > 0 {
			r := k % len(others)
			others = append(others[r:], others[:r]...)
		}
		p.Groups[g] = Group{
			Index: g,
			Name:  stem + "_VIP_" + strconv.Itoa(g+1),
			Order: append([]int{pref}, others...),
		}
	}
	// groupsOf[r] lists the groups rank r is preferred for.
	groupsOf := make([][]int, active)
	for g := range p.Groups {
		groupsOf[g%active] = append(groupsOf[g%active], g)
	}
	groupOf := func(i int) int {
		gs := groupsOf[i%active]
		return gs[(i/active)%len(gs)]
	}
	// Each group's list at its size, the parts of one array: append's
	// room to grow was a fifth more at thousands of VIPs, kept for the
	// pool's life.
	counts := make([]int, n)
	for i := range spec.VIPs {
		counts[groupOf(i)]++
	}
	all := make([]netip.Addr, len(spec.VIPs))
	for g, from := 0, 0; g < n; g++ {
		if counts[g] > 0 {
			p.Groups[g].VIPs = all[from : from : from+counts[g]]
		}
		from += counts[g]
	}
	for i, a := range spec.VIPs {
		g := groupOf(i)
		p.Groups[g].VIPs = append(p.Groups[g].VIPs, a)
	}
	return p
}

// Share returns how many VIPs each rank is preferred master for.
func (p *Plan) Share() []int {
	out := make([]int, p.Ranks)
	for _, g := range p.Groups {
		out[g.Order[0]] += len(g.VIPs)
	}
	return out
}
