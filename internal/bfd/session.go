package bfd

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
)

// UDP ports of RFC 5881 (single hop) and RFC 5883 (multihop), and the
// source port range both require.
const (
	PortSingleHop   = 3784
	PortMultihop    = 4784
	SourcePortFirst = 49152
	SourcePortLast  = 65535
)

// SessionConfig describes one session to one peer.
type SessionConfig struct {
	Local, Peer netip.Addr // same family; a link-local Peer needs Interface
	// Interface, when set, binds the sockets to that device (single hop).
	Interface string
	Multihop  bool // RFC 5883 on port 4784 instead of RFC 5881 on 3784
	// MinTTL is the least TTL/hop limit a multihop packet may arrive
	// with; 0 accepts any. Single hop always requires 255 (RFC 5881
	// section 5).
	MinTTL        int
	DesiredMinTx  time.Duration
	RequiredMinRx time.Duration
	DetectMult    uint8
	// Password turns simple password authentication on (1 to 16 bytes)
	// with key ID KeyID.
	Password string
	KeyID    uint8
	// LocalDiscr is our discriminator; 0 picks a random one.
	LocalDiscr uint32
	Clock      clock.Clock // nil is the wall clock
	// Jitter is passed to Config.Jitter; nil is random.
	Jitter func() float64
}

// Port is the destination port the session uses.
func (c SessionConfig) Port() int {
	if c.Multihop {
		return PortMultihop
	}
	return PortSingleHop
}

func (c SessionConfig) machineConfig() (Config, error) {
	if !c.Local.IsValid() || !c.Peer.IsValid() {
		return Config{}, fmt.Errorf("bfd: local %v, peer %v: want both addresses", c.Local, c.Peer)
	}
	if c.Local.Unmap().Is4() != c.Peer.Unmap().Is4() {
		return Config{}, fmt.Errorf("bfd: local %v and peer %v: want the same address family", c.Local, c.Peer)
	}
	if c.MinTTL < 0 || c.MinTTL > 255 || (!c.Multihop && c.MinTTL != 0) {
		return Config{}, fmt.Errorf("bfd: min TTL %d: want 0 to 255, and only for multihop (single hop requires 255)", c.MinTTL)
	}
	discr := c.LocalDiscr
	for discr == 0 {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return Config{}, err
		}
		discr = binary.BigEndian.Uint32(b[:])
	}
	mc := Config{LocalDiscr: discr, DesiredMinTx: c.DesiredMinTx, RequiredMinRx: c.RequiredMinRx,
		DetectMult: c.DetectMult, Jitter: c.Jitter}
	if c.Password != "" {
		mc.Auth = &Auth{KeyID: c.KeyID, Password: []byte(c.Password)}
	}
	return mc, mc.Validate()
}

// Transport carries a session's control packets. The Linux one (Dial)
// uses two UDP sockets; tests may join two sessions in memory.
type Transport interface {
	// Read returns the next packet, its source and the TTL or hop limit
	// it arrived with.
	Read(b []byte) (n int, from netip.AddrPort, ttl int, err error)
	// Write sends b to the peer.
	Write(b []byte) error
	Close() error
}

// Event is a change of the session's state.
type Event struct {
	At       time.Time
	From, To State
	Diag     Diag
	Reason   string
}

func (e Event) String() string {
	return fmt.Sprintf("%s->%s (%s: %s)", e.From, e.To, e.Diag, e.Reason)
}

// Session runs one Machine on a Transport. The consumer (BGP) watches
// Events: a change to Down or AdminDown means the forwarding path to the
// peer is gone.
type Session struct {
	cfg    SessionConfig
	discr  uint32
	clk    clock.Clock
	t      Transport
	events chan Event
	cmds   chan command
	done   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once

	mu       sync.Mutex
	m        *Machine // guarded by mu for the accessors; the loop owns writes
	rejected map[Reason]int
	lastErr  error
}

// NewSession starts a session on t. Close stops it.
func NewSession(cfg SessionConfig, t Transport) (*Session, error) {
	mc, err := cfg.machineConfig()
	if err != nil {
		return nil, err
	}
	m, err := New(mc)
	if err != nil {
		return nil, err
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	s := &Session{cfg: cfg, discr: mc.LocalDiscr, clk: clk, t: t, m: m,
		events: make(chan Event, 16), cmds: make(chan command),
		done: make(chan struct{}), rejected: map[Reason]int{}}
	rx := make(chan rxPacket)
	s.wg.Add(2)
	go s.read(rx)
	go s.loop(rx)
	return s, nil
}

// Events delivers every state change. It holds the last 16; when the
// consumer falls behind, the oldest are dropped (State is always current).
func (s *Session) Events() <-chan Event { return s.events }

// State returns the session state.
func (s *Session) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m.State()
}

// LocalDiscr returns our discriminator.
func (s *Session) LocalDiscr() uint32 { return s.discr }

// Rejected returns how many received packets were discarded, by reason,
// and the last such error.
func (s *Session) Rejected() (map[Reason]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[Reason]int, len(s.rejected))
	for k, v := range s.rejected {
		out[k] = v
	}
	return out, s.lastErr
}

