package lb

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

func TestRoundRobinThroughLB(t *testing.T) {
	a, b, c := startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c")
	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a), srv("b", b), srv("c", c))
	cfg.Backends[0].Servers[0].Weight = 2
	l := newLB(t, fakeClock(), cfg)
	var got strings.Builder
	for range 8 {
		cl := dial(t, l, "fe")
		got.WriteString(cl.greeting(t))
		cl.echo(t, "hello")
		cl.Close()
	}
	// SWRR with weights 2 1 1: a b c a, a b c a.
	if diff := cmp.Diff("abcaabca", got.String()); diff != "" {
		t.Errorf("servers in order (-want +got):\n%s", diff)
	}
}

func TestBytesCounted(t *testing.T) {
	a := startBackend(t, "a")
	l := newLB(t, fakeClock(), tcpConfig(lbconfig.RoundRobin, srv("a", a)))
	cl := dial(t, l, "fe")
	cl.greeting(t)                      // 2 bytes out
	cl.echo(t, strings.Repeat("x", 99)) // 100 in, 100 out
	cl.CloseWrite()
	if !cl.closed(t) {
		t.Fatal("backend did not close after the client half-closed")
	}
	eventually(t, "the connection to end", func() bool { return l.serverStats(t, "be", "a").Sessions == 0 })
	s := l.serverStats(t, "be", "a")
	f := l.Snapshot().Frontends[0]
	got := []uint64{s.BytesIn, s.BytesOut, f.BytesIn, f.BytesOut, s.TotalSessions, f.TotalSessions}
	if diff := cmp.Diff([]uint64{100, 102, 100, 102, 1, 1}, got); diff != "" {
		t.Errorf("server in/out, frontend in/out, sessions (-want +got):\n%s", diff)
	}
}

// TestHalfClose: the client sends and half-closes; the server reads to the
// end, then still sends a large reply and closes; the client reads it all.
func TestHalfClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	reply := make([]byte, 4<<20)
	rand.Read(reply)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		req, _ := io.ReadAll(c) // until the client's FIN comes through
		c.Write([]byte(strings.ToUpper(string(req))))
		c.Write(reply)
	}()
	back := &backend{addr: addrPort(t, ln.Addr())}
	l := newLB(t, fakeClock(), tcpConfig(lbconfig.RoundRobin, srv("s", back)))
	cl := dial(t, l, "fe")
	io.WriteString(cl, "request")
	if err := cl.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(cl)
	if err != nil {
		t.Fatalf("reading the reply: %v", err)
	}
	want := append([]byte("REQUEST"), reply...)
	if !bytes.Equal(got, want) {
		t.Fatalf("client read %d bytes, want %d (the upper-cased request and the whole reply)", len(got), len(want))
	}
}

// TestServerHalfClose: the server half-closes first; the client can still
// send, and the server reads it.
func TestServerHalfClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	gotByServer := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "bye")
		c.(*net.TCPConn).CloseWrite()
		b, _ := io.ReadAll(c)
		gotByServer <- string(b)
	}()
	l := newLB(t, fakeClock(), tcpConfig(lbconfig.RoundRobin, srv("s", &backend{addr: addrPort(t, ln.Addr())})))
	cl := dial(t, l, "fe")
	b, err := io.ReadAll(cl)
	if err != nil || string(b) != "bye" {
		t.Fatalf("client read %q, %v; want \"bye\" then EOF", b, err)
	}
	io.WriteString(cl, "late data")
	cl.CloseWrite()
	select {
	case s := <-gotByServer:
		if s != "late data" {
			t.Errorf("server read %q, want \"late data\"", s)
		}
	case <-time.After(bound):
		t.Fatal("server never saw the client's end")
	}
}

