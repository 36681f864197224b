package bgp

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vipstack/vipstack/internal/bfd"
)

var quiet = slog.New(slog.DiscardHandler)

// fakeRouter records what the speaker asks of the BGP implementation.
type fakeRouter struct {
	mu         sync.Mutex
	calls      []string
	advertised uint64 // what Peers reports for the one established peer
	// sendAfter: a withdrawal counts as sent (SentUpdates goes up) this
	// many Peers calls after it.
	sendAfter    int
	unsent, wait int
	sent         uint64
	down         bool // Peers reports the session not established
}

func (f *fakeRouter) rec(format string, a ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, a...))
}

func (f *fakeRouter) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func (f *fakeRouter) Start(_ context.Context, asn uint32, id netip.Addr, port int) error {
	f.rec("start %d %v %d", asn, id, port)
	return nil
}
func (f *fakeRouter) AddPeer(_ context.Context, p Peer, ibgp bool) error {
	f.rec("add-peer %v ibgp=%v", p.Address, ibgp)
	return nil
}
func (f *fakeRouter) DeletePeer(_ context.Context, a netip.Addr) error {
	f.rec("delete-peer %v", a)
	return nil
}
func (f *fakeRouter) SetPeerEnabled(_ context.Context, a netip.Addr, on bool, reason string) error {
	f.rec("peer %v enabled=%v: %s", a, on, reason)
	return nil
}
func (f *fakeRouter) Announce(_ context.Context, r Route, nh netip.Addr, asn uint32) error {
	if r.Prepend > 0 {
		f.rec("announce %v nh=%v prepend=%d*%d", r.Prefix(), nh, r.Prepend, asn)
	} else {
		f.rec("announce %v nh=%v", r.Prefix(), nh)
	}
	f.mu.Lock()
	f.advertised++
	f.mu.Unlock()
	return nil
}
func (f *fakeRouter) Withdraw(_ context.Context, p netip.Prefix) error {
	f.rec("withdraw %v", p)
	f.mu.Lock()
	f.advertised--
	f.unsent++
	f.wait = f.sendAfter
	f.mu.Unlock()
	return nil
}
func (f *fakeRouter) Peers(context.Context) ([]RouterPeer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unsent > 0 {
		if f.wait == 0 {
			f.sent++
			f.unsent = 0
		} else {
			f.wait--
		}
	}
	if f.down {
		return []RouterPeer{{Address: netip.MustParseAddr("198.18.1.1"), State: "active"}}, nil
	}
	return []RouterPeer{{Address: netip.MustParseAddr("198.18.1.1"), State: "established", Established: true,
		Advertised: f.advertised, SentUpdates: f.sent}}, nil
}
func (f *fakeRouter) Stop(context.Context) error {
	f.rec("stop")
	return nil
}

// fakeElig is an Eligibility the test sets.
type fakeElig struct {
	mu sync.Mutex
	v  []Verdict
	ch chan struct{}
}

func (e *fakeElig) Verdicts() []Verdict {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Verdict(nil), e.v...)
}
func (e *fakeElig) Changed() <-chan struct{} { return e.ch }
func (e *fakeElig) set(v ...Verdict) {
	e.mu.Lock()
	e.v = v
	e.mu.Unlock()
	e.ch <- struct{}{}
}

// fakeBFD is a BFD session the test moves between states.
type fakeBFD struct {
	mu     sync.Mutex
	st     bfd.State
	ev     chan bfd.Event
	closed bool
}

func (b *fakeBFD) Events() <-chan bfd.Event { return b.ev }
func (b *fakeBFD) State() bfd.State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st
}
func (b *fakeBFD) Rejected() (map[bfd.Reason]int, error) { return nil, nil }
func (b *fakeBFD) AdminDown(context.Context) error {
	b.to(bfd.AdminDown, bfd.DiagAdminDown)
	return nil
}
func (b *fakeBFD) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}
func (b *fakeBFD) to(st bfd.State, d bfd.Diag) {
	b.mu.Lock()
	from := b.st
	b.st = st
	b.mu.Unlock()
	select {
	case b.ev <- bfd.Event{From: from, To: st, Diag: d}:
	default:
	}
}

