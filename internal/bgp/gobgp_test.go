package bgp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/server"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestPath checks the GoBGP path built for a route: NLRI, next hop (in
// NEXT_HOP for IPv4, MP_REACH_NLRI for IPv6) and every attribute.
func TestPath(t *testing.T) {
	u32 := func(v uint32) *uint32 { return &v }
	v4 := netip.MustParseAddr("198.19.0.10")
	v6 := netip.MustParseAddr("fd00:99::10")
	nlri4 := &api.IPAddressPrefix{PrefixLen: 32, Prefix: "198.19.0.10"}
	nlri6 := &api.IPAddressPrefix{PrefixLen: 128, Prefix: "fd00:99::10"}
	any6, _ := anypb.New(nlri6)
	origin := &api.OriginAttribute{Origin: 0}
	tests := []struct {
		name    string
		r       Route
		nextHop netip.Addr
		fam     *api.Family
		nlri    proto.Message
		attrs   []proto.Message
	}{
		{name: "ipv4 plain", r: Route{VIP: v4}, fam: familyV4, nlri: nlri4,
			attrs: []proto.Message{origin, &api.NextHopAttribute{NextHop: "0.0.0.0"}}},
		{name: "ipv4 every attribute", nextHop: netip.MustParseAddr("198.18.1.10"),
			r: Route{VIP: v4, Attributes: Attributes{Communities: []string{"64512:100", "65535:65281"},
				LargeCommunities: []string{"64512:1:2"}, LocalPref: u32(200), MED: u32(50), Prepend: 2}},
			fam: familyV4, nlri: nlri4,
			attrs: []proto.Message{origin, &api.NextHopAttribute{NextHop: "198.18.1.10"},
				&api.CommunitiesAttribute{Communities: []uint32{64512<<16 | 100, 0xFFFFFF01}},
				&api.LargeCommunitiesAttribute{Communities: []*api.LargeCommunity{{GlobalAdmin: 64512, LocalData1: 1, LocalData2: 2}}},
				&api.LocalPrefAttribute{LocalPref: 200},
				&api.MultiExitDiscAttribute{Med: 50},
				&api.AsPathAttribute{Segments: []*api.AsSegment{{Type: api.AsSegment_AS_SEQUENCE, Numbers: []uint32{64512, 64512}}}},
			}},
		{name: "ipv6 session address", r: Route{VIP: v6}, fam: familyV6, nlri: nlri6,
			attrs: []proto.Message{origin, &api.MpReachNLRIAttribute{Family: familyV6, NextHops: []string{"::"}, Nlris: []*anypb.Any{any6}}}},
		{name: "ipv6 next hop set", r: Route{VIP: v6}, nextHop: netip.MustParseAddr("fd00:1::10"), fam: familyV6, nlri: nlri6,
			attrs: []proto.Message{origin, &api.MpReachNLRIAttribute{Family: familyV6, NextHops: []string{"fd00:1::10"}, Nlris: []*anypb.Any{any6}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := path(tt.r, tt.nextHop, 64512)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.fam, p.Family, protocmp.Transform()); d != "" {
				t.Errorf("family (-want +got):\n%s", d)
			}
			nlri, err := p.Nlri.UnmarshalNew()
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.nlri, nlri, protocmp.Transform()); d != "" {
				t.Errorf("NLRI (-want +got):\n%s", d)
			}
			var attrs []proto.Message
			for _, a := range p.Pattrs {
				m, err := a.UnmarshalNew()
				if err != nil {
					t.Fatal(err)
				}
				attrs = append(attrs, m)
			}
			if d := cmp.Diff(tt.attrs, attrs, protocmp.Transform()); d != "" {
				t.Errorf("attributes (-want +got):\n%s", d)
			}
		})
	}
}

