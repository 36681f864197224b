package lb

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/lb/logging/logtest"
	"github.com/vipstack/vipstack/internal/lb/stats"
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
	c := logtest.ListenUnixgram(t, path)
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
// way), and its check's changes while drained; its weight set to 0 ("no
// server available") and back; and the soft stop's "Proxy NAME stopped" lines (haproxy: SIGUSR1;
// vipstack: SoftStop), with each proxy's cumulated connections, be's
// counting a client that came while it had no server (NOSRV).
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

	ports := freePorts(t, 3)
	hport, hmport, hsport := ports[0], ports[1], ports[2]
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
	// A client while be has no server: haproxy counts it in be's BE of
	// the soft stop's line (measured, BE: 2 with the one served above).
	for _, addr := range []string{"127.0.0.1:" + hport, l.Addrs("fe")[0].String()} {
		exchange(t, addr, "x")
	}
	hlog.waitForN(t, "haproxy", "(fe/TCP)", 2)
	vlog.waitForN(t, "vipstack", "(fe/TCP)", 2)
	// The runtime API on be2/s1, DOWN: maint, then ready, which its
	// check takes DOWN again.
	setState := func(cmd string, st stats.AdminState, wait string, n int) {
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
	setState("set server be2/s1 state maint", stats.AdminMaint, "Server be2/s1 was DOWN and now enters maintenance.", 1)
	setState("set server be2/s1 state ready", stats.AdminReady, "Server be2/s1 is UP/READY (leaving forced maintenance).", 1)
	hlog.waitForN(t, "haproxy", "backend be2 has no server available!", 2)
	vlog.waitForN(t, "vipstack", "backend be2 has no server available!", 2)

	server.restart(t)
	server2.restart(t)
	for _, s := range []string{"Server be/s1 is UP", "Server be2/s1 is UP,"} {
		hlog.waitFor(t, "haproxy", s)
		vlog.waitFor(t, "vipstack", s)
	}
	// UP: every move between ready, drain and maint.
	setState("set server be2/s1 state drain", stats.AdminDrain, "Server be2/s1 enters drain state.", 1)
	setState("set server be2/s1 state ready", stats.AdminReady, "Server be2/s1 is UP (leaving forced drain).", 1)
	setState("disable server be2/s1", stats.AdminMaint, "Server be2/s1 is going DOWN for maintenance.", 1)
	setState("set server be2/s1 state drain", stats.AdminDrain, "Server be2/s1 remains in forced drain mode.", 1)
	setState("set server be2/s1 state maint", stats.AdminMaint, "Server be2/s1 is going DOWN for maintenance.", 2)
	setState("enable server be2/s1", stats.AdminReady, "Server be2/s1 is UP/READY (leaving forced maintenance).", 2)
	// Drained, the server dies and comes back: its check's lines are
	// notices, each followed by "remains in forced drain mode.".
	setState("set server be2/s1 state drain", stats.AdminDrain, "Server be2/s1 enters drain state.", 2)
	server2.stop()
	hlog.waitForN(t, "haproxy", "Server be2/s1 remains in forced drain mode.", 2)
	vlog.waitForN(t, "vipstack", "Server be2/s1 remains in forced drain mode.", 2)
	server2.restart(t)
	hlog.waitForN(t, "haproxy", "Server be2/s1 remains in forced drain mode.", 3)
	vlog.waitForN(t, "vipstack", "Server be2/s1 remains in forced drain mode.", 3)
	setState("set server be2/s1 state ready", stats.AdminReady, "Server be2/s1 is UP (leaving forced drain).", 2)
	// Weight 0 takes be2's only server out: "no server available"
	// (measured), and nothing when it comes back.
	noServer := "backend be2 has no server available!"
	count := func(r *logReader) int { return strings.Count(strings.Join(r.lines(), ""), noServer) }
	hn, vn := count(hlog), count(vlog)
	for i, w := range []int{0, 1} {
		cmd := "set weight be2/s1 " + strconv.Itoa(w)
		if out := haproxyCommand(t, admin, cmd); strings.TrimSpace(out) != "" {
			t.Fatalf("haproxy: %s: %q", cmd, out)
		}
		if err := l.SetServerWeight("be2", "s1", w); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			hlog.waitForN(t, "haproxy", noServer, hn+1)
			vlog.waitForN(t, "vipstack", noServer, vn+1)
		}
	}
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

