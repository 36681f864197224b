package lb

import (
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/syncbuf"
)

// abortConfig: `option abortonclose`, a frontend "conn" whose server
// drops SYNs (its client leaves while the balancer connects), one
// "queue" whose only server takes one connection at a time (its second
// client leaves while queued), and "probe" for the listening check.
const abortConfig = `global
  stats socket {{ADMIN}} mode 600 level admin
defaults
  mode tcp
  log stdout format raw local0
  option abortonclose
  retries 1
  timeout connect 2s
  timeout queue 5s
  timeout client 5s
  timeout server 5s
  log-format "%ft %b/%s %Tw/%Tc/%Tt %B %U %ts %ac/%fc/%bc/%sc/%rc"
frontend conn
  bind 127.0.0.1:{{P1}}
  default_backend conn
frontend queue
  bind 127.0.0.1:{{P2}}
  default_backend queue
frontend probe
  bind 127.0.0.1:{{P3}}
  default_backend probe
backend conn
  server s1 {{HOLE}}
backend queue
  server s1 {{SRV}} maxconn 1
backend probe
  server s1 {{HOLE}}
`

// recorder is a server that keeps what each connection sent.
type recorder struct {
	mu   sync.Mutex
	got  []string
	addr string
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	r := &recorder{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(bound))
				b := make([]byte, 64)
				n, _ := io.ReadAtLeast(c, b, 1)
				r.mu.Lock()
				r.got = append(r.got, string(b[:n]))
				r.mu.Unlock()
				io.Copy(io.Discard, c)
			}()
		}
	}()
	return r
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

// TestAbortOnCloseMatchesHaproxy: with `option abortonclose`, a client
// that sends bytes and then its FIN while the balancer connects to its
// server ("CC") or while it waits in the queue ("CQ") is dropped at once
// and its bytes reach no server, as in haproxy 2.6.12 (measured here;
// without the option both wait for the server, which gets the bytes:
// TestClientLeavesWhileConnectingMatchesHaproxy's "data" client).
func TestAbortOnCloseMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	hole := blackhole(t).String()
	rec := newRecorder(t)
	ports := freePorts(t, 3)
	hadmin := filepath.Join(t.TempDir(), "admin.sock")
	conf := func(admin string, p []string) string {
		return strings.NewReplacer("{{ADMIN}}", admin, "{{P1}}", p[0], "{{P2}}", p[1], "{{P3}}", p[2], "{{HOLE}}", hole, "{{SRV}}", rec.addr).Replace(abortConfig)
	}
	hout := peers.HAProxy(t, conf(hadmin, ports))
	var vout syncbuf.Buffer
	l := newLBOpts(t, Options{Stdout: &vout}, parseOnLoopback(t, conf(filepath.Join(t.TempDir(), "v.sock"), []string{"1", "2", "3"})))
	waitListening(t, "tcp", "127.0.0.1:"+ports[2])
	eventually(t, "haproxy's line of the listening check", func() bool { return strings.Contains(hout.String(), "probe probe/s1 ") })
	skip := map[string]int{"haproxy": len(hout.String())}

	type balancer struct {
		who  string
		out  *syncbuf.Buffer
		addr func(fe string) string
		csv  func() string
		// queued says the queue frontend's second client waits.
		queued func() bool
	}
	feIndex := map[string]int{"conn": 0, "queue": 1}
	dial := func(b balancer, fe string) *net.TCPConn {
		c, err := net.DialTimeout("tcp", b.addr(fe), bound)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(bound))
		return c.(*net.TCPConn)
	}
	leave := func(c *net.TCPConn) {
		c.Write([]byte("late\n"))
		c.CloseWrite()
		io.Copy(io.Discard, c) // until the balancer drops it
		c.Close()
	}
	lines := map[string][]string{}
	got := map[string][]string{}
	counters := map[string]map[string]string{}
	for _, b := range []balancer{
		{"haproxy", hout, func(fe string) string { return "127.0.0.1:" + ports[feIndex[fe]] }, func() string { return haproxyCommand(t, hadmin, "show stat") },
			func() bool {
				return csvFields(t, haproxyCommand(t, hadmin, "show stat"), "queue", "BACKEND")["qcur"] == "1"
			}},
		{"vipstack", &vout, func(fe string) string { return l.Addrs(fe)[0].String() }, func() string { return l.Snapshot().CSV() },
			func() bool {
				n := 0
				for _, s := range l.Sessions() {
					if s.Frontend == "queue" && !s.Connected {
						n++
					}
				}
				return n == 1
			}},
	} {
		logged := func(what string, n int) {
			eventually(t, b.who+": "+what, func() bool {
				return strings.Count(b.out.String()[skip[b.who]:], what) >= n
			})
		}
		// Leaving while connecting.
		c := dial(b, "conn")
		eventually(t, b.who+": conn connecting", func() bool {
			return csvFields(t, b.csv(), "conn", "s1")["scur"] == "1"
		})
		leave(c)
		logged("conn conn/", 1)

		// Leaving while queued behind a client that holds the slot.
		first := dial(b, "queue")
		first.Write([]byte("first\n"))
		eventually(t, b.who+": the first client at the server", func() bool {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			return len(rec.got) == 1
		})
		second := dial(b, "queue")
		eventually(t, b.who+": the second client queued", b.queued)
		leave(second)
		logged("queue queue/", 1)
		first.Close()
		logged("queue queue/", 2)
		got[b.who] = rec.take()
		csv := b.csv()
		counters[b.who] = map[string]string{}
		for _, px := range [][2]string{{"conn", "FRONTEND"}, {"conn", "s1"}, {"queue", "FRONTEND"}, {"queue", "BACKEND"}} {
			m := csvFields(t, csv, px[0], px[1])
			for _, f := range []string{"stot", "bin", "econ", "wretr", "cli_abrt", "srv_abrt"} {
				counters[b.who][px[0]+"/"+px[1]+" "+f] = m[f]
			}
		}

		for _, s := range strings.Split(b.out.String()[skip[b.who]:], "\n") {
			if k, ok := connectingKey(s); ok {
				lines[b.who] = append(lines[b.who], k)
			}
		}
	}
	if diff := cmp.Diff(lines["haproxy"], lines["vipstack"]); diff != "" {
		t.Errorf("log lines (-haproxy +vipstack):\n%s", diff)
	}
	if diff := cmp.Diff(counters["haproxy"], counters["vipstack"]); diff != "" {
		t.Errorf("counters (-haproxy +vipstack):\n%s", diff)
	}
	if diff := cmp.Diff(got["haproxy"], got["vipstack"]); diff != "" {
		t.Errorf("what the queue's server received (-haproxy +vipstack):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"first\n"}, got["vipstack"]); diff != "" {
		t.Errorf("what vipstack's queue server received (-want +got):\n%s", diff)
	}
	t.Logf("haproxy:\n%s", strings.Join(lines["haproxy"], "\n"))
}
