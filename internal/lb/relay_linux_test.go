package lb

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestManyMessagesThenDataWithFIN: after several request/answer rounds,
// the server answers the last request and closes at once, so its answer
// and FIN arrive together. The client must get the answer and then the
// end of the connection: a relay that took the short read of the answer
// as "drained" although the FIN had been reported would wait for a
// readiness event the consumed FIN never sends.
func TestManyMessagesThenDataWithFIN(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte("re: " + line))
					if line == "bye\n" {
						return // the answer and the FIN leave together
					}
				}
			}()
		}
	}()
	l := newLB(t, fakeClock(), tcpConfig(lbconfig.RoundRobin, srv("s", &backend{addr: addrPort(t, ln.Addr())})))
	for round := range 3 {
		cl := dial(t, l, "fe")
		for i := range 5 {
			msg := fmt.Sprintf("m%d\n", i)
			cl.Write([]byte(msg))
			got, err := cl.r.ReadString('\n')
			if err != nil || got != "re: "+msg {
				t.Fatalf("round %d message %d: got %q, %v", round, i, got, err)
			}
		}
		cl.Write([]byte("bye\n"))
		rest, err := io.ReadAll(cl.r)
		if err != nil || string(rest) != "re: bye\n" {
			t.Fatalf("round %d: after bye got %q, %v; want the answer then end of file", round, rest, err)
		}
		cl.Close()
	}
}

// holdLoops stops every event loop of l from handling events until the
// returned func is called, so that what peers send meanwhile is all there
// when the loops next look.
func holdLoops(l *LB) (resume func()) {
	for _, lp := range l.loops {
		lp.mu.Lock()
	}
	return func() {
		for _, lp := range l.loops {
			lp.mu.Unlock()
		}
	}
}

// serverSpeaksFirst relays one client to a server that, once the LB is
// connected to it and the loops are held, runs end on its side of the
// connection. It returns the client and resume, which lets the loops go
// on.
func serverSpeaksFirst(t *testing.T, end func(c *net.TCPConn)) (*client, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	l := newLB(t, fakeClock(), tcpConfig(lbconfig.RoundRobin, srv("s", &backend{addr: addrPort(t, ln.Addr())})))
	cl := dial(t, l, "fe")
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// Connected, not only connecting: a reset seen while the connect is
	// still in progress fails the connect, and the LB tries again.
	eventually(t, "the LB to relay to the server", func() bool { return l.serverStats(t, "be", "s").TotalSessions == 1 })
	resume := holdLoops(l)
	end(c.(*net.TCPConn))
	return cl, resume
}

// TestAnswerLeavesWithFIN: a server whose answer and FIN are both there
// when the relay reads (HTTP with Connection: close under load, for one)
// gets them relayed in one segment: the relay reads to the end before it
// writes, and the last bytes wait for the FIN (MSG_MORE). Written apart,
// the answer and a FIN of its own are two segments, each acknowledged,
// which for short connections is a tenth of all their packets.
func TestAnswerLeavesWithFIN(t *testing.T) {
	cl, resume := serverSpeaksFirst(t, func(c *net.TCPConn) {
		// Corked, the answer and the FIN reach the LB in one segment:
		// no loop can see the one without the other.
		setCork(t, c)
		c.Write([]byte("answer\n"))
		c.Close()
	})
	before := segsIn(t, cl.TCPConn)
	resume()
	got, err := io.ReadAll(cl.r)
	if err != nil || string(got) != "answer\n" {
		t.Fatalf("client read %q, %v; want the answer then end of file", got, err)
	}
	if n := segsIn(t, cl.TCPConn) - before; n != 1 {
		t.Errorf("the answer and the FIN came in %d segments, want 1", n)
	}
}

// TestAnswerThenReset: a server that answers and then resets, all before
// the relay reads it: the client still gets the answer, then the end of
// the connection. The answer and the reset are two segments; when the
// loop sees both at once (nearly always here) the relay's read on after
// the answer fails, which must not lose the answer.
func TestAnswerThenReset(t *testing.T) {
	cl, resume := serverSpeaksFirst(t, func(c *net.TCPConn) {
		c.Write([]byte("answer\n"))
		c.SetLinger(0)
		c.Close() // RST
	})
	resume()
	got, _ := io.ReadAll(cl.r) // the end may come as a reset
	if string(got) != "answer\n" {
		t.Fatalf("client read %q; want the answer the server sent before its reset", got)
	}
}