// startHaproxyAndLB runs haproxy on conf(hsock, hports) and vipstack on
// conf(vsock, vports), each with its own log socket and n loopback
// ports, and returns their log readers and ports.
func startHaproxyAndLB(t *testing.T, n int, conf func(sock string, ports []string) string) (hlog, vlog *logReader, hports, vports []string) {
	t.Helper()
	return startHaproxyAndLBOpts(t, n, conf, Options{})
}

// startHaproxyAndLBOpts is startHaproxyAndLB with vipstack's options.
func startHaproxyAndLBOpts(t *testing.T, n int, conf func(sock string, ports []string) string, opts Options) (hlog, vlog *logReader, hports, vports []string) {
	t.Helper()
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	dir := t.TempDir()
	hsock, vsock := filepath.Join(dir, "h.sock"), filepath.Join(dir, "v.sock")
	hlog, vlog = readLog(t, hsock), readLog(t, vsock)
	ports := freePorts(t, 2*n)
	hports, vports = ports[:n], ports[n:]
	hout := peers.HAProxy(t, conf(hsock, hports))
	cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(conf(vsock, vports)))
	if err != nil {
		t.Fatal(err)
	}
	newLBOpts(t, opts, cfg)
	t.Cleanup(func() {
		// haproxy's alerts about the configuration; "no server
		// available" is one of the lines compared.
		for _, l := range strings.Split(hout.String(), "\n") {
			if strings.Contains(l, "[ALERT]") && !strings.Contains(l, "has no server available") {
				t.Errorf("haproxy:\n%s", hout.String())
				return
			}
		}
	})
	return hlog, vlog, hports, vports
}

// waitListening waits until addr takes connections (haproxy starting).
func waitListening(t *testing.T, network, addr string) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		c, err := net.DialTimeout(network, addr, bound)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond) // haproxy starting, bounded
	}
}

var (
	logConnectPorts = regexp.MustCompile(`^(<\d+> Connect from \S+):\d+ to (\S+):\d+ `)
	logTCPLine      = regexp.MustCompile(`^(<\d+> \S+):\d+ \[[^\]]+\] (\S+ \S+) [-\d]+/[-\d]+/\d+ (\d+ \S\S) [/\d]+ `)
)

