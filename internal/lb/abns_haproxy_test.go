package lb

import (
	"bufio"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAbnsChainMatchesHaproxy runs a mode http listen whose server is an
// abstract UNIX socket that a mode http frontend of the same process binds
// (`server inner abns@NAME` and `bind abns@NAME`, as corpus 029 chains
// them), in haproxy 2.6 and in vipstack side by side: each request reaches
// the origin through both sections, without an X-Forwarded-For (the
// inner frontend has option forwardfor, and haproxy adds none for a UNIX
// socket's client), and each section logs what haproxy logs: "unix" and
// the listener id for the inner frontend's client and listener, "unix"
// and port 0 for the outer listen's server. The inner frontend also binds
// a TCP port, so the UNIX bind is its second listener (id 2).
func TestAbnsChainMatchesHaproxy(t *testing.T) {
	origin := startOrigin(t, "app")
	conf := func(sock string, ports []string) string {
		// haproxy and vipstack run at once: each its own socket name.
		name := "vcp-abns-" + filepath.Base(filepath.Dir(sock)) + "-" + strings.TrimSuffix(filepath.Base(sock), ".sock")
		return strings.NewReplacer("{{SOCK}}", sock, "{{P0}}", ports[0], "{{P1}}", ports[1], "{{NAME}}", name, "{{A}}", origin.addr()).Replace(`defaults
  mode http
  log {{SOCK}} local0
  log-format "ci=%ci cp=%cp fi=%fi fp=%fp si=%si sp=%sp f=%f b=%b s=%s ST=%ST r=%r"
  option dontlognull
  timeout connect 1s
  timeout client 5s
  timeout server 5s
listen front
  bind 127.0.0.1:{{P0}}
  server inner abns@{{NAME}}
frontend inner
  bind 127.0.0.1:{{P1}}
  bind abns@{{NAME}}
  option forwardfor
  default_backend app
backend app
  server a1 {{A}}
`)
	}
	hlog, vlog, hports, vports := startHaproxyAndLB(t, 2, conf)
	// The syslog header (date, tag, pid) and the TCP clients' and
	// listeners' ports differ.
	masks := []*regexp.Regexp{regexp.MustCompile(`^(<\d+>)[^\]]*\]: `), regexp.MustCompile(`(ci=127\.0\.0\.1 cp=)\d+`), regexp.MustCompile(`(fi=127\.0\.0\.1 fp=)\d+`)}
	var logs [2][]string
	for i, p := range []struct {
		name string
		port string
		log  *logReader
	}{{"haproxy", hports[0], hlog}, {"vipstack", vports[0], vlog}} {
		waitListening(t, "tcp", "127.0.0.1:"+p.port)
		for _, path := range []string{"/a", "/b?x=1"} {
			c, err := net.DialTimeout("tcp", "127.0.0.1:"+p.port, bound)
			if err != nil {
				t.Fatal(err)
			}
			a := ask(t, c, bufio.NewReader(c), "GET "+path+" HTTP/1.1\r\nHost: a.example\r\n\r\n")
			c.Close()
			switch {
			case a.Status != 200 || a.Arrived == nil:
				t.Errorf("%s: %s: status %d, arrived %+v", p.name, path, a.Status, a.Arrived)
			case a.Arrived.Path != path || a.Arrived.Host != "a.example":
				t.Errorf("%s: %s: arrived as %s for host %s", p.name, path, a.Arrived.Path, a.Arrived.Host)
			case a.Arrived.Header.Get("X-Forwarded-For") != "":
				t.Errorf("%s: %s: X-Forwarded-For %q; haproxy adds none for a UNIX socket's client", p.name, path, a.Arrived.Header.Get("X-Forwarded-For"))
			}
			p.log.waitForN(t, p.name, " r=GET "+path+" ", 2)
		}
		for _, l := range p.log.lines() {
			for _, m := range masks {
				l = m.ReplaceAllString(l, "${1}N")
			}
			logs[i] = append(logs[i], strings.TrimSuffix(l, "\n"))
		}
		slices.Sort(logs[i]) // the two sections' lines of a request come in either order
	}
	if !slices.ContainsFunc(logs[0], func(l string) bool { return strings.Contains(l, "ci=unix cp=2 fi=unix fp=2") }) {
		t.Errorf("haproxy logged no client of the UNIX socket: %q", logs[0])
	}
	if diff := cmp.Diff(logs[0], logs[1]); diff != "" {
		t.Errorf("log lines (-haproxy +vipstack):\n%s", diff)
	}
}
