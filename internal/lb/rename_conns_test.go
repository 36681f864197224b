package lb

import (
	"io"
	"net"
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestRenameMovesOpenConnections: a reload that renames a server (same
// address) hands the connections it relays to its successor, which then
// counts them: their current sessions at once, and the bytes and aborts
// that come after the reload. Before, those stayed on the retired server
// and were lost from the stats (helper u's stress test saw stot 149 of
// 1000 under renaming reloads): the successor showed no current session,
// and neither the later bytes nor the resets.
func TestRenameMovesOpenConnections(t *testing.T) {
	echo := startBackendFunc(t, "echo", func(c net.Conn) { io.Copy(c, c) })
	cfg := func(name string) *lbconfig.Config {
		return tcpConfig(lbconfig.RoundRobin, lbconfig.Server{Name: name, Addr: echo.addr, Weight: 1})
	}
	l := newLB(t, nil, cfg("s1"))
	addr := l.Addrs("fe")[0].String()
	exchange := func(c net.Conn, msg string) {
		t.Helper()
		if _, err := io.WriteString(c, msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, make([]byte, len(msg))); err != nil {
			t.Fatal(err)
		}
	}
	const n = 4
	var conns []*net.TCPConn
	for range n {
		c, err := net.DialTimeout("tcp", addr, bound)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c.(*net.TCPConn))
		exchange(c, "hello") // 5 bytes each way before the reload
	}
	if err := l.Apply(cfg("s2")); err != nil {
		t.Fatal(err)
	}
	if s := l.serverStats(t, "be", "s2"); s.Sessions != n || s.TotalSessions != n || s.BytesIn != 5*n {
		t.Errorf("s2 right after the rename: scur %d stot %d bin %d, want %d, %d, %d", s.Sessions, s.TotalSessions, s.BytesIn, n, n, 5*n)
	}
	for i, c := range conns {
		exchange(c, "world!") // 6 more each way
		if i%2 == 0 {
			c.SetLinger(0) // a reset: the client's abort
		}
		c.Close()
	}
	eventually(t, "every connection closed", func() bool { return len(l.Sessions()) == 0 })
	s := l.serverStats(t, "be", "s2")
	got := [5]uint64{uint64(s.Sessions), s.TotalSessions, s.BytesIn, s.BytesOut, s.ClientAborts}
	if want := [5]uint64{0, n, 11 * n, 11 * n, n / 2}; got != want {
		t.Errorf("s2 (scur, stot, bin, bout, cli_abrt) = %v, want %v", got, want)
	}
}