// TestAdvertised checks the routes counted in a peer's Adj-RIB-Out: with
// graceful restart on both sides GoBGP counts an End-of-RIB per family,
// which is left out.
func TestAdvertised(t *testing.T) {
	grCap, _ := anypb.New(&api.GracefulRestartCapability{Time: 120})
	mpCap, _ := anypb.New(&api.MultiProtocolCapability{Family: familyV4})
	afs := func(n ...uint64) []*api.AfiSafi {
		var out []*api.AfiSafi
		for _, a := range n {
			out = append(out, &api.AfiSafi{State: &api.AfiSafiState{Enabled: true, Advertised: a}})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		peer *api.Peer
		want uint64
	}{
		{name: "no graceful restart", peer: &api.Peer{AfiSafis: afs(2, 1), State: &api.PeerState{RemoteCap: []*anypb.Any{mpCap, grCap}}}, want: 3},
		{name: "graceful restart here, not from the peer", peer: &api.Peer{GracefulRestart: &api.GracefulRestart{Enabled: true},
			AfiSafis: afs(2), State: &api.PeerState{RemoteCap: []*anypb.Any{mpCap}}}, want: 2},
		{name: "graceful restart on both sides: one End-of-RIB per family", peer: &api.Peer{GracefulRestart: &api.GracefulRestart{Enabled: true},
			AfiSafis: afs(3, 1), State: &api.PeerState{RemoteCap: []*anypb.Any{mpCap, grCap}}}, want: 2},
		{name: "withdrawn: only the End-of-RIB left", peer: &api.Peer{GracefulRestart: &api.GracefulRestart{Enabled: true},
			AfiSafis: afs(1), State: &api.PeerState{RemoteCap: []*anypb.Any{grCap}}}, want: 0},
		{name: "family not configured", peer: &api.Peer{GracefulRestart: &api.GracefulRestart{Enabled: true},
			AfiSafis: []*api.AfiSafi{{}}, State: &api.PeerState{RemoteCap: []*anypb.Any{grCap}}}, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := advertised(tc.peer); got != tc.want {
				t.Errorf("advertised = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestConnectRetry checks that a peer's connect retry reaches GoBGP's
// timers: DefaultConnectRetry when unset, the peer's own otherwise. The
// peers are on loopback addresses nothing listens on; the server does
// not listen.
func TestConnectRetry(t *testing.T) {
	ctx := context.Background()
	g := NewGoBGP(slog.New(slog.DiscardHandler))
	if err := g.Start(ctx, 64512, netip.MustParseAddr("127.0.0.1"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Stop(ctx) })
	peers := map[string]time.Duration{"127.0.0.2": 0, "127.0.0.3": 7 * time.Second}
	for addr, retry := range peers {
		p := Peer{Address: netip.MustParseAddr(addr), ASN: 64500, Port: 1, ConnectRetry: retry}
		if err := g.AddPeer(ctx, p, false); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]uint64{}
	err := g.srv.Load().ListPeer(ctx, &api.ListPeerRequest{}, func(p *api.Peer) {
		got[p.Conf.NeighborAddress] = p.Timers.Config.ConnectRetry
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"127.0.0.2": uint64(DefaultConnectRetry / time.Second), "127.0.0.3": 7}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("connect retry by peer = %v, want %v", got, want)
	}
}

// TestQuickRestart: a peer (a second GoBGP, on loopback) ends an
// established session with a Cease; the speaker's GoBGP deletes and
// re-adds the peer instead of holding it idle, says so with the
// NOTIFICATION, and the session comes back. A second Cease within
// restartDamping is left to GoBGP's idle hold, and says that; a third,
// restartDamping after the first (on g's clock), is quick again.
func TestQuickRestart(t *testing.T) {
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	router := server.NewBgpServer(server.LoggerOption(&logAdapter{l: slog.New(slog.DiscardHandler)}))
	go router.Serve()
	t.Cleanup(router.Stop)
	if err := router.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: 64500, RouterId: "127.0.0.1",
		ListenPort: int32(port), ListenAddresses: []string{"127.0.0.1"}}}); err != nil {
		t.Fatal(err)
	}
	if err := router.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
		Conf:      &api.PeerConf{NeighborAddress: "127.0.0.2", PeerAsn: 64512},
		Transport: &api.Transport{PassiveMode: true},
		// The router takes connections again 1 s after it resets the
		// session (GoBGP's default: 30 s).
		Timers: &api.Timers{Config: &api.TimersConfig{IdleHoldTimeAfterReset: 1}},
	}}); err != nil {
		t.Fatal(err)
	}

	var log syncbuf.Buffer
	g := NewGoBGP(slog.New(slog.NewTextHandler(&log, nil)))
	var skew atomic.Int64 // added to g's clock
	g.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	if err := g.Start(ctx, 64512, netip.MustParseAddr("127.0.0.2"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Stop(ctx) })
	peer := netip.MustParseAddr("127.0.0.1")
	if err := g.AddPeer(ctx, Peer{Address: peer, ASN: 64500, Port: port,
		LocalAddress: netip.MustParseAddr("127.0.0.2")}, false); err != nil {
		t.Fatal(err)
	}
	established := func(what string) {
		t.Helper()
		if err := testutil.Poll(30*time.Second, func() error {
			ps, err := g.Peers(ctx)
			if err != nil || len(ps) != 1 || !ps[0].Established {
				return fmt.Errorf("%s: peers %+v, %v", what, ps, err)
			}
			return nil
		}); err != nil {
			t.Fatalf("%v\nlog:\n%s", err, log.String())
		}
	}
	logged := func(what, substr string) {
		t.Helper()
		if err := testutil.Poll(30*time.Second, func() error {
			if !strings.Contains(log.String(), substr) {
				return fmt.Errorf("%s: no %q in the log", what, substr)
			}
			return nil
		}); err != nil {
			t.Fatalf("%v:\n%s", err, log.String())
		}
	}
	established("first session")
	reset := func() {
		t.Helper()
		if err := router.ResetPeer(ctx, &api.ResetPeerRequest{Address: "127.0.0.2", Communication: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	reset()
	logged("quick restart", `msg="bgp: the peer ended the session; reconnecting without GoBGP's 5 s idle hold" peer=127.0.0.1 notification="cease (6), administrative reset (4)"`)
	established("after the quick restart")
	reset()
	logged("damped", `msg="bgp: the peer ended the session again; GoBGP's 5 s idle hold applies" peer=127.0.0.1`)
	established("after the idle hold")
	if n := strings.Count(log.String(), "reconnecting without GoBGP's"); n != 1 {
		t.Errorf("%d quick restarts, want 1:\n%s", n, log.String())
	}
	skew.Store(int64(restartDamping))
	reset()
	if err := testutil.Poll(30*time.Second, func() error {
		if n := strings.Count(log.String(), "reconnecting without GoBGP's"); n != 2 {
			return fmt.Errorf("%d quick restarts, want 2 once restartDamping has passed", n)
		}
		return nil
	}); err != nil {
		t.Fatalf("%v:\n%s", err, log.String())
	}
	established("after the second quick restart")
}

// TestPeerNotification reads GoBGP's Peer Down reasons: only a
// NOTIFICATION received counts, described by name for a Cease.
func TestPeerNotification(t *testing.T) {
	for _, tc := range []struct {
		reason string
		want   string
		ok     bool
	}{
		{"notification-received code 6(cease) subcode 10(undefined)", "cease (6), BFD down (10)", true},
		{"notification-received code 6(cease) subcode 4(administrative reset)", "cease (6), administrative reset (4)", true},
		{"notification-received code 6(cease) subcode 0(undefined)", "cease (6), subcode 0", true},
		{"notification-received code 6(cease) subcode 11(undefined)", "cease (6), subcode 11", true},
		{"notification-received code 4(hold timer expired) subcode 0(undefined)", "code 4, subcode 0", true},
		{"notification-sent code 6(cease) subcode 2(administrative shutdown)", "", false},
		{"hold-timer-expired", "", false},
		{"read-failed", "", false},
	} {
		got, ok := peerNotification(tc.reason)
		if got != tc.want || ok != tc.ok {
			t.Errorf("peerNotification(%q) = %q, %v; want %q, %v", tc.reason, got, ok, tc.want, tc.ok)
		}
	}
}

// TestNotStarted: a speaker's status asked for before its Run has
// started the router (an agent's status Lease is written from another
// goroutine, and was held for ever so) answers that the router is not
// started; GoBGP itself would hold such a caller for ever.
func TestNotStarted(t *testing.T) {
	g := NewGoBGP(slog.New(slog.DiscardHandler))
	s, err := New(Options{Config: validConfig(), Eligibility: &fakeElig{ch: make(chan struct{})}, Router: g, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Status(t.Context())
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, errNotStarted) {
			t.Errorf("Status before Run = %v, want %v", err, errNotStarted)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Status before Run did not return within 30s")
	}
	if err := g.Stop(t.Context()); err != nil {
		t.Errorf("Stop before Start = %v, want nil", err)
	}
}

// TestWedged: a speaker on a real GoBGP whose server loop stops
// answering (held in its logger while it adds a peer). The call that
// wedged it returns an error naming it; the router and the speaker say
// they are wedged, and what; the status and the calls after answer at
// once with that error; a graceful stop ends, saying it could not
// withdraw. Once the loop runs again the router is not wedged any more.
// The peers are loopback addresses on a port nothing listens on; the
// server does not listen.
// holdable is a speaker running on a real GoBGP whose log handler can
// hold GoBGP's loop when it logs a peer's addition (testutil.LogHold),
// announcing one route to a peer on loopback that nothing answers for.
type holdable struct {
	cfg    Config
	log    *syncbuf.Buffer
	h      *testutil.LogHold
	g      *GoBGP
	s      *Speaker
	ctx    context.Context
	cancel context.CancelFunc
	runErr chan error
}

// runHoldable starts a holdable speaker whose calls wait answerWait, and
// returns once its route is announced.
func runHoldable(t *testing.T, answerWait time.Duration) *holdable {
	t.Helper()
	x := &holdable{log: &syncbuf.Buffer{}, runErr: make(chan error, 1)}
	x.h = testutil.NewLogHold(slog.NewTextHandler(x.log, nil), "gobgp: Add a peer configuration")
	t.Cleanup(x.h.Release)
	x.g = NewGoBGP(slog.New(x.h))
	x.g.answerWait = answerWait
	x.cfg = Config{ASN: 64512, RouterID: netip.MustParseAddr("127.0.0.1"),
		Peers:  []Peer{{Address: netip.MustParseAddr("127.0.0.2"), ASN: 64500, Port: 1}},
		Routes: []Route{{VIP: netip.MustParseAddr("198.19.0.10")}}}
	e := &fakeElig{ch: make(chan struct{}), v: []Verdict{{VIP: netip.MustParseAddr("198.19.0.10"), Eligible: true}}}
	var err error
	if x.s, err = New(Options{Config: x.cfg, Eligibility: e, Router: x.g, Logger: slog.New(x.h)}); err != nil {
		t.Fatal(err)
	}
	x.ctx, x.cancel = context.WithCancel(t.Context())
	t.Cleanup(x.cancel)
	go func() { x.runErr <- x.s.Run(x.ctx) }()
	testutil.Eventually(t, 30*time.Second, func() error {
		st, err := x.s.Status(x.ctx)
		if err != nil || len(st.Routes) != 1 || !st.Routes[0].Announced {
			return fmt.Errorf("status %+v, %v; want the route announced", st, err)
		}
		return nil
	})
	return x
}

func TestWedged(t *testing.T) {
	x := runHoldable(t, 200*time.Millisecond)
	cfg, log, h, g, s, ctx, cancel, runErr := x.cfg, x.log, x.h, x.g, x.s, x.ctx, x.cancel, x.runErr
	if err := s.Wedged(); err != nil {
		t.Fatalf("Wedged before any call hung: %v", err)
	}

	h.Arm()
	next := cfg
	next.Peers = append(slices.Clone(cfg.Peers), Peer{Address: netip.MustParseAddr("127.0.0.3"), ASN: 64500, Port: 1})
	err := s.Update(ctx, next)
	if !h.Held() {
		t.Fatalf("GoBGP did not log the peer's addition from its loop (Update: %v); the test holds nothing", err)
	}
	if err == nil || !strings.Contains(err.Error(), "AddPeer 127.0.0.3: GoBGP did not answer within 200ms") {
		t.Fatalf("Update while GoBGP's loop is held = %v, want AddPeer 127.0.0.3 not answered", err)
	}
	for name, err := range map[string]error{"router": g.Wedged(), "speaker": s.Wedged()} {
		if err == nil || !strings.Contains(err.Error(), "has not answered AddPeer 127.0.0.3 since") {
			t.Errorf("%s's Wedged = %v, want the AddPeer call named", name, err)
		}
	}
	if _, err := g.Peers(ctx); err == nil || !strings.Contains(err.Error(), "ListPeer not tried: GoBGP's server has not answered AddPeer") {
		t.Errorf("Peers while wedged = %v, want it not tried", err)
	}
	if st, err := s.Status(ctx); err == nil || !strings.Contains(err.Error(), "wedged") || !strings.Contains(st.Wedged, "has not answered AddPeer 127.0.0.3 since") {
		t.Errorf("Status while wedged = %v (wedged %q), want the wedge as its error and named", err, st.Wedged)
	}

	cancel()
	select {
	case err := <-runErr:
		if err == nil || !strings.Contains(err.Error(), "StopBgp not tried") {
			t.Errorf("Run's stop while wedged = %v, want StopBgp not tried", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of its context's end while GoBGP was wedged")
	}
	if !strings.Contains(log.String(), "bgp: stopping without withdrawing") {
		t.Errorf("the stop did not say it could not withdraw:\n%s", log.String())
	}

	h.Release()
	testutil.Eventually(t, 30*time.Second, func() error {
		if err := g.Wedged(); err != nil {
			return fmt.Errorf("Wedged after the loop was released: %v", err)
		}
		return nil
	})
	// Stop ran while wedged: stop the server now that it answers.
	if err := g.srv.Load().StopBgp(context.Background(), &api.StopBgpRequest{}); err != nil {
		t.Fatal(err)
	}
}

// TestWedgedFoundByStop: GoBGP's loop stops answering just before a
// graceful stop, so the router is not yet wedged when the stop begins;
// the stop's first call finds it so (after its wait), the withdrawals are
// not tried, and the stop says once that it could not withdraw.
func TestWedgedFoundByStop(t *testing.T) {
	// A bound wide enough that the test's own checks come before the
	// wedge even on a loaded machine; the stop then waits it out once.
	x := runHoldable(t, 5*time.Second)
	log, h, g, s, cancel, runErr := x.log, x.h, x.g, x.s, x.cancel, x.runErr

	// The held call is not the speaker's (its loop stays free to begin
	// the stop): another caller of the same router.
	h.Arm()
	updated := make(chan error, 1)
	go func() {
		updated <- g.AddPeer(context.Background(), Peer{Address: netip.MustParseAddr("127.0.0.3"), ASN: 64500, Port: 1}, false)
	}()
	testutil.Eventually(t, 30*time.Second, func() error {
		if !h.Held() {
			return errors.New("GoBGP has not logged the peer's addition from its loop yet")
		}
		return nil
	})
	if err := s.Wedged(); err != nil {
		t.Fatalf("wedged before the stop (the test wants the stop to find it): %v", err)
	}
	cancel()
	select {
	case err := <-runErr:
		if err == nil || !strings.Contains(err.Error(), "not tried") {
			t.Errorf("Run's stop = %v, want the calls after the wedge not tried", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of its context's end while GoBGP was held")
	}
	if n := strings.Count(log.String(), "bgp: stopping without withdrawing"); n != 1 {
		t.Errorf("the stop said %d times that it could not withdraw, want once:\n%s", n, log.String())
	}
	if err := <-updated; err == nil {
		t.Error("AddPeer while GoBGP's loop is held returned no error")
	}
	h.Release()
	testutil.Eventually(t, 30*time.Second, func() error { return g.Wedged() })
	if err := g.srv.Load().StopBgp(context.Background(), &api.StopBgpRequest{}); err != nil {
		t.Fatal(err)
	}
}
