package lb

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestReadReportsWhatIsLeft checks the TCP_INQ read the relay relies on
// to skip the read that would return EAGAIN: after a read that drained
// the socket it says nothing is left; with more queued than the buffer,
// or a FIN behind the data, it says to read again.
func TestReadReportsWhatIsLeft(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	d := &spliceDir{bufs: &sync.Pool{New: func() any { return new(copyBuf) }}}
	d.buf = d.bufs.Get().(*copyBuf)
	read := func(want int) (n int, more bool) {
		t.Helper()
		// Wait until the kernel holds what was sent, then read once.
		deadline := time.Now().Add(10 * time.Second)
		for {
			var err error
			if cerr := rc.Control(func(fd uintptr) {
				if d.inq == 0 {
					d.inq = -1
					if enableInq(fd, d) {
						d.inq = 1
					}
				}
				n, more, err = d.read(fd)
			}); cerr != nil {
				t.Fatal(cerr)
			}
			if err == nil && (n >= want || n == 0) {
				return n, more
			}
			if time.Now().After(deadline) {
				t.Fatalf("read: %d bytes, %v; want %d", n, err, want)
			}
			time.Sleep(5 * time.Millisecond) // polling the kernel, not a timing assertion
		}
	}
	peer.Write([]byte("abc"))
	if n, more := read(3); n != 3 || more {
		t.Errorf("3 bytes queued: read %d, more %v; want 3, false", n, more)
	}
	if d.inq != 1 {
		t.Fatalf("TCP_INQ is not available (inq = %d): the relay falls back to reading until EAGAIN", d.inq)
	}
	big := make([]byte, copyBufSize+100)
	peer.Write(big)
	if n, more := read(copyBufSize); n != copyBufSize || !more {
		t.Errorf("%d bytes queued: read %d, more %v; want %d, true", len(big), n, more, copyBufSize)
	}
	if n, more := read(100); n != 100 || more {
		t.Errorf("the rest: read %d, more %v; want 100, false", n, more)
	}
	peer.Write([]byte("bye"))
	peer.(*net.TCPConn).CloseWrite()
	// Wait until the FIN has arrived behind the data: the socket is in
	// CLOSE_WAIT (8 in the kernel's TCP state numbering).
	for deadline := time.Now().Add(10 * time.Second); ; {
		var state uint8
		if err := rc.Control(func(fd uintptr) {
			if info, err := unix.GetsockoptTCPInfo(int(fd), unix.SOL_TCP, unix.TCP_INFO); err == nil {
				state = info.State
			}
		}); err != nil {
			t.Fatal(err)
		}
		if state == 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the FIN never arrived (TCP state %d)", state)
		}
		time.Sleep(time.Millisecond) // polling the kernel
	}
	if n, more := read(3); n != 3 || !more {
		t.Errorf("data then FIN: read %d, more %v; want 3, true (read again to see the end)", n, more)
	}
	if n, _ := read(0); n != 0 {
		t.Errorf("after the FIN: read %d bytes, want end of file", n)
	}
}

// TestManyMessagesThenDataWithFIN: after several request/answer rounds
// (the relay has switched to TCP_INQ reads), the server answers the last
// request and closes at once, so its answer and FIN arrive together. The
// client must get the answer and then the end of the connection: a relay
// that took a short read as "drained" without asking TCP_INQ would wait
// for a readiness event the FIN never sends.
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
