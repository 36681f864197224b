package engine

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	basemetrics "github.com/vipstack/vipstack/internal/metrics"
	"github.com/vipstack/vipstack/internal/track"
	"github.com/vipstack/vipstack/internal/vrrp/fsm"
)

// instanceLabels label every per-instance series: the vrrp_instance's
// name, its VRID and its interface (keepalived-exporter's iname, vrid and
// intf).
var instanceLabels = []string{"instance", "vrid", "interface"}

// labels are the values of instanceLabels for in.
func (in *instance) labels() []string {
	return []string{in.cfg.Name, strconv.Itoa(int(in.cfg.VRID)), in.cfg.Interface}
}

// metrics are the engine's series. The counters of each instance (adverts
// sent, send errors, adverts received, transitions) are counted on the
// instance (counters) and, like the gauges (state, priorities, VIPs held,
// checks), read from the status the loop makes at each scrape
// (statusCollector): they are never older than `vipstack status`, an
// instance a reload removed is gone from them, and an instance costs no
// series objects between scrapes (with 1,000 instances the per-instance
// CounterVec children were 2.6 MiB of the heap, docs/design/memory.md).
// The rest count here, as they happen.
type metrics struct {
	dropped   *prometheus.CounterVec
	conflicts *prometheus.CounterVec
	reloads   *prometheus.CounterVec
	checks    *prometheus.CounterVec
}

// counters are an instance's counters for the metrics; an instance a
// reload builds anew under the same labels takes them over.
type counters struct {
	sent, sendErrors, received uint64
	transitions                [fsm.Fault + 1]uint64 // by the state entered
}

// entered counts a transition to st.
func (c *counters) entered(st fsm.State) {
	if st >= 0 && int(st) < len(c.transitions) {
		c.transitions[st]++
	}
}

func newMetrics(reg prometheus.Registerer, status func() []InstanceStatus) *metrics {
	with := func(extra ...string) []string { return append(slices.Clone(instanceLabels), extra...) }
	m := &metrics{
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipstack_vrrp_packets_dropped_total",
			Help: "Received VRRP packets dropped, by reason (instance empty when none matched)."}, []string{"instance", "reason"}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipstack_vrrp_vrid_conflicts_total",
			Help: "Advertisements on our VRID that disagree with our configuration, by kind (version, auth, interval, addresses, dual_master)."}, with("kind")),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipstack_vrrp_reloads_total",
			Help: "Configuration reloads, by result (ok, error)."}, []string{"result"}),
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipstack_check_results_total",
			Help: "Probes of a tracked check (vrrp_script, or a native check of vipstack node), by result: success, failure, timeout."}, []string{"check", "result"}),
	}
	if reg != nil {
		reg.MustRegister(m.dropped, m.conflicts, m.reloads, m.checks)
		basemetrics.AddText(reg, statusText{status: status})
	}
	return m
}

// forget removes the counters of old, an instance a reload removed
// (next nil) or rebuilt under other labels (its VRID or interface
// changed), so that no series of what no longer runs stays; next, built
// anew under the same labels, takes over old's counters.
func (m *metrics) forget(old, next *instance) {
	if next != nil && slices.Equal(old.labels(), next.labels()) {
		next.counts = old.counts
		return
	}
	if m == nil {
		return
	}
	ls := old.labels()
	match := prometheus.Labels{"instance": ls[0], "vrid": ls[1], "interface": ls[2]}
	m.conflicts.DeletePartialMatch(match)
	if next == nil {
		m.dropped.DeletePartialMatch(prometheus.Labels{"instance": ls[0]})
	}
}

// counted returns c, counting its results under name (nil m: c itself).
func (m *metrics) counted(name string, c track.Check) track.Check {
	if m == nil {
		return c
	}
	for _, r := range []string{"success", "failure", "timeout"} {
		m.checks.WithLabelValues(name, r)
	}
	return countedCheck{Check: c, name: name, m: m}
}

// countedCheck counts the results of c's probes in m.
type countedCheck struct {
	track.Check
	name string
	m    *metrics
}