// TestSpeaker drives a speaker through eligibility changes, a BFD flap
// and a graceful stop, checking what it asks of the router after each.
func TestSpeaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vip := netip.MustParseAddr("198.19.0.10")
		peer := netip.MustParseAddr("198.18.1.1")
		cfg := validConfig()
		cfg.Peers[0].LocalAddress = netip.MustParseAddr("198.18.1.10")
		cfg.Peers[0].BFD = &BFD{Interval: 50 * time.Millisecond, Multiplier: 3}
		r := &fakeRouter{sendAfter: 3, down: true}
		e := &fakeElig{ch: make(chan struct{})}
		b := &fakeBFD{st: bfd.Down, ev: make(chan bfd.Event, 4)}
		var dialed bfd.SessionConfig
		s, err := New(Options{Config: cfg, Eligibility: e, Router: r, Logger: quiet,
			DialBFD: func(c bfd.SessionConfig) (BFDSession, error) { dialed = c; return b, nil }})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		runErr := make(chan error, 1)
		go func() { runErr <- s.Run(ctx) }()
		synctest.Wait()

		step := func(name string, want []string) {
			t.Helper()
			if d := cmp.Diff(want, r.take()); d != "" {
				t.Fatalf("%s: router calls (-want +got):\n%s", name, d)
			}
		}
		step("start", []string{"start 64512 198.18.1.10 0", "add-peer 198.18.1.1 ibgp=false"})
		time.Sleep(time.Second)
		synctest.Wait()
		if dialed.Peer.IsValid() {
			t.Fatalf("BFD dialed before the BGP session was established: %+v", dialed)
		}
		if st, _ := s.Status(t.Context()); st.Peers[0].BFD != "waiting for BGP" {
			t.Errorf("BFD state %q before BGP is established, want waiting for BGP", st.Peers[0].BFD)
		}
		r.mu.Lock()
		r.down = false
		r.mu.Unlock()
		time.Sleep(250 * time.Millisecond)
		synctest.Wait()
		if dialed.Peer != peer || dialed.DesiredMinTx != 50*time.Millisecond || dialed.DetectMult != 3 {
			t.Errorf("BFD dialed with %+v, want peer %v at 50ms x 3", dialed, peer)
		}

		e.set(Verdict{VIP: vip, Eligible: true, Reason: "backends 2/2 up"})
		synctest.Wait()
		step("eligible", []string{"announce 198.19.0.10/32 nh=invalid IP"})

		b.to(bfd.Init, bfd.DiagNone)
		b.to(bfd.Up, bfd.DiagNone)
		synctest.Wait()
		step("bfd comes up: the session was never held down", nil)

		b.to(bfd.Down, bfd.DiagNeighborDown)
		synctest.Wait()
		step("the peer signals BFD down: its own BGP acts, not ours", nil)
		b.to(bfd.Init, bfd.DiagNone)
		b.to(bfd.Up, bfd.DiagNone)
		synctest.Wait()
		step("bfd up again after the peer's reset", nil)

		b.to(bfd.Down, bfd.DiagControlDetectExpired)
		synctest.Wait()
		step("bfd down", []string{"peer 198.18.1.1 enabled=false: BFD session to 198.18.1.1 went down (Control Detection Time Expired)"})
		st, err := s.Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		wantSt := Status{
			Peers: []PeerStatus{{Address: peer, ASN: 64500, Session: "established", BFD: "down",
				HeldDown: "BFD session to 198.18.1.1 went down (Control Detection Time Expired)", Advertised: 1}},
			Routes:    []RouteStatus{{Prefix: netip.MustParsePrefix("198.19.0.10/32"), Announced: true, Reason: "eligible: backends 2/2 up"}},
			Announces: 1,
		}
		if d := cmp.Diff(wantSt, st, addrs); d != "" {
			t.Errorf("status while BFD is down (-want +got):\n%s", d)
		}

		b.to(bfd.Up, bfd.DiagNone)
		synctest.Wait()
		step("bfd up again", []string{"peer 198.18.1.1 enabled=true: BFD up"})

		e.set(Verdict{VIP: vip, Eligible: false, Reason: "backends 0/2 up"})
		synctest.Wait()
		step("not eligible", []string{"withdraw 198.19.0.10/32"})

		e.set(Verdict{VIP: vip, Eligible: true, Reason: "backends 1/2 up"})
		synctest.Wait()
		step("eligible again", []string{"announce 198.19.0.10/32 nh=invalid IP"})
		if st, _ := s.Status(t.Context()); st.Announces != 2 || st.Withdrawals != 1 {
			t.Errorf("counted %d announces and %d withdrawals, want 2 and 1", st.Announces, st.Withdrawals)
		}

		// A graceful stop withdraws first, waits until the withdrawal
		// has been sent (three polls here), drains (1 s by default),
		// then closes the sessions.
		start := time.Now()
		cancel()
		if err := <-runErr; err != nil {
			t.Fatalf("Run: %v", err)
		}
		step("graceful stop", []string{"withdraw 198.19.0.10/32", "stop"})
		if waited := time.Since(start); waited != 60*time.Millisecond+time.Second {
			t.Errorf("stop took %v, want three 20ms polls for the withdrawal to be sent and the 1s drain", waited)
		}
		if b.State() != bfd.Up || !b.closed {
			t.Errorf("BFD session state %v closed %v after stop, want closed without AdminDown", b.State(), b.closed)
		}
	})
}

