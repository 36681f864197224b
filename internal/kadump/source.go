package kadump

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/keepalived"
)

// A Source builds Dumps from a running engine: its status, the
// configuration it runs and the counters it keeps in its metrics registry.
type Source struct {
	// Status is the engine's current status (engine.Engine.Status).
	Status func() []engine.InstanceStatus
	// Config is the configuration the engine runs, for what the status
	// does not say (advert interval, VIP devices, track weights). After a
	// reload that changed it, instances it does not name are written with
	// keepalived's defaults.
	Config func() *keepalived.Config
	// Gatherer is the engine's metrics registry; the transition and
	// dropped-packet counters come from it.
	Gatherer prometheus.Gatherer
}

// Metric names and labels the counters are read from (internal/engine).
const (
	metricTransitions = "vipstack_vrrp_transitions_total"
	metricDropped     = "vipstack_vrrp_packets_dropped_total"
)

// Dump builds the current Dump.
//
// What vipstack does not count is written as keepalived writes it for an
// instance that never saw such an event, 0: packet length, TTL and
// invalid-type errors (vipstack drops those packets before it knows the
// instance), invalid authentication type, and priority-zero adverts
// received and sent. An authentication mismatch (type or password) is
// counted as keepalived's authentication failure.
func (s Source) Dump() (Dump, error) {
	var cfg *keepalived.Config
	if s.Config != nil {
		cfg = s.Config()
	}
	if cfg == nil {
		cfg = &keepalived.Config{}
	}
	counters, statuses, err := s.snapshot()
	if err != nil {
		return Dump{}, err
	}
	byName := map[string]*keepalived.Instance{}
	for _, ic := range cfg.Instances {
		byName[ic.Name] = ic
	}
	d := Dump{RouterID: cfg.Global.RouterID}
	scriptGood := map[string]bool{}
	tracking := map[string][]TrackRef{}
	for _, st := range statuses {
		in := instanceOf(st, byName[st.Name], cfg)
		c := counters[st.Name]
		if c == nil {
			c = &instanceCounters{dropped: map[string]uint64{}}
		}
		in.Stats = Stats{
			AdvertRcvd:        st.AdvertsRecv,
			AdvertSent:        st.AdvertsSent,
			BecomeMaster:      c.became,
			AdvertIntervalErr: c.dropped["conflict_interval"],
			AddrListErr:       c.dropped["conflict_addresses"],
			AuthFailure:       c.dropped["conflict_auth"],
		}
		// Every stint as master but the current one has ended.
		in.Stats.ReleaseMaster = c.became
		if st.State == "MASTER" && c.became > 0 {
			in.Stats.ReleaseMaster--
		}
		for _, ct := range st.Contributions {
			if name, ok := strings.CutPrefix(ct.Source, "script "); ok {
				scriptGood[name] = ct.OK
			}
		}
		for _, t := range in.TrackScripts {
			tracking[t.Name] = append(tracking[t.Name], TrackRef{Name: in.Name, Weight: t.Weight})
		}
		d.Instances = append(d.Instances, in)
	}
	names := make([]string, 0, len(scriptGood))
	for name := range scriptGood {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		sc := Script{Name: name, Good: scriptGood[name], Tracking: tracking[name], Rise: 1, Fall: 1}
		if c := cfg.Scripts[name]; c != nil {
			sc.Command, sc.Interval, sc.Timeout, sc.Weight = c.Command, c.Interval, c.Timeout, c.Weight
			if c.Rise > 0 {
				sc.Rise = c.Rise
			}
			if c.Fall > 0 {
				sc.Fall = c.Fall
			}
		}
		d.Scripts = append(d.Scripts, sc)
	}
	return d, nil
}

type instanceCounters struct {
	became  uint64
	dropped map[string]uint64
}

// snapshot reads the counters and the status so that they agree: a
// transition between the two reads would pair a new state with the counts
// from before it (MASTER, never became master), so the counters are read
// again after the status, and both again while they moved (a few times
// at most: a flapping instance gets its latest pair).
func (s Source) snapshot() (map[string]*instanceCounters, []engine.InstanceStatus, error) {
	counters, err := s.counters()
	if err != nil {
		return nil, nil, err
	}
	statuses := s.Status()
	for range 3 {
		again, err := s.counters()
		if err != nil {
			return nil, nil, err
		}
		if sameCounters(counters, again) {
			break
		}
		counters, statuses = again, s.Status()
	}
	return counters, statuses, nil
}