// TestLogAddressesMatchHaproxy compares the client and listener addresses
// in the logs of a `bind :::PORT v4v6` listener, for an IPv4 client
// (haproxy writes it IPv4-mapped, ::ffff:127.0.0.1) and an IPv6 one (::1,
// no brackets): the "Connect from" line of a frontend without a format
// and of a monitor, the tcplog line, and %ci %fi %si under log-format,
// quoted and not. Ports, dates, timings and connection counts are
// masked.
func TestLogAddressesMatchHaproxy(t *testing.T) {
	if c, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skip("no IPv6 loopback:", err)
	} else {
		c.Close()
	}
	server := startBackend(t, "a")
	conf := func(sock string, ports []string) string {
		return strings.NewReplacer("{{SOCK}}", sock, "{{SRV}}", server.addr.String(),
			"{{P0}}", ports[0], "{{P1}}", ports[1], "{{P2}}", ports[2], "{{P3}}", ports[3]).Replace(`defaults
  mode tcp
  log {{SOCK}} local0
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend fe
  bind :::{{P0}} v4v6
  default_backend be
frontend fe2
  bind :::{{P1}} v4v6
  option tcplog
  default_backend be
frontend fe3
  bind :::{{P2}} v4v6
  log-format "%ci|%fi|%fp|%si|%{+Q}ci|%{+Q}fi"
  default_backend be
listen mon
  bind :::{{P3}} v4v6
  mode http
  monitor-uri /ready
backend be
  server s1 {{SRV}}
`)
	}
	hlog, vlog, hports, vports := startHaproxyAndLB(t, 4, conf)
	waitListening(t, "tcp", "127.0.0.1:"+hports[3])
	for _, ports := range [][]string{hports, vports} {
		for i, port := range ports {
			for _, host := range []string{"127.0.0.1", "::1"} {
				addr := net.JoinHostPort(host, port)
				if i == 3 {
					exchange(t, addr, "GET /ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
					continue
				}
				c, err := net.DialTimeout("tcp", addr, bound)
				if err != nil {
					t.Fatal(err)
				}
				c.SetDeadline(time.Now().Add(bound))
				io.ReadFull(c, make([]byte, 2)) // "a\n"
				c.Close()
			}
		}
	}
	// haproxy's "Connect from" line for the monitor counts too: a
	// line per request, four in all.
	for _, who := range []struct {
		name string
		r    *logReader
	}{{"haproxy", hlog}, {"vipstack", vlog}} {
		who.r.waitForN(t, who.name, "Connect from", 4)
		who.r.waitForN(t, who.name, " fe2 be/s1 ", 2)
		who.r.waitForN(t, who.name, "|", 2)
	}
	mask := func(lines []string) []string {
		var out []string
		for _, d := range lines {
			m := syslogHeader.FindStringSubmatch(d)
			if m == nil {
				out = append(out, "not RFC 3164: "+d)
				continue
			}
			s := "<" + m[1] + "> " + m[2]
			s = logConnectPorts.ReplaceAllString(s, "$1:PORT to $2:PORT ")
			s = logTCPLine.ReplaceAllString(s, "$1:PORT [DATE] $2 Tw/Tc/Tt $3 COUNTS ")
			s = strings.ReplaceAll(s, "|"+hportsOr(hports, vports, d)+"|", "|FP|")
			out = append(out, s)
		}
		slices.Sort(out) // the four frontends' lines interleave as they come
		return out
	}
	want, got := mask(hlog.lines()), mask(vlog.lines())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("datagrams (-haproxy +vipstack):\n%s", diff)
	}
	t.Logf("haproxy:\n%s", strings.Join(want, "\n"))
}

// hportsOr is fe3's port in d: haproxy's or vipstack's.
func hportsOr(hports, vports []string, d string) string {
	if strings.Contains(d, "|"+hports[2]+"|") {
		return hports[2]
	}
	return vports[2]
}