// TestSpeakerStopTimeout: a peer that never drains does not hold the stop
// longer than StopTimeout.
func TestSpeakerStopTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &fakeRouter{sendAfter: 1 << 30}
		e := &fakeElig{ch: make(chan struct{}), v: []Verdict{{VIP: netip.MustParseAddr("198.19.0.10"), Eligible: true}}}
		s, err := New(Options{Config: validConfig(), Eligibility: e, Router: r, Logger: quiet, StopTimeout: time.Second, Drain: -1})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		synctest.Wait()
		start := time.Now()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("stop took %v, want the 1s StopTimeout", took)
		}
	})
}

// TestSpeakerDrain: a graceful stop closes the sessions Drain after the
// withdrawals are on the wire (the default, 1 s, when Drain is 0), and
// at once when no peer had routes.
func TestSpeakerDrain(t *testing.T) {
	for _, tc := range []struct {
		name     string
		drain    time.Duration
		eligible bool
		want     time.Duration
	}{
		{name: "default", drain: 0, eligible: true, want: time.Second},
		{name: "set", drain: 300 * time.Millisecond, eligible: true, want: 300 * time.Millisecond},
		{name: "none", drain: -1, eligible: true, want: 0},
		{name: "nothing announced", drain: time.Second, eligible: false, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := &fakeRouter{}
				e := &fakeElig{ch: make(chan struct{}), v: []Verdict{{VIP: netip.MustParseAddr("198.19.0.10"), Eligible: tc.eligible}}}
				s, err := New(Options{Config: validConfig(), Eligibility: e, Router: r, Logger: quiet, Drain: tc.drain})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- s.Run(ctx) }()
				synctest.Wait()
				r.take()
				cancel()
				// The withdrawal is sent at the first Peers poll; the
				// sessions close (Stop) only after the drain.
				synctest.Wait()
				start := time.Now()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				calls := r.take()
				if calls[len(calls)-1] != "stop" {
					t.Fatalf("calls %q, want the sessions stopped last", calls)
				}
				if took := time.Since(start); took != tc.want {
					t.Errorf("sessions closed %v after the withdrawal was sent, want %v (calls %q)", took, tc.want, calls)
				}
			})
		})
	}
}

