package lb

import (
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestClientsLeaveWhileConnectingUnderReloads: rounds of clients whose
// server connects hang (the server drops SYNs) leave, half with a reset
// and half with a FIN, while reloads run beside them, bounded in count.
// Every connection ends at once (CD, CC: no connect timeout, no retry),
// nothing leaks (no session, no current connection, no socket), and the
// counters add up as haproxy 2.6.12 counts such clients
// (TestClientLeavesWhileConnectingMatchesHaproxy): one server session per
// client, one client abort per reset, no connect error, no retry; also
// when every reload renames the server.
func TestClientsLeaveWhileConnectingUnderReloads(t *testing.T) {
	// Each reload keeps the server's name, or renames it (s1, s2, s1,
	// ...: same address): a renamed server's successor takes over its
	// connections and counters (server.takeOver).
	for _, rename := range []bool{false, true} {
		t.Run(map[bool]string{false: "same name", true: "renaming"}[rename], func(t *testing.T) {
			clientsLeaveUnderReloads(t, rename)
		})
	}
}

func clientsLeaveUnderReloads(t *testing.T, rename bool) {
	name := func(i int) string {
		if rename {
			return "s" + itoa(1+i%2)
		}
		return "s1"
	}
	const rounds, perRound, maxReloads = 20, 50, 400
	hole := blackhole(t)
	bind := widenableBind(t) // a port of its own, kept by every reload
	cfg := func(i int) *lbconfig.Config {
		c := &lbconfig.Config{
			Retries: 3,
			// Far above the test's length: a connection that ends
			// by the connect timeout did not end at the client's leave.
			Timeouts:  lbconfig.Timeouts{Connect: time.Minute, Client: time.Duration(30+i%2) * time.Second},
			Frontends: []lbconfig.Frontend{{Name: "fe", Binds: []lbconfig.Bind{bind}, Backend: "be"}},
			Backends:  []lbconfig.Backend{{Name: "be", Balance: lbconfig.RoundRobin, Servers: []lbconfig.Server{{Name: name(i), Addr: hole, Weight: 1}}}},
		}
		return c
	}
	l := newLB(t, nil, cfg(0))
	addr := l.Addrs("fe")[0].String()
	fds := openFDs(t)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	reloads := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; i <= maxReloads; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Same listener, another client timeout.
			if err := l.Apply(cfg(i)); err != nil {
				t.Errorf("reload %d: %v", i, err)
				return
			}
			reloads = i
			time.Sleep(2 * time.Millisecond)
		}
	}()

	resets := 0
	for round := range rounds {
		conns := make([]*net.TCPConn, perRound)
		for i := range conns {
			c, err := net.DialTimeout("tcp", addr, bound)
			if err != nil {
				t.Fatal(err)
			}
			conns[i] = c.(*net.TCPConn)
		}
		eventually(t, "every client of the round connecting", func() bool {
			n := 0
			for _, s := range l.Sessions() {
				if !s.Connected {
					n++
				}
			}
			return n == perRound
		})
		for i, c := range conns {
			if (i+round)%2 == 0 {
				c.SetLinger(0) // a reset
				resets++
			}
			c.Close()
		}
		eventually(t, "every client of the round gone", func() bool { return len(l.Sessions()) == 0 })
	}
	close(stop)
	wg.Wait()
	t.Logf("%d clients, %d resets, %d reloads", rounds*perRound, resets, reloads)

	s := l.serverStats(t, "be", name(reloads))
	if s.Sessions != 0 || s.TotalSessions != rounds*perRound || s.ClientAborts != uint64(resets) || s.ConnectErrors != 0 || s.Retries != 0 {
		t.Errorf("server %s: scur %d stot %d cli_abrt %d econ %d wretr %d; want 0, %d, %d, 0, 0", name(reloads),
			s.Sessions, s.TotalSessions, s.ClientAborts, s.ConnectErrors, s.Retries, rounds*perRound, resets)
	}
	for _, f := range l.Snapshot().Frontends {
		if f.Sessions != 0 || f.TotalSessions != rounds*perRound {
			t.Errorf("frontend %s: scur %d stot %d; want 0, %d", f.Name, f.Sessions, f.TotalSessions, rounds*perRound)
		}
	}
	// Every socket of the clients and of their connects is closed: the
	// process has no more than when it started (a few may come and go
	// with the runtime's own, hence the margin).
	if now := openFDs(t); now > fds+5 {
		t.Errorf("%d sockets open after the clients left, %d before", now, fds)
	}
}

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}