func (c countedCheck) Probe(ctx context.Context) error {
	err := c.Check.Probe(ctx)
	result := "success"
	switch {
	case err == nil:
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		result = "timeout"
	default:
		result = "failure"
	}
	c.m.checks.WithLabelValues(c.name, result).Inc()
	return err
}

// The families statusText writes, in the order it writes them.
const (
	sentName        = "vipstack_vrrp_adverts_sent_total"
	sendErrorsName  = "vipstack_vrrp_advert_send_errors_total"
	receivedName    = "vipstack_vrrp_adverts_received_total"
	transitionsName = "vipstack_vrrp_transitions_total"
	stateName       = "vipstack_vrrp_state"
	effectiveName   = "vipstack_vrrp_effective_priority"
	baseName        = "vipstack_vrrp_base_priority"
	infoName        = "vipstack_vrrp_instance_info"
	heldName        = "vipstack_vrrp_vip_held"
	checkName       = "vipstack_check_up"
)

// statusHelp is each family's HELP text.
var statusHelp = map[string]string{
	sentName:        "Advertisements sent (one per destination).",
	sendErrorsName:  "Advertisements that could not be sent.",
	receivedName:    "Valid advertisements received.",
	transitionsName: "State transitions, by the state entered (to: INIT, BACKUP, MASTER, FAULT).",
	stateName:       "State of the VRRP instance: 0 init, 1 backup, 2 master, 3 fault.",
	effectiveName:   "Effective priority: the base priority plus what each tracked script and interface adds (vipstack status lists them); 255 for an address owner.",
	baseName:        "The configured priority of the instance.",
	infoName:        "Always 1; the labels describe the instance: address family (4, 6), VRRP version (2, 3) and mode (multicast, unicast).",
	heldName:        "1 for each address of the instance (virtual_ipaddress and virtual_ipaddress_excluded) this node holds now, 0 for the others.",
	checkName:       "1 while a check the instance tracks passes, 0 while it fails; kind is script (vrrp_script or a native check), interface, or what else keeps the instance from running (vipstack status: contributions).",
}

// statusText writes the status of every instance (Status) as metric
// families, straight in the text format (basemetrics.TextSource): through
// client_golang's const metrics a scrape of 1,000 instances with 10,000
// VIPs allocated 22 MB in 368,000 objects.
type statusText struct{ status func() []InstanceStatus }

func (statusText) Families() []string {
	return []string{sentName, sendErrorsName, receivedName, transitionsName, stateName, effectiveName, baseName, infoName, heldName, checkName}
}

func (c statusText) WriteText(t *basemetrics.Text) {
	st := c.status()
	vrids := make([]string, len(st))
	for i, s := range st {
		vrids[i] = strconv.Itoa(int(s.VRID))
	}
	// A counter's series appears with its first count, as a CounterVec's
	// child does.
	counter := func(name string, n func(*InstanceStatus) uint64) {
		t.Family(name, "counter", statusHelp[name])
		for i := range st {
			if v := n(&st[i]); v > 0 {
				t.Sample(float64(v), "instance", st[i].Name, "interface", st[i].Interface, "vrid", vrids[i])
			}
		}
	}
	counter(sentName, func(s *InstanceStatus) uint64 { return s.counts.sent })
	counter(sendErrorsName, func(s *InstanceStatus) uint64 { return s.counts.sendErrors })
	counter(receivedName, func(s *InstanceStatus) uint64 { return s.counts.received })
	t.Family(transitionsName, "counter", statusHelp[transitionsName])
	for i, s := range st {
		for to, n := range s.counts.transitions {
			if n > 0 {
				t.Sample(float64(n), "instance", s.Name, "interface", s.Interface, "to", fsm.State(to).String(), "vrid", vrids[i])
			}
		}
	}
	gauge := func(name string, v func(*InstanceStatus) float64) {
		t.Family(name, "gauge", statusHelp[name])
		for i := range st {
			t.Sample(v(&st[i]), "instance", st[i].Name, "interface", st[i].Interface, "vrid", vrids[i])
		}
	}
	gauge(stateName, func(s *InstanceStatus) float64 { return float64(s.state) })
	gauge(effectiveName, func(s *InstanceStatus) float64 { return float64(s.Effective) })
	gauge(baseName, func(s *InstanceStatus) float64 { return float64(s.BasePriority) })
	t.Family(infoName, "gauge", statusHelp[infoName])
	for i, s := range st {
		t.Sample(1, "family", strconv.Itoa(s.family), "instance", s.Name, "interface", s.Interface, "mode", s.Mode, "version", strconv.Itoa(s.Version), "vrid", vrids[i])
	}
	writeHeld(t, st, vrids)
	writeChecks(t, st, vrids)
}

