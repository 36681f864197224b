package main

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/benchdoc"
	"github.com/vipstack/vipstack/internal/chaos"
	"github.com/vipstack/vipstack/internal/demo"
)

// printReport writes a run's figures: faults by kind, violations by
// invariant (each with its time, VIP and nodes), recovery against the
// protocol bound, the supervisor's reaction and the restart's sweep.
func printReport(w io.Writer, o options, cfg chaos.Config, res result, elapsed time.Duration, netem bool, names map[netip.Addr]string) {
	rep := res.Report
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	total := 0
	for _, n := range res.Injected {
		total += n
	}
	k8s := ""
	if o.K8s {
		k8s = fmt.Sprintf(" -k8s -services %d", o.Services)
	}
	if o.Mixed {
		k8s = " -mixed"
		if o.FRR {
			k8s += " -frr"
		}
	}
	if o.BGP {
		k8s = " -bgp"
		if o.Router == "bird" {
			k8s += " -router bird"
		}
		if o.Family != "" && o.Family != "4" {
			k8s += " -family " + o.Family
		}
	}
	p("\n== vipstack chaos report, %s (seed %d; reproduce: sudo go run ./bench/chaos%s -seed %d -faults %d -nodes %d -advert %v)\n",
		res.Mode, o.Seed, k8s, o.Seed, o.Faults, o.Nodes, o.Advert)
	packet := "tc netem"
	if !netem {
		packet = "nftables numgen drops (no sch_netem)"
	}
	p("faults injected: %d of %d in %.0f s (skipped %d, failed %d); packet faults via %s\n", total, o.Faults, elapsed.Seconds(), len(res.Skipped), len(res.Failed), packet)
	for _, k := range chaos.AllKinds {
		if res.Injected[k] > 0 {
			p("  %-16s %4d\n", k, res.Injected[k])
		}
	}
	for _, s := range res.Skipped {
		p("  skipped %s\n", s)
	}
	for _, f := range res.Failed {
		p("  FAILED injection %s\n", f)
	}
	p("samples: %d over %.0f s (every 10 ms; %d gaps over 50 ms, the longest %v)\n", rep.Samples, rep.Span.Seconds(), rep.LateGaps, rep.MaxGap.Round(time.Millisecond))
	if len(rep.MachineStalls) > 0 {
		p("machine stalls: %d pauses of the sampler over %v taken as a stall of every node (the longest %v)\n", len(rep.MachineStalls), res.Config.MachineStall, slices.Max(rep.MachineStalls).Round(time.Millisecond))
	}
	p("violations: %d\n", len(rep.Violations))
	for _, k := range chaos.ViolationKinds {
		p("  %-20s %d\n", k, rep.Count(k))
		for _, v := range rep.Violations {
			if v.Kind != k {
				continue
			}
			vip := "-"
			if v.VIP.IsValid() {
				vip = fmt.Sprintf("%s %s", names[v.VIP], v.VIP)
			}
			p("    at %s for %v: VIP %s on %s: %s\n", v.At.Format("15:04:05.000"), v.For.Round(time.Millisecond), vip, strings.Join(v.Nodes, ", "), v.Detail)
		}
	}
	if cfg.HandoverGap > 0 {
		p("handovers to keepalived with the VIP briefly on no node (it advertises before it adds the VIP; taken within %v of the last sample showing the old holder, not violations): n=%d, max %v\n",
			cfg.HandoverGap, len(rep.HandoverGaps), pct(rep.HandoverGaps, 100))
	}
	if cfg.Anycast {
		printAnycast(p, cfg, rep)
	} else {
		printRecovery(p, cfg, rep)
	}
	p("supervisor reaction (kill -9 of the engine -> its VIPs gone): n=%d, p50 %v, max %v (bound %v)\n",
		len(rep.Reactions), pct(rep.Reactions, 50), pct(rep.Reactions, 100), cfg.SupervisorBound)
	if !o.K8s && !o.Mixed { // the Kubernetes agent and `vipstack vrrp` install no nftables tables
		p("supervisor reaction (kill -9 of the engine -> its nftables tables gone): n=%d, p50 %v, max %v (bound %v)\n",
			len(rep.RuleReactions), pct(rep.RuleReactions, 50), pct(rep.RuleReactions, 100), cfg.SupervisorBound)
	}
	if !cfg.Anycast { // a restarted agent puts the VIPs back on lo at once
		p("restart sweep (agent started again after kill -9 -> the VIPs it left gone): n=%d, p50 %v, max %v (bound %v)\n",
			len(rep.Sweeps), pct(rep.Sweeps, 50), pct(rep.Sweeps, 100), cfg.StartSweep)
	}
	if o.K8s {
		p("Services deleted or edited away (type, class, address) -> the address on no node: n=%d, p50 %v, max %v; created again or restored -> held: n=%d, p50 %v, max %v (bound %v each, from the end of any API, etcd or controller fault)\n",
			len(rep.ServiceGone), pct(rep.ServiceGone, 50), pct(rep.ServiceGone, 100),
			len(rep.ServiceBack), pct(rep.ServiceBack, 50), pct(rep.ServiceBack, 100), cfg.ServiceBound)
	}
	if res.OK() {
		p("RESULT: 0 violations\n")
	} else {
		p("RESULT: %d violations, %d failed injections\n", len(rep.Violations), len(res.Failed))
	}
}

