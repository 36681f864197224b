package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/benchdoc"
)

// Implementation names, as peers.Impl spells them (kept here as strings so
// the report builds on every platform).
const (
	implKeepalived = "keepalived"
	implVipstack   = "vipstack"
)

// backupPriority is node2's priority: the node expected to take over.
const backupPriority = 100

// v3CrashTarget is the absolute target for vipstack: crash failover
// with VRRPv3 advert_int 0.05 under 250 ms.
const v3CrashTarget = 250 * time.Millisecond

// probeEvery is how often the client opens a connection to the VIP: the
// resolution of every outage measured.
const probeEvery = 10 * time.Millisecond

// event is what happens to the master at T0.
type event string

const (
	eventKill  event = "kill"  // SIGKILL to the whole process group
	eventTerm  event = "term"  // SIGTERM, graceful
	eventCheck event = "check" // node1's tracked script starts failing
)

// events are the events every timer set runs, in order.
var events = []event{eventKill, eventTerm, eventCheck}

// The tracked script of node1 in the check scenario: its failure takes
// node1 from 150 to 90, below node2.
const (
	checkWeight   = -60
	checkFall     = 2
	checkInterval = time.Second
)

func (e event) label() string {
	switch e {
	case eventKill:
		return "kill -9"
	case eventCheck:
		return fmt.Sprintf("check fails (interval %v, fall %d)", checkInterval, checkFall)
	}
	return "SIGTERM"
}

// timerSet is one VRRP configuration the cluster runs with.
type timerSet struct {
	ID      string // short name used by -only, e.g. "v3-50ms"
	Label   string // for the table
	Version int
	Advert  time.Duration
	Auth    string // v2 PASS password; "" for none
}

// skew is Skew_Time for a backup at prio: (256-prio)/256 of the advert
// interval (RFC 3768 section 6.1 with its 1 s unit, RFC 5798 section 6.1).
func (t timerSet) skew(prio int) time.Duration {
	return time.Duration(256-prio) * t.Advert / 256
}

// scenario is one timer set and one event.
type scenario struct {
	Timers timerSet
	Event  event
}

func (s scenario) ID() string    { return s.Timers.ID + "/" + string(s.Event) }
func (s scenario) Label() string { return s.Timers.Label + ", " + s.Event.label() }

// Bound is the protocol's failover time for the event with the backup at
// backupPriority: Master_Down_Interval after a crash, Skew_Time after a
// priority-0 advertisement, and for a failing check the time the script
// takes to be declared failed (fall x interval, at most) plus Skew_Time: the
// issue's target, reached when the master tells the backups at once.
func (s scenario) Bound() time.Duration {
	switch s.Event {
	case eventKill:
		return 3*s.Timers.Advert + s.Timers.skew(backupPriority)
	case eventCheck:
		return checkFall*checkInterval + s.Timers.skew(backupPriority)
	}
	return s.Timers.skew(backupPriority)
}

// limit is how long a trial waits for node2 to answer after the event.
func (s scenario) limit() time.Duration {
	crash := scenario{Timers: s.Timers, Event: eventKill}.Bound()
	if s.Event == eventCheck {
		return checkFall*checkInterval + 2*crash + 2*time.Second
	}
	return 2*crash + 2*time.Second
}

// outcome is one trial: the outage, or why none was measured.
type outcome struct {
	Outage time.Duration
	Err    error
	// SinceAdvert is the outage measured from node1's last advertisement
	// before the event (set for kill -9 when the client saw one): the
	// backup's Master_Down timer started there, so this takes out the
	// phase of the crash within the advertisement interval.
	SinceAdvert    time.Duration
	HasSinceAdvert bool
}

// stats summarises the trials of one implementation in one scenario. A
// failed trial counts as an infinite outage, so it can be the median or the
// maximum but never the minimum.
type stats struct {
	N, Failed        int
	Median, Min, Max time.Duration // infinite stands for "no failover seen"
}

const infinite = time.Duration(math.MaxInt64)

// sample is one figure: a duration, or a failure.
type sample struct {
	D      time.Duration
	Failed bool
}

