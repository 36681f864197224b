package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/bgp"
	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/track"
)

// journal records, in order, what the runner asks of the BGP
// implementation and of the interface holding the VIPs.
type journal struct {
	mu    sync.Mutex
	calls []string
}

func (j *journal) rec(format string, a ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls = append(j.calls, fmt.Sprintf(format, a...))
}

func (j *journal) take() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	c := j.calls
	j.calls = nil
	return c
}

type journalRouter struct{ j *journal }

func (r journalRouter) Start(context.Context, uint32, netip.Addr, int) error { return nil }
func (r journalRouter) AddPeer(_ context.Context, p bgp.Peer, _ bool) error {
	r.j.rec("add-peer %v", p.Address)
	return nil
}
func (r journalRouter) DeletePeer(_ context.Context, a netip.Addr) error {
	r.j.rec("delete-peer %v", a)
	return nil
}
func (r journalRouter) SetPeerEnabled(context.Context, netip.Addr, bool, string) error { return nil }
func (r journalRouter) Announce(_ context.Context, rt bgp.Route, _ netip.Addr, _ uint32) error {
	r.j.rec("announce %v", rt.Prefix())
	return nil
}
func (r journalRouter) Withdraw(_ context.Context, p netip.Prefix) error {
	r.j.rec("withdraw %v", p)
	return nil
}
func (r journalRouter) Peers(context.Context) ([]bgp.RouterPeer, error) { return nil, nil }
func (r journalRouter) Stop(context.Context) error                      { return nil }

type journalAddrs struct{ j *journal }