// printRecovery writes the VRRP recovery against its protocol bound.
func printRecovery(p func(string, ...any), cfg chaos.Config, rep chaos.Report) {
	bound := cfg.RecoveryBound()
	worst := rep.Worst()
	var took []time.Duration
	for _, r := range rep.Recoveries {
		took = append(took, r.Took)
	}
	p("recovery after a disruptive fault began or ended (to one eligible holder per VIP): n=%d, p50 %v, p99 %v, worst %v (%s at %s)\n",
		len(took), pct(took, 50), pct(took, 99), worst.Took.Round(time.Millisecond), worst.Event, worst.At.Format("15:04:05.000"))
	if slow := slices.Max(append([]time.Duration{cfg.Advert}, cfg.AdvertOf...)); slow > cfg.Advert {
		p("  protocol bound of the slowest group (advert %v): 3 x advert + skew + margin = %v (%v for the groups at %v); worst/bound = %.2f\n",
			slow, bound.Round(time.Millisecond), (3*cfg.Advert + cfg.Skew + cfg.Margin).Round(time.Millisecond), cfg.Advert, float64(worst.Took)/float64(bound))
	} else {
		p("  protocol bound 3 x advert + skew + margin = 3 x %v + %v + %v = %v; worst/bound = %.2f\n",
			cfg.Advert, cfg.Skew.Round(time.Millisecond), cfg.Margin, bound.Round(time.Millisecond), float64(worst.Took)/float64(bound))
	}
}

// printAnycast writes the BGP figures: the router's withdrawal from a node
// that cannot answer against BFD's detection, and the nodes' return.
func printAnycast(p func(string, ...any), cfg chaos.Config, rep chaos.Report) {
	bound, worst := cfg.StaleBound(), rep.Worst()
	var took, back []time.Duration
	for _, r := range rep.Recoveries {
		took = append(took, r.Took)
	}
	var slowest chaos.Recovery
	for _, r := range rep.Rejoins {
		back = append(back, r.Took)
		if r.Took > slowest.Took {
			slowest = r
		}
	}
	p("route withdrawn from a node that cannot answer (fault in effect -> no route to it): n=%d, p50 %v, p99 %v, worst %v (%s at %s)\n",
		len(took), pct(took, 50), pct(took, 99), worst.Took.Round(time.Millisecond), worst.Event, worst.At.Format("15:04:05.000"))
	p("  bound BFD detection + margin = %v + %v = %v; worst/bound = %.2f\n", cfg.Detect, cfg.Margin, bound, float64(worst.Took)/float64(bound))
	p("  not timed: %d faults within %v of a route's return to their node (BFD may not be up yet: bound hold time + margin = %v)\n",
		rep.Unprotected, cfg.Warmup, cfg.Hold+cfg.Margin)
	p("routed again after the fault ended (every VIP via the node): n=%d, p50 %v, p99 %v, worst %v (%s at %s; (b) counts a node eligible %v after)\n",
		len(back), pct(back, 50), pct(back, 99), slowest.Took.Round(time.Millisecond), slowest.Event, slowest.At.Format("15:04:05.000"), cfg.Rejoin)
	byKind := map[string][]time.Duration{}
	for _, r := range rep.Rejoins {
		k, _, _ := strings.Cut(r.Event, " on ")
		byKind[k] = append(byKind[k], r.Took)
	}
	var kinds []string
	for k, d := range byKind {
		kinds = append(kinds, fmt.Sprintf("%s n=%d p50 %v max %v", k, len(d), pct(d, 50), pct(d, 100)))
	}
	slices.Sort(kinds)
	if len(kinds) > 0 {
		p("  by what ended: %s\n", strings.Join(kinds, "; "))
	}
	var ret []time.Duration
	var slowRet chaos.Recovery
	for _, r := range rep.RouterReturns {
		ret = append(ret, r.Took)
		if r.Took >= slowRet.Took {
			slowRet = r
		}
	}
	if len(ret) > 0 {
		p("router back after a restart of its daemon (its start -> every VIP routed to every eligible node): n=%d, p50 %v, worst %v (%s ended at %s); bound %v, worst/bound = %.2f\n",
			len(ret), pct(ret, 50), slowRet.Took.Round(time.Millisecond), slowRet.Event, slowRet.At.Format("15:04:05.000"), cfg.RouterBound, float64(slowRet.Took)/float64(cfg.RouterBound))
	}
	if rep.Samples > 0 {
		p("invariant (b) applied (some node eligible) in %d of %d samples (%.0f %%)\n", rep.Judged, rep.Samples, 100*float64(rep.Judged)/float64(rep.Samples))
	}
}

