package fsm

import (
	"fmt"
	"net/netip"
	"time"
)

// State is a VRRP router state.
type State int

const (
	Initialize State = iota
	Backup
	Master
	Fault
)

func (s State) String() string {
	switch s {
	case Initialize:
		return "INIT"
	case Backup:
		return "BACKUP"
	case Master:
		return "MASTER"
	case Fault:
		return "FAULT"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// PriorityOwner is the priority of the router that owns the addresses.
const PriorityOwner = 255

// Config is the static part of a virtual router.
type Config struct {
	Version        int           // 2 or 3
	AdvertInterval time.Duration // our advertisement interval
	Preempt        bool
	// PreemptDelay holds off preemption of a lower priority master until
	// this long after start-up and after first hearing that master.
	PreemptDelay time.Duration
	// Primary is our source address, compared with the sender's on a
	// priority tie (the higher address wins).
	Primary netip.Addr
	// TieBreak, when it names rivals, orders the backups of one priority
	// when the master leaves (priority 0); zero: Skew_Time alone.
	TieBreak TieBreak
}

// TieBreak orders the backups of equal priority when the master leaves with
// a priority 0 advertisement. RFC 5798 has each take over after Skew_Time,
// which is the same for equal priorities: they all take the addresses, and
// all but the one with the highest address give them up again when they
// hear it, so that the addresses move twice (and hosts follow the gratuitous
// ARPs of each). With the other routers of its priority known (vipstack
// node reads them from the cluster file), a router waits Step more for
// each of them with a higher address than its own, the leaving master not
// counted: the one the RFC's tie-break keeps takes over first, and the
// others hear it before their timers run out. A router below Top (a check
// failed) waits one Step more than the last of them, so that it does not
// take over before a router at Top, and the routers below Top keep their
// order by priority. Nothing on the wire changes; only when a backup acts.
type TieBreak struct {
	// Rivals are the primary addresses of the other routers configured
	// with our base priority.
	Rivals []netip.Addr
	// Top is the priority of a router whose checks all pass.
	Top  uint8
	Step time.Duration
}

// lag returns how long beyond Skew_Time a backup at priority prio with
// primary address self waits after master leaving sent priority 0, and how
// many rivals it waits behind (-1: it is below Top).
func (t TieBreak) lag(self, leaving netip.Addr, prio uint8) (time.Duration, int) {
	if t.Step <= 0 {
		return 0, 0
	}
	n, rank := 0, 0
	for _, r := range t.Rivals {
		if r == leaving || r == self {
			continue
		}
		n++
		if addrLess(self, r) {
			rank++
		}
	}
	if n == 0 {
		return 0, 0
	}
	if prio < t.Top {
		return time.Duration(n+1) * t.Step, -1
	}
	return time.Duration(rank) * t.Step, rank
}

// Advert is a received advertisement that already passed every packet and
// configuration check.
type Advert struct {
	From     netip.Addr
	Priority uint8
	Interval time.Duration // the sender's advertisement interval
}

// ActionKind says what an Action asks for.
type ActionKind int

const (
	// SendAdvert: send one advertisement with Action.Priority.
	SendAdvert ActionKind = iota
	// Transition: the state changed from Action.From to Action.To. Entering
	// Master means take the addresses and announce them; leaving Master
	// means release them.
	Transition
)

// Action is one thing the caller must do, in order.
type Action struct {
	Kind     ActionKind
	Priority uint8 // SendAdvert
	From, To State // Transition
	Reason   string
	// MasterGone, on a Transition to Master, says that no router would
	// give the addresses up on our advertisement: the master fell silent
	// for Master_Down_Interval and would not yield to us were it still
	// there (it outranks us, or none was heard), or it left with priority
	// 0. The advertisement may then go first, as RFC 5798 6.4.2 orders
	// it, and stops the other backups from taking over too.
	MasterGone bool
}

func (a Action) String() string {
	if a.Kind == SendAdvert {
		return fmt.Sprintf("advert(prio %d)", a.Priority)
	}
	return fmt.Sprintf("%s->%s (%s)", a.From, a.To, a.Reason)
}

// Machine is one virtual router. It is not safe for concurrent use.
type Machine struct {
	cfg      Config
	state    State
	priority uint8 // effective priority

	masterInterval time.Duration // Master_Adver_Interval (v3 learns it)
	masterDownAt   time.Time     // Backup: when the master is declared down
	advertAt       time.Time     // Master: next advertisement
	startedAt      time.Time
	lowerSince     time.Time     // Backup: first advert below us from the current master
	leftAt         time.Time     // Backup: when the master announced it is leaving (priority 0)
	leftLag        time.Duration // Backup: the tie-break's wait beyond Skew_Time after leftAt
	leftRank       int           // Backup: the rivals waited behind (-1: below Top)
	resigned       bool          // Backup: we left Master ourselves with priority 0 (see Resign)
	faultReason    string

	master         netip.Addr // the current master as far as we know
	masterPriority uint8
}

// New returns a machine in Initialize.
func New(cfg Config) *Machine {
	return &Machine{cfg: cfg, state: Initialize, masterInterval: cfg.AdvertInterval}
}

// State returns the current state.
func (m *Machine) State() State { return m.state }

// Priority returns the effective priority.
func (m *Machine) Priority() uint8 { return m.priority }

// Master returns the address and priority of the router believed to be
// master (ourselves when in Master); the zero address when unknown.
func (m *Machine) Master() (netip.Addr, uint8) { return m.master, m.masterPriority }

// MasterInterval returns Master_Adver_Interval.
func (m *Machine) MasterInterval() time.Duration { return m.masterInterval }

// FaultReason says why the machine is in Fault.
func (m *Machine) FaultReason() string { return m.faultReason }

// SkewTime returns Skew_Time for the current priority.
func (m *Machine) SkewTime() time.Duration {
	return skew(m.cfg.Version, m.priority, m.masterInterval)
}

// MasterDownInterval returns Master_Down_Interval for the current priority.
func (m *Machine) MasterDownInterval() time.Duration {
	return 3*m.masterInterval + m.SkewTime()
}

func skew(version int, prio uint8, masterInterval time.Duration) time.Duration {
	if version == 2 {
		// RFC 3768: (256 - Priority) / 256 seconds.
		return time.Duration(256-int(prio)) * time.Second / 256
	}
	// RFC 5798: ((256 - Priority) * Master_Adver_Interval) / 256.
	return time.Duration(256-int(prio)) * masterInterval / 256
}

// NextDeadline is when Tick must next be called; zero when no timer runs.
func (m *Machine) NextDeadline() time.Time {
	switch m.state {
	case Backup:
		return m.masterDownAt
	case Master:
		return m.advertAt
	}
	return time.Time{}
}

// nextAdvert is when a master's next advertisement is due after the one
// due at due and sent at now: an interval after due, so that a timer
// that fires a little late (Go's timers, a thread waiting for a CPU)
// does not stretch every interval after it (at advert_int 0.01 a
// millisecond late each time is a tenth fewer advertisements, and a
// backup's Master_Down_Interval then covers under three of them). A
// master a whole interval or more behind starts again from now instead
// of sending the missed ones in a burst.
func nextAdvert(due, now time.Time, interval time.Duration) time.Time {
	if next := due.Add(interval); next.After(now) {
		return next
	}
	return now.Add(interval)
}

// Start leaves Initialize with the given effective priority. A fault
// reason that is not empty starts the machine in Fault.
func (m *Machine) Start(now time.Time, priority uint8, faultReason string) []Action {
	if m.state != Initialize {
		return nil
	}
	m.priority = priority
	m.startedAt = now
	if faultReason != "" {
		m.faultReason = faultReason
		return m.to(Fault, "start: "+faultReason)
	}
	if priority == PriorityOwner {
		return m.becomeMaster(now, "start: priority 255 (address owner)")
	}
	// keepalived's `state MASTER` changes nothing here: keepalived 2.2.7
	// starts such an instance in BACKUP too and takes over only after
	// Master_Down_Interval, or never under a higher master (measured).
	// Taking over at once put the VIP on two nodes and pointed the hosts'
	// ARP entries at the lower one until the real master answered.
	return m.becomeBackup(now, "start")
}

// Adopt leaves Initialize as master, for an instance whose mastership a
// predecessor on this node handed over with its addresses still on the
// interface (see package handoff): no backup has taken over, so waiting a
// Master_Down_Interval first would make them. It advertises at once. A
// fault or priority 0 starts the machine as Start does.
func (m *Machine) Adopt(now time.Time, priority uint8, faultReason, reason string) []Action {
	if m.state != Initialize {
		return nil
	}
	if faultReason != "" || priority == 0 {
		return m.Start(now, priority, faultReason)
	}
	m.priority = priority
	m.startedAt = now
	return m.becomeMaster(now, "start: "+reason)
}

// Shutdown stops the router: a master sends a priority 0 advertisement so
// a backup takes over after Skew_Time.
func (m *Machine) Shutdown(now time.Time) []Action {
	var acts []Action
	if m.state == Master {
		acts = append(acts, Action{Kind: SendAdvert, Priority: 0})
	}
	if m.state != Initialize {
		acts = append(acts, m.to(Initialize, "shutdown")...)
	}
	return acts
}

// Tick runs the timers that are due at now.
func (m *Machine) Tick(now time.Time) []Action { return m.AppendTick(nil, now) }

// AppendTick is Tick appending the actions to acts: a caller that keeps
// acts between ticks (acts[:0]) gets a master's regular advertisement,
// every interval of every instance, without an allocation.
func (m *Machine) AppendTick(acts []Action, now time.Time) []Action {
	switch m.state {
	case Backup:
		if !now.Before(m.masterDownAt) {
			reason := fmt.Sprintf("no advertisement from master %s for %v", addrOr(m.master), m.MasterDownInterval())
			gone := !m.resigned && m.lowerSince.IsZero() && (!m.leftAt.IsZero() || !m.master.IsValid() ||
				m.masterPriority > m.priority || (m.masterPriority == m.priority && addrLess(m.cfg.Primary, m.master)))
			if m.resigned {
				reason = fmt.Sprintf("no master took over within skew time %v after we stepped down (priority 0 advertisement); taking over again", m.SkewTime())
			} else if !m.leftAt.IsZero() && m.leftLag > 0 {
				behind := fmt.Sprintf("%d equal-priority router(s) with a higher address", m.leftRank)
				if m.leftRank < 0 {
					behind = fmt.Sprintf("every router at priority %d (ours is %d)", m.cfg.TieBreak.Top, m.priority)
				}
				reason = fmt.Sprintf("master %s left (priority 0 advertisement); took over after skew time %v and %v more, the tie-break's wait behind %s, none of which took over",
					addrOr(m.master), m.SkewTime(), m.leftLag, behind)
			} else if !m.leftAt.IsZero() {
				reason = fmt.Sprintf("master %s left (priority 0 advertisement); took over after skew time %v", addrOr(m.master), m.SkewTime())
			} else if !m.lowerSince.IsZero() {
				reason = fmt.Sprintf("preempting master %s: its priority %d is below ours %d", addrOr(m.master), m.masterPriority, m.priority)
			}
			became := m.becomeMaster(now, reason)
			for i := range became {
				became[i].MasterGone = gone && became[i].Kind == Transition
			}
			return append(acts, became...)
		}
	case Master:
		if !now.Before(m.advertAt) {
			m.advertAt = nextAdvert(m.advertAt, now, m.cfg.AdvertInterval)
			return append(acts, Action{Kind: SendAdvert, Priority: m.priority})
		}
	}
	return acts
}

// Receive handles a validated advertisement.
func (m *Machine) Receive(now time.Time, a Advert) []Action {
	switch m.state {
	case Backup:
		return m.receiveBackup(now, a)
	case Master:
		return m.receiveMaster(now, a)
	}
	return nil
}

func (m *Machine) receiveBackup(now time.Time, a Advert) []Action {
	if a.Priority == 0 {
		// The master is leaving: take over after Skew_Time, and the
		// tie-break's wait behind equal rivals.
		lag, rank := m.cfg.TieBreak.lag(m.cfg.Primary, a.From, m.priority)
		if d := now.Add(m.SkewTime() + lag); d.Before(m.masterDownAt) {
			m.masterDownAt = d
		}
		m.master, m.masterPriority = a.From, 0
		m.leftAt, m.leftLag, m.leftRank = now, lag, rank
		m.resigned = false
		return nil
	}
	if m.cfg.Preempt && a.Priority < m.priority && m.master.IsValid() && a.From != m.master && m.masterPriority != 0 {
		// A router below us that is not the master we follow: a master
		// stepping down (see receiveMaster), or one that cannot hear the
		// master. RFC 5798 discards it; taking it for the master would
		// preempt a master that is still there.
		return nil
	}
	m.leftAt = time.Time{}
	m.resigned = false
	if m.cfg.Version == 3 && a.Interval > 0 {
		m.masterInterval = a.Interval
	}
	m.master, m.masterPriority = a.From, a.Priority
	if !m.cfg.Preempt || a.Priority >= m.priority {
		m.lowerSince = time.Time{}
		m.masterDownAt = now.Add(m.MasterDownInterval())
		return nil
	}
	// A preempting backup hears a master below it.
	if m.lowerSince.IsZero() {
		m.lowerSince = now
	}
	at := now.Add(m.SkewTime())
	if d := m.cfg.PreemptDelay; d > 0 {
		if hold := maxTime(m.startedAt.Add(d), m.lowerSince.Add(d)); hold.After(now) {
			// Not yet: treat the master as valid until the delay is over.
			m.masterDownAt = minTime(now.Add(m.MasterDownInterval()), hold.Add(m.SkewTime()))
			return nil
		}
	}
	if at.Before(m.masterDownAt) {
		m.masterDownAt = at
	}
	return nil
}

func (m *Machine) receiveMaster(now time.Time, a Advert) []Action {
	if a.Priority == 0 {
		// Another master is leaving; make sure everyone hears us now.
		m.advertAt = now.Add(m.cfg.AdvertInterval)
		return []Action{{Kind: SendAdvert, Priority: m.priority}}
	}
	if a.Priority > m.priority || (a.Priority == m.priority && addrLess(m.cfg.Primary, a.From)) {
		if m.cfg.Version == 3 && a.Interval > 0 {
			m.masterInterval = a.Interval
		}
		reason := fmt.Sprintf("advertisement from %s with higher priority %d, ours %d", a.From, a.Priority, m.priority)
		if a.Priority == m.priority {
			reason = fmt.Sprintf("advertisement from %s with equal priority %d and a higher address than ours %s", a.From, a.Priority, m.cfg.Primary)
		}
		acts := m.becomeBackup(now, reason)
		m.master, m.masterPriority = a.From, a.Priority
		// One advertisement at our priority as we step down (not in RFC
		// 5798, which steps down silently; keepalived does it with
		// higher_prio_send_advert, off by default): the new master may not have
		// heard us (a partition that healed when its advertisement
		// reached us first), and hosts that took our gratuitous ARPs
		// keep sending to us until it announces the VIPs again; hearing
		// a lower router as master makes it do that at once. Backups
		// ignore it (see receiveBackup).
		return append(acts, Action{Kind: SendAdvert, Priority: m.priority})
	}
	// A lower priority master: assert ourselves at once.
	m.advertAt = now.Add(m.cfg.AdvertInterval)
	return []Action{{Kind: SendAdvert, Priority: m.priority}}
}

// SetPriority changes the effective priority (tracked scripts and
// interfaces). A master advertises the new value at once rather than on
// its schedule, so a better backup preempts it after Skew_Time instead of
// a whole Master_Down_Interval.
//
// A master whose priority drops sends a priority 0 advertisement first
// and the lowered one straight after, and stays master. The lowered
// advertisement alone moves only vipstack backups: keepalived 2.2.7, as
// RFC 5798 6.4.2 says, discards an advertisement below its own priority
// and leaves its master-down timer running from the master's last higher
// one. The priority 0 cuts every backup's timer to its Skew_Time; the
// lowered advertisement then resets the timer of every backup that does
// not outrank us (or does not preempt, or holds off in preempt_delay),
// while one that does discards it and takes over after its Skew_Time,
// its advertisement sending us to Backup (receiveMaster). Should the
// second advertisement be lost, a lower backup takes over after its
// Skew_Time and steps down at once on our answer (receiveMaster).
func (m *Machine) SetPriority(now time.Time, p uint8) []Action {
	if p == m.priority {
		return nil
	}
	lower := p < m.priority
	m.priority = p
	if m.state == Master {
		m.masterPriority = p // we are the master: Master() reports our own priority
		m.advertAt = now.Add(m.cfg.AdvertInterval)
		if lower {
			return []Action{{Kind: SendAdvert, Priority: 0}, {Kind: SendAdvert, Priority: p}}
		}
		return []Action{{Kind: SendAdvert, Priority: p}}
	}
	if m.state == Backup && !m.lowerSince.IsZero() && p <= m.masterPriority {
		// We were about to preempt a master below us (see receiveBackup)
		// and no longer rank above it: time it as any master instead.
		// Preempting anyway moved the VIPs to us and, on the master's
		// answer, straight back.
		m.lowerSince = time.Time{}
		m.masterDownAt = now.Add(m.MasterDownInterval())
	}
	return nil
}

// SetPrimary changes our source address (the interface's primary address
// changed), compared with the sender's on a priority tie.
func (m *Machine) SetPrimary(a netip.Addr) {
	m.cfg.Primary = a
	if m.state == Master {
		m.master = a
	}
}

// SetTieBreak changes the tie-break (a reload); a wait already running
// keeps its deadline.
func (m *Machine) SetTieBreak(t TieBreak) { m.cfg.TieBreak = t }

// SetPreempt changes nopreempt and preempt_delay (a reload) and keeps the
// state: they are consulted on the next advertisement from a lower master.
// A backup that was about to preempt a lower master and may no longer
// waits for it as for any master instead.
func (m *Machine) SetPreempt(now time.Time, preempt bool, delay time.Duration) {
	m.cfg.Preempt, m.cfg.PreemptDelay = preempt, delay
	if !preempt && m.state == Backup && !m.lowerSince.IsZero() {
		m.lowerSince = time.Time{}
		m.masterDownAt = now.Add(m.MasterDownInterval())
	}
}

// SetAdvertInterval changes our advertisement interval (a reload) and
// keeps the state: a master advertises at the new interval from now on (the
// next advertisement no later than one new interval away), and a version 2
// backup, which expects the master's interval to be its own, times it with
// the new one from the next advertisement it hears.
func (m *Machine) SetAdvertInterval(now time.Time, d time.Duration) {
	m.cfg.AdvertInterval = d
	switch {
	case m.state == Master:
		m.masterInterval = d
		m.advertAt = minTime(m.advertAt, now.Add(d))
	case m.cfg.Version == 2:
		m.masterInterval = d
	}
}

// SetVersion changes the VRRP version (a reload) and keeps the state, as
// keepalived 2.2.7 does (measured: its master went on advertising in the
// new version, no priority 0, its VIP never missing). A backup times the
// master with its own interval again until it hears a version 3 master's
// interval; a master advertises at once, so the others hear the change
// without waiting for the next advertisement.
func (m *Machine) SetVersion(now time.Time, v int) []Action {
	if v == m.cfg.Version {
		return nil
	}
	m.cfg.Version = v
	if m.state == Backup {
		m.masterInterval = m.cfg.AdvertInterval
	}
	return m.AdvertiseNow(now)
}

// AdvertiseNow has a master send an advertisement at once (its content
// changed on a reload: authentication, version) and the next one a whole
// interval later. In any other state it does nothing.
func (m *Machine) AdvertiseNow(now time.Time) []Action {
	if m.state != Master {
		return nil
	}
	m.advertAt = now.Add(m.cfg.AdvertInterval)
	return []Action{{Kind: SendAdvert, Priority: m.priority}}
}

// SetFault enters Fault (reason != "") or leaves it (reason == "").
func (m *Machine) SetFault(now time.Time, reason string) []Action {
	if reason != "" {
		m.faultReason = reason
		if m.state == Fault || m.state == Initialize {
			return nil
		}
		var acts []Action
		if m.state == Master {
			acts = append(acts, Action{Kind: SendAdvert, Priority: 0})
		}
		return append(acts, m.to(Fault, reason)...)
	}
	if m.state != Fault {
		return nil
	}
	m.faultReason = ""
	if m.priority == PriorityOwner {
		return m.becomeMaster(now, "fault cleared; priority 255 (address owner)")
	}
	return m.becomeBackup(now, "fault cleared")
}

// Resign has a master step down as if it were leaving: it sends a priority 0
// advertisement, so that the best backup takes over after its Skew_Time, and
// becomes a backup whose own master-down timer is Skew_Time too, so that it
// takes over again when no router does. keepalived 2.2.7 does this when a
// VIP of a master is removed from the interface behind its back (measured:
// "Netlink reflector reports IP ... removed", "Entering BACKUP STATE",
// "sent 0 priority", VIPs removed; alone, MASTER again 0.63 s later at
// priority 100 and advert 1 s, its Skew_Time). In any other state it does
// nothing.
func (m *Machine) Resign(now time.Time, reason string) []Action {
	if m.state != Master {
		return nil
	}
	acts := []Action{{Kind: SendAdvert, Priority: 0}}
	acts = append(acts, m.becomeBackup(now, reason)...)
	m.masterDownAt = now.Add(m.SkewTime())
	m.master, m.masterPriority = m.cfg.Primary, 0
	m.leftAt, m.resigned = now, true
	return acts
}

func (m *Machine) becomeMaster(now time.Time, reason string) []Action {
	m.leftAt = time.Time{}
	m.resigned = false
	m.advertAt = now.Add(m.cfg.AdvertInterval)
	m.masterInterval = m.cfg.AdvertInterval
	m.lowerSince = time.Time{}
	acts := []Action{{Kind: SendAdvert, Priority: m.priority}}
	acts = append(acts, m.to(Master, reason)...)
	m.master, m.masterPriority = m.cfg.Primary, m.priority
	return acts
}

func (m *Machine) becomeBackup(now time.Time, reason string) []Action {
	m.lowerSince = time.Time{}
	m.resigned = false
	m.masterDownAt = now.Add(m.MasterDownInterval())
	if m.state == Master {
		m.master, m.masterPriority = netip.Addr{}, 0
	}
	return m.to(Backup, reason)
}

func (m *Machine) to(s State, reason string) []Action {
	from := m.state
	m.state = s
	if s != Master && s != Backup {
		m.master, m.masterPriority = netip.Addr{}, 0
	}
	return []Action{{Kind: Transition, From: from, To: s, Reason: reason}}
}

func addrLess(a, b netip.Addr) bool { return a.Less(b) }

func addrOr(a netip.Addr) string {
	if !a.IsValid() {
		return "(none heard)"
	}
	return a.String()
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Follow moves a backup to master or a master to backup because another
// member of its sync group did (keepalived's vrrp_sync_group). Any other
// combination is ignored.
func (m *Machine) Follow(now time.Time, to State, reason string) []Action {
	switch {
	case to == Master && m.state == Backup:
		return m.becomeMaster(now, reason)
	case to == Backup && m.state == Master:
		// Stepping down with the group: advertise once, as receiveMaster
		// does, so that each member's winner announces its VIPs.
		return append(m.becomeBackup(now, reason), Action{Kind: SendAdvert, Priority: m.priority})
	}
	return nil
}
