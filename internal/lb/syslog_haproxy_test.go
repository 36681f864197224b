package lb

import (
	"context"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
)

// syslogConfig is the seeds' logging: a Unix datagram socket in defaults,
// dontlognull, no log format; be has log-health-checks, be2 not. Each
// checks a server of its own. mon and stats are the seeds' monitor and stats
// sections; the stats socket (haproxy's only) takes the runtime API's
// maintenance commands.
const syslogConfig = `global
  stats socket {{ADMIN}} mode 600 level admin
defaults
  mode tcp
  log {{SOCK}} local0
  option dontlognull
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend fe
  bind 127.0.0.1:{{PORT}}
  default_backend be
listen mon
  bind 127.0.0.1:{{MPORT}}
  mode http
  monitor-uri /ready
  option dontlognull
listen stats
  bind 127.0.0.1:{{SPORT}}
  mode http
  stats enable
  stats uri /stats
  stats auth u:p
backend be
  option log-health-checks
  server s1 {{SRV}} check inter 200ms fall 2 rise 2
backend be2
  server s1 {{SRV2}} check inter 200ms fall 2 rise 2
`

// logReader keeps the datagrams that arrive on a Unix datagram socket.
type logReader struct {
	mu  sync.Mutex
	got []string
}

func readLog(t *testing.T, path string) *logReader {
	c := listenUnixgram(t, path)
	r := &logReader{}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			r.mu.Lock()
			r.got = append(r.got, string(buf[:n]))
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *logReader) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// waitFor waits until a datagram contains s.
func (r *logReader) waitFor(t *testing.T, who, s string) {
	t.Helper()
	r.waitForN(t, who, s, 1)
}

// waitForN waits until n datagrams contain s.
func (r *logReader) waitForN(t *testing.T, who, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		seen := 0
		for _, l := range r.lines() {
			if strings.Contains(l, s) {
				seen++
			}
		}
		if seen >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no datagram with %q; got:\n%s", who, s, strings.Join(r.lines(), ""))
		}
		time.Sleep(20 * time.Millisecond) // polling the socket reader, bounded
	}
}

var (
	syslogHeader    = regexp.MustCompile(`^<(\d+)>[A-Z][a-z]{2} [ 123]\d \d\d:\d\d:\d\d haproxy\[\d+\]: (.*)\n$`)
	logPorts        = regexp.MustCompile(`(127\.0\.0\.1):\d+`)
	logDuration     = regexp.MustCompile(`check duration: \d+ms`)
	syslogHeaderPID = regexp.MustCompile(`^<\d+>[^\]]* haproxy\[(\d+)\]: `)
)

// exchange sends send on a new connection to addr and reads until the
// server closes (an empty send: the client connects and closes).
func exchange(t *testing.T, addr, send string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, bound)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if send == "" {
		return
	}
	c.SetDeadline(time.Now().Add(bound))
	if _, err := io.WriteString(c, send); err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, c)
}

// haproxyCommand sends one runtime API command to haproxy's stats socket
// and returns its answer.
func haproxyCommand(t *testing.T, sock, cmd string) string {
	t.Helper()
	c, err := net.DialTimeout("unix", sock, bound)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(bound))
	if _, err := io.WriteString(c, cmd+"\n"); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// maskDatagram keeps what two balancers must agree on: PRI, tag and
// message, with the date, PID, ports and check durations masked. A
// datagram that is not RFC 3164 with a newline shows as such.
func maskDatagram(d string) string {
	m := syslogHeader.FindStringSubmatch(d)
	if m == nil {
		return "not RFC 3164: " + d
	}
	msg := logPorts.ReplaceAllString(m[2], "$1:PORT")
	msg = logDuration.ReplaceAllString(msg, "check duration: Nms")
	return "<" + m[1] + "> " + msg
}

