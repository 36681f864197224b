package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/benchdoc"
)

// Implementations measured, each announcing the same VIP from the same
// nodes to the same router.
const (
	implVipstack = "vipstack"
	implFRR      = "frr"
)

// Routers: the daemon in the router namespace, to which every
// implementation announces.
const (
	routerFRR  = "frr"
	routerBIRD = "bird"
)

func routerLabel(rt string) string {
	if rt == routerBIRD {
		return "BIRD"
	}
	return "FRR"
}

// Detection modes: BFD at the bench's interval, or the BGP hold timer
// alone.
const (
	modeBFD  = "bfd"
	modeHold = "hold"
)

// Crash events, at T0, to node n1.
const (
	eventKill = "kill" // n1's packets stop and its BGP daemons get SIGKILL
	eventCut  = "cut"  // the router drops everything on its link to n1
)

// fullScale is the route count the target names.
const fullScale = 10000

// crashTrial is one crash of n1 while n1 and n2 both announce the VIP.
type crashTrial struct {
	Router, Impl, Mode, Event string
	// Route is when the router's kernel route to the VIP changed after
	// T0 (ip monitor); Moved is when the client's connections stopped
	// failing: the first answered probe started after the last failed
	// one. Both from T0.
	Route, Moved time.Duration
	// Detect is when the router logged its BFD session with n1 down,
	// from T0 (BFD mode only).
	Detect time.Duration
	Failed int // probes started after T0 that failed
	Probes int
	Err    string
}

// stopTrial is a graceful stop of n1 under the client's probes.
type stopTrial struct {
	Router, Impl   string
	Failed, Probes int
	// Removed is when the VIP left n1 (its daemon had exited), Route
	// when the router's kernel route changed, LastFail when the last
	// failed connection started; all from T0.
	Removed, Route, LastFail time.Duration
	// InFlight counts, when n1 kept its VIP past the route change, the
	// failed connections started before it: their flows were with n1
	// when the router moved them to n2 (ECMP rehashes a removed next
	// hop's flows).
	InFlight int
	// Late counts the failed connections started after the stop had
	// settled (the router moved and n1's VIP gone): to n2 alone, they
	// timed out on a loaded machine rather than by the stop.
	Late int
	Err  string
}

// scaleRun is one speaker announcing Routes VIPs to a peer that comes up.
type scaleRun struct {
	Router, Impl string
	Routes       int
	// Established and Received are from the router's `no neighbor
	// shutdown` (BIRD: `enable`) to the session seen established and to
	// every route seen received (vtysh or birdc polled every PollEvery).
	Established, Received, PollEvery time.Duration
	// RSS0 is the daemon's resident memory (MiB) established with no
	// routes, RSSN with Routes.
	RSS0, RSSN float64
	Err        string
}

// results is a run.
type results struct {
	BFDInterval time.Duration
	BFDMult     int
	Hold        time.Duration // the hold timer of the hold mode
	BFDHold     time.Duration // the hold timer while BFD runs
	ProbeEvery  time.Duration
	Routes      int
	Routers     []string // in the order they ran
	Loaded      string   // "" or why the figures are noisy
	Crash       []crashTrial
	Stops       []stopTrial
	Scale       []scaleRun
}

// bound is the protocol's detection time for a mode: multiplier x
// interval with BFD, the hold time without (the last keepalive may have
// come up to one keepalive earlier, so the hold time is the worst case).
func (r *results) bound(mode string) time.Duration {
	if mode == modeBFD {
		return time.Duration(r.BFDMult) * r.BFDInterval
	}
	return r.Hold
}

// bfdTarget is the issue's: with BFD, crash to traffic moved within
// multiplier x interval + 50 ms.
func (r *results) bfdTarget() time.Duration { return r.bound(modeBFD) + 50*time.Millisecond }

// median of the measured trials with router rt of impl, mode and event,
// and how many were measured.
func (r *results) median(rt, impl, mode, event string, f func(crashTrial) time.Duration) (time.Duration, int) {
	var xs []time.Duration
	for _, t := range r.Crash {
		if t.Router == rt && t.Impl == impl && t.Mode == mode && t.Event == event && t.Err == "" {
			xs = append(xs, f(t))
		}
	}
	if len(xs) == 0 {
		return 0, 0
	}
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2], len(xs)
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2, len(xs)
}

