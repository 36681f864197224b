package lb

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestSectionTimeoutsApply: a frontend's own timeout client and its
// backend's own timeout server decide when an idle connection closes,
// over defaults' (none here); once the client has half-closed, timeout
// client-fin replaces timeout client.
func TestSectionTimeoutsApply(t *testing.T) {
	// Greets, then holds the connection open, also after the client's
	// FIN, until the test ends.
	hold := make(chan struct{})
	a := startBackendFunc(t, "a", func(c net.Conn) {
		c.Write([]byte("a\n"))
		io.Copy(io.Discard, c)
		<-hold
	})
	t.Cleanup(func() { close(hold) }) // before the backend's stop, which waits for its handlers
	clk := fakeClock()
	conf := "defaults\n  mode tcp\n  timeout connect 5s\nfrontend fe\n  bind 127.0.0.1:1\n  timeout client 10s\n  timeout client-fin 2s\n  default_backend be\n" +
		"backend be\n  timeout server 1m\n  server a " + a.addr.String() + "\n"
	cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Frontends[0].Binds = []lbconfig.Bind{loopbackBind()}
	l := newLB(t, clk, cfg)

	// The server spoke last (its greeting): the client has timeout
	// client, the frontend's 10s.
	idle := dial(t, l, "fe")
	idle.greeting(t)
	eventually(t, "the relay to start", func() bool { return l.serverStats(t, "be", "a").Sessions == 1 })
	clk.Advance(9 * time.Second)
	if n := l.idleCloses.Load(); n != 0 {
		t.Fatalf("closed before the frontend's timeout client")
	}
	clk.Advance(time.Second)
	if !idle.closed(t) {
		t.Fatal("not closed at the frontend's timeout client (10s)")
	}

	// A client that half-closes: timeout client-fin (2s) replaces
	// timeout client.
	half := dial(t, l, "fe")
	half.greeting(t)
	eventually(t, "the second relay", func() bool { return l.serverStats(t, "be", "a").Sessions == 1 })
	half.CloseWrite()
	eventually(t, "the client's FIN to reach the relay", func() bool {
		for _, lp := range l.loops {
			lp.mu.Lock()
			for _, cn := range lp.conns {
				if cn != nil && cn.state == stRelaying && cn.halfClosed() {
					lp.mu.Unlock()
					return true
				}
			}
			lp.mu.Unlock()
		}
		return false
	})
	clk.Advance(2 * time.Second)
	if !half.closed(t) {
		t.Fatal("a half-closed connection not closed at timeout client-fin (2s)")
	}
	if n := l.idleCloses.Load(); n != 2 {
		t.Errorf("idle closes = %d, want 2", n)
	}
}

// TestDontLogNormalMatchesHaproxy: with option dontlog-normal and option
// log-separate-errors, a connection that ends normally is not logged
// and one that fails (no server, SC) is logged at level err, in haproxy
// 2.6 and vipstack.
func TestDontLogNormalMatchesHaproxy(t *testing.T) {
	// Reads the client's line, answers and closes: a normal end.
	a := startBackendFunc(t, "a", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(bound))
		bufio.NewReader(c).ReadString('\n')
		c.Write([]byte("a\n"))
	})
	dead := closedPort(t)
	conf := func(sock string, ports []string) string {
		return strings.NewReplacer("{{SOCK}}", sock, "{{P0}}", ports[0], "{{P1}}", ports[1], "{{P2}}", ports[2], "{{A}}", a.addr.String(), "{{DEAD}}", dead.String()).Replace(`defaults
  mode tcp
  log {{SOCK}} local0
  option tcplog
  option dontlog-normal
  option log-separate-errors
  timeout connect 1s
  timeout client 3s
  timeout server 3s
  retries 1
frontend fe
  bind 127.0.0.1:{{P0}}
  default_backend be
frontend bad
  bind 127.0.0.1:{{P1}}
  default_backend dead
frontend probe
  bind 127.0.0.1:{{P2}}
  no log
  default_backend be
backend be
  server a {{A}}
backend dead
  server d {{DEAD}}
`)
	}
	hlog, vlog, hports, vports := startHaproxyAndLB(t, 3, conf)
	waitListening(t, "tcp", "127.0.0.1:"+hports[2]) // a frontend without log
	for _, ports := range [][]string{hports, vports} {
		exchange(t, "127.0.0.1:"+ports[0], "hello\n")
		exchange(t, "127.0.0.1:"+ports[1], "hello\n")
	}
	hlog.waitForN(t, "haproxy", " bad dead/d ", 1)
	vlog.waitForN(t, "vipstack", " bad dead/d ", 1)
	time.Sleep(200 * time.Millisecond) // a late normal line would show, bounded
	pick := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			m := maskDatagram(l)
			f := strings.Fields(m)
			if len(f) < 8 {
				continue
			}
			if strings.Contains(m, " fe be/") || strings.Contains(m, " bad dead/") {
				out = append(out, f[0]+" "+f[3]+" "+f[7])
			}
		}
		return out
	}
	want := []string{"<131> bad SC"}
	if diff := cmp.Diff(want, pick(hlog.lines())); diff != "" {
		t.Errorf("haproxy differs from this test's expectation (-want +haproxy):\n%s", diff)
	}
	if diff := cmp.Diff(pick(hlog.lines()), pick(vlog.lines())); diff != "" {
		t.Errorf("(-haproxy +vipstack):\n%s", diff)
	}
}
