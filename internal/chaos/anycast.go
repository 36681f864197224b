package chaos

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"
)

// The invariants of VIPs announced by BGP (Config.Anycast). Every eligible
// node announces every VIP it may hold and has it on its loopback; the
// router sends each flow to one of them (ECMP). Several holders are the
// design, so there is no split brain; instead, at every sample:
//
//	(a) stale route: the router sends no VIP to a node that cannot answer
//	    it (agent or engine dead, stalled, cut, its interface down, the
//	    VIP off its loopback) longer than StaleBound after that began, or
//	    Hold + Margin when that began within Warmup of the route's return
//	    (BFD not up yet on a new session);
//	(b) no eligible route: a VIP with an eligible node is routed to a node
//	    that can answer it, except within StaleBound of a fault's start;
//	(c) leftovers: an engine dead under a live supervisor leaves no VIP
//	    on the loopback, and no vipstack nftables table, past
//	    SupervisorBound. A restarted agent puts the same VIPs on its
//	    loopback again at once (they are its own), so there is no
//	    restart sweep to time.
//
// A router fault (Kind.OfRouter: its BGP or BFD daemon killed and started
// again) suspends (a) and (b) while it lasts and for RouterBound after it
// ends: the router drops every route with its BGP daemon, and without its
// BFD daemon it cannot tell a dead node in time. Afterwards (b) asks for
// more until the router has recovered: every eligible node routed every
// VIP, not one of them. A node that stopped answering from shortly before
// (StaleBound) a router fault to RouterBound after it is judged against
// Hold + Margin, as when BFD is not up. A graceful stop (TermAgent) is
// judged against StaleBound always: the speaker withdraws before it
// closes, with no need of BFD.
//
// A node is eligible for (b) when it may hold the VIP, has it on its
// loopback, its agent and engine run, no fault that lets the router drop
// its route (Kind.Unannounced) is under way, and it is not on its way
// back: routed every VIP again since such a fault ended (or its processes
// returned), or Rejoin passed. A node whose checks fail (Kind.Demotes)
// keeps announcing its route with worse attributes, which the router
// uses only when it has no other: when no node is eligible, such a node
// that can answer and has no other fault under way (nor is back from
// one) must be routed instead, a last resort, as the last VRRP master
// with a failing weighted check keeps its VIP. Any routed node that can
// answer (not as in a) satisfies (b): one back from a fault within Rejoin
// too.

// Unannounced reports whether the fault lets the router drop its node's
// route while it lasts (Config.Anycast): the node cannot answer
// (Ineligible), its BFD may time out (loss), or its checks fail (FlapLB:
// its route is demoted, and dropped while another node's is better).
func (k Kind) Unannounced() bool {
	return k.Ineligible() || k == Loss || k == HeavyLoss || k.Demotes()
}

// Demotes reports whether the fault fails checks of its node that VRRP
// counts as weights (FlapLB: the API VIP's load balancer checks): under
// BGP the node keeps announcing, demoted (bgp.onCheckFailure demote).
func (k Kind) Demotes() bool { return k == FlapLB }

// anyNode is checkAnycast's memory of one node between samples.
type anyNode struct {
	prev        NodeSample
	seen        bool
	deadSince   time.Time                // first sample with its agent or engine dead (zero: alive)
	back        time.Time                // when it was seen alive again after that (zero: never dead)
	engineDeath                          // an engine dead under a live supervisor (invariant c)
	offLo       map[netip.Addr]time.Time // VIPs it may hold seen off its loopback since
	rejoined    time.Time                // the return last timed (anyRejoin)
	routedSince map[netip.Addr]time.Time // the first sample of each VIP's current route to it
}

// youngest is when the youngest of the node's current routes appeared
// (zero: none).
func (st *anyNode) youngest() time.Time {
	var y time.Time
	for _, t := range st.routedSince {
		if t.After(y) {
			y = t
		}
	}
	return y
}

// unprotected reports whether a fault from since hit a route younger than
// Warmup then (its session's BFD may not be up).
func unprotected(cfg Config, routedSince, since time.Time) bool {
	return !routedSince.IsZero() && routedSince.After(since.Add(-cfg.Warmup))
}

// routerFaults are the windows of the router's faults (Kind.OfRouter).
type routerFaults []Window