func moved(t crashTrial) time.Duration  { return t.Moved }
func route(t crashTrial) time.Duration  { return t.Route }
func detect(t crashTrial) time.Duration { return t.Detect }

// programming is the router's time from its BFD session down to its
// kernel route changed.
func programming(t crashTrial) time.Duration { return t.Route - t.Detect }

// stops sums the graceful stops of impl with router rt.
func (r *results) stops(rt, impl string) (failed, probes, n int) {
	for _, s := range r.Stops {
		if s.Router == rt && s.Impl == impl && s.Err == "" {
			failed += s.Failed
			probes += s.Probes
			n++
		}
	}
	return failed, probes, n
}

// inFlight and late sum those failed connections of impl's stops with
// router rt.
func (r *results) inFlight(rt, impl string) (inFlight, late int) {
	for _, s := range r.Stops {
		if s.Router == rt && s.Impl == impl && s.Err == "" {
			inFlight += s.InFlight
			late += s.Late
		}
	}
	return inFlight, late
}

// late counts the failed probes started after the stop settled: the
// router's route changed (route) and the VIP left the node (removed),
// both from t0.
func late(ps []probe, t0 time.Time, route, removed time.Duration) int {
	settled := t0.Add(max(route, removed)).UnixNano()
	var n int
	for _, p := range ps {
		if p.By == "" && p.At > settled {
			n++
		}
	}
	return n
}

func (r *results) scale(rt, impl string) (scaleRun, bool) {
	for _, s := range r.Scale {
		if s.Router == rt && s.Impl == impl && s.Err == "" {
			return s, true
		}
	}
	return scaleRun{}, false
}

// perThousand is the resident memory per 1,000 routes.
func (s scaleRun) perThousand() float64 {
	if s.Routes == 0 {
		return 0
	}
	return (s.RSSN - s.RSS0) * 1000 / float64(s.Routes)
}

// announce is the time from the session established to every route
// received: what the speaker takes to send its table to a new peer.
func (s scaleRun) announce() time.Duration { return s.Received - s.Established }

// target is one of the targets with its verdict.
type target struct {
	Name  string
	Want  string
	Got   string
	Pass  bool
	Count bool // measured: a target not measured is a MISS
}

func (t target) String() string {
	v := "MISS"
	if t.Pass {
		v = "PASS"
	}
	return fmt.Sprintf("%s  %s: %s (want %s)", v, t.Name, t.Got, t.Want)
}

// targets are vipstack's verdicts, four per router in the order the
// routers ran: BFD kill -9, BFD link cut, graceful stop, routes.
func (r *results) targets() []target {
	var ts []target
	for _, rt := range r.Routers {
		ts = append(ts, r.routerTargets(rt)...)
	}
	return ts
}

func (r *results) routerTargets(rt string) []target {
	var ts []target
	by := ", " + routerLabel(rt) + " router"
	for _, ev := range []string{eventKill, eventCut} {
		m, n := r.median(rt, implVipstack, modeBFD, ev, moved)
		t := target{Name: fmt.Sprintf("BFD %s x %d, %s%s: crash to traffic moved", ms(r.BFDInterval), r.BFDMult, eventLabel(ev), by),
			Want: "<= " + ms(r.bfdTarget()), Count: n > 0}
		if n > 0 {
			t.Got = fmt.Sprintf("median %s of %d", ms(m), n)
			if fm, fn := r.median(rt, implFRR, modeBFD, ev, moved); fn > 0 {
				t.Got += fmt.Sprintf("; FRR announcing %s", ms(fm))
			}
			t.Pass = m <= r.bfdTarget()
		} else {
			t.Got = "not measured"
		}
		ts = append(ts, t)
	}
	return append(ts, r.stopTarget(rt), r.scaleTarget(rt))
}

