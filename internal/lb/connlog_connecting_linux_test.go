package lb

import (
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/syncbuf"
)

// connectingConfig has one frontend per client of
// TestClientLeavesWhileConnectingMatchesHaproxy, each to its own backend
// whose only server drops SYNs (blackhole), so that its counters are that
// client's alone, and one for the check that haproxy listens.
const connectingConfig = `global
  stats socket {{ADMIN}} mode 600 level admin
defaults
  mode tcp
  log stdout format raw local0
  retries 1
  timeout connect 500ms
  timeout client 5s
  timeout server 5s
  log-format "%ft %b/%s %Tw/%Tc/%Tt %B %U %ts %ac/%fc/%bc/%sc/%rc %sq/%bq"
frontend fin
  bind 127.0.0.1:{{P1}}
  default_backend fin
frontend rst
  bind 127.0.0.1:{{P2}}
  default_backend rst
frontend data
  bind 127.0.0.1:{{P3}}
  default_backend data
frontend probe
  bind 127.0.0.1:{{P4}}
  default_backend probe
backend fin
  server s1 {{HOLE}}
backend rst
  server s1 {{HOLE}}
backend data
  server s1 {{HOLE}}
backend probe
  server s1 {{HOLE}}
`

// connectingLine finds the parts of a connectingConfig line that vary
// from run to run: %Tw, %Tc and %Tt (connectingKey keeps of Tc whether it
// is -1: no connect finished).
var connectingLine = regexp.MustCompile(`^(\S+ \S+) \d+/(-?\d+)/\d+ (.*)$`)

// connectingKey is a connection log line as the tests compare it with
// haproxy's: without its timers, but with whether the connection to the
// server was made (Tc, the middle timer, -1 when it never was; its value
// in milliseconds is the machine's, which a loaded one makes 1 where
// haproxy's read 0). ok is false for a line of another shape.
func connectingKey(line string) (key string, ok bool) {
	m := connectingLine.FindStringSubmatch(strings.Trim(line, "\x00 "))
	if m == nil {
		return "", false
	}
	tc := "Tc"
	if m[2] == "-1" {
		tc = "-1"
	}
	return m[1] + " Tw/" + tc + "/Tt " + m[3], true
}

// TestClientLeavesWhileConnectingMatchesHaproxy: a client that leaves
// while the balancer still connects to its server (the server drops
// SYNs) ends its connection at once when it reset ("CD") or ended
// without sending a byte ("CC"): no retry, the server's session counted
// without an error (and the reset as the client's abort, cli_abrt). A
// client that sent bytes before its FIN waits for
// the connect and its retries ("sC"). Measured with haproxy 2.6.12 in
// this test; vipstack, before, went on connecting through its retries
// for all three and logged "sC" with %rc 1, econ 1 and wretr 1.
func TestClientLeavesWhileConnectingMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	hole := blackhole(t).String()
	ports := freePorts(t, 4)
	hadmin := filepath.Join(t.TempDir(), "admin.sock")
	conf := func(admin string, p []string) string {
		return strings.NewReplacer("{{ADMIN}}", admin, "{{P1}}", p[0], "{{P2}}", p[1], "{{P3}}", p[2], "{{P4}}", p[3], "{{HOLE}}", hole).Replace(connectingConfig)
	}
	hout := peers.HAProxy(t, conf(hadmin, ports))
	var vout syncbuf.Buffer
	l := newLBOpts(t, Options{Stdout: &vout}, parseOnLoopback(t, conf(filepath.Join(t.TempDir(), "v.sock"), []string{"1", "2", "3", "4"})))
	// haproxy is up once waitListening's connection (a "CC" of its own)
	// is logged; the lines compared come after it.
	waitListening(t, "tcp", "127.0.0.1:"+ports[3])
	eventually(t, "haproxy's line of the listening check", func() bool { return strings.Contains(hout.String(), "probe probe/s1 ") })
	skip := map[string]int{"haproxy": len(hout.String())}

	// Each client waits until its balancer is connecting for it (show
	// sess names the server), then leaves.
	connecting := map[string]func(fe string) bool{
		"haproxy": func(fe string) bool {
			for _, line := range strings.Split(haproxyCommand(t, hadmin, "show sess"), "\n") {
				if strings.Contains(line, " fe="+fe+" ") && strings.Contains(line, " srv=s1 ") {
					return true
				}
			}
			return false
		},
		"vipstack": func(string) bool {
			ss := l.Sessions()
			return len(ss) == 1 && !ss[0].Connected && ss[0].Local.IsValid()
		},
	}
	clients := []struct {
		fe    string
		leave func(c *net.TCPConn)
	}{
		{"fin", func(c *net.TCPConn) { c.Close() }},
		{"rst", func(c *net.TCPConn) { c.SetLinger(0); c.Close() }},
		{"data", func(c *net.TCPConn) {
			c.Write([]byte("hello\n"))
			c.CloseWrite()
			io.Copy(io.Discard, c) // until the balancer gives up
			c.Close()
		}},
	}
	feIndex := map[string]int{"fin": 0, "rst": 1, "data": 2}
	lines := map[string][]string{}
	for _, b := range []struct {
		who  string
		out  *syncbuf.Buffer
		addr func(fe string) string
	}{
		{"haproxy", hout, func(fe string) string { return "127.0.0.1:" + ports[feIndex[fe]] }},
		{"vipstack", &vout, func(fe string) string { return l.Addrs(fe)[0].String() }},
	} {
		for _, cl := range clients {
			c, err := net.DialTimeout("tcp", b.addr(cl.fe), bound)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(bound))
			eventually(t, b.who+": a session of "+cl.fe+" connecting", func() bool { return connecting[b.who](cl.fe) })
			cl.leave(c.(*net.TCPConn))
			eventually(t, b.who+": the line of "+cl.fe, func() bool {
				return strings.Contains(b.out.String()[skip[b.who]:], cl.fe+" "+cl.fe+"/s1 ")
			})
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
	t.Logf("haproxy:\n%s", strings.Join(lines["haproxy"], "\n"))

	hcsv, vcsv := haproxyCommand(t, hadmin, "show stat"), l.Snapshot().CSV()
	for _, fe := range []string{"fin", "rst", "data"} {
		for _, sv := range []string{"s1", "BACKEND"} {
			pick := func(csv string) map[string]string {
				m := csvFields(t, csv, fe, sv)
				return map[string]string{"scur": m["scur"], "stot": m["stot"], "econ": m["econ"], "wretr": m["wretr"], "lbtot": m["lbtot"],
					"cli_abrt": m["cli_abrt"], "srv_abrt": m["srv_abrt"], "eresp": m["eresp"]}
			}
			if diff := cmp.Diff(pick(hcsv), pick(vcsv)); diff != "" {
				t.Errorf("%s/%s counters (-haproxy +vipstack):\n%s", fe, sv, diff)
			}
		}
	}
}