func routerFaultsOf(windows []Window) routerFaults {
	var out routerFaults
	for _, w := range windows {
		if w.Fault.Kind.OfRouter() {
			out = append(out, w)
		}
	}
	// The runner records a window when it ends.
	slices.SortFunc(out, func(a, b Window) int { return a.Start.Compare(b.Start) })
	return out
}

// held reports whether a router fault is under way at t or ended less than
// RouterBound ago.
func (rf routerFaults) held(cfg Config, t time.Time) bool {
	for _, w := range rf {
		if !t.Before(w.Start) && (w.End.IsZero() || t.Before(w.End.Add(cfg.RouterBound))) {
			return true
		}
	}
	return false
}

// blind reports whether a node that stopped answering at since did so
// while the router may not have BFD for it: from StaleBound before a
// router fault to RouterBound after it.
func (rf routerFaults) blind(cfg Config, since time.Time) bool {
	for _, w := range rf {
		if !since.Before(w.Start.Add(-cfg.StaleBound())) && (w.End.IsZero() || since.Before(w.End.Add(cfg.RouterBound))) {
			return true
		}
	}
	return false
}

// anyFaults is what the fault windows say of one node at one moment.
type anyFaults struct {
	outFrom time.Time // the node cannot answer since (zero: it can)
	outBy   string
	open    bool      // a fault that lets the router drop its route is under way
	hard    bool      // one that does not only demote it (not Kind.Demotes)
	lastEnd time.Time // when the last such fault ended (zero: none)
	lastBy  Kind      // its kind
}

// lastResort reports whether the node announces its routes demoted and
// nothing else keeps it from being routed at t: a fault that demotes it
// is under way, or the last one ended less than Rejoin ago (its checks
// rise meanwhile), and no other fault is under way nor has the node's
// return from one to wait for.
func (st *anyNode) lastResort(cfg Config, f anyFaults, t time.Time) bool {
	if f.hard {
		return false
	}
	if f.open {
		return !st.returning(cfg, f, t) || f.lastBy.Demotes() && !st.back.After(f.lastEnd)
	}
	return f.lastBy.Demotes() && !st.back.After(f.lastEnd) && st.returning(cfg, f, t)
}

// returning reports whether the node is on its way back at t: the last
// fault that let its route go ended (or its processes came back) less
// than Rejoin ago and it has not been routed every VIP since.
func (st *anyNode) returning(cfg Config, f anyFaults, t time.Time) bool {
	from := f.lastEnd
	if st.back.After(from) {
		from = st.back
	}
	return !from.IsZero() && !from.Equal(st.rejoined) && t.Sub(from) < cfg.Rejoin
}

func anyFaultsAt(windows []Window, n int, t time.Time) anyFaults {
	var f anyFaults
	for _, w := range windows {
		if w.Node != n || t.Before(w.Start) || !w.Fault.Kind.Unannounced() {
			continue
		}
		if !w.End.IsZero() && !t.Before(w.End) {
			if w.ended().After(f.lastEnd) {
				f.lastEnd, f.lastBy = w.ended(), w.Fault.Kind
			}
			continue
		}
		f.open = true
		f.hard = f.hard || !w.Fault.Kind.Demotes()
		if w.Fault.Kind.Ineligible() && (f.outFrom.IsZero() || w.began().Before(f.outFrom)) {
			f.outFrom, f.outBy = w.began(), string(w.Fault.Kind)
		}
	}
	return f
}