func (r *results) stopTarget(rt string) target {
	failed, probes, n := r.stops(rt, implVipstack)
	_, lateFails := r.inFlight(rt, implVipstack)
	st := target{Name: "graceful stop under load, " + routerLabel(rt) + " router", Want: "0 failed connections until the stop settled", Count: n > 0 && probes > 0}
	if !st.Count {
		st.Got = "not measured"
		return st
	}
	st.Got = fmt.Sprintf("%d of %d connections failed over %d stops", failed-lateFails, probes, n)
	if lateFails > 0 {
		st.Got += fmt.Sprintf(" (%d more after it settled, to the other node alone)", lateFails)
	}
	st.Pass = failed-lateFails == 0
	return st
}

func (r *results) scaleTarget(rt string) target {
	sc := target{Name: fmt.Sprintf("%d routes to a new peer, %s router", r.Routes, routerLabel(rt)), Want: "< 1 s for 10,000"}
	s, ok := r.scale(rt, implVipstack)
	if !ok {
		sc.Got = "not measured"
		return sc
	}
	sc.Count = true
	sc.Got = fmt.Sprintf("%s from established to all received", ms(s.announce()))
	if s.announce() == 0 {
		sc.Got = "within the poll that saw the session established"
	}
	if f, ok := r.scale(rt, implFRR); ok {
		sc.Got += fmt.Sprintf("; FRR announcing %s", ms(f.announce()))
	}
	if s.PollEvery > 0 {
		sc.Got += fmt.Sprintf("; polled every %s", ms(s.PollEvery))
	}
	// Fewer routes than the issue names cannot pass its target.
	sc.Pass = s.Routes >= fullScale && s.announce() < time.Second
	if s.Routes < fullScale {
		sc.Got += fmt.Sprintf(" (only %d routes: run -routes %d for the target)", s.Routes, fullScale)
	}
	return sc
}

func eventLabel(ev string) string {
	if ev == eventKill {
		return "kill -9"
	}
	return "link cut"
}

func modeLabel(r *results, mode string) string {
	if mode == modeBFD {
		return fmt.Sprintf("BFD %s x %d (hold %s)", ms(r.BFDInterval), r.BFDMult, secs(r.BFDHold))
	}
	return fmt.Sprintf("no BFD, hold %s", secs(r.Hold))
}

