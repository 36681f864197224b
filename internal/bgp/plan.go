package bgp

import (
	"net/netip"
	"slices"
)

// Verdict says whether this node may announce a VIP now, and why. The
// checks that set a VRRP instance's priority (track scripts, the load
// balancer's backends, a router's readiness) decide it. It is one of
// three states (State): eligible, demoted (Eligible and Demoted: a check
// that VRRP counts as a weight fails, so the node is a last resort) and
// not eligible (a check that VRRP counts as fatal fails).
type Verdict struct {
	VIP      netip.Addr
	Eligible bool
	// Demoted, with Eligible, announces the route with Config.Demote's
	// worse attributes, or withdraws it when Config.Demote is nil.
	Demoted bool
	Reason  string // "backends 2/2 up", "track script chk_api failed"
}

// State names the verdict's state: "eligible", "demoted" or "not eligible".
func (v Verdict) State() string {
	switch {
	case !v.Eligible:
		return "not eligible"
	case v.Demoted:
		return "demoted"
	}
	return "eligible"
}

// Op is one change to the announced routes.
type Op struct {
	Withdraw bool
	Route    Route  // for a withdrawal only Route.VIP is set
	Reason   string // why, for the log
}

// RouteStatus is a route's state after a plan: announced or not, demoted
// or not, and why.
type RouteStatus struct {
	Prefix    netip.Prefix
	Announced bool
	// Demoted is set while the route is announced with Config.Demote's
	// attributes.
	Demoted bool
	Reason  string
}

// Plan returns the changes that take the announced routes (by prefix, with
// the attributes they were announced with) to what routes and verdicts
// want, and the state of every configured route. A route without a verdict
// is not announced; a demoted one is announced with demote's attributes,
// or withdrawn when demote is nil. A route that moves between eligible and
// demoted is announced again with its new attributes, which replace the
// old path. It is pure: the speaker applies the ops.
func Plan(routes []Route, demote *Demotion, verdicts []Verdict, announced map[netip.Prefix]Attributes) ([]Op, []RouteStatus) {
	byVIP := map[netip.Addr]Verdict{}
	for _, v := range verdicts {
		byVIP[v.VIP.Unmap()] = v
	}
	var ops []Op
	var st []RouteStatus
	configured := map[netip.Prefix]bool{}
	for _, r := range routes {
		p := r.Prefix()
		configured[p] = true
		v, ok := byVIP[r.VIP.Unmap()]
		old, was := announced[p]
		switch {
		case !ok:
			st = append(st, RouteStatus{Prefix: p, Reason: "no eligibility verdict for this VIP yet"})
			if was {
				ops = append(ops, Op{Withdraw: true, Route: Route{VIP: r.VIP}, Reason: "no eligibility verdict"})
			}
		case !v.Eligible || (v.Demoted && demote == nil):
			why := "not eligible: " + v.Reason
			if v.Eligible {
				why += " (demotion off: a failing check withdraws)"
			}
			st = append(st, RouteStatus{Prefix: p, Reason: why})
			if was {
				ops = append(ops, Op{Withdraw: true, Route: Route{VIP: r.VIP}, Reason: why})
			}
		default:
			why := "eligible: " + v.Reason
			wasDemoted := was && demote != nil && old.Equal(demote.Apply(r.Attributes))
			if v.Demoted {
				r.Attributes = demote.Apply(r.Attributes)
				why = "demoted: " + v.Reason
			}
			st = append(st, RouteStatus{Prefix: p, Announced: true, Demoted: v.Demoted, Reason: why})
			switch {
			case !was:
				ops = append(ops, Op{Route: r, Reason: why})
			case !old.Equal(r.Attributes) && wasDemoted != v.Demoted:
				ops = append(ops, Op{Route: r, Reason: why})
			case !old.Equal(r.Attributes):
				ops = append(ops, Op{Route: r, Reason: "attributes changed"})
			}
		}
	}
	var gone []netip.Prefix
	for p := range announced {
		if !configured[p] {
			gone = append(gone, p)
		}
	}
	slices.SortFunc(gone, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	for _, p := range gone {
		ops = append(ops, Op{Withdraw: true, Route: Route{VIP: p.Addr()}, Reason: "no longer configured"})
	}
	return ops, st
}