// TestLongLogLineMatchesHaproxy compares lines longer than haproxy's
// default `len` of 1024: a log-format of 1100 bytes, to an RFC 3164 target
// and to a `format raw` one, and the "Connect from" line of a frontend
// whose name is 1000 bytes long. haproxy 2.6.12 cuts the RFC 3164
// datagram to 1024 bytes and adds the newline (1025), the raw one to 1023
// and the newline (1024); each holds the start of the line (measured).
func TestLongLogLineMatchesHaproxy(t *testing.T) {
	long := strings.Repeat("x", 1100)
	name := "f" + strings.Repeat("n", 999)
	var rawH, rawV *logReader
	dir := t.TempDir()
	conf := func(sock string, ports []string) string {
		raw := sock + ".raw"
		if rawH == nil {
			rawH = readLog(t, raw)
		} else {
			rawV = readLog(t, raw)
		}
		return strings.NewReplacer("{{SOCK}}", sock, "{{RAW}}", raw, "{{SRV}}", filepath.Join(dir, "none"),
			"{{P0}}", ports[0], "{{P1}}", ports[1], "{{LONG}}", long, "{{NAME}}", name).Replace(`defaults
  mode tcp
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend fe
  bind 127.0.0.1:{{P0}}
  log {{SOCK}} local0
  log {{RAW}} format raw local0
  log-format "A{{LONG}}Z"
  default_backend be
frontend {{NAME}}
  bind 127.0.0.1:{{P1}}
  log {{SOCK}} local0
  default_backend be
backend be
  server s1 127.0.0.1:9
`)
	}
	hlog, vlog, hports, vports := startHaproxyAndLB(t, 2, conf)
	for _, ports := range [][]string{hports, vports} {
		waitListening(t, "tcp", "127.0.0.1:"+ports[0]) // a connection to fe
		exchange(t, "127.0.0.1:"+ports[1], "")
	}
	describe := func(r *logReader, who string, connect bool) []string {
		if connect {
			r.waitFor(t, who, "Connect from")
		}
		r.waitFor(t, who, "Axxx")
		var out []string
		for _, d := range r.lines() {
			m := syslogHeader.FindStringSubmatch(d)
			head := "raw"
			msg := strings.TrimSuffix(d, "\n")
			if m != nil {
				head = "<" + m[1] + "> header"
				msg = m[2]
			}
			msg = logPorts.ReplaceAllString(msg, "$1:PORT")
			out = append(out, fmt.Sprintf("%s, %d bytes, newline %v: %.40s...%s", head, len(d), strings.HasSuffix(d, "\n"), msg, msg[max(len(msg)-10, 0):]))
		}
		slices.Sort(out) // the two frontends' lines come in either order
		return out
	}
	want := append(describe(hlog, "haproxy", true), describe(rawH, "haproxy raw", false)...)
	got := append(describe(vlog, "vipstack", true), describe(rawV, "vipstack raw", false)...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("datagrams (-haproxy +vipstack):\n%s", diff)
	}
	t.Logf("haproxy:\n%s", strings.Join(want, "\n"))
}

// syslogHeaderHost is syslogHeader with haproxy's host name field of
// `format rfc3164`, when there is one.
var syslogHeaderHost = regexp.MustCompile(`^<(\d+)>[A-Z][a-z]{2} [ 123]\d \d\d:\d\d:\d\d (\S+ )?haproxy\[\d+\]: (.*)\n$`)