func summarize(samples []sample) stats {
	st := stats{N: len(samples)}
	if len(samples) == 0 {
		return st
	}
	var d []time.Duration
	for _, s := range samples {
		if s.Failed {
			st.Failed++
			d = append(d, infinite)
			continue
		}
		d = append(d, s.D)
	}
	slices.Sort(d)
	st.Min, st.Max = d[0], d[len(d)-1]
	if len(d)%2 == 1 {
		st.Median = d[len(d)/2]
	} else {
		a, b := d[len(d)/2-1], d[len(d)/2]
		if b == infinite {
			st.Median = infinite
		} else {
			st.Median = (a + b) / 2
		}
	}
	return st
}

func ms(d time.Duration) string {
	if d == infinite {
		return "none"
	}
	return fmt.Sprintf("%d", d.Round(time.Millisecond).Milliseconds())
}

func (st stats) cell() string {
	if st.N == 0 {
		return "-"
	}
	s := fmt.Sprintf("%s [%s..%s]", ms(st.Median), ms(st.Min), ms(st.Max))
	if st.Failed > 0 {
		s += fmt.Sprintf(" (%d/%d failed)", st.Failed, st.N)
	}
	return s
}

// ratio is vipstack's median over keepalived's, both as printed (whole
// milliseconds: the prober's resolution is 10 ms, so a sub-millisecond
// difference between two medians is not a measurement and must not decide
// a target against the figures the table shows); ok is false when either is
// missing or infinite.
func ratio(vs, ka stats) (float64, bool) {
	if vs.N == 0 || ka.N == 0 || vs.Median == infinite || ka.Median == infinite {
		return 0, false
	}
	v, k := vs.Median.Round(time.Millisecond), ka.Median.Round(time.Millisecond)
	if k <= 0 {
		return 0, false
	}
	return float64(v) / float64(k), true
}

// results holds every trial of a run, by implementation and scenario ID.
type results struct {
	Scenarios []scenario
	Trials    map[string][]outcome // key: impl + " " + scenario ID
}

func key(impl string, s scenario) string { return impl + " " + s.ID() }

func (r *results) add(impl string, s scenario, o outcome) {
	if r.Trials == nil {
		r.Trials = map[string][]outcome{}
	}
	r.Trials[key(impl, s)] = append(r.Trials[key(impl, s)], o)
}

// stats summarises the outages of impl in s.
func (r *results) stats(impl string, s scenario) stats {
	var ss []sample
	for _, o := range r.Trials[key(impl, s)] {
		ss = append(ss, sample{D: o.Outage, Failed: o.Err != nil})
	}
	return summarize(ss)
}

// sinceAdvert summarises the outages of impl in s measured from node1's
// last advertisement; trials without one are left out.
func (r *results) sinceAdvert(impl string, s scenario) stats {
	var ss []sample
	for _, o := range r.Trials[key(impl, s)] {
		switch {
		case o.Err != nil:
			ss = append(ss, sample{Failed: true})
		case o.HasSinceAdvert:
			ss = append(ss, sample{D: o.SinceAdvert})
		}
	}
	return summarize(ss)
}

// report adds the tables to rep: one row per scenario, milliseconds from
// the event to the first connection answered by the backup, then the
// crashes measured from node1's last advertisement.
func (r *results) report(rep *benchdoc.Report) {
	rep.Para("ms to the first TCP connect to the VIP answered by node2, median [min..max]; bound = 3 x advert + skew for kill -9, skew for SIGTERM, fall x interval + skew for a failing check (node1 150 - 60 = 90), with the backup at priority 100:")
	tb := benchdoc.Table{Header: []string{"scenario", "bound", "keepalived", "vipstack", "vipstack/keepalived"}}
	for _, s := range r.Scenarios {
		tb.Add(s.Label(), ms(s.Bound()), r.stats(implKeepalived, s).cell(), r.stats(implVipstack, s).cell(),
			ratioCell(r.stats(implVipstack, s), r.stats(implKeepalived, s)))
	}
	rep.Table(tb)

	since := benchdoc.Table{Header: []string{"kill -9, from node1's last advert", "bound", "keepalived", "vipstack", "vipstack/keepalived"}}
	for _, s := range r.Scenarios {
		if s.Event != eventKill {
			continue
		}
		ka, vs := r.sinceAdvert(implKeepalived, s), r.sinceAdvert(implVipstack, s)
		since.Add(s.Label(), ms(s.Bound()), ka.cell(), vs.cell(), ratioCell(vs, ka))
	}
	if len(since.Rows) == 0 {
		return
	}
	rep.Para("The same crashes from the last advertisement the client saw from node1 before the kill: the backup's Master_Down timer starts there, so this removes where in the interval the crash fell; expect the bound plus the ARP update:")
	rep.Table(since)
}