// checkAnycast judges a run of Config.Anycast: samples checked and sorted,
// rep holding their figures.
func checkAnycast(cfg Config, windows []Window, samples []Sample, rep Report) Report {
	states := make([]anyNode, len(cfg.Nodes))
	for i := range states {
		states[i].offLo = map[netip.Addr]time.Time{}
		states[i].routedSince = map[netip.Addr]time.Time{}
	}
	stale := make([][]*episode, len(cfg.Nodes)) // by node, by VIP
	for n := range stale {
		stale[n] = make([]*episode, len(cfg.VIPs))
	}
	noRoute := make([]*episode, len(cfg.VIPs))
	engVIP := make([]*episode, len(cfg.Nodes))
	rules := make([]*episode, len(cfg.Nodes))
	closeEp := func(kind ViolationKind, vip netip.Addr, ep *episode) {
		if ep == nil {
			return
		}
		var names []string
		for n := range ep.nodes {
			names = append(names, n)
		}
		sort.Strings(names)
		rep.Violations = append(rep.Violations, Violation{Kind: kind, At: ep.start, For: ep.last.Sub(ep.start), VIP: vip, Nodes: names, Detail: ep.detail})
	}
	extend := func(ep **episode, t time.Time, node, detail string) {
		if *ep == nil {
			*ep = &episode{start: t, nodes: map[string]bool{}, detail: detail}
		}
		(*ep).last = t
		if node != "" {
			(*ep).nodes[node] = true
		}
	}
	// The starts of the faults that may take routes away, for (b)'s
	// grace, and the windows whose withdrawal is timed.
	var starts []time.Time
	for _, w := range windows {
		if w.Node >= 0 && w.Fault.Kind.Unannounced() {
			starts = append(starts, w.began())
		}
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	withdrawing := make([]int, len(windows)) // 0: not yet seen, 1: timing, 2: done
	rf := routerFaultsOf(windows)
	returned := make([]bool, len(rf)) // router faults whose recovery was timed (or abandoned)
	var prevAt time.Time
	for _, s := range samples {
		t := s.At
		faults := make([]anyFaults, len(cfg.Nodes))
		for n := range cfg.Nodes {
			faults[n] = anyFaultsAt(windows, n, t)
			anyProcesses(cfg, windows, &rep, &states[n], n, s.Nodes[n], prevAt, t)
			anyLeftovers(cfg, &rep, &states[n], s.Nodes[n], t, &engVIP[n], &rules[n], closeEp, extend, cfg.Nodes[n])
		}
		for n, ns := range s.Nodes {
			st := &states[n]
			for _, v := range cfg.VIPs {
				if slices.Contains(ns.Holds, v) {
					delete(st.offLo, v)
				} else if _, ok := st.offLo[v]; !ok {
					st.offLo[v] = t
				}
				switch _, ok := st.routedSince[v]; {
				case !slices.Contains(ns.Routed, v):
					delete(st.routedSince, v)
				case !ok && t.Equal(samples[0].At):
					// Routed before the run began: older than Warmup.
					st.routedSince[v] = t.Add(-cfg.Warmup)
				case !ok:
					st.routedSince[v] = t
				}
			}
		}
		anyWithdrawals(windows, rf, s, t, withdrawing, &rep, cfg, states)
		held := rf.held(cfg, t)
		// (a) stale routes.
		for n, ns := range s.Nodes {
			st := &states[n]
			for vi, v := range cfg.VIPs {
				since, why := faults[n].outFrom, faults[n].outBy
				if !st.deadSince.IsZero() && (since.IsZero() || st.deadSince.Before(since)) {
					since, why = st.deadSince, "its agent or engine is dead"
				}
				if off, ok := st.offLo[v]; ok && (since.IsZero() || off.Before(since)) {
					since, why = off, "the VIP is off its loopback"
				}
				bound := cfg.StaleBound()
				if why != string(TermAgent) && (unprotected(cfg, st.routedSince[v], since) || rf.blind(cfg, since)) {
					bound = cfg.Hold + cfg.Margin
				}
				if !held && slices.Contains(ns.Routed, v) && !since.IsZero() && t.Sub(since) > bound {
					extend(&stale[n][vi], t, cfg.Nodes[n], fmt.Sprintf("routed to %s, which cannot answer since %s (%s; bound %v)",
						cfg.Nodes[n], since.Format("15:04:05.000"), why, bound))
				} else if stale[n][vi] != nil {
					closeEp(StaleRoute, v, stale[n][vi])
					stale[n][vi] = nil
				}
			}
			anyRejoin(cfg, st, ns, n, t, faults[n], &rep)
		}
		// (b) a route to an eligible node.
		i := sort.Search(len(starts), func(i int) bool { return starts[i].After(t) })
		grace := held || i > 0 && t.Sub(starts[i-1]) <= cfg.StaleBound()
		pending := anyRouterPending(cfg, rf, returned, t)
		var missing []string // after a router fault: eligible nodes not routed a VIP
		anyEligible := false
		judged := false
		for vi, v := range cfg.VIPs {
			// eligible: nodes that must be routed; routed: nodes routed
			// that can answer (a node back from a fault within Rejoin, or
			// in a loss window, carries the VIP as well as any).
			var eligible, demoted, routed []string
			for _, n := range cfg.Allowed[vi] {
				st, ns := &states[n], s.Nodes[n]
				answers := st.deadSince.IsZero() && faults[n].outFrom.IsZero() && slices.Contains(ns.Holds, v)
				switch {
				case answers && !faults[n].open && !st.returning(cfg, faults[n], t):
					eligible = append(eligible, cfg.Nodes[n])
				case answers && st.lastResort(cfg, faults[n], t):
					demoted = append(demoted, cfg.Nodes[n])
				}
				if answers && slices.Contains(ns.Routed, v) {
					routed = append(routed, cfg.Nodes[n])
				}
			}
			anyEligible = anyEligible || len(eligible) > 0
			for _, e := range eligible {
				if n := slices.Index(cfg.Nodes, e); !slices.Contains(s.Nodes[n].Routed, v) {
					missing = append(missing, e+" "+v.String())
				}
			}
			if len(eligible) == 0 && len(demoted) > 0 {
				eligible = demoted
				for i := range eligible {
					eligible[i] += " (demoted)"
				}
			}
			judged = judged || len(eligible) > 0
			ok := len(eligible) == 0 || len(routed) > 0
			var late []string // eligible nodes not routed v RouterBound after a router fault
			if pending >= 0 && !held {
				for _, e := range eligible {
					if n := slices.Index(cfg.Nodes, strings.TrimSuffix(e, " (demoted)")); !strings.HasSuffix(e, " (demoted)") && !slices.Contains(s.Nodes[n].Routed, v) {
						late = append(late, e)
					}
				}
			}
			switch {
			case !ok && !grace:
				extend(&noRoute[vi], t, "", fmt.Sprintf("eligible: %s; routed to none that can answer", strings.Join(eligible, ", ")))
			case len(late) > 0:
				extend(&noRoute[vi], t, "", fmt.Sprintf("%s ended at %s: eligible %s not routed again within the router bound %v",
					rf[pending].Fault.Kind, rf[pending].End.Format("15:04:05.000"), strings.Join(late, ", "), cfg.RouterBound))
			case noRoute[vi] != nil:
				closeEp(NoRoute, v, noRoute[vi])
				noRoute[vi] = nil
			}
		}
		if pending >= 0 && len(missing) == 0 && anyEligible {
			w := rf[pending]
			rep.RouterReturns = append(rep.RouterReturns, Recovery{Event: string(w.Fault.Kind), At: w.End, Took: t.Sub(w.End)})
			returned[pending] = true
		}
		if judged {
			rep.Judged++
		}
		prevAt = t
	}
	for vi, v := range cfg.VIPs {
		for n := range cfg.Nodes {
			closeEp(StaleRoute, v, stale[n][vi])
		}
		closeEp(NoRoute, v, noRoute[vi])
	}
	for n := range cfg.Nodes {
		closeEp(Leftover, netip.Addr{}, engVIP[n])
		closeEp(Leftover, netip.Addr{}, rules[n])
	}
	sort.SliceStable(rep.Violations, func(i, j int) bool { return rep.Violations[i].At.Before(rep.Violations[j].At) })
	return rep
}

// anyRouterPending returns the router fault whose recovery is awaited at t
// (ended, not yet timed), or -1. One that another router fault followed
// before it recovered is abandoned.
func anyRouterPending(cfg Config, rf routerFaults, returned []bool, t time.Time) int {
	for i, w := range rf {
		if returned[i] || w.End.IsZero() || t.Before(w.End) {
			continue
		}
		for _, o := range rf[i+1:] {
			if !t.Before(o.Start) {
				returned[i] = true
			}
		}
		if !returned[i] {
			return i
		}
	}
	return -1
}

// anyProcesses follows node n's processes: when they died and came back,
// and exits no kill explains.
func anyProcesses(cfg Config, windows []Window, rep *Report, st *anyNode, n int, ns NodeSample, prevAt, t time.Time) {
	name := cfg.Nodes[n]
	if st.seen && st.prev.Agent && !ns.Agent && agentStopTime(windows, n, prevAt, t).IsZero() {
		rep.Violations = append(rep.Violations, Violation{Kind: Exit, At: t, Nodes: []string{name}, Detail: "the node agent exited with no kill to explain it"})
	}
	if st.seen {
		st.observe(rep, windows, n, name, st.prev, ns, prevAt, t)
	}
	if !ns.Agent || ns.Engine {
		st.engineDead = time.Time{}
	}
	dead := !ns.Agent || !ns.Engine
	switch {
	case dead && st.deadSince.IsZero():
		st.deadSince = t
	case !dead && !st.deadSince.IsZero():
		st.deadSince, st.back = time.Time{}, t
	}
	st.prev, st.seen = ns, true
}

// anyLeftovers judges invariant (c) on one node: what an engine dead under
// a live supervisor left, and the supervisor's reaction.
func anyLeftovers(cfg Config, rep *Report, st *anyNode, ns NodeSample, t time.Time, engVIP, rules **episode,
	closeEp func(ViolationKind, netip.Addr, *episode), extend func(**episode, time.Time, string, string), name string) {
	if st.engineDead.IsZero() {
		for _, ep := range []**episode{engVIP, rules} {
			closeEp(Leftover, netip.Addr{}, *ep)
			*ep = nil
		}
		return
	}
	from := st.engineDead
	if !st.killedAt.IsZero() {
		from = st.killedAt
	}
	late := !st.byAgentKill && t.Sub(from) > cfg.SupervisorBound
	if len(ns.Holds) > 0 && late {
		extend(engVIP, t, name, fmt.Sprintf("VIPs %v stay on the loopback after the engine died (supervisor bound %v)", ns.Holds, cfg.SupervisorBound))
	} else {
		closeEp(Leftover, netip.Addr{}, *engVIP)
		*engVIP = nil
	}
	if len(ns.Rules) > 0 && late {
		extend(rules, t, name, fmt.Sprintf("nftables %v stay after the engine died (supervisor bound %v)", ns.Rules, cfg.SupervisorBound))
	} else {
		closeEp(Leftover, netip.Addr{}, *rules)
		*rules = nil
	}
	if len(st.reactHeld) > 0 && !anyOf(ns.Holds, st.reactHeld) {
		rep.Reactions = append(rep.Reactions, t.Sub(from))
		st.reactHeld = nil
	}
	if st.reactRules && len(ns.Rules) == 0 {
		rep.RuleReactions = append(rep.RuleReactions, t.Sub(from))
		st.reactRules = false
	}
}

// anyWithdrawals times, for each fault that leaves a routed node unable to
// answer, the time from when it surely took effect to the first sample
// routing nothing to the node (Report.Recoveries); not when the fault
// ended first, nor when a route to it was younger than Warmup or the
// router was blind (routerFaults.blind), both counted in
// Report.Unprotected, except for a graceful stop (no BFD needed).
func anyWithdrawals(windows []Window, rf routerFaults, s Sample, t time.Time, state []int, rep *Report, cfg Config, nodes []anyNode) {
	for wi, w := range windows {
		if w.Node < 0 || !w.Fault.Kind.Ineligible() || state[wi] == 2 || t.Before(w.began()) {
			continue
		}
		routed := len(s.Nodes[w.Node].Routed) > 0
		switch {
		case state[wi] == 0 && !routed:
			state[wi] = 2 // nothing was routed to it
		case state[wi] == 0 && w.Fault.Kind != TermAgent && (unprotected(cfg, nodes[w.Node].youngest(), w.began()) || rf.blind(cfg, w.began())):
			state[wi] = 2
			rep.Unprotected++
		case state[wi] == 0:
			state[wi] = 1
		case !routed:
			state[wi] = 2
			rep.Recoveries = append(rep.Recoveries, Recovery{Event: windowName(cfg, w), At: w.began(), Took: t.Sub(w.began())})
		case !w.End.IsZero() && !t.Before(w.End):
			state[wi] = 2
		}
	}
}

// anyRejoin times node n's return to the router after a fault that let its
// route go: from the fault's end (or its processes' return, if later) to
// the first sample routing every VIP it may hold to it (Report.Rejoins).
// A new fault before that abandons the measure.
func anyRejoin(cfg Config, st *anyNode, ns NodeSample, n int, t time.Time, f anyFaults, rep *Report) {
	from, what := f.lastEnd, string(f.lastBy)
	if st.back.After(from) {
		from, what = st.back, "processes back"
	}
	if f.open || !st.deadSince.IsZero() || from.IsZero() || from.Equal(st.rejoined) {
		return
	}
	for vi, v := range cfg.VIPs {
		if slices.Contains(cfg.Allowed[vi], n) && !slices.Contains(ns.Routed, v) {
			return
		}
	}
	// A network fault's node counts as back from its undoing's call: the
	// route may return before the command did (Window.Ended).
	rep.Rejoins = append(rep.Rejoins, Recovery{Event: what + " on " + cfg.Nodes[n], At: from, Took: max(t.Sub(from), 0)})
	st.rejoined = from
}