// TestRetriesOnClosedPort: one server's port is closed and nothing checks
// it; every client still gets through, on another server.
func TestRetriesOnClosedPort(t *testing.T) {
	a, c := startBackend(t, "a"), startBackend(t, "c")
	dead := deadBackend(t, "dead")
	l := newLB(t, fakeClock(), tcpConfig(lbconfig.RoundRobin, srv("a", a), srv("dead", dead), srv("c", c)))
	failed := 0
	served := map[string]int{}
	for range 100 {
		cl := dial(t, l, "fe")
		name := cl.greeting(t)
		if name == "" {
			failed++
		}
		served[name]++
		cl.Close()
	}
	if failed != 0 || served["a"]+served["c"] != 100 {
		t.Fatalf("%d of 100 connections failed; served %v", failed, served)
	}
	d := l.serverStats(t, "be", "dead")
	if d.ConnectErrors == 0 || d.Retries != d.ConnectErrors || !d.Up {
		t.Errorf("dead server: %d connect errors, %d retries, up=%v; want errors, each retried, still UP (no passive checks)", d.ConnectErrors, d.Retries, d.Up)
	}
	if n := l.Snapshot().Frontends[0].NoServer; n != 0 {
		t.Errorf("NoServer = %d, want 0", n)
	}
}

// failedClient sends one client to an LB whose only server ("dead" of
// backend "be") refuses connections, with retries, and waits until the
// client is closed and counted as having found no server. It returns the
// LB and its configuration.
func failedClient(t *testing.T, retries int) (*LB, *lbconfig.Config) {
	t.Helper()
	dead := deadBackend(t, "dead")
	cfg := tcpConfig(lbconfig.RoundRobin, srv("dead", dead))
	cfg.Retries = retries
	l := newLB(t, fakeClock(), cfg)
	cl := dial(t, l, "fe")
	if !cl.closed(t) {
		t.Fatal("client was not closed")
	}
	eventually(t, "the failure to be counted", func() bool { return l.Snapshot().Frontends[0].NoServer == 1 })
	return l, cfg
}

func TestNoServerUpClosesClient(t *testing.T) {
	l, _ := failedClient(t, 2)
	// One try and two retries, all on the only server.
	if d := l.serverStats(t, "be", "dead"); d.ConnectErrors != 3 || d.Retries != 2 {
		t.Errorf("dead: %d errors, %d retries; want 3 and 2", d.ConnectErrors, d.Retries)
	}
}

// TestMaxconnQueue: with maxconn 1 the second client waits until the
// first leaves; a third that waits longer than timeout queue is closed.
func TestMaxconnQueue(t *testing.T) {
	a := startBackend(t, "a")
	clk := fakeClock()
	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	cfg.MaxConn = 1
	cfg.Timeouts.Queue = 30 * time.Second
	l := newLB(t, clk, cfg)
	fe := func() stats.FrontendStats { return l.Snapshot().Frontends[0] }

	first := dial(t, l, "fe")
	if g := first.greeting(t); g != "a" {
		t.Fatalf("first client got %q", g)
	}
	second := dial(t, l, "fe")
	eventually(t, "the second client to queue", func() bool { return fe().Queued == 1 })
	clk.Advance(29 * time.Second) // still within timeout queue
	if s := fe(); s.Sessions != 1 || s.Queued != 1 {
		t.Fatalf("sessions %d queued %d, want 1 and 1", s.Sessions, s.Queued)
	}
	first.Close()
	if g := second.greeting(t); g != "a" {
		t.Fatalf("queued client got %q once the slot freed, want a", g)
	}
	second.echo(t, "served")

	third := dial(t, l, "fe")
	// Queued, and its queue timer armed (the only timer of this LB: no
	// checks, no idle timeouts); qcur is stored just before the timer.
	eventually(t, "the third client to queue", func() bool { return fe().Queued == 1 && clk.Pending() == 1 })
	clk.Advance(30 * time.Second)
	if !third.closed(t) {
		t.Fatal("the third client was not closed after timeout queue")
	}
	if s := fe(); s.QueueTimeouts != 1 || s.Queued != 0 || s.Sessions != 1 || s.MaxQueued != 1 {
		t.Errorf("after the queue timeout: %+v", s)
	}
	second.echo(t, "still served")
}

