package agent

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/netif"
)

// probe is a request as the health server hands it to a check, cut off
// after d as a kubelet probe's timeout would.
func probe(t *testing.T, d time.Duration) *http.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1/readyz", nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// check names a check's result: "ok" or its error.
func check(f func(*http.Request) error, req *http.Request) string {
	if err := f(req); err != nil {
		return err.Error()
	}
	return "ok"
}

// TestHealthChecks follows one agent through its life with a real engine
// (an empty configuration: no instance, so no privilege needed): before
// the engine runs it is live but not ready, and says what it waits for;
// an engine whose loop takes no event (built, never run: as a wedged
// loop looks from outside) fails both checks; a running engine passes
// both; a stopped one fails both.
func TestHealthChecks(t *testing.T) {
	a := &Agent{}
	step := func(name, wantLive, wantReady string) {
		t.Helper()
		live, ready := check(a.Live, probe(t, 300*time.Millisecond)), check(a.Ready, probe(t, 300*time.Millisecond))
		if !strings.Contains(live, wantLive) || !strings.Contains(ready, wantReady) {
			t.Errorf("%s: live %q, ready %q; want them to contain %q and %q", name, live, ready, wantLive, wantReady)
		}
	}
	step("new", "ok", "the VRRP engine does not run yet: not started")
	a.setStage("waiting for the API server")
	step("waiting for the caches", "ok", "the VRRP engine does not run yet: waiting for the API server")

	eng, _, err := engine.New(engine.Options{Load: func() (*keepalived.Config, error) { return &keepalived.Config{}, nil },
		Ledger: netif.Ledger{Path: filepath.Join(t.TempDir(), "vips")}})
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.eng, a.stage = eng, ""
	a.mu.Unlock()
	step("engine loop not answering", "the VRRP engine's loop does not answer (wedged or stopped): engine loop did not answer: context deadline exceeded",
		"the VRRP engine does not answer: engine loop did not answer")

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	// The loop answers the pings queued above, then this one.
	step("engine running", "ok", "ok")

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("engine: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("engine did not stop within 30s")
	}
	step("engine stopped", "engine is not running", "engine is not running")
}
