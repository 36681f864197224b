package bfd

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/testutil"
)

// memLink joins two memTransports: what one writes, the other reads, from
// its peer's address and a source port in range, with TTL 255.
type memTransport struct {
	self, peerAddr netip.AddrPort
	in             chan []byte
	out            chan<- []byte
	done           chan struct{}
}

func memPair(a, b netip.Addr) (*memTransport, *memTransport) {
	ab, ba := make(chan []byte, 64), make(chan []byte, 64)
	return &memTransport{self: netip.AddrPortFrom(a, 49152), in: ba, out: ab, done: make(chan struct{})},
		&memTransport{self: netip.AddrPortFrom(b, 49153), in: ab, out: ba, done: make(chan struct{})}
}

func (m *memTransport) Read(b []byte) (int, netip.AddrPort, int, error) {
	select {
	case p := <-m.in:
		return copy(b, p), m.peerAddr, 255, nil
	case <-m.done:
		return 0, netip.AddrPort{}, 0, net.ErrClosed
	}
}

func (m *memTransport) Write(b []byte) error {
	select {
	case m.out <- append([]byte(nil), b...):
	default: // a full link drops, as a network would
	}
	return nil
}

func (m *memTransport) Close() error { close(m.done); return nil }

var (
	addrA = netip.MustParseAddr("198.18.0.1")
	addrB = netip.MustParseAddr("198.18.0.2")
)

func memSessions(t *testing.T, clk clock.Clock, pwA, pwB string) (*Session, *Session) {
	t.Helper()
	ta, tb := memPair(addrA, addrB)
	ta.peerAddr, tb.peerAddr = tb.self, ta.self
	cfg := func(local, peer netip.Addr, discr uint32, pw string) SessionConfig {
		return SessionConfig{Local: local, Peer: peer, DesiredMinTx: 100 * ms, RequiredMinRx: 100 * ms, DetectMult: 3,
			LocalDiscr: discr, Password: pw, KeyID: 1, Clock: clk}
	}
	a, err := NewSession(cfg(addrA, addrB, 0xa, pwA), ta)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err := NewSession(cfg(addrB, addrA, 0xb, pwB), tb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

// advanceUntil moves the fake clock in steps until cond holds; the sessions
// run in their own goroutines, so each step polls them too. The bound only
// ends a hung test.
func advanceUntil(t *testing.T, clk *clock.Fake, step time.Duration, cond func() error) {
	t.Helper()
	if err := testutil.Poll(10*time.Second, func() error {
		clk.Advance(step)
		return cond()
	}); err != nil {
		t.Fatal(err)
	}
}

// TestSessionsInMemory runs two Sessions against each other in virtual
// time: they come Up, report it, and one going silent takes the other
// Down with Control Detection Time Expired.
func TestSessionsInMemory(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	a, b := memSessions(t, clk, "", "")
	both := func(s State) func() error {
		return func() error {
			if a.State() != s || b.State() != s {
				return fmt.Errorf("states %v and %v, want %v", a.State(), b.State(), s)
			}
			return nil
		}
	}
	advanceUntil(t, clk, 50*ms, both(Up))
	for _, s := range []*Session{a, b} {
		ev := drainTo(t, s, Up)
		if ev.Diag != DiagNone {
			t.Errorf("Up event %v: diag %v, want none", ev, ev.Diag)
		}
	}
	a.Close()
	advanceUntil(t, clk, 50*ms, func() error {
		if b.State() != Down {
			return fmt.Errorf("b is %v, want Down", b.State())
		}
		return nil
	})
	if ev := drainTo(t, b, Down); ev.Diag != DiagControlDetectExpired {
		t.Errorf("Down event %v, want diag %v", ev, DiagControlDetectExpired)
	}
}

// TestSessionsInMemoryAdminDown: AdminDown on one side takes the other
// Down with Neighbor Signaled Session Down.
func TestSessionsInMemoryAdminDown(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	a, b := memSessions(t, clk, "pw", "pw")
	advanceUntil(t, clk, 50*ms, func() error {
		if a.State() != Up || b.State() != Up {
			return fmt.Errorf("states %v and %v, want Up", a.State(), b.State())
		}
		return nil
	})
	if err := a.AdminDown(t.Context()); err != nil {
		t.Fatal(err)
	}
	advanceUntil(t, clk, 50*ms, func() error {
		if b.State() != Down {
			return fmt.Errorf("b is %v, want Down", b.State())
		}
		return nil
	})
	if ev := drainTo(t, b, Down); ev.Diag != DiagNeighborDown {
		t.Errorf("Down event %v, want diag %v", ev, DiagNeighborDown)
	}
}

// TestSessionsInMemoryWrongPassword: sessions with different passwords
// never come Up, and each counts the other's packets as auth failures.
func TestSessionsInMemoryWrongPassword(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	a, b := memSessions(t, clk, "right", "wrong")
	advanceUntil(t, clk, 50*ms, func() error {
		rej, err := a.Rejected()
		if rej[ReasonAuth] < 3 {
			return fmt.Errorf("a rejected %v (last %v), want at least 3 auth failures", rej, err)
		}
		return nil
	})
	if a.State() != Down || b.State() != Down {
		t.Fatalf("states %v and %v, want Down", a.State(), b.State())
	}
	_, err := a.Rejected()
	if !strings.Contains(err.Error(), "wrong simple password for key ID 1") {
		t.Errorf("last error %v, want the wrong password named", err)
	}
}

func drainTo(t *testing.T, s *Session, want State) Event {
	t.Helper()
	for {
		select {
		case ev := <-s.Events():
			if ev.To == want {
				return ev
			}
		default:
			t.Fatalf("no event to %v queued", want)
		}
	}
}

// TestReceiveTransportChecks: the checks of RFC 5881 section 5 and RFC
// 5883 section 2 on source, port and TTL, before any decoding.
func TestReceiveTransportChecks(t *testing.T) {
	good, _ := (&Packet{State: Down, DetectMult: 3, MyDiscriminator: 2, DesiredMinTx: sec, RequiredMinRx: sec}).MarshalBinary()
	for _, tc := range []struct {
		name     string
		multihop bool
		minTTL   int
		from     netip.AddrPort
		ttl      int
		reason   Reason
		detail   string
	}{
		{name: "single hop TTL 254", from: netip.AddrPortFrom(addrB, 49152), ttl: 254, reason: ReasonTTL, detail: "TTL/hop limit 254: want 255"},
		{name: "single hop TTL unknown", from: netip.AddrPortFrom(addrB, 49152), ttl: -1, reason: ReasonTTL, detail: "want 255"},
		// BIRD 2.0.12 sends from the ephemeral range, below 49152.
		{name: "source port below 49152 accepted", from: netip.AddrPortFrom(addrB, 40000), ttl: 255},
		{name: "not the peer", from: netip.AddrPortFrom(netip.MustParseAddr("198.18.0.9"), 49152), ttl: 255, reason: ReasonPeer, detail: "want the peer 198.18.0.2"},
		{name: "multihop below min TTL", multihop: true, minTTL: 254, from: netip.AddrPortFrom(addrB, 49152), ttl: 253, reason: ReasonTTL, detail: "TTL/hop limit 253: want at least 254"},
		{name: "single hop TTL 255", from: netip.AddrPortFrom(addrB, 65535), ttl: 255},
		{name: "multihop any TTL", multihop: true, from: netip.AddrPortFrom(addrB, 49152), ttl: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ta, _ := memPair(addrA, addrB)
			s, err := NewSession(SessionConfig{Local: addrA, Peer: addrB, Multihop: tc.multihop, MinTTL: tc.minTTL,
				DesiredMinTx: 100 * ms, RequiredMinRx: 100 * ms, DetectMult: 3, Clock: clock.NewFake(time.Unix(0, 0))}, ta)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Run the check on the test goroutine: the session's own
			// goroutine only touches the machine under mu, as does receive.
			err = s.receive(rxPacket{b: good, from: tc.from, ttl: tc.ttl})
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("receive: %v", err)
				}
				return
			}
			if ReasonOf(err) != tc.reason || !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("receive error %v (%s), want reason %s containing %q", err, ReasonOf(err), tc.reason, tc.detail)
			}
		})
	}
}

