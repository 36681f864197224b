package agent_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/k8s/k8slab"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestHealthEndpoint runs `vipstack agent --health-addr` as the DaemonSet
// does (under its supervisor, with only NET_ADMIN and NET_RAW) against a
// real API server, and reads /healthz and /readyz as the kubelet's probes
// do. Serving: both answer 200. Restarted while the node cannot reach the
// API server: live (a restart would not help) but not ready, and
// /readyz/engine says why, for as long as the API stays away. The API
// back: ready.
func TestHealthEndpoint(t *testing.T) {
	testnet.RequireRoot(t)
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	l := k8slab.Start(ctx, t, k8slab.Options{Nodes: 1, Prefix: "vsHl", Bin: bin, Advert: 200 * time.Millisecond,
		Caps: true, Supervisor: true})
	n := l.Nodes[0]
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- agent %s log (tail):\n%s", n.Name, testutil.Tail(n.Log(), 30))
		}
	})
	want := func(path string, code int, body string) func() error {
		return func() error {
			got, b, err := n.Health(ctx, path)
			if err != nil {
				return err
			}
			if got != code || !strings.Contains(b, body) {
				return fmt.Errorf("%s: %d %q, want %d and a body containing %q", path, got, b, code, body)
			}
			return nil
		}
	}

	// k8slab.Start returned once the agent was master of its own instance.
	for _, path := range []string{"/healthz", "/readyz", "/readyz/engine"} {
		if err := want(path, http.StatusOK, "ok")(); err != nil {
			t.Errorf("serving: %v", err)
		}
	}

	if err := n.KillAgent(); err != nil {
		t.Fatal(err)
	}
	n.SetAPI(false)
	if err := n.StartAgent(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, want("/readyz/engine", http.StatusInternalServerError, "the VRRP engine does not run yet"))
	// Sampled for a while (the agent's own retries run meanwhile): the
	// answers must not change while the API server stays out of reach.
	for range 10 {
		for _, c := range []struct {
			path string
			code int
			body string
		}{
			{"/healthz", http.StatusOK, "ok"},
			{"/readyz", http.StatusInternalServerError, "[-]engine failed"},
			{"/readyz/engine", http.StatusInternalServerError, "the VRRP engine does not run yet"},
		} {
			if err := want(c.path, c.code, c.body)(); err != nil {
				t.Errorf("API out of reach: %v", err)
			}
		}
		time.Sleep(300 * time.Millisecond) // sampling an outside process over time, not waiting for a timer of ours
	}

	n.SetAPI(true)
	testutil.Eventually(t, 60*time.Second, want("/readyz", http.StatusOK, "ok"))
	if err := want("/healthz", http.StatusOK, "ok")(); err != nil {
		t.Errorf("API back: %v", err)
	}
}
