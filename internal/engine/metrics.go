package engine

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

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
// checks), read from the published status at each scrape
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
		reg.MustRegister(m.dropped, m.conflicts, m.reloads, m.checks, &statusCollector{status: status})
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

var (
	transitionsDesc = prometheus.NewDesc("vipstack_vrrp_transitions_total",
		"State transitions, by the state entered (to: INIT, BACKUP, MASTER, FAULT).", append(slices.Clone(instanceLabels), "to"), nil)
	sentDesc = prometheus.NewDesc("vipstack_vrrp_adverts_sent_total",
		"Advertisements sent (one per destination).", instanceLabels, nil)
	sendErrorsDesc = prometheus.NewDesc("vipstack_vrrp_advert_send_errors_total",
		"Advertisements that could not be sent.", instanceLabels, nil)
	receivedDesc = prometheus.NewDesc("vipstack_vrrp_adverts_received_total",
		"Valid advertisements received.", instanceLabels, nil)
	stateDesc = prometheus.NewDesc("vipstack_vrrp_state",
		"State of the VRRP instance: 0 init, 1 backup, 2 master, 3 fault.", instanceLabels, nil)
	effectiveDesc = prometheus.NewDesc("vipstack_vrrp_effective_priority",
		"Effective priority: the base priority plus what each tracked script and interface adds (vipstack status lists them); 255 for an address owner.", instanceLabels, nil)
	baseDesc = prometheus.NewDesc("vipstack_vrrp_base_priority",
		"The configured priority of the instance.", instanceLabels, nil)
	infoDesc = prometheus.NewDesc("vipstack_vrrp_instance_info",
		"Always 1; the labels describe the instance: address family (4, 6), VRRP version (2, 3) and mode (multicast, unicast).",
		append(slices.Clone(instanceLabels), "family", "version", "mode"), nil)
	heldDesc = prometheus.NewDesc("vipstack_vrrp_vip_held",
		"1 for each address of the instance (virtual_ipaddress and virtual_ipaddress_excluded) this node holds now, 0 for the others.",
		append(slices.Clone(instanceLabels), "vip"), nil)
	checkDesc = prometheus.NewDesc("vipstack_check_up",
		"1 while a check the instance tracks passes, 0 while it fails; kind is script (vrrp_script or a native check), interface, or what else keeps the instance from running (vipstack status: contributions).",
		append(slices.Clone(instanceLabels), "kind", "check"), nil)
)

// statusCollector exports the published status of every instance.
type statusCollector struct{ status func() []InstanceStatus }

func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{transitionsDesc, sentDesc, sendErrorsDesc, receivedDesc, stateDesc, effectiveDesc, baseDesc, infoDesc, heldDesc, checkDesc} {
		ch <- d
	}
}

func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.status() {
		ls := []string{s.Name, strconv.Itoa(int(s.VRID)), s.Interface}
		gauge := func(d *prometheus.Desc, v float64, extra ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append(slices.Clone(ls), extra...)...)
		}
		// A counter's series appears with its first count, as a
		// CounterVec's child does.
		counter := func(d *prometheus.Desc, n uint64, extra ...string) {
			if n > 0 {
				ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(n), append(slices.Clone(ls), extra...)...)
			}
		}
		counter(sentDesc, s.counts.sent)
		counter(sendErrorsDesc, s.counts.sendErrors)
		counter(receivedDesc, s.counts.received)
		for st, n := range s.counts.transitions {
			counter(transitionsDesc, n, fsm.State(st).String())
		}
		gauge(stateDesc, float64(s.state))
		gauge(effectiveDesc, float64(s.Effective))
		gauge(baseDesc, float64(s.BasePriority))
		gauge(infoDesc, 1, strconv.Itoa(s.family), strconv.Itoa(s.Version), s.Mode)
		// By map, not by searching the held list for each VIP: an
		// ipfailover group of thousands made that a search of thousands
		// for each, millions of comparisons a scrape.
		held := make(map[string]bool, len(s.held))
		for _, v := range s.held {
			held[v] = true
		}
		seen := make(map[string]bool, len(s.VIPs))
		for _, v := range s.VIPs {
			if seen[v] {
				continue
			}
			seen[v] = true
			gauge(heldDesc, b2f(held[v]), v)
		}
		// One series per check: a source listed twice (the instance's
		// own interface also a track_interface) is up only if both are.
		type key struct{ kind, check string }
		up := map[key]bool{}
		var order []key
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
			gauge(checkDesc, b2f(up[k]), k.kind, k.check)
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
// The status is published after every turn of the loop, several times a
// second, and this runs over every VIP (10,000 in an ipfailover pool): it
// allocates nothing while the answer is what it was the last time (the
// instance's previous list is returned, shared: a published list is never
// changed), and takes the text from in.vipText.
func (e *Engine) heldOf(in *instance) []string {
	if len(in.vipText) != len(in.vips) {
		in.vipText = nil
		for _, v := range in.vips {
			in.vipText = append(in.vipText, v.Prefix.String())
		}
	}
	var buf [64]byte
	n, same := 0, true
	for i, v := range in.vips {
		if _, ok := e.held[string(appendAddrKey(buf[:0], v.Prefix, v.Dev))]; !ok {
			continue
		}
		same = same && n < len(in.heldText) && in.heldText[n] == in.vipText[i]
		n++
	}
	if same && n == len(in.heldText) {
		return in.heldText
	}
	var out []string
	if n > 0 {
		out = make([]string, 0, n)
	}
	for i, v := range in.vips {
		if _, ok := e.held[string(appendAddrKey(buf[:0], v.Prefix, v.Dev))]; ok {
			out = append(out, in.vipText[i])
		}
	}
	in.heldText = out
	return out
}

// Held lists the addresses of the instance (as in VIPs) on the node now.
func (s InstanceStatus) Held() []string { return s.held }
