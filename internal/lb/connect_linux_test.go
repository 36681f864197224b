package lb

import (
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/healthcheck"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/syncbuf"
)

// blackhole listens on loopback with a full accept queue, so the kernel
// drops SYNs and a connect to it neither succeeds nor fails until its
// timeout (a server that died without a reset, as a powered-off host).
func blackhole(t *testing.T) netip.AddrPort {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(sa.(*unix.SockaddrInet4).Port))
	filler, err := net.DialTimeout("tcp", addr.String(), bound) // takes the one queue slot
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { filler.Close() })
	return addr
}

// TestConnectCancelledWhenServerGoesDown: a client whose connect hangs on
// a server that stops answering is sent to another server as soon as that
// server is marked DOWN, not after `timeout connect`.
func TestConnectCancelledWhenServerGoesDown(t *testing.T) {
	good := startBackend(t, "good")
	cfg := tcpConfig(lbconfig.RoundRobin, srv("hole", &backend{addr: blackhole(t)}), srv("good", good))
	cfg.Timeouts.Connect = time.Hour
	l := newLB(t, fakeClock(), cfg)
	var stuck *client
	for range 2 { // round robin: one of two clients goes to the hole
		c := dial(t, l, "fe")
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond)) // a greeting comes at once or never
		if g := c.greeting(t); g == "" {
			stuck = c
		}
	}
	if stuck == nil {
		t.Fatal("no client went to the blackholed server")
	}
	stuck.SetDeadline(time.Now().Add(bound))
	hole := l.serverFor(t, "be", "hole")
	hole.onChange(healthcheck.State{Up: false})
	if g := stuck.greeting(t); g != "good" {
		t.Fatalf("the stuck client got %q after its server went DOWN, want \"good\" (its connect should be cancelled and retried)", g)
	}
}

// TestShutdownDeadlineEndsConnects: a forced shutdown does not wait for a
// connect in progress to time out.
func TestShutdownDeadlineEndsConnects(t *testing.T) {
	cfg := tcpConfig(lbconfig.RoundRobin, srv("hole", &backend{addr: blackhole(t)}))
	cfg.Timeouts.Connect = time.Hour
	l := newLB(t, fakeClock(), cfg)
	c := dial(t, l, "fe")
	eventually(t, "the connect to start", func() bool { return l.serverStats(t, "be", "hole").Sessions == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	go func() { done <- l.Shutdown(ctx) }()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Fatalf("Shutdown = %v, want context.Canceled", err)
		}
	case <-time.After(bound):
		t.Fatal("Shutdown waited for a connect to a dead server")
	}
	if !c.closed(t) {
		t.Fatal("the client is still open")
	}
}

// TestConnectTimeoutRetriesElsewhere: a connect that neither succeeds nor
// fails ends at `timeout connect`, counts as a connect error with a
// retry, and the client is served by another server.
func TestConnectTimeoutRetriesElsewhere(t *testing.T) {
	good := startBackend(t, "good")
	cfg := tcpConfig(lbconfig.RoundRobin, srv("hole", &backend{addr: blackhole(t)}), srv("good", good))
	cfg.Timeouts.Connect = 100 * time.Millisecond // a socket timer on the wall clock, not an assertion
	l := newLB(t, fakeClock(), cfg)
	for i := range 2 { // round robin: one of the two starts on the hole
		c := dial(t, l, "fe")
		c.SetDeadline(time.Now().Add(bound))
		if g := c.greeting(t); g != "good" {
			t.Fatalf("client %d: greeting %q, want \"good\"", i, g)
		}
	}
	hole := l.serverStats(t, "be", "hole")
	if hole.ConnectErrors != 1 || hole.Retries != 1 || hole.Sessions != 0 {
		t.Errorf("hole: connect errors %d, retries %d, current %d; want 1, 1, 0", hole.ConnectErrors, hole.Retries, hole.Sessions)
	}
}

// TestIPv6Server: the relay connects to an IPv6 server.
func TestIPv6Server(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	b := &backend{name: "six", ln: ln, addr: netip.MustParseAddrPort(ln.Addr().String()), conns: map[net.Conn]bool{}}
	b.serve()
	t.Cleanup(b.stop)
	l := newLB(t, fakeClock(), tcpConfig(lbconfig.RoundRobin, srv("six", b)))
	c := dial(t, l, "fe")
	c.SetDeadline(time.Now().Add(bound))
	if g := c.greeting(t); g != "six" {
		t.Fatalf("greeting %q, want \"six\"", g)
	}
	c.echo(t, "hello over IPv6")
}

