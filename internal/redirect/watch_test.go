package redirect

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/clock"
)

// TestWatch walks the monitor through 200, one failure (no change), two
// (unhealthy), a refused connection and 200 again, on a fake clock.
func TestWatch(t *testing.T) {
	var code atomic.Int32
	code.Store(200)
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		polls.Add(1)
		w.WriteHeader(int(code.Load()))
	}))
	defer srv.Close()
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	var mu sync.Mutex
	var got []bool
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Watch(ctx, clk, srv.URL+"/haproxy_ready", time.Second, func(h bool) {
			mu.Lock()
			got = append(got, h)
			mu.Unlock()
		}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	// waitPolls waits for the n-th poll to have been answered and its
	// timer set (the fake clock has a timer waiting).
	waitPolls := func(n int32) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for polls.Load() < n || clk.Pending() == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for poll %d (at %d)", n, polls.Load())
			}
			time.Sleep(time.Millisecond)
		}
	}
	steps := []struct {
		code int32
		want []bool
	}{
		{200, []bool{true}},              // first poll: healthy
		{503, []bool{true}},              // one failure: no change
		{503, []bool{true, false}},       // the second: unhealthy
		{200, []bool{true, false, true}}, // one 200: healthy again
	}
	for i, s := range steps {
		code.Store(s.code)
		if i > 0 {
			clk.Advance(time.Second)
		}
		waitPolls(int32(i + 1))
		mu.Lock()
		g := append([]bool(nil), got...)
		mu.Unlock()
		if diff := cmp.Diff(s.want, g); diff != "" {
			t.Fatalf("after poll %d (%d): verdicts (-want +got):\n%s", i+1, s.code, diff)
		}
	}
	cancel()
	clk.Advance(time.Second)
	<-done
}

// TestWatchFirstFailure: a monitor that is down from the start is called
// unhealthy at the first poll (nothing to keep).
func TestWatchFirstFailure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	defer srv.Close()
	got := make(chan bool, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Watch(ctx, clock.NewFake(time.Unix(0, 0)), srv.URL, time.Second, func(h bool) { got <- h }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	select {
	case h := <-got:
		if h {
			t.Error("first verdict healthy for a 503")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no verdict after the first poll")
	}
}