// TestSpeakerBFDDialRetry: a BFD session that cannot start is tried again
// at the next poll; status says why meanwhile, and BGP runs on.
func TestSpeakerBFDDialRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := validConfig()
		cfg.Peers[0].LocalAddress = netip.MustParseAddr("198.18.1.10")
		cfg.Peers[0].BFD = &BFD{Interval: 50 * time.Millisecond, Multiplier: 3}
		b := &fakeBFD{st: bfd.Down, ev: make(chan bfd.Event, 4)}
		dials := 0
		dial := func(bfd.SessionConfig) (BFDSession, error) {
			dials++
			if dials == 1 {
				return nil, fmt.Errorf("bfd: listen on 198.18.1.10:3784: address already in use")
			}
			return b, nil
		}
		s, err := New(Options{Config: cfg, Eligibility: &fakeElig{ch: make(chan struct{})}, Router: &fakeRouter{},
			Logger: quiet, DialBFD: dial})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		time.Sleep(300 * time.Millisecond)
		synctest.Wait()
		st, _ := s.Status(t.Context())
		if want := "not started: bfd: listen on 198.18.1.10:3784: address already in use"; st.Peers[0].BFD != want {
			t.Errorf("BFD state after a failed start %q, want %q", st.Peers[0].BFD, want)
		}
		time.Sleep(250 * time.Millisecond)
		synctest.Wait()
		st, _ = s.Status(t.Context())
		if dials != 2 || st.Peers[0].BFD != "down" {
			t.Errorf("after the next poll: %d dials, BFD %q; want 2 and down", dials, st.Peers[0].BFD)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestNewRejectsBadConfig(t *testing.T) {
	c := validConfig()
	c.ASN = 0
	_, err := New(Options{Config: c, Eligibility: &fakeElig{}})
	if err == nil || err.Error() != "asn: 0 is reserved (RFC 7607); want 1..4294967295" {
		t.Fatalf("New: %v", err)
	}
}

// TestSpeakerRestarting: Run's context cancelled with ErrRestarting
// returns at once, leaving the routes announced and the sessions open
// (no withdrawal, no Stop) for the peers' graceful restart.
func TestSpeakerRestarting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &fakeRouter{}
		e := &fakeElig{ch: make(chan struct{}), v: []Verdict{{VIP: netip.MustParseAddr("198.19.0.10"), Eligible: true}}}
		s, err := New(Options{Config: validConfig(), Eligibility: e, Router: r, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancelCause(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		synctest.Wait()
		if calls := r.take(); !slices.Contains(calls, "announce 198.19.0.10/32 nh=invalid IP") {
			t.Fatalf("calls %q, want the route announced", calls)
		}
		start := time.Now()
		cancel(ErrRestarting)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if calls := r.take(); len(calls) != 0 {
			t.Errorf("calls %q on a restart, want none (no withdrawal, no Stop)", calls)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("a restart took %v, want no wait", took)
		}
	})
}

// TestSpeakerDemotion: a demoted verdict announces the route again with
// the demotion's prepends (the path replaces the eligible one, no
// withdrawal between), and an eligible one again without them.
func TestSpeakerDemotion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vip := netip.MustParseAddr("198.19.0.10")
		cfg := validConfig()
		cfg.Demote = &Demotion{Prepend: 3}
		r := &fakeRouter{}
		e := &fakeElig{ch: make(chan struct{})}
		s, err := New(Options{Config: cfg, Eligibility: e, Router: r, Logger: quiet, Drain: -1})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		runErr := make(chan error, 1)
		go func() { runErr <- s.Run(ctx) }()
		synctest.Wait()
		r.take()
		for _, st := range []struct {
			name    string
			verdict Verdict
			want    []string
			demoted bool
		}{
			{name: "eligible", verdict: Verdict{VIP: vip, Eligible: true, Reason: "ok"}, want: []string{"announce 198.19.0.10/32 nh=invalid IP"}},
			{name: "demoted", verdict: Verdict{VIP: vip, Eligible: true, Demoted: true, Reason: "chk failing"},
				want: []string{"announce 198.19.0.10/32 nh=invalid IP prepend=3*64512"}, demoted: true},
			{name: "still demoted", verdict: Verdict{VIP: vip, Eligible: true, Demoted: true, Reason: "chk failing"}, demoted: true},
			{name: "eligible again", verdict: Verdict{VIP: vip, Eligible: true, Reason: "ok"}, want: []string{"announce 198.19.0.10/32 nh=invalid IP"}},
		} {
			e.set(st.verdict)
			synctest.Wait()
			if d := cmp.Diff(st.want, r.take()); d != "" {
				t.Fatalf("%s: router calls (-want +got):\n%s", st.name, d)
			}
			got, _ := s.Status(t.Context())
			if len(got.Routes) != 1 || !got.Routes[0].Announced || got.Routes[0].Demoted != st.demoted {
				t.Fatalf("%s: routes %+v, want announced, demoted %v", st.name, got.Routes, st.demoted)
			}
		}
		cancel()
		if err := <-runErr; err != nil {
			t.Fatalf("Run: %v", err)
		}
	})
}

func validConfig() Config {
	return Config{
		ASN:      64512,
		RouterID: netip.MustParseAddr("198.18.1.10"),
		Peers: []Peer{
			{Address: netip.MustParseAddr("198.18.1.1"), ASN: 64500},
		},
		Routes: []Route{{VIP: netip.MustParseAddr("198.19.0.10")}},
	}
}

func TestRestartDelay(t *testing.T) {
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for n, w := range want {
		if got := RestartDelay(n); got != w {
			t.Errorf("RestartDelay(%d) = %v, want %v", n, got, w)
		}
	}
	if got := RestartDelay(1 << 20); got != 30*time.Second {
		t.Errorf("RestartDelay(1<<20) = %v, want the 30 s bound", got)
	}
}
