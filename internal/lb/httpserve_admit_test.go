package lb

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lb/web"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// dialFrom connects to addr from the loopback address src (any of
// 127.0.0.0/8 is the host's own), bounded by the test's deadline.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: bound}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(bound))
	return c
}

// poll sends the check script's request on c and reads one answer; "" if
// none comes within the test's deadline.
func poll(t *testing.T, c net.Conn, r *bufio.Reader) string {
	t.Helper()
	if _, err := io.WriteString(c, "GET /haproxy_ready HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return ""
	}
	b := make([]byte, len(okHead)+len(okBody))
	n, _ := io.ReadFull(r, b)
	return string(b[:n])
}

// TestMonitorUnderSlowloris: silent connections past the listener's cap
// do not keep the check script from its answer. haproxy 2.6 serves a new
// client at once with 300 or 2000 silent ones (its cap is its maxconn,
// 9986 here; measured, see web/admit.go); lb serves web.MaxConns
// at once and makes room by closing a waiting client, of the address that
// holds the most, the oldest. So: keep-alive clients of another address
// keep their connections, and a poll from 127.0.0.1 with a new connection
// is answered each time while the flood from 127.0.0.2 goes on. With
// `timeout http-request` at an hour, only eviction can make room. The
// silent connections' own fate is not timed: no answer, and a close that
// the test does not wait for.
func TestMonitorUnderSlowloris(t *testing.T) {
	a := startBackend(t, "a")
	at := closedPort(t)
	cfg := webConfig(tcpConfig(lbconfig.RoundRobin, srv("a", a)))
	cfg.Monitors[0].Binds = []lbconfig.Bind{{Addr: at}}
	cfg.Timeouts.HTTPRequest, cfg.Timeouts.HTTPKeepAlive = time.Hour, time.Hour
	l := newLB(t, fakeClock(), cfg)
	key := bindKey(lbconfig.Bind{Addr: at})
	tracked := func() int {
		l.mu.Lock()
		h := l.httpLns[key]
		l.mu.Unlock()
		return h.Clients()
	}
	addr := at.String()

	// Four keep-alive clients of 127.0.0.3, each answered once, now idle.
	type kept struct {
		c net.Conn
		r *bufio.Reader
	}
	var keep []kept
	for range 4 {
		c := dialFrom(t, "127.0.0.3", addr)
		k := kept{c, bufio.NewReader(c)}
		if got := poll(t, k.c, k.r); got != okHead+okBody {
			t.Fatalf("keep-alive client's first poll: %q", got)
		}
		keep = append(keep, k)
	}

	silent := func(n int) {
		t.Helper()
		for range n {
			dialFrom(t, "127.0.0.2", addr)
		}
	}
	silent(web.MaxConns + 44)
	eventually(t, "the listener to hold its cap of clients", func() bool { return tracked() == web.MaxConns })
	for i := range 5 {
		c := dialFrom(t, "127.0.0.1", addr)
		if got := poll(t, c, bufio.NewReader(c)); got != okHead+okBody {
			t.Fatalf("poll %d from 127.0.0.1 beside %d silent connections: %q, want the monitor's 200", i, web.MaxConns+44+20*i, got)
		}
		c.Close()
		silent(20)
	}
	if n := tracked(); n > web.MaxConns {
		t.Errorf("the listener holds %d clients, past its cap of %d", n, web.MaxConns)
	}
	for i, k := range keep {
		if got := poll(t, k.c, k.r); got != okHead+okBody {
			t.Errorf("keep-alive client %d of 127.0.0.3 after the flood: %q, want the monitor's 200 on its connection", i, got)
		}
	}
}