// TestLogLenMatchesHaproxy compares the datagrams of a 3000-byte line
// sent to targets with `len 80` and `len 2000`, RFC 3164 and raw, and to
// two without len beside them. haproxy 2.6.12 cuts each datagram, header
// included, to its target's len and adds the newline (81 and 2001 bytes,
// raw or not), except that the line itself is built in a buffer of the
// largest len less one, so that the raw len 2000 target gets 1999 bytes
// and the newline; the default targets get 1024 and the newline (the raw
// one 1024 too, where without a larger len elsewhere it gets 1023):
// measured, the same with len 500, 1023, 1025 and 65535 (65535 and 65536
// bytes). With an explicit `format rfc3164`, haproxy's header has a host
// name, "localhost" (measured; the default format has none).
func TestLogLenMatchesHaproxy(t *testing.T) {
	long := "A" + strings.Repeat("x", 2998) + "Z"
	targets := []string{"len 80", "len 80 format raw", "len 2000", "len 2000 format raw", "", "format raw", "len 80 format rfc3164", "format rfc3164"}
	readers := map[string][]*logReader{}
	conf := func(sock string, ports []string) string {
		var logs strings.Builder
		for i, opts := range targets {
			path := fmt.Sprintf("%s.%d", sock, i)
			readers[sock] = append(readers[sock], readLog(t, path))
			fmt.Fprintf(&logs, "  log %s %s local0\n", path, opts)
		}
		return strings.NewReplacer("{{LOGS}}", logs.String(), "{{P0}}", ports[0], "{{LONG}}", long).Replace(`defaults
  mode tcp
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend fe
  bind 127.0.0.1:{{P0}}
{{LOGS}}  log-format "{{LONG}}"
  default_backend be
backend be
  server s1 127.0.0.1:9
`)
	}
	_, _, hports, vports := startHaproxyAndLB(t, 1, conf)
	for _, ports := range [][]string{hports, vports} {
		waitListening(t, "tcp", "127.0.0.1:"+ports[0]) // a connection to fe
	}
	describe := func(rs []*logReader, who string) []string {
		var out []string
		for i, r := range rs {
			r.waitFor(t, who+" "+targets[i], "Axxx")
			for _, d := range r.lines() {
				head, msg := "raw", strings.TrimSuffix(d, "\n")
				if m := syslogHeaderHost.FindStringSubmatch(d); m != nil {
					head, msg = "<"+m[1]+"> header "+m[2], m[3]
				}
				out = append(out, fmt.Sprintf("%q: %s, %d bytes, newline %v, %.10s...%s", targets[i], head, len(d), strings.HasSuffix(d, "\n"),
					msg, msg[max(len(msg)-10, 0):]))
			}
		}
		return out
	}
	var want, got []string
	for sock, rs := range readers {
		if strings.HasSuffix(sock, "h.sock") {
			want = describe(rs, "haproxy")
		} else {
			got = describe(rs, "vipstack")
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("datagrams (-haproxy +vipstack):\n%s", diff)
	}
	t.Logf("haproxy:\n%s", strings.Join(want, "\n"))
}

// selfSigned is a self-signed certificate for 127.0.0.1 and its PEM.
func selfSigned(t *testing.T, cn string) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestHealthCheckTLSLogMatchesHaproxy compares option log-health-checks'
// lines for check-ssl servers: one that completes the handshake (verify
// none), one whose certificate is not verified (haproxy: verify required
// with a ca-file of another CA; vipstack: verify by default, against the
// system's CA pool), one that answers in plain HTTP, one that closes and
// one that resets, both after reading the ClientHello. haproxy 2.6.12
// reports every failed handshake as `Layer6 invalid response, info: "SSL
// handshake failure"` (measured), then the server DOWN and the backend
// without a server.
func TestHealthCheckTLSLogMatchesHaproxy(t *testing.T) {
	cert, _ := selfSigned(t, "server")
	_, otherCA := selfSigned(t, "other CA")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, otherCA, 0o644); err != nil {
		t.Fatal(err)
	}
	serve := func(handle func(net.Conn)) string {
		return startBackendFunc(t, "tls", func(c net.Conn) {
			c.SetDeadline(time.Now().Add(bound))
			handle(c)
		}).addr.String()
	}
	tlsOK := serve(func(c net.Conn) {
		tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert}})
		if tc.Handshake() == nil {
			io.Copy(io.Discard, tc)
		}
	})
	plain := serve(func(c net.Conn) {
		c.Read(make([]byte, 4096))
		io.WriteString(c, "HTTP/1.0 400 Bad Request\r\n\r\n")
	})
	// Both read the ClientHello first, so that the check's client has
	// connected and sent it whatever the timing: one then closes (an end
	// of file in the handshake), the other resets.
	closer := serve(func(c net.Conn) { c.Read(make([]byte, 4096)) })
	reset := serve(func(c net.Conn) {
		c.Read(make([]byte, 4096))
		c.(*net.TCPConn).SetLinger(0)
	})
	backends := []string{"ok", "badca", "plain", "closer", "reset"}
	conf := func(sock string, ports []string) string {
		badca := "verify required ca-file " + caFile
		if strings.Contains(sock, "v.sock") {
			badca = "" // vipstack: verified by default, against the system's pool
		}
		return strings.NewReplacer("{{SOCK}}", sock, "{{P0}}", ports[0], "{{OK}}", tlsOK, "{{PLAIN}}", plain,
			"{{CLOSER}}", closer, "{{RESET}}", reset, "{{BADCA}}", badca).Replace(`defaults
  mode tcp
  log {{SOCK}} local0
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend fe
  bind 127.0.0.1:{{P0}}
  default_backend ok
backend ok
  option log-health-checks
  server s1 {{OK}} check check-ssl verify none inter 5s
backend badca
  option log-health-checks
  server s1 {{OK}} check check-ssl {{BADCA}} inter 5s
backend plain
  option log-health-checks
  server s1 {{PLAIN}} check check-ssl verify none inter 5s
backend closer
  option log-health-checks
  server s1 {{CLOSER}} check check-ssl verify none inter 5s
backend reset
  option log-health-checks
  server s1 {{RESET}} check check-ssl verify none inter 5s
`)
	}
	hlog, vlog, _, _ := startHaproxyAndLB(t, 1, conf)
	for _, who := range []struct {
		name string
		r    *logReader
	}{{"haproxy", hlog}, {"vipstack", vlog}} {
		who.r.waitFor(t, who.name, "Health check for server ok/s1 succeeded")
		for _, b := range backends[1:] {
			who.r.waitFor(t, who.name, "backend "+b+" has no server available!")
		}
	}
	group := func(lines []string) map[string][]string {
		out := map[string][]string{}
		for _, d := range lines {
			s := maskDatagram(d)
			for _, b := range backends {
				if strings.Contains(s, " "+b+"/s1") || strings.Contains(s, "backend "+b+" ") {
					out[b] = append(out[b], s)
				}
			}
		}
		return out
	}
	want, got := group(hlog.lines()), group(vlog.lines())
	// haproxy adds " (Connection reset by peer)" when the reset reaches
	// it while it still waits to read the handshake's answer, which
	// depends on its scheduling (3 of 15 runs beside two CPU hogs; the
	// others as in the table). vipstack writes the line without it
	// (doc.go): the reset's own line is compared without the suffix.
	for i, l := range want["reset"] {
		want["reset"][i] = strings.Replace(l, `"SSL handshake failure (Connection reset by peer)"`, `"SSL handshake failure"`, 1)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("datagrams by backend (-haproxy +vipstack):\n%s", diff)
	}
	for _, b := range backends {
		t.Logf("haproxy, %s:\n%s", b, strings.Join(want[b], "\n"))
	}
}

