package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
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

// failingRouter is a bgp.Router whose AddPeer fails while fail is set,
// wedged while wedged is set; it counts the starts.
type failingRouter struct {
	starts atomic.Int32
	fail   atomic.Bool
	wedged atomic.Pointer[error]
}

func (r *failingRouter) Start(context.Context, uint32, netip.Addr, int) error {
	r.starts.Add(1)
	return nil
}
func (r *failingRouter) AddPeer(_ context.Context, p bgp.Peer, _ bool) error {
	if r.fail.Load() {
		return fmt.Errorf("AddPeer %v refused", p.Address)
	}
	return nil
}
func (r *failingRouter) DeletePeer(context.Context, netip.Addr) error                   { return nil }
func (r *failingRouter) SetPeerEnabled(context.Context, netip.Addr, bool, string) error { return nil }
func (r *failingRouter) Announce(context.Context, bgp.Route, netip.Addr, uint32) error  { return nil }
func (r *failingRouter) Withdraw(context.Context, netip.Prefix) error                   { return nil }
func (r *failingRouter) Peers(context.Context) ([]bgp.RouterPeer, error) {
	return []bgp.RouterPeer{{Address: netip.MustParseAddr("198.18.1.1"), State: "established", Established: true}}, nil
}
func (r *failingRouter) Stop(context.Context) error { return nil }
func (r *failingRouter) Wedged() error {
	if e := r.wedged.Load(); e != nil {
		return *e
	}
	return nil
}

// TestBGPRunnerRestarts: a speaker that stops on its own is started
// again after 1, 2, 4, ... s (bgp.RestartDelay), not in a loop, and
// after restartGiveUp stops in a row only once its configuration
// changes; meanwhile the status says it stopped and when it starts
// again, and the agent stays live. Once a start succeeds the stop is
// forgotten. A speaker that stopped with its GoBGP wedged is not
// replaced (a second GoBGP beside the held one would open second
// sessions): Live fails, even once the call has been answered, and the
// status plans no start.
func TestBGPRunnerRestarts(t *testing.T) {
	config := func(peer string) bgp.Config {
		return bgp.Config{ASN: 64512, RouterID: netip.MustParseAddr("198.18.1.10"),
			Peers: []bgp.Peer{{Address: netip.MustParseAddr(peer), ASN: 64500}}}
	}
	start := func(t *testing.T, r *failingRouter) (*Agent, context.CancelFunc, chan struct{}) {
		a := &Agent{log: slog.New(slog.DiscardHandler), bgpP: BGPPlan{Config: config("198.18.1.1"), Services: map[netip.Addr]string{}}}
		a.bgp = newBGPRunner(a)
		a.bgp.newSpeaker = func(o bgp.Options) (*bgp.Speaker, error) {
			o.Router, o.StopTimeout = r, time.Millisecond
			return bgp.New(o)
		}
		ctx, cancel := context.WithCancel(t.Context())
		ran := make(chan struct{})
		go func() { defer close(ran); a.bgp.run(ctx) }()
		a.bgp.stopped(false)
		return a, cancel, ran
	}
	req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
	t.Run("retried", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := &failingRouter{}
			r.fail.Store(true)
			a, cancel, ran := start(t, r)
			time.Sleep(10 * time.Second)
			synctest.Wait()
			// Starts at 0, 1, 3 and 7 s; the next at 15.
			if n := r.starts.Load(); n != 4 {
				t.Errorf("%d starts in 10 s of a speaker that fails each time, want 4 (after 1, 2 and 4 s)", n)
			}
			st := a.bgp.status()
			if want := "at " + time.Now().Add(5*time.Second).UTC().Format(time.RFC3339); st == nil || !strings.Contains(st.Stopped, "AddPeer 198.18.1.1 refused") || st.Retry != want {
				t.Errorf("status while stopped: %+v; want the stop and the next start %q", st, want)
			}
			if u := st.Unhealthy(); u != "" {
				t.Errorf("Unhealthy while a start is planned = %q, want live", u)
			}
			if err := a.Live(req); err != nil {
				t.Errorf("Live while a start is planned = %v, want nil", err)
			}
			r.fail.Store(false)
			time.Sleep(6 * time.Second)
			synctest.Wait()
			if n := r.starts.Load(); n != 5 {
				t.Errorf("%d starts, want 5", n)
			}
			if st := a.bgp.status(); st == nil || st.Stopped != "" || st.Retry != "" || len(st.Peers) != 1 {
				t.Errorf("status once started again: %+v; want the running speaker, no stop", st)
			}
			cancel()
			<-ran
		})
	})
	t.Run("given-up-until-changed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := &failingRouter{}
			r.fail.Store(true)
			a, cancel, ran := start(t, r)
			time.Sleep(time.Hour)
			synctest.Wait()
			// At 0, 1, 3, 7, 15 and 31 s, then none.
			if n := r.starts.Load(); n != restartGiveUp {
				t.Errorf("%d starts in an hour of a speaker that fails each time, want %d", n, restartGiveUp)
			}
			st := a.bgp.status()
			if st == nil || st.Retry != "when the node's BGPPeers or BGP groups change" || st.Unhealthy() != "" {
				t.Errorf("status after giving up: %+v; want the stop, a start on a change, live", st)
			}
			if err := a.Live(req); err != nil {
				t.Errorf("Live after giving up = %v, want nil: a restart of the agent would meet the same refusal", err)
			}
			r.fail.Store(false)
			a.mu.Lock()
			a.bgpP.Config = config("198.18.2.1")
			a.mu.Unlock()
			a.bgp.kick <- struct{}{}
			synctest.Wait()
			if n := r.starts.Load(); n != restartGiveUp+1 {
				t.Errorf("%d starts after the configuration changed, want %d", n, restartGiveUp+1)
			}
			if st := a.bgp.status(); st == nil || st.Stopped != "" {
				t.Errorf("status after the new configuration started: %+v", st)
			}
			cancel()
			<-ran
		})
	})
	t.Run("wedged", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := &failingRouter{}
			wedge := errors.New("GoBGP's server has not answered AddPeer 198.18.1.1 since 2026-12-03T15:00:00Z (10s): it is wedged")
			r.wedged.Store(&wedge)
			r.fail.Store(true)
			a, cancel, ran := start(t, r)
			time.Sleep(2 * time.Minute)
			synctest.Wait()
			if n := r.starts.Load(); n != 1 {
				t.Errorf("%d starts in 2 minutes after a stop with GoBGP wedged, want 1", n)
			}
			st := a.bgp.status()
			if st == nil || st.Stopped == "" || st.Retry != "" || !strings.HasPrefix(st.Unhealthy(), "bgp: the speaker stopped: ") {
				t.Errorf("status: %+v; want stopped, no start planned, not live", st)
			}
			if err := a.Live(req); err == nil || !strings.Contains(err.Error(), "wedged") {
				t.Errorf("Live = %v, want the wedge", err)
			}
			// The held call is answered at last: that server is still
			// not stopped, and nothing replaced it.
			r.wedged.Store(nil)
			time.Sleep(time.Minute)
			synctest.Wait()
			if err := a.Live(req); err == nil || !strings.Contains(err.Error(), "only a restart of the agent") {
				t.Errorf("Live once the wedged call was answered = %v, want still failing", err)
			}
			if n := r.starts.Load(); n != 1 {
				t.Errorf("%d starts, want still 1", n)
			}
			cancel()
			<-ran
		})
	})
}