// pct returns the q-th percentile (nearest rank), 0 for no data.
func pct(d []time.Duration, q int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (q*len(s)+99)/100 - 1
	i = min(max(i, 0), len(s)-1)
	return s[i].Round(time.Millisecond)
}

// demoVIPNames maps a VIP to its demo kind.
func demoVIPNames() map[netip.Addr]string {
	m := map[netip.Addr]string{}
	for _, v := range demo.VIPs() {
		m[v.Addr] = v.Kind
	}
	return m
}

// vipLegend names the VIP indices the timelines use.
func vipLegend(cfg chaos.Config, names map[netip.Addr]string) string {
	var parts []string
	for i, v := range cfg.VIPs {
		parts = append(parts, fmt.Sprintf("%d=%s", i, names[v]))
	}
	return strings.Join(parts, " ")
}

// summary is the run's figures for docs/benchmarks.md: one row per
// figure with its target, then the violations, if any.
func summary(o options, cfg chaos.Config, res result, elapsed time.Duration) *benchdoc.Report {
	rep := res.Report
	total := 0
	var kinds []string
	for _, k := range chaos.AllKinds {
		if n := res.Injected[k]; n > 0 {
			total += n
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
	}
	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "**MISS**"
	}
	dist := func(d []time.Duration) string {
		if len(d) == 0 {
			return "none"
		}
		return fmt.Sprintf("p50 %v, max %v (n = %d)", pct(d, 50), pct(d, 100), len(d))
	}
	var took []time.Duration
	for _, r := range rep.Recoveries {
		took = append(took, r.Took)
	}
	bound, worst := cfg.RecoveryBound(), rep.Worst()
	figure, label := "recovery to one eligible holder per VIP", "3 x advert + skew + margin"
	if cfg.Anycast {
		bound, figure, label = cfg.StaleBound(), "route withdrawn from a node that cannot answer", "BFD detection + margin"
	}
	out := &benchdoc.Report{}
	out.Para("%s; %d nodes, advert %v; %d samples every 10 ms (%d gaps over 50 ms; %d pauses of the sampler over %v taken as stalls of every node).", res.Mode, o.Nodes, o.Advert, rep.Samples, rep.LateGaps, len(rep.MachineStalls), cfg.MachineStall)
	tb := benchdoc.Table{Header: []string{"figure", "value", "target", "result"}}
	tb.Add("faults", fmt.Sprintf("%d of %d in %.0f s: %s", total, o.Faults, elapsed.Seconds(), strings.Join(kinds, ", ")), "", "")
	if len(res.Skipped)+len(res.Failed) > 0 {
		tb.Add("injections skipped, failed", fmt.Sprintf("%d, %d", len(res.Skipped), len(res.Failed)), "0 failed", verdict(len(res.Failed) == 0))
	}
	tb.Add("violations", fmt.Sprint(len(rep.Violations)), "0", verdict(len(rep.Violations) == 0))
	tb.Add(figure, fmt.Sprintf("p50 %v, p99 %v, worst %v (n = %d)", pct(took, 50), pct(took, 99), worst.Took.Round(time.Millisecond), len(took)),
		fmt.Sprintf("under %v (%s)", bound.Round(time.Millisecond), label),
		fmt.Sprintf("%s (%.2f)", verdict(worst.Took <= bound), float64(worst.Took)/float64(bound)))
	if cfg.HandoverGap > 0 {
		tb.Add("handover gaps to keepalived (VIP on no node while it changes hands)", dist(rep.HandoverGaps), fmt.Sprintf("under %v each", cfg.HandoverGap), "")
	}
	tb.Add("supervisor reaction, kill -9 of the engine to its VIPs gone", dist(rep.Reactions), fmt.Sprintf("under %v", cfg.SupervisorBound), verdict(pct(rep.Reactions, 100) <= cfg.SupervisorBound))
	if !cfg.Anycast {
		tb.Add("restart sweep", dist(rep.Sweeps), fmt.Sprintf("under %v", cfg.StartSweep), verdict(pct(rep.Sweeps, 100) <= cfg.StartSweep))
	}
	if o.K8s {
		tb.Add("Service deleted or edited away to its address on no node", dist(rep.ServiceGone), fmt.Sprintf("under %v", cfg.ServiceBound), verdict(pct(rep.ServiceGone, 100) <= cfg.ServiceBound))
		tb.Add("Service created again or restored to its address held", dist(rep.ServiceBack), fmt.Sprintf("under %v", cfg.ServiceBound), verdict(pct(rep.ServiceBack, 100) <= cfg.ServiceBound))
	}
	out.Table(tb)
	if res.Sampled != "" {
		out.Para("Also sampled: %s.", res.Sampled)
	}
	var vs []string
	for _, v := range rep.Violations {
		vs = append(vs, fmt.Sprintf("%s at %s for %v on %s: %s", v.Kind, v.At.Format("15:04:05.000"), v.For.Round(time.Millisecond), strings.Join(v.Nodes, ", "), v.Detail))
	}
	out.List(vs)
	return out
}
