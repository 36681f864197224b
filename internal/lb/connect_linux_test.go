package lb

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/healthcheck"
	"github.com/vipstack/vipstack/internal/lbconfig"
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