// TestGlobalMaxconn: at the global cap the LB stops accepting; the next
// client is accepted when a connection ends.
func TestGlobalMaxconn(t *testing.T) {
	a := startBackend(t, "a")
	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	cfg.MaxConn, cfg.GlobalMaxConn = 100, 1
	l := newLB(t, fakeClock(), cfg)
	first := dial(t, l, "fe")
	first.greeting(t)
	second := dial(t, l, "fe") // completes in the kernel's backlog
	eventually(t, "the accept loop to wait", func() bool { return l.gwaiting.Load() })
	if s := l.Snapshot().Frontends[0]; s.TotalSessions != 1 || s.Queued != 0 {
		t.Fatalf("at the global cap: %+v, want 1 session and nothing queued", s)
	}
	first.Close()
	if g := second.greeting(t); g != "a" {
		t.Fatalf("second client got %q once the first left", g)
	}
}

// TestIdleTimeout: a tunnel with no traffic for timeout tunnel is closed;
// one with traffic is not.
func TestIdleTimeout(t *testing.T) {
	a := startBackend(t, "a")
	clk := fakeClock()
	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	cfg.Timeouts.Client, cfg.Timeouts.Server, cfg.Timeouts.Tunnel = time.Minute, time.Minute, 10*time.Second
	l := newLB(t, clk, cfg)
	busy, quiet := dial(t, l, "fe"), dial(t, l, "fe")
	busy.greeting(t)
	quiet.greeting(t)
	eventually(t, "both relays to start", func() bool { return l.serverStats(t, "be", "a").Sessions == 2 })
	for range 6 { // 30 s, with traffic every 5 s on busy only
		busy.echo(t, "ping")
		clk.Advance(5 * time.Second)
	}
	if !quiet.closed(t) {
		t.Fatal("the idle connection is still open after 30s")
	}
	busy.echo(t, "still here")
	if n := l.idleCloses.Load(); n != 1 {
		t.Errorf("idle closes = %d, want 1", n)
	}
}

// TestIdleTimeoutOnTime: an idle connection is closed when its timeout
// has passed since its last byte, not up to half a timeout later (the
// idle check once ran every half timeout and counted from the check that
// first saw the connection quiet).
func TestIdleTimeoutOnTime(t *testing.T) {
	a := startBackend(t, "a")
	clk := fakeClock()
	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	cfg.Timeouts.Tunnel = 10 * time.Second
	l := newLB(t, clk, cfg)
	cl := dial(t, l, "fe")
	cl.greeting(t) // the last byte, at the fake clock's start
	eventually(t, "the idle timer", func() bool { return clk.Pending() == 1 })
	clk.Advance(5 * time.Second)
	clk.Advance(5*time.Second - time.Millisecond)
	if n := l.idleCloses.Load(); n != 0 {
		t.Fatalf("closed %v after the last byte, timeout tunnel 10s", 10*time.Second-time.Millisecond)
	}
	clk.Advance(time.Millisecond)
	if n := l.idleCloses.Load(); n != 1 {
		t.Fatalf("idle closes = %d at 10s after the last byte, want 1 (timeout tunnel 10s)", n)
	}
	if !cl.closed(t) {
		t.Fatal("the client is still open")
	}
}

