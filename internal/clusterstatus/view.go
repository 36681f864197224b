package clusterstatus

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/vipstack/vipstack/internal/engine"
)

// Report is what one node said about itself, or why it said nothing.
type Report struct {
	Node    string // its name in the cluster file
	Address string // where it was asked
	// Error says why the node gave no status ("" when it answered).
	Error     string
	Role      string
	Warnings  []string // e.g. a rejected cluster file
	Instances []engine.InstanceStatus
	// BGP is the node's BGP speaker, nil when it announces nothing.
	BGP *BGPReport
}

// BGPReport is what a node's speaker said: its sessions and routes.
type BGPReport struct {
	Peers, Established int // configured peers, and those with the session up
	Routes             []BGPRouteReport
}

// BGPRouteReport is one VIP's host route on a node.
type BGPRouteReport struct {
	VIP       string // the address, without the prefix length
	Role      string // api, ingress, dns
	Announced bool
	Demoted   bool   // announced with worse attributes: a check fails
	Reason    string // why it is or is not announced
}

// Expected is a VRRP instance the cluster's description says some
// nodes run: a VIP stays in the view when no node that answered runs
// it, and a silent node shows in every instance it should run.
type Expected struct {
	Instance string
	VRID     int
	VIPs     []string
	Nodes    []string
	Service  string // the Services that hold the addresses (Kubernetes)
	// BGP marks a VIP that Nodes announce by BGP rather than hold by
	// VRRP: VIPs has its one address, Instance is its role and VRID is 0.
	BGP bool
}

// View is the whole cluster, as printed. Its JSON keys are stable.
type View struct {
	Source   string     `json:"source"` // where the nodes came from
	VIPs     []VIP      `json:"vips"`
	Nodes    []Node     `json:"nodes"`
	Conflict []Conflict `json:"conflicts"`
	// BGP are the VIPs announced by BGP, with the nodes announcing them.
	BGP []BGPVIP `json:"bgp_vips,omitempty"`
	// Problems lists what is wrong, one sentence each; empty when all is
	// well (exit code 0).
	Problems []string `json:"problems"`
}

// VIP is one VRRP instance's addresses and every node's part in it.
type VIP struct {
	Addresses []string `json:"addresses"`
	Instance  string   `json:"instance"`
	VRID      int      `json:"vrid"`
	Service   string   `json:"service,omitempty"`
	// Holders are the nodes in MASTER state: exactly one is healthy.
	Holders []string `json:"holders"`
	Verdict string   `json:"verdict"` // ok, no holder, 2 holders
	Members []Member `json:"members"`
}

// BGPVIP is a VIP announced by BGP and every node's part in it.
type BGPVIP struct {
	Address string `json:"address"`
	Role    string `json:"role"`
	// Announcers are the nodes that announce its route with at least one
	// BGP session established: the routers' next hops (ECMP).
	Announcers []string    `json:"announcers"`
	Verdict    string      `json:"verdict"` // ok, demoted, no announcer
	Members    []BGPMember `json:"members"`
}

// BGPMember is one node that may announce a BGP VIP.
type BGPMember struct {
	Node string `json:"node"`
	// Route is announced, demoted (announced with worse attributes: a
	// check failed), not announced, or unreachable.
	Route  string `json:"route"`
	Reason string `json:"reason,omitempty"`
	// Sessions is "established of configured" peers, as "1/2".
	Sessions string `json:"sessions,omitempty"`
}

// Route states of a BGP member.
const (
	RouteAnnounced    = "announced"
	RouteDemoted      = "demoted"
	RouteNotAnnounced = "not announced"
)

// VerdictNoAnnouncer is the verdict of a BGP VIP no node announces over
// an established session.
const VerdictNoAnnouncer = "no announcer"

// VerdictDemoted is the verdict of a BGP VIP whose every announcer is
// demoted: the routers reach it, but through nodes whose checks fail.
const VerdictDemoted = "demoted"

// Member is one node's instance of a VIP.
type Member struct {
	Node      string  `json:"node"`
	State     string  `json:"state"` // MASTER, BACKUP, FAULT, INIT, or unreachable
	Base      int     `json:"base_priority"`
	Effective int     `json:"effective_priority"`
	Failing   []Check `json:"failing_checks"`
	Fault     string  `json:"fault,omitempty"`
	// Since is the last transition: "MASTER since 12:03:04: reason".
	LastReason string `json:"last_reason,omitempty"`
}

