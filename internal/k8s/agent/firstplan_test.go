package agent

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// flakyReader fails its first fails List calls as an API server that
// just started again fails a discovery call.
type flakyReader struct {
	client.Reader
	fails int

	mu    sync.Mutex
	calls int
}

func (r *flakyReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.mu.Lock()
	r.calls++
	n := r.calls
	r.mu.Unlock()
	if n <= r.fails {
		return errors.New("failed to get server groups: unknown")
	}
	return r.Reader.List(ctx, list, opts...)
}

func testAgent(t *testing.T, r client.Reader) *Agent {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if fr, ok := r.(*flakyReader); ok {
		fr.Reader = fake.NewClientBuilder().WithScheme(s).Build()
	}
	return &Agent{opts: Options{Node: "n1", Clock: clock.Real{}, Interfaces: HostInterfaces{}}, log: slog.New(slog.DiscardHandler),
		reader: r, m: newAgentMetrics(nil)}
}

// TestFirstPlanRetries: the first plan fails while the API server is not
// fully back; the agent tries again, 100 ms and then 200 ms later, rather
// than exit (its supervisor would release the node's addresses and start
// it again), and gives up only when it is stopped.
func TestFirstPlanRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &flakyReader{fails: 2}
		a := testAgent(t, r)
		start := time.Now()
		if err := a.firstPlan(t.Context()); err != nil {
			t.Fatalf("firstPlan: %v", err)
		}
		if got, want := time.Since(start), 300*time.Millisecond; got != want {
			t.Errorf("first plan after %v, want %v (two retries, 100 and 200 ms)", got, want)
		}
		if a.cfg == nil || r.calls < 3 {
			t.Errorf("no plan (cfg %v) or too few lists (%d)", a.cfg, r.calls)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		a := testAgent(t, &flakyReader{fails: 1 << 30})
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		err := a.firstPlan(ctx)
		if err == nil || !strings.Contains(err.Error(), "first plan: list VIPGroups: failed to get server groups") {
			t.Errorf("firstPlan stopped: %v, want the last error", err)
		}
		if a.stage == "" || !strings.Contains(a.stage, "failed to get server groups") {
			t.Errorf("stage %q, want the error (Ready says it)", a.stage)
		}
	})
}