// TestReloadKeepsConnection: a connection survives a reload that removes
// its server; new connections use the new set.
func TestReloadKeepsConnection(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	l := newLB(t, fakeClock(), tcpConfig(lbconfig.RoundRobin, srv("a", a)))
	addrBefore := l.Addrs("fe")[0].String()
	long := dial(t, l, "fe")
	if g := long.greeting(t); g != "a" {
		t.Fatalf("got %q", g)
	}
	cfg := tcpConfig(lbconfig.RoundRobin, srv("b", b))
	cfg.Frontends[0].Binds = []lbconfig.Bind{loopbackBind()} // same bind key: the listener stays
	if err := l.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	if got := l.Addrs("fe")[0].String(); got != addrBefore {
		t.Fatalf("listener moved from %s to %s on reload", addrBefore, got)
	}
	long.echo(t, "after reload")
	for range 3 {
		cl := dial(t, l, "fe")
		if g := cl.greeting(t); g != "b" {
			t.Fatalf("new connection after reload went to %q, want b", g)
		}
		cl.Close()
	}
	long.echo(t, "still alive")
}

// TestReloadKeepsServerState: a server that keeps its name and address
// keeps its counters; a renamed one starts afresh.
func TestReloadKeepsServerState(t *testing.T) {
	a := startBackend(t, "a")
	l := newLB(t, fakeClock(), tcpConfig(lbconfig.RoundRobin, srv("a", a)))
	cl := dial(t, l, "fe")
	cl.greeting(t)
	cl.Close()
	eventually(t, "the session to end", func() bool { return l.serverStats(t, "be", "a").Sessions == 0 })
	cfg := tcpConfig(lbconfig.LeastConn, srv("a", a), srv("a2", a))
	if err := l.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	if got := l.serverStats(t, "be", "a").TotalSessions; got != 1 {
		t.Errorf("a's sessions after reload = %d, want 1 (kept)", got)
	}
	if got := l.serverStats(t, "be", "a2").TotalSessions; got != 0 {
		t.Errorf("a2's sessions = %d, want 0", got)
	}
}