// byProxy splits masked lines by the proxy they are about, in arrival
// order: haproxy and vipstack run be's and be2's checks on timers of
// their own, so only each proxy's sequence is comparable.
func byProxy(lines []string) map[string][]string {
	out := map[string][]string{}
	for _, l := range lines {
		s := maskDatagram(l)
		key := "other"
		switch {
		case strings.Contains(s, "(fe/TCP)") || strings.Contains(s, "Proxy fe "):
			key = "fe"
		case strings.Contains(s, " be/s1") || strings.Contains(s, "backend be has") || strings.Contains(s, "Proxy be "):
			key = "be"
		case strings.Contains(s, " be2/s1") || strings.Contains(s, "backend be2 has") || strings.Contains(s, "Proxy be2 "):
			key = "be2"
		case strings.Contains(s, "(mon/HTTP)") || strings.Contains(s, "Proxy mon "):
			key = "mon"
		case strings.Contains(s, "(stats/HTTP)") || strings.Contains(s, "Proxy stats "):
			key = "stats"
		}
		out[key] = append(out[key], s)
	}
	return out
}

// TestSyslogMatchesHaproxy runs haproxy 2.6 and vipstack with the seeds'
// logging, each sending to a Unix datagram socket of its own, and
// compares the datagrams (date, PID, ports and durations masked): a TCP
// connection through the frontend ("Connect from", info); requests to the
// monitor and the stats page ("Connect from ... (mon/HTTP)", one per
// request, none for a connection that sends nothing or garbage); the
// servers going DOWN when killed and UP when back, with
// log-health-checks (be: the check lines, then the state change without
// its reason) and without (be2: the state change with the check's
// account), and "no server available" (emerg); the runtime API's state
// changes of be2/s1 while DOWN and while UP (maint, drain, ready, each
// way), and its check's changes while drained; and the soft stop's "Proxy NAME stopped" lines (haproxy: SIGUSR1;
// vipstack: SoftStop), with each proxy's cumulated connections.
func TestSyslogMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	server, server2 := startBackend(t, "a"), startBackend(t, "b")
	dir := t.TempDir()
	admin := filepath.Join(dir, "admin.sock")
	conf := func(sock, port, mport, sport string) string {
		return strings.NewReplacer("{{SOCK}}", sock, "{{PORT}}", port, "{{MPORT}}", mport, "{{SPORT}}", sport,
			"{{ADMIN}}", admin, "{{SRV}}", server.addr.String(), "{{SRV2}}", server2.addr.String()).Replace(syslogConfig)
	}
	hsock, vsock := filepath.Join(dir, "h.sock"), filepath.Join(dir, "v.sock")
	hlog, vlog := readLog(t, hsock), readLog(t, vsock)

	hport, hmport, hsport := freePort(t), freePort(t), freePort(t)
	hout := peers.HAProxy(t, conf(hsock, hport, hmport, hsport))
	l := newLBOpts(t, Options{}, parseOnLoopback(t, conf(vsock, "1", "2", "3")))
	const firstCheck = "Health check for server be/s1 succeeded"
	hlog.waitFor(t, "haproxy", firstCheck)
	vlog.waitFor(t, "vipstack", firstCheck)
	if strings.Contains(hout.String(), "[ALERT]") {
		t.Fatalf("haproxy:\n%s", hout.String())
	}

	// A connection: the client speaks and leaves.
	for _, addr := range []string{"127.0.0.1:" + hport, l.Addrs("fe")[0].String()} {
		c, err := net.DialTimeout("tcp", addr, bound)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(bound))
		io.ReadFull(c, make([]byte, 2)) // "a\n"
		c.Close()
	}
	hlog.waitFor(t, "haproxy", "(fe/TCP)")
	vlog.waitFor(t, "vipstack", "(fe/TCP)")

	// The monitor and the stats page: a line per request, none for a
	// connection that sends nothing or garbage (measured).
	webRequests := []struct{ section, send string }{
		{"mon", "GET /ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"},
		{"mon", ""},
		{"mon", "garbage\r\n\r\n"},
		{"mon", "GET /ready HTTP/1.1\r\nHost: x\r\n\r\nGET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"},
		{"stats", "GET /stats HTTP/1.1\r\nHost: x\r\nAuthorization: Basic dTpw\r\nConnection: close\r\n\r\n"},
		{"stats", "GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"},
		{"stats", "GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"},
		{"stats", ""},
	}
	for _, r := range webRequests {
		haddr := map[string]string{"mon": "127.0.0.1:" + hmport, "stats": "127.0.0.1:" + hsport}[r.section]
		for _, addr := range []string{haddr, l.Addrs(r.section)[0].String()} {
			exchange(t, addr, r.send)
		}
	}
	hlog.waitForN(t, "haproxy", "(mon/HTTP)", 3)
	vlog.waitForN(t, "vipstack", "(mon/HTTP)", 3)
	hlog.waitForN(t, "haproxy", "(stats/HTTP)", 3)
	vlog.waitForN(t, "vipstack", "(stats/HTTP)", 3)

	// The servers die, then come back on their ports.
	server.stop()
	server2.stop()
	for _, s := range []string{"backend be has no server available!", "backend be2 has no server available!"} {
		hlog.waitFor(t, "haproxy", s)
		vlog.waitFor(t, "vipstack", s)
	}
	// The runtime API on be2/s1, DOWN: maint, then ready, which its
	// check takes DOWN again.
	setState := func(cmd string, st AdminState, wait string, n int) {
		t.Helper()
		if out := haproxyCommand(t, admin, cmd); strings.TrimSpace(out) != "" {
			t.Fatalf("haproxy: %s: %q", cmd, out)
		}
		if err := l.SetServerAdmin("be2", "s1", st); err != nil {
			t.Fatal(err)
		}
		hlog.waitForN(t, "haproxy", wait, n)
		vlog.waitForN(t, "vipstack", wait, n)
	}
	setState("set server be2/s1 state maint", AdminMaint, "Server be2/s1 was DOWN and now enters maintenance.", 1)
	setState("set server be2/s1 state ready", AdminReady, "Server be2/s1 is UP/READY (leaving forced maintenance).", 1)
	hlog.waitForN(t, "haproxy", "backend be2 has no server available!", 2)
	vlog.waitForN(t, "vipstack", "backend be2 has no server available!", 2)

	server.restart(t)
	server2.restart(t)
	for _, s := range []string{"Server be/s1 is UP", "Server be2/s1 is UP,"} {
		hlog.waitFor(t, "haproxy", s)
		vlog.waitFor(t, "vipstack", s)
	}
	// UP: every move between ready, drain and maint.
	setState("set server be2/s1 state drain", AdminDrain, "Server be2/s1 enters drain state.", 1)
	setState("set server be2/s1 state ready", AdminReady, "Server be2/s1 is UP (leaving forced drain).", 1)
	setState("disable server be2/s1", AdminMaint, "Server be2/s1 is going DOWN for maintenance.", 1)
	setState("set server be2/s1 state drain", AdminDrain, "Server be2/s1 remains in forced drain mode.", 1)
	setState("set server be2/s1 state maint", AdminMaint, "Server be2/s1 is going DOWN for maintenance.", 2)
	setState("enable server be2/s1", AdminReady, "Server be2/s1 is UP/READY (leaving forced maintenance).", 2)
	// Drained, the server dies and comes back: its check's lines are
	// notices, each followed by "remains in forced drain mode.".
	setState("set server be2/s1 state drain", AdminDrain, "Server be2/s1 enters drain state.", 2)
	server2.stop()
	hlog.waitForN(t, "haproxy", "Server be2/s1 remains in forced drain mode.", 2)
	vlog.waitForN(t, "vipstack", "Server be2/s1 remains in forced drain mode.", 2)
	server2.restart(t)
	hlog.waitForN(t, "haproxy", "Server be2/s1 remains in forced drain mode.", 3)
	vlog.waitForN(t, "vipstack", "Server be2/s1 remains in forced drain mode.", 3)
	setState("set server be2/s1 state ready", AdminReady, "Server be2/s1 is UP (leaving forced drain).", 2)
	// Anything either sends next (it should send nothing) shows in
	// the comparison.
	time.Sleep(500 * time.Millisecond) // 2.5 check intervals, bounded

	// The soft stop: haproxy's SIGUSR1, vipstack's SoftStop.
	m := syslogHeaderPID.FindStringSubmatch(hlog.lines()[0])
	pid, _ := strconv.Atoi(m[1])
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := l.SoftStop(ctx); err != nil {
		t.Fatal(err)
	}
	hlog.waitFor(t, "haproxy", "Proxy be2 stopped")
	vlog.waitFor(t, "vipstack", "Proxy be2 stopped")

	want, got := byProxy(hlog.lines()), byProxy(vlog.lines())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("datagrams by proxy (-haproxy +vipstack):\n%s", diff)
	}
	for _, k := range []string{"fe", "mon", "stats", "be", "be2"} {
		t.Logf("haproxy, %s:\n%s", k, strings.Join(want[k], "\n"))
	}
}
