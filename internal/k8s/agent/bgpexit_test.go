package agent

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/bgp"
)

// TestExitCause: a speaker stops with bgp.ErrRestarting (routes left to
// the routers' graceful restart) only when the agent handed the node over
// and every peer has graceful restart; otherwise it withdraws first.
func TestExitCause(t *testing.T) {
	peer := func(a string, gr time.Duration) bgp.Peer {
		return bgp.Peer{Address: netip.MustParseAddr(a), ASN: 64500, GracefulRestart: gr}
	}
	for _, tc := range []struct {
		name       string
		handedOver bool
		peers      []bgp.Peer
		want       error
	}{
		{"handed over, every peer with graceful restart", true, []bgp.Peer{peer("198.18.1.1", 120*time.Second), peer("198.18.2.1", time.Minute)}, bgp.ErrRestarting},
		{"handed over, one peer without", true, []bgp.Peer{peer("198.18.1.1", 120*time.Second), peer("198.18.2.1", 0)}, nil},
		{"released, not handed over", false, []bgp.Peer{peer("198.18.1.1", 120*time.Second)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Agent{log: slog.New(slog.DiscardHandler)}
			b := newBGPRunner(a)
			b.cfg = bgp.Config{ASN: 64512, Peers: tc.peers}
			b.stopped(tc.handedOver)
			b.stopped(!tc.handedOver) // a second word is dropped: the first decides
			if got := b.exitCause(); !errors.Is(got, tc.want) || (tc.want == nil && got != nil) {
				t.Errorf("exitCause() = %v, want %v", got, tc.want)
			}
		})
	}
}

// wedgedRouter is a bgp.Router whose server no longer answers: Wedged
// says so (as bgp.GoBGP's does once a call has waited its answerWait).
type wedgedRouter struct{ err error }

func (r wedgedRouter) Start(context.Context, uint32, netip.Addr, int) error           { return nil }
func (r wedgedRouter) AddPeer(context.Context, bgp.Peer, bool) error                  { return r.err }
func (r wedgedRouter) DeletePeer(context.Context, netip.Addr) error                   { return r.err }
func (r wedgedRouter) SetPeerEnabled(context.Context, netip.Addr, bool, string) error { return r.err }
func (r wedgedRouter) Announce(context.Context, bgp.Route, netip.Addr, uint32) error  { return r.err }
func (r wedgedRouter) Withdraw(context.Context, netip.Prefix) error                   { return r.err }
func (r wedgedRouter) Peers(context.Context) ([]bgp.RouterPeer, error)                { return nil, r.err }
func (r wedgedRouter) Stop(context.Context) error                                     { return r.err }
func (r wedgedRouter) Wedged() error                                                  { return r.err }

// TestLiveBGPWedged: the liveness check fails, naming the speaker and
// why, while the running speaker's router is wedged, and passes while no
// speaker runs (the engine not started: live, waiting for the API).
func TestLiveBGPWedged(t *testing.T) {
	a := &Agent{log: slog.New(slog.DiscardHandler)}
	a.bgp = newBGPRunner(a)
	req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
	if err := a.Live(req); err != nil {
		t.Fatalf("Live with no speaker and no engine = %v, want nil", err)
	}
	wedge := errors.New("GoBGP's server has not answered ListPeer since 2026-12-03T09:30:33Z (30s): it is wedged")
	cfg := bgp.Config{ASN: 64512, RouterID: netip.MustParseAddr("198.18.1.10"),
		Peers: []bgp.Peer{{Address: netip.MustParseAddr("198.18.1.1"), ASN: 64500}}}
	sp, err := bgp.New(bgp.Options{Config: cfg, Eligibility: newVerdictSource(), Router: wedgedRouter{wedge}, Logger: a.log})
	if err != nil {
		t.Fatal(err)
	}
	a.bgp.sp = sp
	err = a.Live(req)
	if err == nil || !errors.Is(err, wedge) || !strings.Contains(err.Error(), "agent: the BGP speaker: ") {
		t.Errorf("Live with a wedged speaker = %v, want the speaker's wedge", err)
	}
}