func TestApplyErrors(t *testing.T) {
	a := startBackend(t, "a")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenBind := lbconfig.Bind{Addr: addrPort(t, taken.Addr())}
	shared, err := (&net.ListenConfig{Control: relay.ListenControl(-1)}).Listen(context.Background(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	sharedBind := lbconfig.Bind{Addr: addrPort(t, shared.Addr())}
	sharedWild := lbconfig.Bind{Addr: netip.AddrPortFrom(netip.IPv4Unspecified(), sharedBind.Addr.Port())}
	inUse := func(b lbconfig.Bind) string {
		return fmt.Sprintf("another socket listens on %s (accepted: an address and port no other process listens on; "+
			"vipstack does not share them, as haproxy would with SO_REUSEPORT: stop the other listener, haproxy for one, first)", b.Addr)
	}

	tests := []struct {
		name   string
		mutate func(*lbconfig.Config)
		want   string
	}{
		{name: "unknown backend", mutate: func(c *lbconfig.Config) { c.Frontends[0].Backend = "nope" },
			want: `lb: apply: frontend fe (haproxy.cfg:12): default_backend "nope": no such backend`},
		{name: "bind twice", mutate: func(c *lbconfig.Config) {
			c.Frontends = append(c.Frontends, lbconfig.Frontend{Name: "fe2", Binds: []lbconfig.Bind{takenBind}, Backend: "be"})
			c.Monitors = append(c.Monitors, lbconfig.Monitor{Name: "mon", Binds: []lbconfig.Bind{takenBind}, URI: "/"})
		}, want: `lb: apply: listen mon: bind ` + taken.Addr().String() + ` is already used by "fe2"`},
		{name: "duplicate server", mutate: func(c *lbconfig.Config) {
			c.Backends[0].Servers = append(c.Backends[0].Servers, c.Backends[0].Servers[0])
		}, want: `lb: apply: backend be: duplicate server name "a"`},
		{name: "port in use", mutate: func(c *lbconfig.Config) {
			c.Frontends = append(c.Frontends, lbconfig.Frontend{Name: "fe2", Binds: []lbconfig.Bind{takenBind}, Backend: "be"})
		}, want: "lb: apply: frontend fe2/bind 0: " + taken.Addr().String() + ": listen tcp4 " + taken.Addr().String() + ": bind: address already in use: " + inUse(takenBind)},
		// haproxy sets SO_REUSEPORT on its listeners, as vipstack does:
		// the kernel would let both listen and split the clients.
		{name: "port of a SO_REUSEPORT listener", mutate: func(c *lbconfig.Config) {
			c.Frontends = append(c.Frontends, lbconfig.Frontend{Name: "fe2", Binds: []lbconfig.Bind{sharedBind}, Backend: "be"})
		}, want: "lb: apply: frontend fe2/bind 0: " + shared.Addr().String() + ": listen tcp4 " + shared.Addr().String() + ": bind: address already in use: " + inUse(sharedBind)},
		{name: "monitor on the port of a SO_REUSEPORT listener", mutate: func(c *lbconfig.Config) {
			c.Monitors = append(c.Monitors, lbconfig.Monitor{Name: "mon", Binds: []lbconfig.Bind{sharedBind}, URI: "/"})
		}, want: "lb: apply: listen mon/bind 0: " + shared.Addr().String() + ": listen tcp4 " + shared.Addr().String() + ": bind: address already in use: " + inUse(sharedBind)},
		{name: "wildcard on the port of a SO_REUSEPORT listener", mutate: func(c *lbconfig.Config) {
			c.Frontends = append(c.Frontends, lbconfig.Frontend{Name: "fe2", Binds: []lbconfig.Bind{sharedWild}, Backend: "be"})
		}, want: "lb: apply: frontend fe2/bind 0: " + sharedWild.Addr.String() + ": listen tcp4 " + sharedWild.Addr.String() + ": bind: address already in use: " + inUse(sharedWild)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLB(t, fakeClock(), tcpConfig(lbconfig.RoundRobin, srv("a", a)))
			before := l.Addrs("fe")
			cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
			cfg.Source = map[string]string{"frontend fe": "haproxy.cfg:12"}
			tt.mutate(cfg)
			err := l.Apply(cfg)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("Apply (-want +got):\n%s", diff)
			}
			// The old configuration is still in force.
			if diff := cmp.Diff(before, l.Addrs("fe")); diff != "" {
				t.Errorf("listeners changed by a failed Apply (-want +got):\n%s", diff)
			}
			cl := dial(t, l, "fe")
			if g := cl.greeting(t); g != "a" {
				t.Errorf("after a failed Apply a client got %q, want a", g)
			}
		})
	}
}

// TestShutdownDrains: Shutdown stops accepting, waits for the open
// connection and returns once it ends.
func TestShutdownDrains(t *testing.T) {
	a := startBackend(t, "a")
	l := newLB(t, fakeClock(), tcpConfig(lbconfig.RoundRobin, srv("a", a)))
	addr := l.Addrs("fe")[0].String()
	cl := dial(t, l, "fe")
	cl.greeting(t)
	done := make(chan error, 1)
	go func() { done <- l.Shutdown(context.Background()) }()
	eventually(t, "the listener to close", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a connection open", err)
	default:
	}
	cl.echo(t, "draining but alive")
	cl.CloseWrite()
	cl.closed(t)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(bound):
		t.Fatal("Shutdown did not return after the last connection ended")
	}
}

