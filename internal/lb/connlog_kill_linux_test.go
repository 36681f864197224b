package lb

import (
	"net"
	"net/netip"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/peers"
)

// killedConnectingLine is the test's log line: %ci, then the balancer's
// side, %bi:%bp and quoted, then the rest.
var killedConnectingLine = regexp.MustCompile(`^(127\.0\.0\.1) (\S+):(\S+) (\S+) (\S+) (.*)$`)

// TestKilledConnectingSourceMatchesHaproxy: a client killed by the
// runtime API's shutdown session while its connect to the server is still
// in progress (the server's accept queue is full: its SYNs are dropped)
// has, in %bi and %bp, the address the balancer's socket to the server
// was given when the connect started, as haproxy 2.6.12 logs it
// (measured, log-format "%ci %bi:%bp %{+Q}bi %{+Q}bp %b/%s %ts"):
//
//	<134>... 127.0.0.1 127.0.0.1:51346 "127.0.0.1" 51346 be/s1 KC
//
// vipstack wrote "-:-" "" "" there. The port is masked in the comparison;
// vipstack's must be the one its show sess gave for the connect.
func TestKilledConnectingSourceMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	hole := blackhole(t)
	dir := t.TempDir()
	conf := func(sock, port string) string {
		return strings.NewReplacer("{{SOCK}}", sock, "{{PORT}}", port, "{{HOLE}}", hole.String()).Replace(`global
  stats socket {{SOCK}}.admin mode 600 level admin
defaults
  mode tcp
  log {{SOCK}} local0
  timeout connect 30s
  timeout client 30s
  timeout server 30s
frontend fe
  bind 127.0.0.1:{{PORT}}
  log-format "%ci %bi:%bp %{+Q}bi %{+Q}bp %b/%s %ts"
  default_backend be
backend be
  server s1 {{HOLE}}
`)
	}
	hsock, vsock := filepath.Join(dir, "h.sock"), filepath.Join(dir, "v.sock")
	hlog, vlog := readLog(t, hsock), readLog(t, vsock)
	hport := freePort(t)
	peers.HAProxy(t, conf(hsock, hport))
	cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(conf(vsock, "1")))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Frontends[0].Binds = cfg.Frontends[0].Binds[:0]
	cfg.Frontends[0].Binds = append(cfg.Frontends[0].Binds, loopbackBind())
	l := newLBOpts(t, Options{}, cfg)

	// haproxy: the client, then its session, connecting, killed.
	waitListening(t, "tcp", "127.0.0.1:"+hport)
	hc, err := net.DialTimeout("tcp", "127.0.0.1:"+hport, bound)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	var id string
	deadline := time.Now().Add(bound)
	for id == "" {
		for _, line := range strings.Split(haproxyCommand(t, hsock+".admin", "show sess"), "\n") {
			if strings.Contains(line, " fe=fe ") && strings.Contains(line, " srv=s1 ") {
				id, _, _ = strings.Cut(line, ":")
			}
		}
		if id == "" && time.Now().After(deadline) {
			t.Fatal("haproxy: no session of fe connecting to s1")
		}
		time.Sleep(20 * time.Millisecond) // haproxy accepting, bounded
	}
	if out := haproxyCommand(t, hsock+".admin", "shutdown session "+id); strings.TrimSpace(out) != "" {
		t.Fatalf("haproxy: shutdown session %s: %q", id, out)
	}
	hlog.waitFor(t, "haproxy", " KC")

	// vipstack: the same.
	vc := dial(t, l, "fe")
	defer vc.Close()
	var local netip.AddrPort
	eventually(t, "the connect to start", func() bool {
		ss := l.Sessions()
		if len(ss) == 1 && !ss[0].Connected && ss[0].Local.IsValid() {
			local = ss[0].Local
			return true
		}
		return false
	})
	if !l.ShutdownSession(l.Sessions()[0].ID) {
		t.Fatal("vipstack: shutdown session closed nothing")
	}
	vlog.waitFor(t, "vipstack", " KC")

	mask := func(who, d string) string {
		t.Helper()
		h := syslogHeader.FindStringSubmatch(d)
		if h == nil {
			return "not RFC 3164: " + d
		}
		m := killedConnectingLine.FindStringSubmatch(h[2])
		if m == nil {
			return "unexpected: " + h[2]
		}
		port, _ := strconv.Atoi(m[3])
		if m[5] != m[3] || port <= 0 {
			t.Errorf("%s: %%bp %q, %%{+Q}bp %q: want the same port", who, m[3], m[5])
		}
		if who == "vipstack" && m[3] != strconv.Itoa(int(local.Port())) {
			t.Errorf("vipstack: %%bp %s, but show sess gave the connect's local address %s", m[3], local)
		}
		return strings.Join([]string{"<" + h[1] + ">", m[1], m[2] + ":PORT", m[4], "PORT", m[6]}, " ")
	}
	// haproxy's first line may be waitListening's connection (CC).
	killed := func(r *logReader) string {
		for _, d := range r.lines() {
			if strings.HasSuffix(d, " KC\n") {
				return d
			}
		}
		return ""
	}
	want, got := mask("haproxy", killed(hlog)), mask("vipstack", killed(vlog))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("killed while connecting (-haproxy +vipstack):\n%s", diff)
	}
	t.Logf("haproxy: %s", strings.TrimSpace(killed(hlog)))
}