// TestLogFormatGlobalQuoteMatchesHaproxy: "%{+Q}o" quotes every variable
// after it that +Q quotes (addresses, names; not ports nor %ST, which a
// TCP connection logs as 0), and a variable's own "%{-Q}" wins: the
// format of a Kubernetes API balancer of the corpus, line for line
// with haproxy's.
func TestLogFormatGlobalQuoteMatchesHaproxy(t *testing.T) {
	server := startBackend(t, "a")
	conf := func(sock string, ports []string) string {
		return strings.NewReplacer("{{SOCK}}", sock, "{{SRV}}", server.addr.String(), "{{P0}}", ports[0]).Replace(`defaults
  mode tcp
  log {{SOCK}} local0
  log-format %{+Q}o\ client_address\ \ =\ %ci,\ client_port\ =\ %cp,\ server_address\ =\ %si,\ status\ =\ %ST,\ fe\ =\ %f,\ be\ =\ %{-Q}b
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend fe
  bind 127.0.0.1:{{P0}}
  default_backend be
backend be
  server s1 {{SRV}}
`)
	}
	hlog, vlog, hports, vports := startHaproxyAndLB(t, 1, conf)
	for _, port := range []string{hports[0], vports[0]} {
		waitListening(t, "tcp", "127.0.0.1:"+port)
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, bound)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(bound))
		io.ReadFull(c, make([]byte, 2)) // "a\n"
		c.Close()
	}
	// A line for the probe of each listener and one for the client.
	hlog.waitForN(t, "haproxy", "client_address", 2)
	vlog.waitForN(t, "vipstack", "client_address", 2)
	body := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			if !strings.Contains(l, "client_address") {
				continue
			}
			_, msg, _ := strings.Cut(l, "]: ")
			out = append(out, logClientPort.ReplaceAllString(msg, "client_port = PORT"))
		}
		return out
	}
	want, got := body(hlog.lines()), body(vlog.lines())
	if len(want) == 0 || !cmp.Equal(want, got) {
		t.Errorf("lines: haproxy %q, vipstack %q", want, got)
	}
}

var logClientPort = regexp.MustCompile(`client_port = [0-9]+`)