// TestShutdownDeadline: connections still open when the context ends are
// closed.
func TestShutdownDeadline(t *testing.T) {
	a := startBackend(t, "a")
	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	cfg.MaxConn = 1
	l := newLB(t, fakeClock(), cfg)
	cl := dial(t, l, "fe")
	cl.greeting(t)
	queued := dial(t, l, "fe")
	eventually(t, "the second client to queue", func() bool { return l.Snapshot().Frontends[0].Queued == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Shutdown(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Fatalf("Shutdown = %v, want context.Canceled", err)
		}
	case <-time.After(bound):
		t.Fatal("Shutdown did not return")
	}
	if !cl.closed(t) || !queued.closed(t) {
		t.Fatal("connections left open after the drain deadline")
	}
}

func TestDualStackBind(t *testing.T) {
	if ln, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	} else {
		ln.Close()
	}
	a := startBackend(t, "a")
	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	cfg.Frontends[0].Binds = []lbconfig.Bind{{Addr: addrPort(t, &net.TCPAddr{IP: net.IPv6unspecified}), V4V6: true}}
	l := newLB(t, fakeClock(), cfg)
	port := l.Addrs("fe")[0].(*net.TCPAddr).Port
	for _, host := range []string{"127.0.0.1", "::1"} {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(host, itoa(port)), bound)
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		cl := &client{TCPConn: c.(*net.TCPConn)}
		cl.r = newReader(c)
		if g := cl.greeting(t); g != "a" {
			t.Errorf("via %s got %q", host, g)
		}
		c.Close()
	}
}

// TestEchoStress relays many concurrent transfers of mixed sizes (small
// ones stay in copy mode, large ones switch to splice) and checks every
// byte comes back.
func TestEchoStress(t *testing.T) {
	a := startBackend(t, "a")
	l := newLB(t, fakeClock(), tcpConfig(lbconfig.RoundRobin, srv("a", a)))
	sizes := []int{1, 100, 16<<10 - 1, 16 << 10, 16<<10 + 1, 300 << 10, 2 << 20}
	errs := make(chan error, 64)
	for i := range 32 {
		go func() {
			errs <- func() error {
				size := sizes[i%len(sizes)]
				cl := dial(t, l, "fe")
				defer cl.Close()
				if g := cl.greeting(t); g != "a" {
					return fmt.Errorf("greeting %q", g)
				}
				data := make([]byte, size)
				rand.Read(data)
				go func() {
					cl.Write(data)
					cl.CloseWrite()
				}()
				got, err := io.ReadAll(cl.r)
				if err != nil {
					return fmt.Errorf("size %d: %v", size, err)
				}
				if !bytes.Equal(got, data) {
					return fmt.Errorf("size %d: got %d bytes back, not the same", size, len(got))
				}
				return nil
			}()
		}()
	}
	for range 32 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	eventually(t, "every connection to end", func() bool { return l.serverStats(t, "be", "a").Sessions == 0 })
	var want uint64
	for i := range 32 {
		want += uint64(sizes[i%len(sizes)])
	}
	if s := l.serverStats(t, "be", "a"); s.BytesIn != want || s.BytesOut != want+2*32 {
		t.Errorf("bytes in %d out %d, want %d and %d", s.BytesIn, s.BytesOut, want, want+64)
	}
}

// TestClientResetWhileServerSends: a client that resets its connection
// while the server streams to it ends the relay: the server's side is
// closed (its writes fail), the session is no longer counted, and the LB
// goes on serving.
func TestClientResetWhileServerSends(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	serverDone := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			serverDone <- err
			return
		}
		c.SetDeadline(time.Now().Add(bound))
		chunk := make([]byte, 64<<10)
		for { // until the LB closes its side
			if _, err := c.Write(chunk); err != nil {
				c.Close()
				serverDone <- err
				break
			}
		}
		// The next client is greeted and let go.
		if c, err = ln.Accept(); err == nil {
			io.WriteString(c, "again\n")
			c.Close()
		}
	}()
	back := &backend{addr: addrPort(t, ln.Addr())}
	l := newLB(t, fakeClock(), tcpConfig(lbconfig.RoundRobin, srv("s", back)))
	cl := dial(t, l, "fe")
	if _, err := io.ReadFull(cl, make([]byte, 1<<20)); err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	cl.SetLinger(0) // close sends RST
	cl.Close()
	select {
	case err := <-serverDone:
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the server was still writing after %v: the LB kept relaying to a reset client", bound)
		}
	case <-time.After(bound + time.Second):
		t.Fatal("the server's writes never failed")
	}
	eventually(t, "the session to end", func() bool { return l.serverStats(t, "be", "s").Sessions == 0 })
	if got := dial(t, l, "fe").greeting(t); got != "again" {
		t.Fatalf("after the reset, a new client got %q, want the server's second greeting", got)
	}
}