// TestPickLoop: the accepting loop keeps a new connection unless it
// relays more than loopSlack, and more than a quarter, more than the
// least loaded loop; the pick is counted at once, so a burst handed over
// does not all land on the loop that looked emptiest first.
func TestPickLoop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		counts []int32
		from   int // -1: none (a queued client)
		want   int
	}{
		{"balanced stays", []int32{10, 10}, 0, 0},
		{"within the slack stays", []int32{14, 10}, 0, 0},
		{"past the slack moves", []int32{15, 10}, 0, 1},
		{"a quarter of a big count stays", []int32{120, 100}, 0, 0},
		{"past a quarter moves", []int32{140, 100}, 0, 1},
		{"to the least loaded of three", []int32{20, 9, 3}, 0, 2},
		{"the least loaded keeps its own", []int32{9, 3}, 1, 1},
		{"queued: least loaded", []int32{5, 2, 7}, -1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &LB{}
			for _, n := range tc.counts {
				lp := &loop{}
				lp.nconns.Store(n)
				l.loops = append(l.loops, lp)
			}
			var from *loop
			if tc.from >= 0 {
				from = l.loops[tc.from]
			}
			got := l.pickLoop(from)
			if got != l.loops[tc.want] {
				t.Fatalf("picked another loop than %d", tc.want)
			}
			if n := got.nconns.Load(); n != tc.counts[tc.want]+1 {
				t.Errorf("the picked loop counts %d, want %d", n, tc.counts[tc.want]+1)
			}
		})
	}
}

// TestBurstSpreadsOverLoops: connections opened in one burst are relayed
// by every loop, not by the one that woke first (before the hand-over, one
// loop took 62 of wrk's 64).
func TestBurstSpreadsOverLoops(t *testing.T) {
	a := startBackend(t, "a")
	l := newLB(t, fakeClock(), tcpConfig(lbconfig.RoundRobin, srv("a", a)))
	if len(l.loops) < 2 {
		t.Skipf("%d event loop(s): nothing to spread over", len(l.loops))
	}
	const n = 64
	var cs []*client
	for range n {
		cs = append(cs, dial(t, l, "fe"))
	}
	for _, c := range cs {
		c.SetDeadline(time.Now().Add(bound))
		if g := c.greeting(t); g != "a" {
			t.Fatalf("greeting %q", g)
		}
	}
	var counts []int32
	total := int32(0)
	for _, lp := range l.loops {
		counts = append(counts, lp.nconns.Load())
		total += lp.nconns.Load()
	}
	if total != n {
		t.Fatalf("loops relay %v connections, %d in all, want %d", counts, total, n)
	}
	// The rule keeps the busiest within max(loopSlack, a quarter) of the
	// least loaded at every pick: with two loops, at most 37 of 64. The
	// limit leaves a few to spare, as two loops may pick at once.
	limit := int32(n*4/7 + loopSlack)
	for i, c := range counts {
		if c > limit {
			t.Errorf("loop %d relays %d of %d connections (%v), want at most %d", i, c, n, counts, limit)
		}
	}
}

// TestNoServerEndsClientCleanly: a client that has sent bytes and then
// finds no server gets the end of the connection, not a reset, as from
// haproxy (measured, 2.6.12: the client reads end of file). Its bytes
// count as bytes in, and the one server tried counts one selection and
// one session at most, as haproxy's lbtot and smax do.
func TestNoServerEndsClientCleanly(t *testing.T) {
	cfg := tcpConfig(lbconfig.RoundRobin, srv("hole", &backend{addr: blackhole(t)}))
	cfg.Timeouts.Connect = time.Hour
	cfg.Retries = 2
	l := newLB(t, fakeClock(), cfg)
	c := dial(t, l, "fe")
	msg := []byte("GET /readyz HTTP/1.1\r\nHost: api\r\n\r\n")
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the connect to start", func() bool { return l.serverStats(t, "be", "hole").Sessions == 1 })
	// On loopback the bytes are in the balancer's socket once Write
	// returned; the server now goes DOWN, and no other is left.
	l.serverFor(t, "be", "hole").onChange(healthcheck.State{Up: false})
	b, err := c.r.ReadByte()
	if err != io.EOF {
		t.Fatalf("client read %q, %v; want end of file (a reset means its bytes were left unread)", b, err)
	}
	eventually(t, "the failure to be counted", func() bool { return l.Snapshot().Frontends[0].NoServer == 1 })
	hole, fe := l.serverStats(t, "be", "hole"), l.Snapshot().Frontends[0]
	if fe.BytesIn != uint64(len(msg)) || hole.BytesIn != uint64(len(msg)) || hole.Selected != 1 || hole.MaxSessions != 1 {
		t.Errorf("frontend bytes in %d, server bytes in %d, selected %d, max sessions %d; want %d, %d, 1, 1",
			fe.BytesIn, hole.BytesIn, hole.Selected, hole.MaxSessions, len(msg), len(msg))
	}
}

