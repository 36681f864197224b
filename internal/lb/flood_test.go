package lb

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// floodBackendEnv makes TestLBFloodBackend serve as the backend of
// TestMaxconnSlowClients in a process of its own, so that its memory is
// not counted as the LB's.
const floodBackendEnv = "VIPSTACK_LB_FLOOD_BACKEND"

// TestLBFloodBackend is not a test: run by TestMaxconnSlowClients with
// floodBackendEnv set, it listens on loopback, prints its address, greets
// every connection with "b\n", reads and discards until end of file, and
// closes. It exits when its standard input closes.
func TestLBFloodBackend(t *testing.T) {
	if os.Getenv(floodBackendEnv) != "1" {
		t.Skip("the backend process of TestMaxconnSlowClients, run only by it")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stdout, "error:", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stdout, ln.Addr().String())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		go func() {
			defer c.Close()
			if _, err := io.WriteString(c, "b\n"); err != nil {
				return
			}
			var buf [64]byte
			for {
				if _, err := c.Read(buf[:]); err != nil {
					return
				}
			}
		}()
	}
}

// startFloodBackend runs TestLBFloodBackend in a child process and
// returns its address.
func startFloodBackend(t *testing.T) netip.AddrPort {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLBFloodBackend$", "-test.count=1")
	cmd.Env = append(os.Environ(), floodBackendEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill() // by PID: the child this test started
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("backend process: %v", err)
	}
	ap, err := netip.ParseAddrPort(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("backend process printed %q: %v", line, err)
	}
	return ap
}

// liveMemory is the Go heap in use plus goroutine stacks, after a full
// collection (twice, so sync.Pool's victim cache is empty too).
func liveMemory() (heap, stacks uint64) {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// pending reports whether c has bytes to read, or has been closed by its
// peer, without blocking and without consuming anything.
func pending(c *net.TCPConn) (data, closed bool, err error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return false, false, err
	}
	var n int
	var rerr error
	err = rc.Control(func(fd uintptr) {
		var b [1]byte
		n, _, rerr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	})
	switch {
	case err != nil:
		return false, false, err
	case errors.Is(rerr, syscall.EAGAIN):
		return false, false, nil
	case rerr != nil: // a reset
		return false, true, nil
	case n == 0:
		return false, true, nil
	}
	return true, false, nil
}

// Per-connection memory bounds of TestMaxconnSlowClients, for the LB and
// the test's client sockets together.
//
// An admitted idle connection holds, by design (see doc.go), two sockets
// (for each a *net.TCPConn, its netFD and a poll descriptor: about 0.5 KiB),
// the conn (about 0.3 KiB), its idle timer and two goroutines parked in
// the relay, each on a stack of a few KiB (the runtime starts stacks at 2
// KiB or at the recent average; the relay's path is shallow). It must not
// hold a copy buffer (16 KiB) or a pipe while no data moves, so the bound
// is below one buffer: 12 KiB. A queued connection holds one socket, the
// conn and its queue timer and no goroutine: 2 KiB. Each of the test's own
// client sockets adds about 0.5 KiB, which both bounds include.
const (
	admittedBound = 12 << 10
	queuedBound   = 2 << 10
	memorySlack   = 4 << 20 // the pool's buffers, runtime bookkeeping
)