func TestSessionConfigErrors(t *testing.T) {
	base := SessionConfig{Local: addrA, Peer: addrB, DesiredMinTx: 100 * ms, RequiredMinRx: 100 * ms, DetectMult: 3}
	for _, tc := range []struct {
		name string
		mod  func(*SessionConfig)
		want string
	}{
		{name: "no peer", mod: func(c *SessionConfig) { c.Peer = netip.Addr{} }, want: "want both addresses"},
		{name: "families", mod: func(c *SessionConfig) { c.Peer = netip.MustParseAddr("fd00::1") }, want: "want the same address family"},
		{name: "min TTL single hop", mod: func(c *SessionConfig) { c.MinTTL = 254 }, want: "min TTL 254: want 0 to 255, and only for multihop"},
		{name: "password", mod: func(c *SessionConfig) { c.Password = strings.Repeat("x", 17) }, want: "simple password of 17 bytes"},
		{name: "mult", mod: func(c *SessionConfig) { c.DetectMult = 0 }, want: "detect multiplier 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.mod(&c)
			ta, _ := memPair(addrA, addrB)
			_, err := NewSession(c, ta)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewSession error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestSessionSetIntervals: the session's goroutine applies the change and
// its error comes back to the caller; a closed session says so.
func TestSessionSetIntervals(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	a, _ := memSessions(t, clk, "", "")
	if err := a.SetIntervals(t.Context(), 0, 100*ms); err == nil || !strings.Contains(err.Error(), "desired min TX interval 0s") {
		t.Fatalf("SetIntervals(0) error %v, want the bad interval named", err)
	}
	if err := a.SetIntervals(t.Context(), 200*ms, 200*ms); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if err := a.AdminDown(t.Context()); err == nil || !strings.Contains(err.Error(), "session closed") {
		t.Fatalf("AdminDown after Close: %v, want session closed", err)
	}
}
