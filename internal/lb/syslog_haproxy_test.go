package lb

import (
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/peers"
)

// syslogConfig is the seeds' logging: a Unix datagram socket in defaults,
// dontlognull, no log format; be has log-health-checks, be2 not. Both
// check the same server.
const syslogConfig = `defaults
  mode tcp
  log {{SOCK}} local0
  option dontlognull
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend fe
  bind 127.0.0.1:{{PORT}}
  default_backend be
backend be
  option log-health-checks
  server s1 {{SRV}} check inter 200ms fall 2 rise 2
backend be2
  server s1 {{SRV}} check inter 200ms fall 2 rise 2
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
	deadline := time.Now().Add(bound)
	for {
		for _, l := range r.lines() {
			if strings.Contains(l, s) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no datagram with %q; got:\n%s", who, s, strings.Join(r.lines(), ""))
		}
		time.Sleep(20 * time.Millisecond) // polling the socket reader, bounded
	}
}

var (
	syslogHeader = regexp.MustCompile(`^<(\d+)>[A-Z][a-z]{2} [ 123]\d \d\d:\d\d:\d\d haproxy\[\d+\]: (.*)\n$`)
	logPorts     = regexp.MustCompile(`(127\.0\.0\.1):\d+`)
	logDuration  = regexp.MustCompile(`check duration: \d+ms`)
)

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
		case strings.Contains(s, "(fe/TCP)"):
			key = "fe"
		case strings.Contains(s, " be/s1") || strings.Contains(s, "backend be has"):
			key = "be"
		case strings.Contains(s, " be2/s1") || strings.Contains(s, "backend be2 has"):
			key = "be2"
		}
		out[key] = append(out[key], s)
	}
	return out
}

// TestSyslogMatchesHaproxy runs haproxy 2.6 and vipstack with the seeds'
// logging, each sending to a Unix datagram socket of its own, and
// compares the datagrams (date, PID, ports and durations masked): a TCP
// connection through the frontend ("Connect from", info), the shared
// server going DOWN when killed and UP when back, with log-health-checks
// (be: the check lines, then the state change without its reason) and
// without (be2: the state change with the check's account), and "no
// server available" (emerg).
func TestSyslogMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	server := startBackend(t, "a")
	dir := t.TempDir()
	conf := func(sock, port string) string {
		return strings.NewReplacer("{{SOCK}}", sock, "{{PORT}}", port, "{{SRV}}", server.addr.String()).Replace(syslogConfig)
	}
	hsock, vsock := filepath.Join(dir, "h.sock"), filepath.Join(dir, "v.sock")
	hlog, vlog := readLog(t, hsock), readLog(t, vsock)

	hport := freePort(t)
	hout := peers.HAProxy(t, conf(hsock, hport))
	cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(conf(vsock, "1")))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Frontends[0].Binds = []lbconfig.Bind{loopbackBind()}
	l, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Shutdown(canceled()) })
	if err := l.Apply(cfg); err != nil {
		t.Fatal(err)
	}
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

	// The server dies, then comes back on its port.
	server.stop()
	for _, s := range []string{"backend be has no server available!", "backend be2 has no server available!"} {
		hlog.waitFor(t, "haproxy", s)
		vlog.waitFor(t, "vipstack", s)
	}
	server.restart(t)
	for _, s := range []string{"Server be/s1 is UP", "Server be2/s1 is UP"} {
		hlog.waitFor(t, "haproxy", s)
		vlog.waitFor(t, "vipstack", s)
	}
	// Anything either sends next (it should send nothing) shows in
	// the comparison.
	time.Sleep(500 * time.Millisecond) // 2.5 check intervals, bounded

	want, got := byProxy(hlog.lines()), byProxy(vlog.lines())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("datagrams by proxy (-haproxy +vipstack):\n%s", diff)
	}
	for _, k := range []string{"fe", "be", "be2"} {
		t.Logf("haproxy, %s:\n%s", k, strings.Join(want[k], "\n"))
	}
}