// TestShutdownSessionConnecting: the runtime API's shutdown session and
// shutdown sessions server, on a client whose connect to its server is
// still in progress, close its server socket, stop its connect timer and
// release the server's current session once, and end the client with a
// FIN after reading what it sent (counted as bytes in), logged "KC",
// killed while connecting. Measured with haproxy 2.6.12 (a server whose
// SYNs are dropped, `option tcplog`, the client sent 5 bytes): both
// commands answer "", the client reads the end of the connection (FIN),
// bin counts its 5 bytes and the line says "be/s1 1/-1/4003 0 KC". haproxy
// only ends the stream once its connect attempts are spent (timeout
// connect times retries + 1, counted in econ and wretr); vipstack closes
// it at once and counts no connect error.
func TestShutdownSessionConnecting(t *testing.T) {
	cfg := tcpConfig(lbconfig.RoundRobin, srv("hole", &backend{addr: blackhole(t)}))
	cfg.Timeouts.Connect = time.Hour
	cfg.Frontends[0].Log = &lbconfig.ConnLog{Format: "%b/%s %Tc %ts"}
	cfg.Frontends[0].LogTargets = rawStdout
	var out syncbuf.Buffer
	l := newLBOpts(t, Options{Clock: fakeClock(), Stdout: &out}, cfg)
	msg := "hello"
	for _, kill := range []struct {
		name string
		do   func(id uintptr) bool
	}{
		{"shutdown session", l.ShutdownSession},
		{"shutdown sessions server", func(uintptr) bool {
			n, err := l.ShutdownServerSessions("be", "hole")
			return err == nil && n == 1
		}},
	} {
		c := dial(t, l, "fe")
		c.SetDeadline(time.Now().Add(bound))
		if _, err := io.WriteString(c, msg); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the connect to start", func() bool { return l.serverStats(t, "be", "hole").Sessions == 1 })
		ss := l.Sessions()
		if len(ss) != 1 || ss[0].Connected {
			t.Fatalf("%s: sessions %+v, want one connecting", kill.name, ss)
		}
		if !kill.do(ss[0].ID) {
			t.Fatalf("%s: did not close the connecting client", kill.name)
		}
		if b, err := c.r.ReadByte(); err != io.EOF {
			t.Errorf("%s: the client read %q, %v; want the end of the connection (a reset means its bytes were left unread)", kill.name, b, err)
		}
		if l.ShutdownSession(ss[0].ID) {
			t.Errorf("%s: a second shutdown session of %#x closed something", kill.name, ss[0].ID)
		}
	}
	hole, fe := l.serverStats(t, "be", "hole"), l.Snapshot().Frontends[0]
	if hole.Sessions != 0 || hole.ConnectErrors != 0 || fe.BytesIn != uint64(2*len(msg)) || hole.BytesIn != uint64(2*len(msg)) {
		t.Errorf("server's current sessions %d, connect errors %d, bytes in %d, frontend's bytes in %d; want 0, 0, %d, %d",
			hole.Sessions, hole.ConnectErrors, hole.BytesIn, fe.BytesIn, 2*len(msg), 2*len(msg))
	}
	if n := len(l.Sessions()); n != 0 {
		t.Errorf("%d sessions left", n)
	}
	l.accessLog.Flush()
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if diff := cmp.Diff([]string{"be/hole -1 KC", "be/hole -1 KC"}, got); diff != "" {
		t.Errorf("log lines (-want +got):\n%s", diff)
	}
}
