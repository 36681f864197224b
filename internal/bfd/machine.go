package bfd

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"time"
)

// SlowTxInterval is the least DesiredMinTx a session advertises while it is
// not Up (RFC 5880 section 6.8.3).
const SlowTxInterval = time.Second

// Config is the static part of a session.
type Config struct {
	// LocalDiscr is bfd.LocalDiscr, nonzero and unique on this system.
	LocalDiscr    uint32
	DesiredMinTx  time.Duration // bfd.DesiredMinTxInterval once Up
	RequiredMinRx time.Duration // bfd.RequiredMinRxInterval
	DetectMult    uint8
	// Auth turns simple password authentication on: every packet sent
	// carries it and every packet received must carry the same key ID and
	// password.
	Auth *Auth
	// Jitter returns a number in [0, 1) that places each transmission
	// within the range RFC 5880 section 6.8.7 allows; nil is math/rand/v2.
	Jitter func() float64
}

// Validate says what is wrong with c, naming the field and what would be
// accepted.
func (c Config) Validate() error {
	if c.LocalDiscr == 0 {
		return fmt.Errorf("bfd: local discriminator 0: want nonzero")
	}
	if c.DetectMult == 0 {
		return fmt.Errorf("bfd: detect multiplier 0: want 1 to 255")
	}
	if _, err := usec("desired min TX interval", c.DesiredMinTx); err != nil || c.DesiredMinTx == 0 {
		return fmt.Errorf("bfd: desired min TX interval %v: want whole microseconds from 1µs to %v", c.DesiredMinTx, maxInterval)
	}
	if _, err := usec("required min RX interval", c.RequiredMinRx); err != nil {
		return err
	}
	if c.Auth != nil {
		if l := len(c.Auth.Password); l < 1 || l > MaxPasswordLength {
			return fmt.Errorf("bfd: simple password of %d bytes: want 1 to %d", l, MaxPasswordLength)
		}
	}
	return nil
}

// ActionKind says what an Action asks for.
type ActionKind int

const (
	// Send: transmit Action.Packet.
	Send ActionKind = iota
	// Transition: the session state changed from From to To; Diag is the
	// local diagnostic that now goes out.
	Transition
)

// Action is one thing the caller must do, in order.
type Action struct {
	Kind     ActionKind
	Packet   *Packet // Send
	From, To State   // Transition
	Diag     Diag    // Transition
	Reason   string  // Transition
}

func (a Action) String() string {
	if a.Kind == Send {
		p := a.Packet
		s := "send(" + p.State.String()
		if p.Poll {
			s += " P"
		}
		if p.Final {
			s += " F"
		}
		return s + ")"
	}
	return fmt.Sprintf("%s->%s (%s: %s)", a.From, a.To, a.Diag, a.Reason)
}

// Machine is one BFD session in asynchronous mode (RFC 5880 section 6.8).
// It is pure: time comes in as arguments, packets and transitions go out
// as Actions. It is not safe for concurrent use.
type Machine struct {
	cfg Config

	state       State
	remoteState State
	remoteDiscr uint32
	localDiag   Diag

	// What goes out in packets (bfd.DesiredMinTxInterval,
	// bfd.RequiredMinRxInterval) and what is in force for timing: during
	// a poll sequence an increased TX interval and a reduced RX interval
	// wait for the Final (section 6.8.3).
	advTx, advRx time.Duration
	useTx, useRx time.Duration
	polling      bool
	remoteMinRx  time.Duration // bfd.RemoteMinRxInterval
	remoteTx     time.Duration // the last Desired Min TX received
	remoteMult   uint8

	txAt     time.Time     // next periodic transmission; zero when none
	lastTx   time.Time     // the last periodic transmission
	txIv     time.Duration // the interval txAt was scheduled with
	detectAt time.Time     // detection time expiry; zero when no packet is expected
	lastRx   time.Time
	reason   string
}