func (a journalAddrs) AddVIP(v netif.VIP) error {
	a.j.rec("add-vip %v %s", v.Prefix, v.Dev)
	return nil
}
func (a journalAddrs) DelVIP(v netif.VIP) error {
	a.j.rec("del-vip %v %s", v.Prefix, v.Dev)
	return nil
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// passing is a check that always passes.
type passing struct{}

func (passing) Probe(context.Context) error { return nil }

// TestBGPRunnerUpdate applies a reloaded spec to a running runner: the
// new VIP is on the loopback before it is announced, the removed one is
// withdrawn before it leaves the loopback, and only the changed peer is
// touched.
func TestBGPRunnerUpdate(t *testing.T) {
	synctest.Test(t, testBGPRunnerUpdate)
}

func testBGPRunnerUpdate(t *testing.T) {
	v1, v2 := netip.MustParseAddr("198.19.0.5"), netip.MustParseAddr("198.19.0.6")
	p1, p2 := netip.MustParseAddr("198.18.1.1"), netip.MustParseAddr("198.18.2.1")
	spec := func(peers []bgp.Peer, vips ...netip.Addr) *cluster.BGPSpec {
		s := &cluster.BGPSpec{Config: bgp.Config{ASN: 64512, RouterID: netip.MustParseAddr("198.18.1.10"), Peers: peers},
			Checks: map[netip.Addr][]string{}, Role: map[netip.Addr]string{}}
		for _, v := range vips {
			s.Config.Routes = append(s.Config.Routes, bgp.Route{VIP: v})
			s.Role[v] = "api"
		}
		return s
	}
	j := &journal{}
	first := spec([]bgp.Peer{{Address: p1, ASN: 64500}, {Address: p2, ASN: 64500}}, v1)
	elig := &bgpEligibility{spec: first, changed: make(chan struct{}, 1)}
	sp, err := bgp.New(bgp.Options{Config: first.Config, Eligibility: elig, Router: journalRouter{j}, Logger: quietLog(), StopTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ledger := netif.Ledger{Path: filepath.Join(t.TempDir(), "bgp.vips")}
	r := &BGPRunner{spec: first, log: quietLog(), elig: elig, speaker: sp, addrs: journalAddrs{j}, closeFn: func() {}, done: make(chan error, 1), ledger: ledger}
	ctx, cancel := context.WithCancelCause(context.Background())
	r.cancel = cancel
	go func() { r.done <- r.run(ctx) }()
	probe := func(cluster.CheckSpec) track.Check { return passing{} }
	elig.startChecks(clock.Real{}, nil, probe)
	synctest.Wait()
	if d := cmp.Diff([]string{"announce 198.19.0.5/32", "add-peer 198.18.1.1", "add-peer 198.18.2.1"}, j.take()); d != "" {
		t.Fatalf("start (-want +got):\n%s", d)
	}

	next := spec([]bgp.Peer{{Address: p1, ASN: 64500}, {Address: p2, ASN: 64501}}, v2)
	if err := r.update(clock.Real{}, next, nil, nil, probe); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	want := []string{
		"add-vip 198.19.0.6/32 lo",
		"delete-peer 198.18.2.1", "add-peer 198.18.2.1",
		"announce 198.19.0.6/32", "withdraw 198.19.0.5/32",
		"del-vip 198.19.0.5/32 lo",
	}
	if d := cmp.Diff(want, j.take()); d != "" {
		t.Errorf("reload (-want +got):\n%s", d)
	}
	// The ledger holds what is on lo, for the supervisor after a crash.
	if got, err := ledger.Load(); err != nil || len(got) != 1 || got[0].Prefix.Addr() != v2 {
		t.Errorf("ledger after the reload: %v, %v; want %v on lo", got, err, v2)
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"withdraw 198.19.0.6/32", "del-vip 198.19.0.6/32 lo"}, j.take()); d != "" {
		t.Errorf("stop (-want +got):\n%s", d)
	}
	if got, err := ledger.Load(); err != nil || len(got) != 0 {
		t.Errorf("ledger after the stop: %v, %v; want empty", got, err)
	}
}

// TestBGPRunnerRecord: the VIPs on lo are recorded for the supervisor,
// but not when a peer has graceful restart (the router keeps forwarding
// to the node across a crash, and the VIPs must answer).
func TestBGPRunnerRecord(t *testing.T) {
	v := netif.VIP{Prefix: netip.MustParsePrefix("198.19.0.5/32"), Dev: "lo"}
	for _, tc := range []struct {
		name string
		gr   time.Duration
		want int
	}{
		{name: "no graceful restart", want: 1},
		{name: "graceful restart", gr: 120 * time.Second, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ledger := netif.Ledger{Path: filepath.Join(t.TempDir(), "bgp.vips")}
			spec := &cluster.BGPSpec{Config: bgp.Config{Peers: []bgp.Peer{{Address: netip.MustParseAddr("198.18.1.1"), ASN: 64500, GracefulRestart: tc.gr}}}}
			r := &BGPRunner{log: quietLog(), ledger: ledger}
			r.record(spec, []netif.VIP{v})
			if got, err := ledger.Load(); err != nil || len(got) != tc.want {
				t.Errorf("ledger: %v, %v; want %d VIPs", got, err, tc.want)
			}
		})
	}
}

// TestBGPRunnerLeave: a stop for a restart (--bgp-stop-keeps-routes)
// withdraws nothing and leaves the VIP on lo, where a stop withdraws and
// removes it.
func TestBGPRunnerLeave(t *testing.T) {
	for _, tc := range []struct {
		name  string
		leave bool
		want  []string
	}{
		{name: "stop", want: []string{"withdraw 198.19.0.5/32", "del-vip 198.19.0.5/32 lo"}},
		{name: "restart", leave: true, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				j := &journal{}
				r, _ := runTestRunner(t, journalRouter{j}, j)
				if d := cmp.Diff([]string{"announce 198.19.0.5/32", "add-peer 198.18.1.1"}, j.take()); d != "" {
					t.Fatalf("start (-want +got):\n%s", d)
				}
				stop := r.Stop
				if tc.leave {
					stop = r.Leave
				}
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tc.want, j.take()); d != "" {
					t.Errorf("%s (-want +got):\n%s", tc.name, d)
				}
			})
		})
	}
}

// brokenRouter is a BGP implementation whose peer additions fail (an
// implementation that stopped answering), and that says it is wedged
// once wedged is set.
type brokenRouter struct {
	journalRouter
	addErr error
	wedged error
}

func (r brokenRouter) AddPeer(context.Context, bgp.Peer, bool) error { return r.addErr }
func (r brokenRouter) Wedged() error                                 { return r.wedged }