// AdminDown takes the session administratively down: the peer sees
// AdminDown and goes Down at once. The session keeps sending until Close.
func (s *Session) AdminDown(ctx context.Context) error {
	return s.do(ctx, func(now time.Time) ([]Action, error) { return s.m.AdminDown(now), nil })
}

// SetIntervals changes the intervals; in Up a poll sequence tells the peer.
func (s *Session) SetIntervals(ctx context.Context, desiredMinTx, requiredMinRx time.Duration) error {
	return s.do(ctx, func(now time.Time) ([]Action, error) {
		return s.m.SetIntervals(now, desiredMinTx, requiredMinRx)
	})
}

type command struct {
	f    func(now time.Time) ([]Action, error)
	done chan error
}

// do runs f on the session's goroutine and returns its error.
func (s *Session) do(ctx context.Context, f func(time.Time) ([]Action, error)) error {
	c := command{f: f, done: make(chan error, 1)}
	select {
	case s.cmds <- c:
	case <-s.done:
		return errors.New("bfd: session closed")
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-c.done
}

// Close stops the session at once, without telling the peer: the peer
// goes Down when its detection time passes. Use AdminDown first to tell it.
func (s *Session) Close() error {
	var err error
	s.once.Do(func() {
		close(s.done)
		err = s.t.Close()
		s.wg.Wait()
	})
	return err
}

type rxPacket struct {
	b    []byte
	from netip.AddrPort
	ttl  int
}

func (s *Session) read(rx chan<- rxPacket) {
	defer s.wg.Done()
	buf := make([]byte, 1500)
	for {
		n, from, ttl, err := s.t.Read(buf)
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
				continue
			}
			s.note(fmt.Errorf("bfd: read: %w", err))
			return
		}
		select {
		case rx <- rxPacket{b: append([]byte(nil), buf[:n]...), from: from, ttl: ttl}:
		case <-s.done:
			return
		}
	}
}

func (s *Session) loop(rx <-chan rxPacket) {
	defer s.wg.Done()
	timer := s.clk.NewTimer(time.Hour)
	defer timer.Stop()
	s.lock(func() { s.run(s.m.Start(s.clk.Now())) })
	for {
		if d := s.m.NextDeadline(); !d.IsZero() {
			timer.Reset(max(d.Sub(s.clk.Now()), 0))
		} else {
			timer.Stop()
		}
		select {
		case <-s.done:
			return
		case <-timer.C():
			s.lock(func() { s.run(s.m.Tick(s.clk.Now())) })
		case c := <-s.cmds:
			s.lock(func() {
				acts, err := c.f(s.clk.Now())
				s.run(acts)
				c.done <- err
			})
		case p := <-rx:
			if err := s.receive(p); err != nil {
				s.note(err)
			}
		}
	}
}

func (s *Session) lock(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// receive applies the transport checks of RFC 5881 section 5 / RFC 5883
// section 2, decodes and hands the packet to the machine.
func (s *Session) receive(p rxPacket) error {
	if p.from.Addr().Unmap().WithZone("") != s.cfg.Peer.Unmap().WithZone("") {
		return reject(ReasonPeer, "packet from %v: want the peer %v", p.from.Addr(), s.cfg.Peer)
	}
	// RFC 5881 section 4's source port range binds the sender; BIRD
	// 2.0.12 sends from the kernel's ephemeral range (32768-60999 by
	// default), so any source port is accepted.
	switch {
	case !s.cfg.Multihop && p.ttl != 255:
		return reject(ReasonTTL, "single hop packet from %v with TTL/hop limit %d: want 255 (RFC 5881 section 5)", p.from.Addr(), p.ttl)
	case s.cfg.Multihop && p.ttl < s.cfg.MinTTL:
		return reject(ReasonTTL, "multihop packet from %v with TTL/hop limit %d: want at least %d", p.from.Addr(), p.ttl, s.cfg.MinTTL)
	}
	pkt, err := Parse(p.b)
	if err != nil {
		return fmt.Errorf("from %v: %w", p.from.Addr(), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	acts, err := s.m.Receive(s.clk.Now(), pkt)
	if err != nil {
		return fmt.Errorf("from %v: %w", p.from.Addr(), err)
	}
	s.run(acts)
	return nil
}

func (s *Session) note(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejected[ReasonOf(err)]++
	s.lastErr = err
}

// run carries out actions; the caller holds mu.
func (s *Session) run(acts []Action) {
	for _, a := range acts {
		switch a.Kind {
		case Send:
			b, err := a.Packet.MarshalBinary()
			if err == nil {
				err = s.t.Write(b)
			}
			if err != nil {
				s.lastErr = fmt.Errorf("bfd: send to %v: %w", s.cfg.Peer, err)
			}
		case Transition:
			ev := Event{At: s.clk.Now(), From: a.From, To: a.To, Diag: a.Diag, Reason: a.Reason}
			for {
				select {
				case s.events <- ev:
				default:
					select {
					case <-s.events:
					default:
					}
					continue
				}
				break
			}
		}
	}
}