func ratioCell(vs, ka stats) string {
	if v, ok := ratio(vs, ka); ok {
		return fmt.Sprintf("%.3f", v)
	}
	return "-"
}

// targets checks the targets and returns one PASS/MISS line each;
// a target whose figures are missing (filtered out) is left out.
//
// "No slower than keepalived" is judged on the figure that carries no
// chance: for a crash, the outage from node1's last advertisement (the
// outage from the kill adds where in the advert interval the kill fell, up
// to a whole interval); for SIGTERM, the outage from the signal. A
// difference smaller than the prober's resolution (probeEvery) is not a
// measurement, so vipstack passes while its median is within one probe of
// keepalived's.
func (r *results) targets() []string {
	var lines []string
	for _, s := range r.Scenarios {
		ka, vs := r.stats(implKeepalived, s), r.stats(implVipstack, s)
		if vs.N == 0 {
			continue
		}
		if ka.N > 0 {
			lines = append(lines, r.parity(s, ka, vs))
		}
		if s.Event == eventCheck {
			lines = append(lines, fmt.Sprintf("%s  %s: vipstack median %s ms, max %s ms (want median <= %s ms, fall x interval + skew)",
				verdict(vs.Median <= s.Bound()), s.Label(), ms(vs.Median), ms(vs.Max), ms(s.Bound())))
		}
		if s.Timers.Version == 3 && s.Timers.Advert == 50*time.Millisecond && s.Event == eventKill {
			lines = append(lines, fmt.Sprintf("%s  %s: vipstack median %s ms (want < %d ms)",
				verdict(vs.Median < v3CrashTarget), s.Label(), ms(vs.Median), v3CrashTarget.Milliseconds()))
		}
	}
	return lines
}

// parity is the line of the target "vipstack fails over no slower than
// keepalived" for s, given both implementations' outages from the event.
func (r *results) parity(s scenario, ka, vs stats) string {
	from := "from the signal"
	if s.Event == eventCheck {
		from = "from the check starting to fail"
	}
	if s.Event == eventKill {
		from = "from the kill"
		if kaA, vsA := r.sinceAdvert(implKeepalived, s), r.sinceAdvert(implVipstack, s); kaA.N > 0 && vsA.N > 0 {
			ka, vs, from = kaA, vsA, "from node1's last advert"
		}
	}
	v, ok := ratio(vs, ka)
	switch {
	case ok:
		diff := vs.Median.Round(time.Millisecond) - ka.Median.Round(time.Millisecond)
		return fmt.Sprintf("%s  %s: vipstack - keepalived = %+d ms (%.3f), %s (want <= +%d ms, the probe's resolution)",
			verdict(diff <= probeEvery), s.Label(), diff.Milliseconds(), v, from, probeEvery.Milliseconds())
	case vs.Median == infinite:
		return fmt.Sprintf("MISS  %s: vipstack did not fail over in most trials", s.Label())
	}
	return fmt.Sprintf("PASS  %s: keepalived did not fail over in most trials, vipstack did", s.Label())
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// failures lists every failed trial with its reason.
func (r *results) failures() []string {
	var lines []string
	for _, s := range r.Scenarios {
		for _, impl := range []string{implKeepalived, implVipstack} {
			for i, o := range r.Trials[key(impl, s)] {
				if o.Err != nil {
					lines = append(lines, fmt.Sprintf("%s, %s, trial %d: %v", impl, s.Label(), i+1, strings.TrimSpace(o.Err.Error())))
				}
			}
		}
	}
	return lines
}