func ms(d time.Duration) string {
	if d%time.Millisecond == 0 {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func secs(d time.Duration) string { return fmt.Sprintf("%g s", d.Seconds()) }

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

// report is the full result, for a terminal and the topic's page.
func (r *results) report() *benchdoc.Report {
	rep := &benchdoc.Report{}
	if r.Loaded != "" {
		rep.Para("Measured under load: %s; figures are noisy.", r.Loaded)
	}
	rep.Para("Crash failover of n1 while n1 and n2 announce the VIP (ECMP), from T0; *router* is the router's kernel route changing (ip monitor), *client* the client's connections (one every %s) answered again. Bound: the protocol's detection time (then route programming).", ms(r.ProbeEvery))
	rep.Table(r.crashTable())
	rep.Para("BFD crashes inside the router, medians from T0: *BFD down* is when the router logged its BFD session with n1 down (FRR: bfdd's state-change, BIRD: its bfd protocol), *route* its kernel route changing; the difference is the router's own route programming.")
	rep.Table(r.programmingTable())
	rep.Table(r.stopTable())
	rep.Para("In flight: n1 still had its VIP when the router's route changed, and the connection, started before and hashed to n1, was moved to n2 mid-handshake by ECMP's rehash. After the stop settled (the router moved and n1's VIP gone), connections go to n2 alone: those failing timed out (200 ms) on the loaded machine, and the target does not count them. The rest failed because n1 dropped the VIP before the router moved.")
	rep.Table(r.scaleTable())
	rep.Para("Route times are polled with the router's CLI (vtysh, birdc; the interval is its resolution); RSS is VmRSS of vipstack's speaker process and of FRR's bgpd.")
	var lines []string
	for _, t := range r.targets() {
		lines = append(lines, t.String())
	}
	rep.List(lines)
	if errs := r.errors(); len(errs) > 0 {
		rep.Para("Trials that failed to measure:")
		rep.List(errs)
	}
	return rep
}

func cell(d time.Duration, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%d)", ms(d), n)
}

func (r *results) crashTable() benchdoc.Table {
	tb := benchdoc.Table{Header: []string{"scenario", "router", "bound", "vipstack router", "vipstack client", "FRR router", "FRR client", "client vipstack/FRR"}}
	for _, mode := range []string{modeBFD, modeHold} {
		for _, ev := range []string{eventKill, eventCut} {
			for _, rt := range r.Routers {
				vr, nv := r.median(rt, implVipstack, mode, ev, route)
				vm, _ := r.median(rt, implVipstack, mode, ev, moved)
				fr, nf := r.median(rt, implFRR, mode, ev, route)
				fm, _ := r.median(rt, implFRR, mode, ev, moved)
				if nv+nf == 0 {
					continue
				}
				rto := "-"
				if nv > 0 && nf > 0 {
					rto = ratio(vm, fm)
				}
				tb.Add(modeLabel(r, mode)+", "+eventLabel(ev), routerLabel(rt), ms(r.bound(mode)), cell(vr, nv), cell(vm, nv), cell(fr, nf), cell(fm, nf), rto)
			}
		}
	}
	return tb
}

func (r *results) programmingTable() benchdoc.Table {
	tb := benchdoc.Table{Header: []string{"router", "crash", "announcer", "BFD down", "route", "BFD down to route"}}
	for _, rt := range r.Routers {
		for _, ev := range []string{eventKill, eventCut} {
			for _, impl := range []string{implVipstack, implFRR} {
				d, n := r.median(rt, impl, modeBFD, ev, detect)
				if n == 0 {
					continue
				}
				rm, _ := r.median(rt, impl, modeBFD, ev, route)
				p, _ := r.median(rt, impl, modeBFD, ev, programming)
				tb.Add(routerLabel(rt), eventLabel(ev), impl, ms(d), ms(rm), cell(p, n))
			}
		}
	}
	return tb
}

func (r *results) stopTable() benchdoc.Table {
	st := benchdoc.Table{Header: []string{"graceful stop of n1", "router", "stops", "failed connections", "of", "in flight at the route change", "after the stop settled"}}
	for _, rt := range r.Routers {
		for _, impl := range []string{implVipstack, implFRR} {
			if f, p, n := r.stops(rt, impl); n > 0 {
				in, lt := r.inFlight(rt, impl)
				st.Add(impl, routerLabel(rt), fmt.Sprint(n), fmt.Sprint(f), fmt.Sprint(p), fmt.Sprint(in), fmt.Sprint(lt))
			}
		}
	}
	return st
}

func (r *results) scaleTable() benchdoc.Table {
	sc := benchdoc.Table{Header: []string{"routes to a new peer", "router", "routes", "to established", "established to all received", "polled every", "RSS, no routes", "RSS per 1,000 routes"}}
	for _, rt := range r.Routers {
		for _, impl := range []string{implVipstack, implFRR} {
			if s, ok := r.scale(rt, impl); ok {
				sc.Add(impl, routerLabel(rt), fmt.Sprint(s.Routes), ms(s.Established), ms(s.announce()), ms(s.PollEvery),
					fmt.Sprintf("%.1f MiB", s.RSS0), fmt.Sprintf("%.2f MiB", s.perThousand()))
			}
		}
		v, ok := r.scale(rt, implVipstack)
		f, fok := r.scale(rt, implFRR)
		if !ok || !fok {
			continue
		}
		mem := "-"
		if f.perThousand() > 0 {
			mem = fmt.Sprintf("%.2f", v.perThousand()/f.perThousand())
		}
		sc.Add("vipstack/FRR", routerLabel(rt), "", ratio(v.Established, f.Established), ratio(v.announce(), f.announce()), "",
			fmt.Sprintf("%.2f", v.RSS0/f.RSS0), mem)
	}
	return sc
}

// summary is the short form for docs/benchmarks.md, one paragraph: the
// run and the verdicts (the page has no room for more; the tables go to
// bgp-bench.md).
func (r *results) summary(f benchdoc.Facts, took time.Duration) []byte {
	var b strings.Builder
	var rts []string
	for _, rt := range r.Routers {
		rts = append(rts, routerLabel(rt))
	}
	fmt.Fprintf(&b, "vipstack's speaker beside FRR on the same nodes, the router %s; method and tables in [bgp-bench.md](bgp-bench.md). **Run:** `%s`, %s; took %s", strings.Join(rts, ", then "), f.Command, f, took.Round(time.Second))
	if r.Loaded != "" {
		fmt.Fprintf(&b, "; measured under load (%s), figures noisy", r.Loaded)
	}
	b.WriteString(".")
	for _, t := range r.targets() {
		b.WriteString(" " + t.String() + ".")
	}
	return []byte(b.String() + "\n")
}

func (r *results) errors() []string {
	var out []string
	for _, t := range r.Crash {
		if t.Err != "" {
			out = append(out, fmt.Sprintf("%s router, %s %s %s: %s", routerLabel(t.Router), t.Impl, t.Mode, t.Event, t.Err))
		}
	}
	for _, s := range r.Stops {
		if s.Err != "" {
			out = append(out, fmt.Sprintf("%s router, %s graceful stop: %s", routerLabel(s.Router), s.Impl, s.Err))
		}
	}
	for _, s := range r.Scale {
		if s.Err != "" {
			out = append(out, fmt.Sprintf("%s router, %s scale: %s", routerLabel(s.Router), s.Impl, s.Err))
		}
	}
	return out
}

// probe is one connection's outcome: when it was started (Unix ns) and
// who answered ("" when it failed).
type probe struct {
	At int64  `json:"t"`
	By string `json:"by,omitempty"`
}

// outcome turns a crash trial's probes into its figures: the probes
// started at or after t0, how many failed, and when traffic moved (the
// first answered probe started after the last failed one, from t0; the
// first answered probe when none failed).
func outcome(ps []probe, t0 time.Time) (moved time.Duration, failed, total int, err error) {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b probe) int { return int(a.At - b.At) })
	start := t0.UnixNano()
	var lastFail int64 = -1
	for _, p := range ps {
		if p.At < start {
			continue
		}
		total++
		if p.By == "" {
			failed++
			lastFail = p.At
		}
	}
	for _, p := range ps {
		if p.At >= start && p.At > lastFail && p.By != "" {
			return time.Duration(p.At - start), failed, total, nil
		}
	}
	return 0, failed, total, fmt.Errorf("no probe answered after the last failed one (%d of %d failed)", failed, total)
}

