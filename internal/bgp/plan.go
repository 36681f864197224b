package bgp

import (
	"net/netip"
	"slices"
)

// Verdict says whether this node may announce a VIP now, and why. The
// checks that set a VRRP instance's priority (track scripts, the load
// balancer's backends, a router's readiness) decide it.
type Verdict struct {
	VIP      netip.Addr
	Eligible bool
	Reason   string // "backends 2/2 up", "track script chk_api failed"
}

// Op is one change to the announced routes.
type Op struct {
	Withdraw bool
	Route    Route  // for a withdrawal only Route.VIP is set
	Reason   string // why, for the log
}

// RouteStatus is a route's state after a plan: announced or not, and why.
type RouteStatus struct {
	Prefix    netip.Prefix
	Announced bool
	Reason    string
}

// Plan returns the changes that take the announced routes (by prefix, with
// the attributes they were announced with) to what routes and verdicts
// want, and the state of every configured route. A route without a verdict
// is not announced. It is pure: the speaker applies the ops.
func Plan(routes []Route, verdicts []Verdict, announced map[netip.Prefix]Attributes) ([]Op, []RouteStatus) {
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
		case !v.Eligible:
			st = append(st, RouteStatus{Prefix: p, Reason: "not eligible: " + v.Reason})
			if was {
				ops = append(ops, Op{Withdraw: true, Route: Route{VIP: r.VIP}, Reason: "not eligible: " + v.Reason})
			}
		default:
			st = append(st, RouteStatus{Prefix: p, Announced: true, Reason: "eligible: " + v.Reason})
			switch {
			case !was:
				ops = append(ops, Op{Route: r, Reason: "eligible: " + v.Reason})
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

// Equal reports whether a and b announce the same path attributes.
func (a Attributes) Equal(b Attributes) bool {
	eqp := func(x, y *uint32) bool {
		if x == nil || y == nil {
			return x == y
		}
		return *x == *y
	}
	return slices.Equal(a.Communities, b.Communities) && slices.Equal(a.LargeCommunities, b.LargeCommunities) &&
		eqp(a.LocalPref, b.LocalPref) && eqp(a.MED, b.MED) && a.Prepend == b.Prepend
}
