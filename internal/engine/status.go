package engine

import (
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/vrrp/fsm"
)

// InstanceStatus is what `--status-addr` reports for one instance.
type InstanceStatus struct {
	Name           string         `json:"name"`
	State          string         `json:"state"`
	VRID           uint8          `json:"vrid"`
	Version        int            `json:"version"`
	Interface      string         `json:"interface"`
	Source         string         `json:"source"`
	Mode           string         `json:"mode"` // multicast or unicast
	VIPs           []string       `json:"vips"`
	Master         string         `json:"master,omitempty"`
	MasterPriority int            `json:"master_priority,omitempty"`
	BasePriority   int            `json:"base_priority"`
	Effective      int            `json:"effective_priority"`
	Contributions  []Contribution `json:"contributions"`
	Fault          string         `json:"fault,omitempty"`
	// Lifecycle lists the lifecycle conditions the instance holds beside
	// its state (absent, recreated, waiting, no-source, group-fault; none:
	// running as configured).
	Lifecycle      []string    `json:"lifecycle,omitempty"`
	LastTransition *Transition `json:"last_transition,omitempty"`
	Conflicts      []Conflict  `json:"conflicts,omitempty"`
	AdvertsSent    uint64      `json:"adverts_sent"`
	AdvertsRecv    uint64      `json:"adverts_received"`
}

// Transition is the last state change of an instance.
type Transition struct {
	From   string    `json:"from"`
	To     string    `json:"to"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// Conflict is another router on our VRID that disagrees with us.
type Conflict struct {
	Peer      string    `json:"peer"`
	Kind      string    `json:"kind"` // version, auth, interval, addresses; dual_master (see rivalMaster)
	Detail    string    `json:"detail"`
	Count     uint64    `json:"count"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	loggedAt  time.Time
}

func (e *Engine) snapshot() []InstanceStatus {
	var out []InstanceStatus
	for _, name := range sortedKeys(e.instances) {
		in := e.instances[name]
		prio, fault := e.effective(in)
		s := InstanceStatus{
			Name:           name,
			State:          in.fsm.State().String(),
			VRID:           in.cfg.VRID,
			Version:        in.cfg.Version,
			Interface:      in.cfg.Interface,
			Source:         addrText(in.src),
			Mode:           "multicast",
			BasePriority:   int(in.cfg.Priority),
			Effective:      int(prio),
			Contributions:  e.contributions(in),
			Fault:          fault,
			Lifecycle:      in.life.names(),
			LastTransition: in.lastTransition,
			AdvertsSent:    in.sent,
			AdvertsRecv:    in.received,
		}
		if in.fsm.State() != fsm.Initialize {
			s.Effective = int(in.fsm.Priority())
		}
		if in.peers != nil {
			s.Mode = "unicast"
		}
		s.VIPs = in.vipText
		if m, p := in.fsm.Master(); m.IsValid() {
			s.Master, s.MasterPriority = m.String(), int(p)
		}
		s.Conflicts = in.conflicts.list()
		e.metrics.priority.WithLabelValues(name).Set(float64(s.Effective))
		e.metrics.state.WithLabelValues(name).Set(float64(in.fsm.State()))
		out = append(out, s)
	}
	return out
}

type metrics struct {
	state       *prometheus.GaugeVec
	priority    *prometheus.GaugeVec
	transitions *prometheus.CounterVec
	sent        *prometheus.CounterVec
	sendErrors  *prometheus.CounterVec
	received    *prometheus.CounterVec
	dropped     *prometheus.CounterVec
	conflicts   *prometheus.CounterVec
	reloads     *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vipstack_vrrp_state",
			Help: "State of the VRRP instance: 0 init, 1 backup, 2 master, 3 fault."}, []string{"instance"}),
		priority: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vipstack_vrrp_effective_priority",
			Help: "Effective priority: base plus tracked scripts and interfaces."}, []string{"instance"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipstack_vrrp_transitions_total",
			Help: "State transitions, by the state entered."}, []string{"instance", "to"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipstack_vrrp_adverts_sent_total",
			Help: "Advertisements sent (one per destination)."}, []string{"instance"}),
		sendErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipstack_vrrp_advert_send_errors_total",
			Help: "Advertisements that could not be sent."}, []string{"instance"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipstack_vrrp_adverts_received_total",
			Help: "Valid advertisements received."}, []string{"instance"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipstack_vrrp_packets_dropped_total",
			Help: "Received VRRP packets dropped, by reason (instance empty when none matched)."}, []string{"instance", "reason"}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipstack_vrrp_vrid_conflicts_total",
			Help: "Advertisements on our VRID that disagree with our configuration."}, []string{"instance", "kind"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipstack_vrrp_reloads_total",
			Help: "Configuration reloads, by result."}, []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.state, m.priority, m.transitions, m.sent, m.sendErrors, m.received, m.dropped, m.conflicts, m.reloads)
	}
	return m
}

// addrText is a's text, or "" for the zero Addr (an IPv4 instance whose
// interface has no address to send from).
func addrText(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}