// TestBGPRunnerStopped: a speaker that stops on its own (its first peer
// cannot be added) leaves the node announcing nothing; the status says why
// and makes the node not live (503 on its status endpoint), and so does
// a wedged BGP implementation. A speaker stopped by Stop is not counted.
func TestBGPRunnerStopped(t *testing.T) {
	for _, tc := range []struct {
		name        string
		router      brokenRouter
		wantStopped string // in the status's Stopped, "" for none
		wantWedged  string
		wantLive    string // in Unhealthy, "" for live
	}{
		{name: "working, then stopped by Stop", router: brokenRouter{}},
		{name: "a peer cannot be added",
			router:      brokenRouter{addErr: errors.New("AddPeer 198.18.1.1: GoBGP did not answer within 10s")},
			wantStopped: "bgp: peer 198.18.1.1: AddPeer 198.18.1.1: GoBGP did not answer within 10s",
			wantLive:    "bgp: the speaker stopped: bgp: peer 198.18.1.1: AddPeer"},
		{name: "wedged while running",
			router:     brokenRouter{wedged: errors.New("GoBGP's server has not answered ListPeer since 2026-12-03T12:00:00Z (11s): it is wedged")},
			wantWedged: "has not answered ListPeer", wantLive: "bgp: GoBGP's server has not answered ListPeer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				j := &journal{}
				tc.router.j = j
				r, spec := runTestRunner(t, tc.router, j)
				st := r.Status()
				if !strings.Contains(st.Stopped, tc.wantStopped) || (tc.wantStopped == "") != (st.Stopped == "") ||
					!strings.Contains(st.Wedged, tc.wantWedged) || (tc.wantWedged == "") != (st.Wedged == "") {
					t.Errorf("status: stopped %q, wedged %q; want %q, %q", st.Stopped, st.Wedged, tc.wantStopped, tc.wantWedged)
				}
				for _, rt := range st.Routes {
					if tc.wantStopped != "" && (rt.Announced || !strings.HasPrefix(rt.Reason, "not known: the speaker stopped")) {
						t.Errorf("route %+v of a stopped speaker, want not announced, not known", rt)
					}
				}
				ns := Status{Node: "m1", BGP: st}
				if got := ns.Unhealthy(); !strings.HasPrefix(got, tc.wantLive) || (tc.wantLive == "") != (got == "") {
					t.Errorf("node status Unhealthy = %q, want %q", got, tc.wantLive)
				}
				var b strings.Builder
				WriteBGP(&b, st)
				if (tc.wantLive != "") != strings.Contains(b.String(), "NOT LIVE: "+tc.wantLive) {
					t.Errorf("the status table says, want NOT LIVE only when not live:\n%s", b.String())
				}
				if tc.wantStopped != "" {
					// A reload reaches a runner whose speaker is gone.
					err := r.update(clock.Real{}, spec, nil, nil, func(cluster.CheckSpec) track.Check { return passing{} })
					if err == nil || !strings.Contains(err.Error(), "bgp: the speaker stopped (bgp: peer 198.18.1.1") {
						t.Errorf("update after the speaker stopped = %v, want it said", err)
					}
				}
				err := r.Stop()
				if (tc.wantStopped != "") != (err != nil) {
					t.Errorf("Stop = %v, want the speaker's error only when it stopped on its own", err)
				}
				if tc.wantStopped == "" && r.Status().Stopped != "" {
					t.Errorf("after Stop the status says the speaker stopped on its own: %q", r.Status().Stopped)
				}
			})
		})
	}
}

// runTestRunner runs, in a synctest bubble, a runner announcing
// 198.19.0.5 to 198.18.1.1 through router, with its VIPs in j and a
// passing check, and returns it with its spec once it has settled.
func runTestRunner(t *testing.T, router bgp.Router, j *journal) (*BGPRunner, *cluster.BGPSpec) {
	t.Helper()
	v := netip.MustParseAddr("198.19.0.5")
	spec := &cluster.BGPSpec{Config: bgp.Config{ASN: 64512, RouterID: netip.MustParseAddr("198.18.1.10"),
		Peers: []bgp.Peer{{Address: netip.MustParseAddr("198.18.1.1"), ASN: 64500}}, Routes: []bgp.Route{{VIP: v}}},
		Checks: map[netip.Addr][]string{}, Role: map[netip.Addr]string{v: "api"}}
	elig := &bgpEligibility{spec: spec, changed: make(chan struct{}, 1)}
	sp, err := bgp.New(bgp.Options{Config: spec.Config, Eligibility: elig, Router: router, Logger: quietLog(), StopTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r := &BGPRunner{spec: spec, log: quietLog(), elig: elig, speaker: sp, addrs: journalAddrs{j}, closeFn: func() {}, done: make(chan error, 1)}
	ctx, cancel := context.WithCancelCause(context.Background())
	r.cancel = cancel
	go func() { r.done <- r.run(ctx) }()
	elig.startChecks(clock.Real{}, nil, func(cluster.CheckSpec) track.Check { return passing{} })
	synctest.Wait()
	return r, spec
}