// New returns a session in Down that has not sent anything yet; Start
// begins transmission.
func New(cfg Config) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Machine{cfg: cfg, state: Down, remoteMinRx: time.Microsecond, advRx: cfg.RequiredMinRx, useRx: cfg.RequiredMinRx}
	m.advTx = max(cfg.DesiredMinTx, SlowTxInterval)
	m.useTx = m.advTx
	return m, nil
}

// State returns bfd.SessionState.
func (m *Machine) State() State { return m.state }

// RemoteState returns bfd.RemoteSessionState.
func (m *Machine) RemoteState() State { return m.remoteState }

// RemoteDiscr returns bfd.RemoteDiscr, zero when no peer is known.
func (m *Machine) RemoteDiscr() uint32 { return m.remoteDiscr }

// LocalDiag returns bfd.LocalDiag.
func (m *Machine) LocalDiag() Diag { return m.localDiag }

// Reason says why the session is in its state.
func (m *Machine) Reason() string { return m.reason }

// Polling reports whether a poll sequence is in progress.
func (m *Machine) Polling() bool { return m.polling }

// TxInterval is the transmission interval before jitter (section 6.8.7):
// the larger of bfd.DesiredMinTxInterval in force and
// bfd.RemoteMinRxInterval; zero when the peer asked for no packets.
func (m *Machine) TxInterval() time.Duration {
	if m.remoteMinRx == 0 {
		return 0
	}
	return max(m.useTx, m.remoteMinRx)
}

// DetectionTime is the asynchronous detection time (section 6.8.4): the
// peer's Detect Mult times the larger of bfd.RequiredMinRxInterval in force
// and the peer's last Desired Min TX; zero before the first packet.
func (m *Machine) DetectionTime() time.Duration {
	if m.remoteMult == 0 {
		return 0
	}
	return time.Duration(m.remoteMult) * max(m.useRx, m.remoteTx)
}

// NextDeadline is when Tick must next be called; zero when no timer runs.
func (m *Machine) NextDeadline() time.Time {
	switch {
	case m.txAt.IsZero():
		return m.detectAt
	case m.detectAt.IsZero() || m.txAt.Before(m.detectAt):
		return m.txAt
	}
	return m.detectAt
}

// Start begins periodic transmission with a packet at once.
func (m *Machine) Start(now time.Time) []Action {
	if !m.txAt.IsZero() {
		return nil
	}
	m.reason = "start"
	return m.transmit(now)
}

// Tick runs the timers due at now: detection time, then transmission.
func (m *Machine) Tick(now time.Time) []Action {
	var acts []Action
	if !m.detectAt.IsZero() && !now.Before(m.detectAt) {
		detect := m.DetectionTime()
		m.detectAt = time.Time{}
		m.remoteDiscr, m.remoteState, m.remoteMult, m.remoteTx = 0, Down, 0, 0
		m.remoteMinRx = time.Microsecond
		if m.state == Init || m.state == Up {
			acts = append(acts, m.to(now, Down, DiagControlDetectExpired,
				fmt.Sprintf("no valid packet from the peer for the detection time %v", detect))...)
		}
	}
	if !m.txAt.IsZero() && !now.Before(m.txAt) {
		acts = append(acts, m.transmit(now)...)
	}
	return acts
}

// transmit sends the periodic packet and schedules the next one.
func (m *Machine) transmit(now time.Time) []Action {
	iv := m.TxInterval()
	if iv == 0 {
		// The peer set Required Min RX to zero: it wants no packets
		// (section 6.8.7). Start again when it changes its mind.
		m.txAt = time.Time{}
		return nil
	}
	m.lastTx, m.txIv = now, iv
	m.txAt = now.Add(m.jitter(iv))
	return []Action{{Kind: Send, Packet: m.packet(m.polling, false)}}
}