// setCork sets TCP_CORK on c: what it writes waits for a full segment,
// the uncork or the FIN.
func setCork(t *testing.T, c *net.TCPConn) {
	t.Helper()
	onFD(t, c, "TCP_CORK", func(fd int) error { return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_CORK, 1) })
}

// segsIn is how many segments c's socket has received (TCP_INFO).
func segsIn(t *testing.T, c *net.TCPConn) uint32 {
	t.Helper()
	var info *unix.TCPInfo
	onFD(t, c, "TCP_INFO", func(fd int) (err error) {
		info, err = unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		return err
	})
	return info.Segs_in
}

// TestReadAfterFINTakesAll checks what the relay assumes when a FIN was
// reported before it reads (side.fin): every byte the peer sent is then
// in the receive queue, and one read that does not fill its buffer takes
// all of it, however many segments it came in, and the FIN too. The
// relay takes the end of file from that read instead of reading again.
func TestReadAfterFINTakesAll(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const segments, size = 40, 100
	for i := range segments {
		msg := []byte(fmt.Sprintf("%0*d", size, i))
		if _, err := peer.Write(msg); err != nil { // TCP_NODELAY: one segment each
			t.Fatal(err)
		}
	}
	peer.Close()
	onFD(t, c.(*net.TCPConn), "the read after the FIN", func(fd int) error {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		if _, err := unix.Poll(pfd, 10_000); err != nil {
			return err
		}
		if pfd[0].Revents&unix.POLLRDHUP == 0 {
			return fmt.Errorf("no FIN reported within 10 s (revents %#x)", pfd[0].Revents)
		}
		buf := make([]byte, relay.CopyBufSize)
		n, err := relay.Recv(fd, buf)
		if err != nil || n != segments*size {
			return fmt.Errorf("one read after the FIN took %d bytes (%v), want all %d", n, err, segments*size)
		}
		if n, err := relay.Recv(fd, buf); n != 0 || err != nil {
			return fmt.Errorf("the read after that returned %d, %v; want 0 (end of file)", n, err)
		}
		return nil
	})
}

// TestManySegmentsThenFIN: a server sends its answer in many segments and
// closes while the loops are held, so the relay nearly always sees the
// FIN reported with the data. The client gets every byte, then the end.
func TestManySegmentsThenFIN(t *testing.T) {
	const segments, size = 40, 100
	var want []byte
	cl, resume := serverSpeaksFirst(t, func(c *net.TCPConn) {
		for i := range segments {
			msg := []byte(fmt.Sprintf("%0*d", size, i))
			want = append(want, msg...)
			c.Write(msg)
		}
		c.Close()
	})
	resume()
	got, err := io.ReadAll(cl.r)
	if err != nil || string(got) != string(want) {
		t.Fatalf("client read %d bytes (%v), want the server's %d then end of file", len(got), err, len(want))
	}
}

// TestClientSocketsNoDelay: the relay's client sockets have TCP_NODELAY,
// the first (which checks whether it came from the listener) and the
// ones after it (which take it from the listener without a call each).
func TestClientSocketsNoDelay(t *testing.T) {
	b := startBackend(t, "s")
	l := newLB(t, fakeClock(), tcpConfig(lbconfig.RoundRobin, srv("s", b)))
	for i := range 3 {
		cl := dial(t, l, "fe")
		if g := cl.greeting(t); g != "s" {
			t.Fatalf("client %d: greeting %q, want s", i, g)
		}
		var fds []int
		for _, lp := range l.loops {
			lp.mu.Lock()
			for _, cn := range lp.conns {
				if cn != nil && cn.state == stRelaying {
					fds = append(fds, cn.relay.c.FD)
				}
			}
			lp.mu.Unlock()
		}
		if len(fds) != 1 {
			t.Fatalf("client %d: %d connections relayed, want 1", i, len(fds))
		}
		if v, err := unix.GetsockoptInt(fds[0], unix.IPPROTO_TCP, unix.TCP_NODELAY); err != nil || v != 1 {
			t.Errorf("client %d: the relay's client socket has TCP_NODELAY %d (%v), want 1", i, v, err)
		}
		cl.Close()
		eventually(t, "the connection closed", func() bool { return l.serverStats(t, "be", "s").Sessions == 0 })
	}
}
