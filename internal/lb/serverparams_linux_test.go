package lb

import (
	"net"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestServerMaxconnQueue: a server at its maxconn takes no more clients;
// they wait in the backend's queue and get the first freed slot, or are
// closed after timeout queue.
func TestServerMaxconnQueue(t *testing.T) {
	a := startBackend(t, "a")
	clk := fakeClock()
	s := srv("a", a)
	s.MaxConn = 1
	cfg := tcpConfig(lbconfig.RoundRobin, s)
	cfg.Timeouts.Queue = 30 * time.Second
	l := newLB(t, clk, cfg)
	p := l.view.Load().pools[0]

	first := dial(t, l, "fe")
	if g := first.greeting(t); g != "a" {
		t.Fatalf("first client got %q", g)
	}
	second := dial(t, l, "fe")
	eventually(t, "the second client to wait for the server", func() bool { return p.wait.len() == 1 })
	if n := l.serverStats(t, "be", "a").Sessions; n != 1 {
		t.Fatalf("server a has %d sessions at maxconn 1", n)
	}
	first.Close()
	if g := second.greeting(t); g != "a" {
		t.Fatalf("queued client got %q once the slot freed, want a", g)
	}
	second.echo(t, "served")

	third := dial(t, l, "fe")
	eventually(t, "the third client to wait, its timer armed", func() bool { return p.wait.len() == 1 && clk.Pending() == 1 })
	clk.Advance(30 * time.Second)
	if !third.closed(t) {
		t.Fatal("the third client was not closed after timeout queue")
	}
	second.echo(t, "still served")
}

// TestBackupServers: backup servers take no client while another server
// is usable; then the first usable backup takes them all, or every
// backup with option allbackups.
func TestBackupServers(t *testing.T) {
	for _, all := range []bool{false, true} {
		a, b, c := startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c")
		sb, sc := srv("b", b), srv("c", c)
		sb.Backup, sc.Backup = true, true
		cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a), sb, sc)
		cfg.Backends[0].AllBackups = all
		l := newLB(t, fakeClock(), cfg)
		greets := func() map[string]int {
			got := map[string]int{}
			for range 4 {
				cl := dial(t, l, "fe")
				got[cl.greeting(t)]++
				cl.Close()
			}
			return got
		}
		if got := greets(); got["a"] != 4 {
			t.Errorf("allbackups %v: with a up, clients went to %v", all, got)
		}
		if err := l.SetServerAdmin("be", "a", stats.AdminMaint); err != nil {
			t.Fatal(err)
		}
		got := greets()
		switch {
		case !all && got["b"] != 4:
			t.Errorf("without allbackups, a in maintenance: clients went to %v, want all to b", got)
		case all && (got["b"] != 2 || got["c"] != 2):
			t.Errorf("with allbackups, a in maintenance: clients went to %v, want b and c alike", got)
		}
		l.Shutdown(canceled())
	}
}

// TestShutdownSessionsOnDown: with on-marked-down shutdown-sessions, a
// server's relayed connections are closed when its check marks it DOWN;
// without, they stay.
func TestShutdownSessionsOnDown(t *testing.T) {
	for _, shut := range []bool{true, false} {
		a := startBackend(t, "a")
		// The check port: a listener the test closes to fail the check
		// while the relayed connection to a stays.
		chk, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := srv("a", a)
		s.Check, s.Fall, s.Rise, s.Inter = true, 1, 1, time.Second
		s.CheckPort = chk.Addr().(*net.TCPAddr).Port
		s.ShutdownOnDown = shut
		clk := fakeClock()
		l := newLB(t, clk, tcpConfig(lbconfig.RoundRobin, s))
		eventually(t, "the first check to pass", func() bool { return l.serverStats(t, "be", "a").CheckStatus == "L4OK" })
		cl := dial(t, l, "fe")
		if g := cl.greeting(t); g != "a" {
			t.Fatalf("client got %q", g)
		}
		chk.Close()
		clk.Advance(time.Second)
		eventually(t, "the server to go DOWN", func() bool { return !l.serverStats(t, "be", "a").Up })
		if shut {
			if !cl.closed(t) {
				t.Error("shutdown-sessions: the connection stayed open after its server went DOWN")
			}
		} else {
			cl.echo(t, "still relayed")
		}
		l.Shutdown(canceled())
	}
}

// TestTCPKeepAlive: option clitcpka and srvtcpka set SO_KEEPALIVE on
// the sockets the balancer holds.
func TestTCPKeepAlive(t *testing.T) {
	srvSide := make(chan net.Conn, 1)
	a := startBackendFunc(t, "a", func(c net.Conn) {
		srvSide <- c
		c.Write([]byte("a\n"))
		buf := make([]byte, 1)
		c.Read(buf)
	})
	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	cfg.Frontends[0].KeepAlive, cfg.Backends[0].KeepAlive = true, true
	l := newLB(t, fakeClock(), cfg)
	cl := dial(t, l, "fe")
	cl.greeting(t)
	var on []bool
	for _, lp := range l.loops {
		lp.mu.Lock()
		for _, cn := range lp.conns {
			if cn != nil && cn.state == stRelaying {
				c, _ := relay.KeepAlive(cn.relay.c.FD)
				s, _ := relay.KeepAlive(cn.relay.s.FD)
				on = append(on, c, s)
			}
		}
		lp.mu.Unlock()
	}
	if len(on) != 2 || !on[0] || !on[1] {
		t.Errorf("SO_KEEPALIVE on the client and server sockets: %v, want [true true]", on)
	}
	<-srvSide
}
