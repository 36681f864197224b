package controller_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/testutil"
)

// freePort returns a loopback address no one listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// get fetches http://addr/path and returns the status code and body.
func get(addr, path string) (int, string, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b), err
}

// runWithHealth runs a controller (leader election as deployed, or not)
// with --health-addr on a free port, as cfg's user, and returns the port.
// With waitStop the test's end waits (bounded) for it to stop.
func runWithHealth(t *testing.T, cfg *rest.Config, elect, waitStop bool) string {
	t.Helper()
	addr := freePort(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr, err := controller.NewManager(cfg, controller.ManagerOptions{Logger: log, LeaderElection: elect,
		LeaderElectionNamespace: systemNS, HealthAddr: addr,
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := controller.Setup(mgr, controller.Options{Logger: log}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if !waitStop {
			return
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("controller manager did not stop within 30s")
		}
	})
	return addr
}

func wantHealth(addr, path string, code int, body string) func() error {
	return func() error {
		got, b, err := get(addr, path)
		if err != nil {
			return err
		}
		if got != code || !strings.Contains(b, body) {
			return fmt.Errorf("%s: %d %q, want %d and a body containing %q", path, got, b, code, body)
		}
		return nil
	}
}

// TestHealthEndpoints reads the controller's /healthz and /readyz as the
// kubelet's probes do. Two replicas as the ServiceAccount of
// deploy/rbac.yaml: the leader and the one waiting for the Lease are both
// live and ready. A controller whose ServiceAccount may list nothing (its
// RBAC missing) is live but never ready: its informers cannot sync.
func TestHealthEndpoints(t *testing.T) {
	h := newHarness(t)
	for i := range 2 {
		addr := runWithHealth(t, h.controllerConfig(), true, true)
		for _, path := range []string{"/healthz", "/readyz", "/readyz/informers"} {
			testutil.Eventually(t, 30*time.Second, wantHealth(addr, path, http.StatusOK, "ok"))
		}
		t.Logf("replica %d: live and ready", i)
	}

	nobody := h.env.ConfigAs("system:serviceaccount:"+systemNS+":nobody", "system:serviceaccounts", "system:serviceaccounts:"+systemNS)
	// A manager whose informers never synced does not return from Start
	// once cancelled (seen with controller-runtime v0.24.1: still running
	// 180 s later); the test does not wait for it.
	addr := runWithHealth(t, nobody, false, false)
	testutil.Eventually(t, 30*time.Second, wantHealth(addr, "/healthz", http.StatusOK, "ok"))
	// Sampled for a while: the informers keep being refused, and the
	// answers must not change.
	for range 5 {
		for _, c := range []struct {
			path string
			code int
			body string
		}{
			{"/healthz", http.StatusOK, "ok"},
			{"/readyz", http.StatusInternalServerError, "[-]informers failed"},
			{"/readyz/informers", http.StatusInternalServerError, "the informers have not synced with the API server yet"},
		} {
			if err := wantHealth(addr, c.path, c.code, c.body)(); err != nil {
				t.Errorf("without RBAC: %v", err)
			}
		}
		time.Sleep(500 * time.Millisecond) // sampling another goroutine's server over time, not waiting for a timer of ours
	}
}
