package engine

import (
	"net/netip"
	"time"

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
	// held are the VIPs (as in VIPs) on the node for this instance now,
	// for the metrics (see metrics.go).
	held   []string
	counts counters // the instance's counters, for the metrics
	family int
	state  fsm.State
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
	out := make([]InstanceStatus, 0, len(e.instances)) // at its size: it is kept until the next Status
	for _, name := range e.names() {
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
			family:         in.family,
			state:          in.fsm.State(),
		}
		if in.fsm.State() != fsm.Initialize {
			s.Effective = int(in.fsm.Priority())
		}
		if in.peers != nil {
			s.Mode = "unicast"
		}
		s.VIPs = in.texts()
		if m, p := in.fsm.Master(); m.IsValid() {
			s.Master, s.MasterPriority = m.String(), int(p)
		}
		s.Conflicts = in.conflicts.list()
		s.held = e.heldOf(in)
		s.counts = in.counts
		out = append(out, s)
	}
	return out
}

// addrText is a's text, or "" for the zero Addr (an IPv4 instance whose
// interface has no address to send from).
func addrText(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}
