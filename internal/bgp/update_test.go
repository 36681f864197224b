package bgp

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSpeakerUpdate applies new configurations to a running speaker and
// checks, after each, what it asked of the router: an unchanged peer is
// left alone, a new one added, a changed one replaced, a removed one
// deleted; a new VIP announced, a removed one withdrawn. The ASN cannot
// change while running.
func TestSpeakerUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vip1, vip2 := netip.MustParseAddr("198.19.0.10"), netip.MustParseAddr("198.19.0.11")
		p1, p2 := netip.MustParseAddr("198.18.1.1"), netip.MustParseAddr("198.18.2.1")
		cfg := validConfig()
		r := &fakeRouter{sendAfter: 0}
		e := &fakeElig{ch: make(chan struct{}), v: []Verdict{{VIP: vip1, Eligible: true, Reason: "ok"}, {VIP: vip2, Eligible: true, Reason: "ok"}}}
		s, err := New(Options{Config: cfg, Eligibility: e, Router: r, Logger: quiet, StopTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		synctest.Wait()
		if d := cmp.Diff([]string{"start 64512 198.18.1.10 0", "announce 198.19.0.10/32 nh=invalid IP", "add-peer 198.18.1.1 ibgp=false"}, r.take()); d != "" {
			t.Fatalf("start (-want +got):\n%s", d)
		}
		steps := []struct {
			name    string
			change  func(c *Config)
			want    []string
			wantErr string
			peers   []netip.Addr
		}{
			{name: "same configuration", change: func(*Config) {}, peers: []netip.Addr{p1}},
			{name: "a peer and a VIP added", change: func(c *Config) {
				c.Peers = append(c.Peers, Peer{Address: p2, ASN: 64501})
				c.Routes = append(c.Routes, Route{VIP: vip2})
			}, want: []string{"add-peer 198.18.2.1 ibgp=false", "announce 198.19.0.11/32 nh=invalid IP"}, peers: []netip.Addr{p1, p2}},
			{name: "the second peer's hold time changes", change: func(c *Config) {
				c.Peers = append(c.Peers, Peer{Address: p2, ASN: 64501, HoldTime: 9 * time.Second})
				c.Routes = append(c.Routes, Route{VIP: vip2})
			}, want: []string{"delete-peer 198.18.2.1", "add-peer 198.18.2.1 ibgp=false"}, peers: []netip.Addr{p1, p2}},
			{name: "the first peer and VIP removed", change: func(c *Config) {
				c.Peers = []Peer{{Address: p2, ASN: 64501, HoldTime: 9 * time.Second}}
				c.Routes = []Route{{VIP: vip2}}
			}, want: []string{"delete-peer 198.18.1.1", "withdraw 198.19.0.10/32"}, peers: []netip.Addr{p2}},
			{name: "the ASN", change: func(c *Config) {
				c.ASN = 64513
				c.Peers = []Peer{{Address: p2, ASN: 64501, HoldTime: 9 * time.Second}}
				c.Routes = []Route{{VIP: vip2}}
			}, wantErr: "apply only at a restart", peers: []netip.Addr{p2}},
		}
		for _, st := range steps {
			c := validConfig()
			st.change(&c)
			err := s.Update(t.Context(), c)
			synctest.Wait()
			if st.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), st.wantErr) {
					t.Errorf("%s: error %v, want %q", st.name, err, st.wantErr)
				}
			} else if err != nil {
				t.Errorf("%s: %v", st.name, err)
			}
			if d := cmp.Diff(st.want, r.take()); d != "" {
				t.Errorf("%s: router calls (-want +got):\n%s", st.name, d)
			}
			status, _ := s.Status(t.Context())
			var got []netip.Addr
			for _, p := range status.Peers {
				got = append(got, p.Address)
			}
			if d := cmp.Diff(st.peers, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
				t.Errorf("%s: peers in the status (-want +got):\n%s", st.name, d)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// blockingRouter is a fakeRouter whose AddPeer for the address hold
// waits until release is closed, and which can fail every AddPeer.
type blockingRouter struct {
	fakeRouter
	hold     netip.Addr
	held     chan struct{} // closed when the held AddPeer begins
	release  chan struct{}
	addErr   error
	startErr error
}

func (b *blockingRouter) Start(ctx context.Context, asn uint32, id netip.Addr, port int) error {
	if err := b.fakeRouter.Start(ctx, asn, id, port); err != nil {
		return err
	}
	return b.startErr
}

func (b *blockingRouter) AddPeer(ctx context.Context, p Peer, ibgp bool) error {
	if b.addErr != nil {
		return b.addErr
	}
	if p.Address == b.hold {
		close(b.held)
		<-b.release
	}
	return b.fakeRouter.AddPeer(ctx, p, ibgp)
}

// TestSpeakerUpdateEdges: an Update before Run changes what Run starts
// with; an Update whose context ends while the loop applies it still
// returns what was applied (the loop took it: here the peer is added and
// Update says so, where a select on the context reported a failure); an
// Update with an ended context hands nothing over; after Run returned on
// its own, Update fails at once with ErrStopped instead of waiting.
func TestSpeakerUpdateEdges(t *testing.T) {
	p2 := netip.MustParseAddr("198.18.2.1")
	withP2 := func() Config {
		c := validConfig()
		c.Peers = append(c.Peers, Peer{Address: p2, ASN: 64501})
		return c
	}
	elig := func() *fakeElig { return &fakeElig{ch: make(chan struct{})} }
	synctest.Test(t, func(t *testing.T) {
		r := &blockingRouter{held: make(chan struct{}), release: make(chan struct{})}
		s, err := New(Options{Config: validConfig(), Eligibility: elig(), Router: r, Logger: quiet, StopTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		c := withP2()
		c.ASN = 64513 // before Run even the ASN may change
		if err := s.Update(t.Context(), c); err != nil {
			t.Fatalf("Update before Run: %v", err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		synctest.Wait()
		if d := cmp.Diff([]string{"start 64513 198.18.1.10 0", "add-peer 198.18.1.1 ibgp=false", "add-peer 198.18.2.1 ibgp=false"}, r.take()); d != "" {
			t.Errorf("Run after an Update before it (-want +got):\n%s", d)
		}

		// Back to one peer, then the second added again with its
		// AddPeer held while the caller's context ends.
		one := validConfig()
		one.ASN = 64513
		if err := s.Update(t.Context(), one); err != nil {
			t.Fatal(err)
		}
		r.take()
		r.hold = p2
		uctx, ucancel := context.WithCancel(t.Context())
		got := make(chan error, 1)
		c = withP2()
		c.ASN = 64513
		go func() { got <- s.Update(uctx, c) }()
		<-r.held
		ucancel()
		synctest.Wait()
		close(r.release)
		if err := <-got; err != nil {
			t.Errorf("Update taken by the loop, its context ended while it applied: %v; want nil (the peer was added)", err)
		}
		if d := cmp.Diff([]string{"add-peer 198.18.2.1 ibgp=false"}, r.take()); d != "" {
			t.Errorf("router calls (-want +got):\n%s", d)
		}
		for range 50 {
			if err := s.Update(uctx, one); err == nil {
				t.Fatal("Update with an ended context = nil, want its error")
			}
		}
		synctest.Wait()
		if calls := r.take(); len(calls) != 0 {
			t.Errorf("Updates with an ended context reached the router: %v", calls)
		}
		cancel()
		<-done
	})
	synctest.Test(t, func(t *testing.T) {
		r := &blockingRouter{addErr: errors.New("refused")}
		s, err := New(Options{Config: validConfig(), Eligibility: elig(), Router: r, Logger: quiet, StopTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("Run with AddPeer refused = %v", err)
		}
		if err := s.Update(t.Context(), withP2()); !errors.Is(err, ErrStopped) {
			t.Errorf("Update after Run returned = %v, want ErrStopped", err)
		}
	})
	// A start that fails stops what the router made (the agent starts
	// speakers again, each with a new router).
	r := &blockingRouter{startErr: errors.New("no server")}
	s, err := New(Options{Config: validConfig(), Eligibility: elig(), Router: r, Logger: quiet, StopTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "bgp: start: no server") {
		t.Fatalf("Run with Start failing = %v", err)
	}
	if d := cmp.Diff([]string{"start 64512 198.18.1.10 0", "stop"}, r.take()); d != "" {
		t.Errorf("router calls of a failed start (-want +got):\n%s", d)
	}
}