// reschedule brings the next transmission forward when the interval has
// shrunk since it was scheduled (the peer lowered its Required Min RX, or
// a poll sequence ended): the peer computes its detection time from the
// new values, so waiting out the old interval could take it Down.
func (m *Machine) reschedule(now time.Time) {
	iv := m.TxInterval()
	if m.txAt.IsZero() || iv == 0 || iv >= m.txIv {
		return
	}
	m.txIv = iv
	if at := m.lastTx.Add(m.jitter(iv)); at.Before(m.txAt) {
		m.txAt = later(at, now)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// jitter reduces iv by 0 to 25 percent, or by 10 to 25 percent when the
// detect multiplier is 1 (section 6.8.7).
func (m *Machine) jitter(iv time.Duration) time.Duration {
	f := rand.Float64
	if m.cfg.Jitter != nil {
		f = m.cfg.Jitter
	}
	span := 0.25
	if m.cfg.DetectMult == 1 {
		span = 0.15
	}
	return time.Duration(float64(iv) * (0.75 + span*f()))
}

func (m *Machine) packet(poll, final bool) *Packet {
	p := &Packet{
		Diag: m.localDiag, State: m.state, Poll: poll, Final: final,
		DetectMult: m.cfg.DetectMult, MyDiscriminator: m.cfg.LocalDiscr, YourDiscriminator: m.remoteDiscr,
		DesiredMinTx: m.advTx, RequiredMinRx: m.advRx,
	}
	if m.cfg.Auth != nil {
		p.Auth = &Auth{KeyID: m.cfg.Auth.KeyID, Password: bytes.Clone(m.cfg.Auth.Password)}
	}
	return p
}

func reject(r Reason, format string, args ...any) error {
	return &RejectError{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// Receive handles a decoded control packet from the session's peer (the
// runtime has already checked addresses, ports and TTL). A packet the
// session must discard leaves it unchanged and returns a *RejectError.
func (m *Machine) Receive(now time.Time, p *Packet) ([]Action, error) {
	if p.YourDiscriminator != 0 && p.YourDiscriminator != m.cfg.LocalDiscr {
		return nil, reject(ReasonDiscriminator, "your discriminator %#x: want ours, %#x", p.YourDiscriminator, m.cfg.LocalDiscr)
	}
	if err := m.checkAuth(p); err != nil {
		return nil, err
	}
	if p.Demand {
		return nil, reject(ReasonDemand, "demand (D) bit set by the peer: demand mode is not implemented, want asynchronous mode (D clear)")
	}
	m.remoteDiscr = p.MyDiscriminator
	m.remoteState = p.State
	restart := m.remoteMinRx == 0 && p.RequiredMinRx != 0
	m.remoteMinRx = p.RequiredMinRx
	m.remoteTx = p.DesiredMinTx
	m.remoteMult = p.DetectMult
	if p.Final && m.polling {
		m.polling = false
		m.useTx, m.useRx = m.advTx, m.advRx
	}
	var acts []Action
	if m.state != AdminDown {
		m.lastRx = now
		m.detectAt = now.Add(m.DetectionTime())
		switch {
		case p.State == AdminDown:
			if m.state != Down {
				acts = m.to(now, Down, DiagNeighborDown, "the peer signalled AdminDown")
			}
		case m.state == Down && p.State == Down:
			acts = m.to(now, Init, m.localDiag, "the peer is Down")
		case m.state == Down && p.State == Init:
			acts = m.to(now, Up, DiagNone, "the peer is in Init")
		case m.state == Init && (p.State == Init || p.State == Up):
			acts = m.to(now, Up, DiagNone, "the peer is in "+p.State.String())
		case m.state == Up && p.State == Down:
			acts = m.to(now, Down, DiagNeighborDown, "the peer signalled Down")
		}
	}
	if p.Poll {
		// Answer at once, whatever the transmission timer says.
		acts = append(acts, Action{Kind: Send, Packet: m.packet(false, true)})
	}
	if restart && m.txAt.IsZero() {
		acts = append(acts, m.transmit(now)...)
	}
	m.reschedule(now)
	return acts, nil
}

func (m *Machine) checkAuth(p *Packet) error {
	switch a := m.cfg.Auth; {
	case a == nil && p.Auth != nil:
		return reject(ReasonAuth, "authentication section (A bit) present: want none, the session is not authenticated")
	case a != nil && p.Auth == nil:
		return reject(ReasonAuth, "no authentication section (A bit clear): want simple password, key ID %d", a.KeyID)
	case a != nil && p.Auth.KeyID != a.KeyID:
		return reject(ReasonAuth, "auth key ID %d: want %d", p.Auth.KeyID, a.KeyID)
	case a != nil && !bytes.Equal(p.Auth.Password, a.Password):
		return reject(ReasonAuth, "wrong simple password for key ID %d", a.KeyID)
	}
	return nil
}

// to changes state and settles the timers that depend on it.
func (m *Machine) to(now time.Time, s State, d Diag, reason string) []Action {
	from := m.state
	m.state, m.localDiag, m.reason = s, d, reason
	acts := []Action{{Kind: Transition, From: from, To: s, Diag: d, Reason: reason}}
	tx := m.cfg.DesiredMinTx
	if s != Up {
		tx = max(tx, SlowTxInterval)
	}
	if s == Up {
		acts = append(acts, m.setIntervals(now, tx, m.advRx)...)
	} else {
		// Out of Up there is nothing to protect: apply at once and
		// abandon any poll sequence.
		m.polling = false
		m.advTx, m.useTx, m.useRx = tx, tx, m.advRx
	}
	return acts
}

// SetIntervals changes DesiredMinTx and RequiredMinRx. In Up a poll
// sequence tells the peer; out of Up the new values apply at once.
func (m *Machine) SetIntervals(now time.Time, desiredMinTx, requiredMinRx time.Duration) ([]Action, error) {
	c := m.cfg
	c.DesiredMinTx, c.RequiredMinRx = desiredMinTx, requiredMinRx
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m.cfg = c
	if m.state != Up {
		m.advTx = max(desiredMinTx, SlowTxInterval)
		m.advRx = requiredMinRx
		m.useTx, m.useRx = m.advTx, m.advRx
		return nil, nil
	}
	return m.setIntervals(now, desiredMinTx, requiredMinRx), nil
}

// setIntervals starts a poll sequence for new values while Up (section
// 6.8.3): a faster TX and a longer RX apply at once, a slower TX and a
// shorter RX once the peer's Final arrives.
func (m *Machine) setIntervals(now time.Time, tx, rx time.Duration) []Action {
	if tx == m.advTx && rx == m.advRx {
		return nil
	}
	m.advTx, m.advRx = tx, rx
	m.useTx = min(m.useTx, tx)
	m.useRx = max(m.useRx, rx)
	if !m.detectAt.IsZero() {
		m.detectAt = m.lastRx.Add(m.DetectionTime())
	}
	if m.polling {
		// The running sequence now carries the new values too.
		return nil
	}
	m.polling = true
	if m.txAt.IsZero() {
		return nil
	}
	return m.transmit(now)
}

// AdminDown takes the session administratively down (section 6.8.16): it
// keeps sending AdminDown packets, so the peer goes Down with diagnostic 3
// at once rather than after a detection time, and ignores the peer.
func (m *Machine) AdminDown(now time.Time) []Action {
	if m.state == AdminDown {
		return nil
	}
	acts := m.to(now, AdminDown, DiagAdminDown, "administratively down")
	m.detectAt = time.Time{}
	if !m.txAt.IsZero() {
		acts = append(acts, m.transmit(now)...)
	}
	return acts
}

// Enable leaves AdminDown for Down.
func (m *Machine) Enable(now time.Time) []Action {
	if m.state != AdminDown {
		return nil
	}
	return m.to(now, Down, DiagAdminDown, "enabled")
}