// writeHeld writes vipstack_vrrp_vip_held: one series per address of an
// instance, 1 if held. By map, not by searching the held list for each
// VIP: an ipfailover group of thousands made that a search of thousands
// for each, millions of comparisons a scrape.
func writeHeld(t *basemetrics.Text, st []InstanceStatus, vrids []string) {
	t.Family(heldName, "gauge", statusHelp[heldName])
	held, seen := map[string]bool{}, map[string]bool{}
	for i, s := range st {
		clear(held)
		clear(seen)
		for _, v := range s.held {
			held[v] = true
		}
		for _, v := range s.VIPs {
			if seen[v] {
				continue
			}
			seen[v] = true
			t.Sample(b2f(held[v]), "instance", s.Name, "interface", s.Interface, "vip", v, "vrid", vrids[i])
		}
	}
}

// writeChecks writes vipstack_check_up: one series per check, and a
// source listed twice (the instance's own interface also a
// track_interface) is up only if both are.
func writeChecks(t *basemetrics.Text, st []InstanceStatus, vrids []string) {
	t.Family(checkName, "gauge", statusHelp[checkName])
	type key struct{ kind, check string }
	up := map[key]bool{}
	var order []key
	for i, s := range st {
		clear(up)
		order = order[:0]
		for _, c := range s.Contributions {
			kind, name, _ := strings.Cut(c.Source, " ")
			k := key{kind, name}
			if prev, ok := up[k]; ok {
				up[k] = prev && c.OK
				continue
			}
			up[k] = c.OK
			order = append(order, k)
		}
		for _, k := range order {
			t.Sample(b2f(up[k]), "check", k.check, "instance", s.Name, "interface", s.Interface, "kind", k.kind, "vrid", vrids[i])
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// heldOf lists the VIPs of in that the engine holds now.
//
// The status is made at each Status (each scrape, `vipstack status`, an
// agent's publication), and this runs over every VIP (10,000 in an
// ipfailover pool): it allocates nothing while the answer is what it was
// the last time (the instance's previous list is returned, shared: a list
// handed out is never changed), and takes the text from in.vipText, the
// list itself when every VIP is held.
func (e *Engine) heldOf(in *instance) []string {
	in.texts()
	n, same := 0, true
	for i, v := range in.vips {
		if !e.held.has(v.Prefix, v.Dev) {
			continue
		}
		same = same && n < len(in.heldText) && in.heldText[n] == in.vipText[i]
		n++
	}
	if same && n == len(in.heldText) {
		return in.heldText
	}
	if n == len(in.vips) {
		// All of them, as a master holds: the list of every VIP's text,
		// shared, not a copy kept beside it (10,000 strings' headers at
		// bench/scale's 1,000 masters).
		in.heldText = in.vipText
		return in.heldText
	}
	var out []string
	if n > 0 {
		out = make([]string, 0, n)
	}
	for i, v := range in.vips {
		if e.held.has(v.Prefix, v.Dev) {
			out = append(out, in.vipText[i])
		}
	}
	in.heldText = out
	return out
}

// texts returns in.vipText, made first if the list changed since the
// last status (or none was made).
func (in *instance) texts() []string {
	if len(in.vipText) != len(in.vips) {
		in.vipText = prefixTexts(in.vips)
	}
	return in.vipText
}

// Held lists the addresses of the instance (as in VIPs) on the node now.
func (s InstanceStatus) Held() []string { return s.held }