// Check is a failing check and why it fails.
type Check struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Node is one node and whether it answered.
type Node struct {
	Name      string   `json:"name"`
	Address   string   `json:"address"`
	Role      string   `json:"role,omitempty"`
	Reachable bool     `json:"reachable"`
	Error     string   `json:"error,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
}

// Conflict is a router on a VRID that disagrees with a node's instance.
type Conflict struct {
	Node     string `json:"node"`
	Instance string `json:"instance"`
	VRID     int    `json:"vrid"`
	Peer     string `json:"peer"`
	Kind     string `json:"kind"`
	Detail   string `json:"detail"`
	Count    uint64 `json:"count"`
}

// Verdicts of a VIP.
const (
	VerdictOK       = "ok"
	VerdictNoHolder = "no holder"
)

// Unreachable is the state of a member whose node did not answer.
const Unreachable = "unreachable"

// Merge builds the view from the nodes' reports and what the cluster's
// description expects. VIPs are ordered by instance name, members and
// nodes by node name.
func Merge(source string, expected []Expected, reports []Report) View {
	v := View{Source: source, VIPs: []VIP{}, Nodes: []Node{}, Conflict: []Conflict{}, Problems: []string{}}
	byName := map[string]*Report{}
	for i := range reports {
		r := &reports[i]
		byName[r.Node] = r
		v.Nodes = append(v.Nodes, Node{Name: r.Node, Address: r.Address, Role: r.Role, Reachable: r.Error == "",
			Error: r.Error, Warnings: r.Warnings})
	}
	slices.SortFunc(v.Nodes, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	vips := map[string]*VIP{}
	get := func(name string, vrid int, addrs []string) *VIP {
		x := vips[name]
		if x == nil {
			x = &VIP{Instance: name, VRID: vrid, Addresses: slices.Clone(addrs), Holders: []string{}, Members: []Member{}}
			vips[name] = x
		}
		return x
	}
	for _, e := range expected {
		if e.BGP {
			continue
		}
		x := get(e.Instance, e.VRID, e.VIPs)
		x.Service = e.Service
		for _, n := range e.Nodes {
			if r, ok := byName[n]; ok && r.Error != "" {
				x.Members = append(x.Members, Member{Node: n, State: Unreachable, Failing: []Check{}})
			}
		}
	}
	for _, r := range reports {
		for _, in := range r.Instances {
			x := get(in.Name, int(in.VRID), in.VIPs)
			x.Members = append(x.Members, member(r.Node, in))
			if in.State == "MASTER" {
				x.Holders = append(x.Holders, r.Node)
			}
			for _, c := range in.Conflicts {
				v.Conflict = append(v.Conflict, Conflict{Node: r.Node, Instance: in.Name, VRID: int(in.VRID), Peer: c.Peer,
					Kind: c.Kind, Detail: c.Detail, Count: c.Count})
			}
		}
	}
	for _, name := range sortedKeys(vips) {
		x := vips[name]
		slices.SortFunc(x.Members, func(a, b Member) int { return strings.Compare(a.Node, b.Node) })
		slices.Sort(x.Holders)
		switch len(x.Holders) {
		case 0:
			x.Verdict = VerdictNoHolder
			v.Problems = append(v.Problems, fmt.Sprintf("%s (%s): no node holds it", name, strings.Join(x.Addresses, ",")))
		case 1:
			x.Verdict = VerdictOK
		default:
			x.Verdict = fmt.Sprintf("%d holders", len(x.Holders))
			v.Problems = append(v.Problems, fmt.Sprintf("%s (%s): held by %d nodes at once: %s", name, strings.Join(x.Addresses, ","), len(x.Holders), strings.Join(x.Holders, ", ")))
		}
		v.VIPs = append(v.VIPs, *x)
	}
	v.BGP, v.Problems = mergeBGP(expected, reports, byName, v.Problems)
	for _, n := range v.Nodes {
		if !n.Reachable {
			v.Problems = append(v.Problems, fmt.Sprintf("node %s (%s) did not answer: %s", n.Name, n.Address, n.Error))
		}
		for _, w := range n.Warnings {
			v.Problems = append(v.Problems, fmt.Sprintf("node %s: %s", n.Name, w))
		}
	}
	slices.SortStableFunc(v.Conflict, func(a, b Conflict) int {
		return cmp.Or(strings.Compare(a.Instance, b.Instance), strings.Compare(a.Node, b.Node), strings.Compare(a.Peer, b.Peer))
	})
	for _, c := range v.Conflict {
		v.Problems = append(v.Problems, fmt.Sprintf("%s on %s: VRID %d conflict with %s (%s): %s", c.Instance, c.Node, c.VRID, c.Peer, c.Kind, c.Detail))
	}
	return v
}

// mergeBGP builds the BGP VIPs: every node the cluster's description
// gives one (unreachable when it did not answer) and every node that
// reports its route. A VIP that no node announces over an established
// session is a problem.
func mergeBGP(expected []Expected, reports []Report, byName map[string]*Report, problems []string) ([]BGPVIP, []string) {
	vips := map[string]*BGPVIP{}
	get := func(addr, role string) *BGPVIP {
		x := vips[addr]
		if x == nil {
			x = &BGPVIP{Address: addr, Role: role, Announcers: []string{}, Members: []BGPMember{}}
			vips[addr] = x
		}
		return x
	}
	for _, e := range expected {
		if !e.BGP || len(e.VIPs) == 0 {
			continue
		}
		x := get(e.VIPs[0], e.Instance)
		for _, n := range e.Nodes {
			if r, ok := byName[n]; ok && r.Error != "" {
				x.Members = append(x.Members, BGPMember{Node: n, Route: Unreachable})
			}
		}
	}
	for _, r := range reports {
		if r.BGP == nil {
			continue
		}
		sessions := fmt.Sprintf("%d/%d", r.BGP.Established, r.BGP.Peers)
		for _, rt := range r.BGP.Routes {
			x := get(rt.VIP, rt.Role)
			m := BGPMember{Node: r.Node, Route: RouteNotAnnounced, Reason: oneLine(rt.Reason), Sessions: sessions}
			if rt.Announced {
				m.Route = RouteAnnounced
				if rt.Demoted {
					m.Route = RouteDemoted
				}
				if r.BGP.Established > 0 {
					x.Announcers = append(x.Announcers, r.Node)
				}
			}
			x.Members = append(x.Members, m)
		}
	}
	var out []BGPVIP
	for _, addr := range sortedKeys(vips) {
		x := vips[addr]
		slices.SortFunc(x.Members, func(a, b BGPMember) int { return strings.Compare(a.Node, b.Node) })
		slices.Sort(x.Announcers)
		x.Verdict = VerdictOK
		switch {
		case len(x.Announcers) == 0:
			x.Verdict = VerdictNoAnnouncer
			problems = append(problems, fmt.Sprintf("%s (%s, BGP): no node announces it over an established session", addr, x.Role))
		case allDemoted(x):
			x.Verdict = VerdictDemoted
			problems = append(problems, fmt.Sprintf("%s (%s, BGP): every node announcing it is demoted (%s): a check fails on each",
				addr, x.Role, strings.Join(x.Announcers, ", ")))
		}
		out = append(out, *x)
	}
	return out, problems
}

// allDemoted reports whether every announcer of x announces it demoted.
func allDemoted(x *BGPVIP) bool {
	for _, m := range x.Members {
		if m.Route == RouteAnnounced && slices.Contains(x.Announcers, m.Node) {
			return false
		}
	}
	return true
}

// member is a node's instance as a member of its VIP.
func member(node string, in engine.InstanceStatus) Member {
	m := Member{Node: node, State: in.State, Base: in.BasePriority, Effective: in.Effective, Fault: oneLine(in.Fault), Failing: []Check{}}
	for _, c := range in.Contributions {
		if !c.OK {
			m.Failing = append(m.Failing, Check{Name: strings.TrimPrefix(c.Source, "script "), Reason: oneLine(c.Reason)})
		}
	}
	if tr := in.LastTransition; tr != nil {
		m.LastReason = fmt.Sprintf("%s since %s: %s", tr.To, tr.At.UTC().Format("15:04:05"), oneLine(tr.Reason))
	}
	return m
}

// OK reports whether nothing is wrong.
func (v View) OK() bool { return len(v.Problems) == 0 }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
