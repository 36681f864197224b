package handoff

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"
)

// name is an abstract socket name of this test alone.
func name(t *testing.T) string {
	return fmt.Sprintf("@vipstack-test/%s/%d", t.Name(), os.Getpid())
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// waitState polls s until its successor is in want; bounded so a broken
// server ends the test.
func waitState(t *testing.T, s *Server, want State) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if s.Successor() == want {
			return
		}
	}
	t.Fatalf("successor is %v, want %v", s.Successor(), want)
}

// TestHandOver walks the protocol: the socket is a lock, a successor goes
// from starting to ready, the serving agent freezes and hands over, the
// successor takes the socket and acknowledges.
func TestHandOver(t *testing.T) {
	n := name(t)
	srv, err := Listen(n, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := Listen(n, quiet()); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Listen = %v, want ErrBusy", err)
	}
	if !Held(n) {
		t.Fatal("Held = false while a server holds the socket")
	}
	if st := srv.Successor(); st != None {
		t.Fatalf("successor before any dialled: %v", st)
	}
	froze := false
	if _, err := srv.HandOver(context.Background(), func() ([]string, error) { froze = true; return nil, nil }); err == nil || froze {
		t.Fatalf("HandOver without a successor = %v (froze %v), want an error before freezing", err, froze)
	}

	succ, err := Dial(n, 4242, "v9")
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, srv, Starting)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if st := srv.WaitReady(ctx); st != Starting {
		t.Fatalf("WaitReady with a starting successor and a short deadline = %v", st)
	}
	cancel()
	if err := succ.Ready(); err != nil {
		t.Fatal(err)
	}
	if st := srv.WaitReady(context.Background()); st != Ready {
		t.Fatalf("WaitReady = %v, want ready", st)
	}

	type result struct {
		h   Handover
		err error
	}
	got := make(chan result, 1)
	go func() {
		h, err := succ.Wait(context.Background())
		if err == nil {
			// The serving agent gave up the socket before it sent the
			// handover: the successor takes it, then acknowledges.
			var s2 *Server
			if s2, err = Acquire(context.Background(), n, quiet()); err == nil {
				defer s2.Close()
				err = succ.Ack()
			}
		}
		got <- result{h, err}
	}()
	frozen, err := srv.HandOver(context.Background(), func() ([]string, error) { return []string{"a/1/v4", "b/2/v6"}, nil })
	if err != nil || !frozen {
		t.Fatalf("HandOver = %v, %v; want frozen and acknowledged", frozen, err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("successor: %v", r.err)
	}
	if !slices.Equal(r.h.Masters, []string{"a/1/v4", "b/2/v6"}) || r.h.PID != os.Getpid() {
		t.Fatalf("successor got %+v", r.h)
	}
}

// TestSuccessorGone: a successor that goes away before it takes over is
// forgotten, and its own Wait reports ErrGone when the serving agent
// stops without a handover; a newer successor replaces an older one.
func TestSuccessorGone(t *testing.T) {
	n := name(t)
	srv, err := Listen(n, quiet())
	if err != nil {
		t.Fatal(err)
	}
	a, err := Dial(n, 1, "v1")
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, srv, Starting)
	a.Close()
	waitState(t, srv, None)

	b, err := Dial(n, 2, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Ready(); err != nil {
		t.Fatal(err)
	}
	waitState(t, srv, Ready)
	c, err := Dial(n, 3, "v1")
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, srv, Starting) // c replaced the ready b
	if _, err := b.Wait(context.Background()); !errors.Is(err, ErrGone) {
		t.Fatalf("replaced successor's Wait = %v, want ErrGone", err)
	}

	srv.Close()
	// A Close of the listener alone leaves connected successors waiting:
	// the process exit closes them. Closing c's peer end is that exit.
	srv.mu.Lock()
	srv.succ.conn.Close()
	srv.mu.Unlock()
	if _, err := c.Wait(context.Background()); !errors.Is(err, ErrGone) {
		t.Fatalf("Wait after the serving agent stopped = %v, want ErrGone", err)
	}
	if Held(n) {
		t.Fatal("Held = true after the server closed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s2, err := Acquire(ctx, n, quiet())
	if err != nil {
		t.Fatalf("Acquire of a free socket = %v", err)
	}
	s2.Close()
}

// TestWaitCancelled: a successor's Wait ends with its context.
func TestWaitCancelled(t *testing.T) {
	n := name(t)
	srv, err := Listen(n, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s, err := Dial(n, 1, "v1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v, want the context's error", err)
	}
}
