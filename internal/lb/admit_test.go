package lb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// churn runs workers that each open up to rounds clients through addr one
// after another, read the backend's greeting and close. A worker stops at
// the first client the LB does not serve; stopOnRefusal says that is
// expected (a drain), otherwise it is an error. It returns the clients
// served.
func churn(addr string, workers, rounds int, stopOnRefusal bool) (int64, error) {
	var served atomic.Int64
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			errs <- func() error {
				for i := range rounds {
					c, err := net.DialTimeout("tcp", addr, bound)
					if err != nil {
						if stopOnRefusal {
							return nil
						}
						return fmt.Errorf("worker %d, client %d: %v", w, i, err)
					}
					c.SetDeadline(time.Now().Add(bound))
					line, err := bufio.NewReader(c).ReadString('\n')
					c.Close()
					switch {
					case err == nil && line == "a\n":
						served.Add(1)
					case err != nil && stopOnRefusal && !isTimeout(err):
						return nil // closed unserved: the drain
					default:
						return fmt.Errorf("worker %d, client %d: greeting %q, %v", w, i, line, err)
					}
				}
				return nil
			}()
		}()
	}
	var first error
	for range workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return served.Load(), first
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestMaxconnChurn: clients come and go through a frontend at maxconn,
// accepted by both event loops at once, so slots are given back while
// other clients are being queued. Every client is served, no more than
// maxconn are served at once, and every slot comes back. A slot freed
// just as a client joined the queue must still reach it: with maxconn 1
// and two clients at a time, a lost one leaves both waiting until their
// deadline (with more, the next release finds the slot free again).
func TestMaxconnChurn(t *testing.T) {
	for _, tc := range []struct{ maxconn, workers, rounds int }{
		{1, 2, 1500},
		{2, 16, 60},
	} {
		t.Run(fmt.Sprintf("maxconn=%d,clients=%d", tc.maxconn, tc.workers), func(t *testing.T) {
			a := startBackend(t, "a")
			cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
			cfg.MaxConn = tc.maxconn
			l := newLB(t, fakeClock(), cfg) // the queue never times out
			want := uint64(tc.workers * tc.rounds)
			served, err := churn(l.Addrs("fe")[0].String(), tc.workers, tc.rounds, false)
			if err != nil {
				t.Fatalf("%v (after %d clients were served)", err, served)
			}
			if uint64(served) != want {
				t.Fatalf("%d clients served, want %d", served, want)
			}
			fe := func() stats.FrontendStats { return l.Snapshot().Frontends[0] }
			eventually(t, "every slot to come back", func() bool { return fe().Sessions == 0 })
			s := fe()
			if s.TotalSessions != want || s.MaxSessions > int64(tc.maxconn) || s.Queued != 0 || s.MaxQueued == 0 {
				t.Errorf("after the churn: total %d (want %d), max sessions %d (want at most %d), queued %d (want 0), max queued %d (want some)",
					s.TotalSessions, want, s.MaxSessions, tc.maxconn, s.Queued, s.MaxQueued)
			}
			if g := l.gcount.Load(); g != 0 {
				t.Errorf("global count %d after every client left, want 0", g)
			}
		})
	}
}

// TestShutdownDuringChurn: a drain that begins while clients keep
// arriving ends once the last admitted one leaves, with or without a
// maxconn (without one, clients are admitted without the frontend's
// lock, and the drain must still see each of them).
func TestShutdownDuringChurn(t *testing.T) {
	for _, maxconn := range []int{0, 3} {
		t.Run(fmt.Sprintf("maxconn=%d", maxconn), func(t *testing.T) {
			a := startBackend(t, "a")
			cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
			cfg.MaxConn = maxconn
			l := newLB(t, fakeClock(), cfg) // its cleanup's Shutdown is a no-op after the one below
			addr := l.Addrs("fe")[0].String()
			type result struct {
				served int64
				err    error
			}
			res := make(chan result, 1)
			go func() {
				n, err := churn(addr, 12, 400, true)
				res <- result{n, err}
			}()
			eventually(t, "clients to be served", func() bool { return l.Snapshot().Frontends[0].TotalSessions > 50 })
			done := make(chan error, 1)
			go func() { done <- l.Shutdown(context.Background()) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Shutdown: %v", err)
				}
			case <-time.After(bound):
				t.Fatalf("Shutdown did not return: %+v", l.Snapshot().Frontends[0])
			}
			r := <-res
			if r.err != nil {
				t.Fatal(r.err)
			}
			s := l.Snapshot().Frontends[0]
			if s.Sessions != 0 || s.Queued != 0 || l.gcount.Load() != 0 {
				t.Errorf("after Shutdown: sessions %d, queued %d, global count %d, want none", s.Sessions, s.Queued, l.gcount.Load())
			}
			t.Logf("%d clients served before and during the drain", r.served)
		})
	}
}