// TestMaxconnSlowClients: 2,000 clients connect at once to a frontend with
// maxconn 1,500 and `timeout queue 30s`; they never read, and every second
// one trickles a byte now and then. Asserted: sessions never exceed
// maxconn (the high-water mark); the 500 others queue; the trickled bytes
// of admitted clients reach the backend; the LB's memory grows by no more
// than the per-connection bounds above; closing 300 admitted clients
// serves exactly 300 queued ones; `timeout queue` closes the 200 left
// waiting, and only those.
func TestMaxconnSlowClients(t *testing.T) {
	const (
		clients = 2000
		maxconn = 1500
		closes  = 300
		trickle = 3
	)
	if soft, _, err := relay.RaiseFileLimit(); err != nil || soft < 3*clients+500 {
		t.Skipf("skipping: needs %d open files, RLIMIT_NOFILE allows %d (%v)", 3*clients+500, soft, err)
	}
	addr := startFloodBackend(t)
	clk := fakeClock()
	cfg := &lbconfig.Config{
		Retries:   3,
		MaxConn:   maxconn,
		Timeouts:  lbconfig.Timeouts{Connect: 5 * time.Second, Queue: 30 * time.Second, Tunnel: time.Hour},
		Frontends: []lbconfig.Frontend{{Name: "fe", Binds: []lbconfig.Bind{loopbackBind()}, Backend: "be"}},
		Backends:  []lbconfig.Backend{{Name: "be", Balance: lbconfig.RoundRobin, Servers: []lbconfig.Server{{Name: "b", Addr: addr, Weight: 1}}}},
	}
	l := newLB(t, clk, cfg)
	fe := func() stats.FrontendStats { return l.Snapshot().Frontends[0] }
	lbAddr := l.Addrs("fe")[0].String()

	heap0, stacks0 := liveMemory()
	conns := make([]*net.TCPConn, clients)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	const dialers = 32
	for w := range dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < clients; i += dialers {
				c, err := net.DialTimeout("tcp", lbAddr, bound)
				if err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
					return
				}
				conns[i] = c.(*net.TCPConn)
			}
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	})
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	eventually(t, "maxconn sessions, the rest queued, every greeting relayed", func() bool {
		s := fe()
		return s.Sessions == maxconn && s.Queued == clients-maxconn && s.BytesOut == 2*maxconn
	})

	// Which clients were admitted: those the greeting reached.
	admitted := map[int]bool{}
	for i, c := range conns {
		data, closed, err := pending(c)
		if err != nil || closed {
			t.Fatalf("client %d: closed %v, %v", i, closed, err)
		}
		if data {
			admitted[i] = true
		}
	}
	if len(admitted) != maxconn {
		t.Fatalf("%d clients got a greeting, want maxconn = %d", len(admitted), maxconn)
	}

	// Every second client trickles a byte, a few times; the others never send.
	tricklers := 0
	for i := range conns {
		if i%2 == 0 && admitted[i] {
			tricklers++
		}
	}
	for round := range trickle {
		for i, c := range conns {
			if i%2 != 0 {
				continue
			}
			if _, err := c.Write([]byte{'.'}); err != nil {
				t.Fatalf("client %d, trickle %d: %v", i, round, err)
			}
		}
		want := uint64((round + 1) * tricklers)
		eventually(t, fmt.Sprintf("trickle %d relayed to the backend (%d bytes)", round+1, want), func() bool { return fe().BytesIn == want })
	}

	heap1, stacks1 := liveMemory()
	grew := int64(heap1+stacks1) - int64(heap0+stacks0)
	limit := int64(maxconn*admittedBound + (clients-maxconn)*queuedBound + memorySlack)
	t.Logf("memory grew by %d KiB (heap objects %d KiB, stacks %d KiB) for %d connections (%d admitted): %.1f KiB each; bound %d KiB",
		grew>>10, (int64(heap1)-int64(heap0))>>10, (int64(stacks1)-int64(stacks0))>>10, clients, maxconn, float64(grew)/1024/clients, limit>>10)
	if grew > limit {
		t.Errorf("memory grew by %d bytes with %d admitted and %d queued idle connections, want at most %d", grew, maxconn, clients-maxconn, limit)
	}
	if s := fe(); s.MaxSessions > maxconn || s.SessionLimit != maxconn {
		t.Errorf("sessions high-water mark %d (limit %d), want at most maxconn %d", s.MaxSessions, s.SessionLimit, maxconn)
	}

	// Closing admitted clients serves as many queued ones, oldest first.
	closed := 0
	for i, c := range conns {
		if admitted[i] && closed < closes {
			c.Close()
			conns[i] = nil
			closed++
		}
	}
	eventually(t, "queued clients take the freed slots", func() bool {
		s := fe()
		return s.Queued == clients-maxconn-closes && s.Sessions == maxconn && s.BytesOut == 2*(maxconn+closes)
	})
	served := 0
	for i, c := range conns {
		if c == nil || admitted[i] {
			continue
		}
		data, gone, err := pending(c)
		if err != nil || gone {
			t.Fatalf("queued client %d: closed %v, %v", i, gone, err)
		}
		if data {
			served++
		}
	}
	if served != closes {
		t.Errorf("%d queued clients were served after %d admitted ones left, want %d", served, closes, closes)
	}

	// `timeout queue` closes the ones still waiting, and nobody else.
	clk.Advance(30 * time.Second)
	waiting := clients - maxconn - closes
	eventually(t, "timeout queue closes the waiting clients", func() bool {
		s := fe()
		return s.QueueTimeouts == uint64(waiting) && s.Queued == 0
	})
	gone := 0
	for i, c := range conns {
		if c == nil {
			continue
		}
		// The close may still be on its way through loopback.
		deadline := time.Now().Add(bound)
		for {
			data, isGone, err := pending(c)
			if err != nil {
				t.Fatalf("client %d: %v", i, err)
			}
			if isGone || data || time.Now().After(deadline) || admitted[i] {
				if isGone {
					gone++
				}
				break
			}
			time.Sleep(time.Millisecond) // polling a socket for I/O, bounded
		}
	}
	if gone != waiting {
		t.Errorf("%d clients closed after timeout queue, want the %d still waiting", gone, waiting)
	}
	if s := fe(); s.Sessions != maxconn || s.MaxSessions > maxconn {
		t.Errorf("after timeout queue: %d sessions (high-water mark %d), want %d and at most %d", s.Sessions, s.MaxSessions, maxconn, maxconn)
	}
}