// TestRebindWidensOwnPort: a reload that turns `bind 127.0.0.1:P` into
// `bind :P` applies: the check that no other process listens on a new
// port does not take the LB's own listener on P for one.
func TestRebindWidensOwnPort(t *testing.T) {
	a := startBackend(t, "a")
	first := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	first.Frontends[0].Binds = []lbconfig.Bind{widenableBind(t)}
	l := newLB(t, fakeClock(), first)
	port := addrPort(t, l.Addrs("fe")[0]).Port()
	for _, addr := range []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv4Unspecified()} {
		cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
		cfg.Frontends[0].Binds = []lbconfig.Bind{{Addr: netip.AddrPortFrom(addr, port)}}
		if err := l.Apply(cfg); err != nil {
			t.Fatalf("Apply with bind %s: %v", cfg.Frontends[0].Binds[0].Addr, err)
		}
		cl := dial(t, l, "fe")
		if g := cl.greeting(t); g != "a" {
			t.Errorf("with bind %s a client got %q, want a", cfg.Frontends[0].Binds[0].Addr, g)
		}
	}
}

// silentBackend reads its connections without ever answering: a server
// slow to answer.
func silentBackend(t *testing.T) *backend {
	return startBackendFunc(t, "silent", func(c net.Conn) { io.Copy(io.Discard, c) })
}

// TestIdleTimeoutPerSide: without `timeout tunnel`, a request waiting
// for a slow answer may wait `timeout server`, not the smaller `timeout
// client` (haproxy delivers the answer, measured: client 2s, server 6s,
// an answer after 3.5s); once the server has spoken, the client's
// silence is bounded by `timeout client`.
func TestIdleTimeoutPerSide(t *testing.T) {
	// One idle check per second (half the 2 s client timeout); the fake
	// clock runs each within Advance.
	tick := func(clk *clock.Fake, d time.Duration) {
		for range int(d / time.Second) {
			clk.Advance(time.Second)
		}
	}
	t.Run("waiting for the server", func(t *testing.T) {
		s := silentBackend(t)
		clk := fakeClock()
		cfg := tcpConfig(lbconfig.RoundRobin, srv("s", s))
		cfg.Timeouts.Client, cfg.Timeouts.Server = 2*time.Second, 6*time.Second
		l := newLB(t, clk, cfg)
		cl := dial(t, l, "fe")
		if _, err := io.WriteString(cl, "request\n"); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the request to reach the server", func() bool { return l.serverStats(t, "be", "s").BytesIn == 8 })
		tick(clk, 4*time.Second) // past timeout client, within timeout server
		if n := l.idleCloses.Load(); n != 0 {
			t.Fatalf("closed after 4 s waiting for the server's answer (timeout server 6 s): %d idle closes", n)
		}
		tick(clk, 4*time.Second) // 8 s: past timeout server
		if !cl.closed(t) {
			t.Fatal("still open 8 s after the request with timeout server 6 s")
		}
		if n := l.idleCloses.Load(); n != 1 {
			t.Errorf("idle closes = %d, want 1", n)
		}
	})
	t.Run("waiting for the client", func(t *testing.T) {
		a := startBackend(t, "a") // speaks first: its greeting
		clk := fakeClock()
		cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
		cfg.Timeouts.Client, cfg.Timeouts.Server = 2*time.Second, 6*time.Second
		l := newLB(t, clk, cfg)
		cl := dial(t, l, "fe")
		cl.greeting(t)
		cl.echo(t, "ping") // the server's echo is the last word
		tick(clk, 3*time.Second)
		if !cl.closed(t) {
			t.Fatal("still open 3 s after the server's answer with timeout client 2 s")
		}
	})
}