// acceptedFD returns the server end of a fresh loopback connection as a
// non-blocking descriptor the caller owns, as accept4 gives one to a
// loop, with the client's address and the client's end.
func acceptedFD(t *testing.T) (int, netip.AddrPort, *client) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), bound)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(bound))
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	file, err := s.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	fd, err := unix.Dup(int(file.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	return fd, netip.MustParseAddrPort(s.RemoteAddr().String()), &client{TCPConn: c.(*net.TCPConn), r: bufio.NewReader(c)}
}

// admitOnLoop admits fd to f as a loop does after accepting it.
func admitOnLoop(l *LB, f *frontend, fd int, peer netip.AddrPort) <-chan struct{} {
	lp := l.loops[0]
	lp.mu.Lock()
	w := f.admit(fd, peer, lp)
	lp.unlock()
	return w
}

// TestSlotFreedWhileQueueing: at maxconn 1, a client finds the only slot
// taken; before it joins the queue, the connection holding the slot ends
// and finds nobody queued. The client must get that slot at once: no
// later release would give it one.
func TestSlotFreedWhileQueueing(t *testing.T) {
	a := startBackend(t, "a")
	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	cfg.MaxConn = 1
	hooks := new(testHooks)
	l := newLBOpts(t, Options{Clock: fakeClock(), hooks: hooks}, cfg)
	f := l.frontends["fe"]
	if f.tryAcquire() == 0 { // a client holds the only slot
		t.Fatal("the only slot of an idle frontend was not free")
	}
	hooks.queueing = func(f *frontend) {
		if done, next := f.putSlotServe(); done || len(next) != 0 {
			t.Errorf("the release found a drain ended (%v) or %d queued clients, want neither", done, len(next))
		}
	}
	fd, peer, cl := acceptedFD(t)
	if w := admitOnLoop(l, f, fd, peer); w != nil {
		t.Error("admit asked the accept loop to wait with one client queued at most")
	}
	if g := cl.greeting(t); g != "a" {
		t.Fatalf("the client got %q, want a: it was left in the queue with the slot free (%+v)", g, l.Snapshot().Frontends[0])
	}
	if s := l.Snapshot().Frontends[0]; s.Sessions != 1 || s.Queued != 0 || s.MaxQueued != 1 {
		t.Errorf("sessions %d, queued %d, max queued %d, want 1, 0 and 1", s.Sessions, s.Queued, s.MaxQueued)
	}
}

// TestDrainBeganDuringAdmit: a drain begins after a client took a slot
// without the frontend's lock and before it was started. The drain sees
// the slot taken, so the client must give it back and be closed, and the
// drain end with it.
func TestDrainBeganDuringAdmit(t *testing.T) {
	a := startBackend(t, "a")
	hooks := new(testHooks)
	l := newLBOpts(t, Options{Clock: fakeClock(), hooks: hooks}, tcpConfig(lbconfig.RoundRobin, srv("a", a)))
	f := l.frontends["fe"]
	var drained <-chan struct{}
	hooks.admitted = func(f *frontend) { drained = f.drain() }
	fd, peer, cl := acceptedFD(t)
	admitOnLoop(l, f, fd, peer)
	if drained == nil {
		t.Fatal("the client was not admitted without the lock")
	}
	select {
	case <-drained:
	default:
		t.Error("the drain did not end when the client admitted during it gave its slot back")
	}
	if !cl.closed(t) {
		t.Error("a client admitted after the drain began was served")
	}
	if s := l.Snapshot().Frontends[0]; s.Sessions != 0 || s.TotalSessions != 0 || s.MaxSessions != 0 || l.gcount.Load() != 0 {
		t.Errorf("sessions %d, total %d, max %d, global count %d, want none", s.Sessions, s.TotalSessions, s.MaxSessions, l.gcount.Load())
	}
}