// inFlight counts the failed probes started from t0 to the router's
// route change (route, from t0), when the VIP left the stopping node
// (removed) only after that change: only then can a failure be ECMP's
// rehash rather than the stop's.
func inFlight(ps []probe, t0 time.Time, route, removed time.Duration) int {
	if removed <= route {
		return 0
	}
	var n int
	for _, p := range ps {
		if p.By == "" && p.At >= t0.UnixNano() && p.At < t0.Add(route).UnixNano() {
			n++
		}
	}
	return n
}

// before checks the baseline: every probe started before t0 answered,
// and by both nodes.
func before(ps []probe, t0 time.Time, nodes ...string) error {
	seen := map[string]int{}
	for _, p := range ps {
		if p.At >= t0.UnixNano() {
			continue
		}
		if p.By == "" {
			return fmt.Errorf("a probe failed before T0")
		}
		seen[p.By]++
	}
	for _, n := range nodes {
		if seen[n] == 0 {
			return fmt.Errorf("no probe reached %s before T0 (answers %v)", n, seen)
		}
	}
	return nil
}

// firstChange returns the first line of `ip -ts monitor route` output
// stamped at or after t0 that names vip, as a time from t0.
func firstChange(lines []string, vip string, t0 time.Time) (time.Duration, error) {
	for _, l := range lines {
		if !strings.HasPrefix(l, "[") {
			continue
		}
		stamp, rest, ok := strings.Cut(l[1:], "]")
		if !ok || !strings.Contains(" "+rest+" ", " "+vip+" ") {
			continue
		}
		at, err := time.ParseInLocation("2006-01-02T15:04:05.999999", stamp, time.Local)
		if err != nil {
			return 0, fmt.Errorf("ip monitor time stamp %q: %v", stamp, err)
		}
		if !at.Before(t0) {
			return at.Sub(t0), nil
		}
	}
	return 0, fmt.Errorf("the router's route to %s did not change after T0", vip)
}