func sameCounters(a, b map[string]*instanceCounters) bool {
	if len(a) != len(b) {
		return false
	}
	for name, x := range a {
		y, ok := b[name]
		if !ok || x.became != y.became || !maps.Equal(x.dropped, y.dropped) {
			return false
		}
	}
	return true
}

// counters reads the per-instance transition and drop counters.
func (s Source) counters() (map[string]*instanceCounters, error) {
	out := map[string]*instanceCounters{}
	if s.Gatherer == nil {
		return out, nil
	}
	mfs, err := s.Gatherer.Gather()
	if err != nil {
		return nil, fmt.Errorf("kadump: reading the engine's counters: %w", err)
	}
	get := func(name string) *instanceCounters {
		c := out[name]
		if c == nil {
			c = &instanceCounters{dropped: map[string]uint64{}}
			out[name] = c
		}
		return c
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case metricTransitions:
			for _, m := range mf.GetMetric() {
				if label(m, "to") == "MASTER" {
					get(label(m, "instance")).became += uint64(m.GetCounter().GetValue())
				}
			}
		case metricDropped:
			for _, m := range mf.GetMetric() {
				if in := label(m, "instance"); in != "" {
					get(in).dropped[label(m, "reason")] += uint64(m.GetCounter().GetValue())
				}
			}
		}
	}
	return out, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// instanceOf is st with the configuration's details; ic may be nil.
func instanceOf(st engine.InstanceStatus, ic *keepalived.Instance, cfg *keepalived.Config) Instance {
	g := cfg.Global
	in := Instance{
		Name: st.Name, State: st.State, Version: st.Version, Interface: st.Interface,
		VRID: int(st.VRID), BasePriority: st.BasePriority, Effective: st.Effective,
		// keepalived's defaults, for an instance the configuration no
		// longer names.
		AdvertInterval: 1e9, Accept: true, Preempt: true,
		GARPDelay: 5e9, GARPRepeat: 5, GARPRefreshRep: 1,
	}
	if g.GARPMasterDelay > 0 {
		in.GARPDelay = g.GARPMasterDelay
	}
	if g.GARPMasterRepeat > 0 {
		in.GARPRepeat = g.GARPMasterRepeat
	}
	if st.State != "MASTER" {
		in.MasterPriority = st.MasterPriority
	}
	if a, err := netip.ParseAddr(st.Source); err == nil {
		in.Source = a
	}
	if st.LastTransition != nil {
		in.LastTransition = st.LastTransition.At
	}
	held := st.State == "MASTER"
	excluded := map[netip.Prefix]keepalived.VIP{}
	devs := map[netip.Prefix]keepalived.VIP{}
	if ic != nil {
		in.AdvertInterval, in.Accept, in.Preempt, in.PreemptDelay = ic.AdvertInterval, ic.Accept, ic.Preempt, ic.PreemptDelay
		in.AuthPass = ic.AuthType == "PASS"
		if ic.GARPMasterDelay > 0 {
			in.GARPDelay = ic.GARPMasterDelay
		}
		if ic.GARPMasterRepeat > 0 {
			in.GARPRepeat = ic.GARPMasterRepeat
		}
		in.GARPRefresh = ic.GARPMasterRefresh
		if ic.GARPMasterRefreshRepeat > 0 {
			in.GARPRefreshRep = ic.GARPMasterRefreshRepeat
		}
		in.UnicastPeers = slices.Clone(ic.UnicastPeers)
		for _, v := range ic.VIPs {
			devs[v.Prefix] = v
		}
		for _, v := range ic.ExcludedVIPs {
			excluded[v.Prefix] = v
		}
		for _, ts := range ic.TrackScripts {
			w := ts.Weight
			if sc := cfg.Scripts[ts.Name]; sc != nil && !ts.HasWeight {
				w = sc.Weight
				if sc.WeightReverse {
					w = -w
				}
			}
			in.TrackScripts = append(in.TrackScripts, TrackRef{Name: ts.Name, Weight: w})
		}
	}
	for _, text := range st.VIPs {
		p, err := netip.ParsePrefix(text)
		if err != nil {
			continue
		}
		v := VIP{Prefix: p, Dev: st.Interface, Set: held}
		if c, ok := excluded[p]; ok {
			v.Dev, v.Scope = devOr(c.Dev(), st.Interface), c.Options().Scope
			in.ExcludedVIPs = append(in.ExcludedVIPs, v)
			continue
		}
		if c, ok := devs[p]; ok {
			v.Dev, v.Scope = devOr(c.Dev(), st.Interface), c.Options().Scope
		}
		in.VIPs = append(in.VIPs, v)
	}
	return in
}

func devOr(dev, def string) string {
	if dev != "" {
		return dev
	}
	return def
}
