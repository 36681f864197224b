package lb

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/lbconfig"
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

// TestAbnsReloadAndConflict: a reload keeps an abns@ bind's socket (an
// abstract socket cannot be bound twice, so reopening it would fail), the
// chain keeps answering across it, the status shows the bind as
// abns@NAME, and another process's socket of the same name is an error
// that names it.
func TestAbnsReloadAndConflict(t *testing.T) {
	origin := startOrigin(t, "app")
	name := "vcp-abns-reload-" + strings.ReplaceAll(t.Name(), "/", "-")
	ports := freePorts(t, 2)
	text := strings.NewReplacer("{{P0}}", ports[0], "{{NAME}}", name, "{{A}}", origin.addr()).Replace(`defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
listen front
  bind 127.0.0.1:{{P0}}
  server inner abns@{{NAME}}
frontend inner
  bind abns@{{NAME}}
  default_backend app
backend app
  server a1 {{A}}
`)
	parse := func(port ...string) *lbconfig.Config {
		text := text
		if len(port) > 0 {
			text = strings.Replace(text, "127.0.0.1:"+ports[0], "127.0.0.1:"+port[0], 1)
		}
		cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	get := func(when string) {
		t.Helper()
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+ports[0], bound)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if a := ask(t, c, bufio.NewReader(c), "GET /x HTTP/1.1\r\nHost: a.example\r\n\r\n"); a.Status != 200 || a.Arrived == nil || a.Arrived.Server != "app" {
			t.Fatalf("%s: status %d, arrived %+v", when, a.Status, a.Arrived)
		}
	}
	l := newLBOpts(t, Options{}, parse())
	get("first")
	if err := l.Apply(parse()); err != nil {
		t.Fatalf("reload: %v", err)
	}
	get("after the reload")
	if got := fmt.Sprint(l.Addrs("inner")); got != "[abns@"+name+"]" {
		t.Errorf("inner listens on %s", got)
	}
	other, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Shutdown(context.Background())
	err = other.Apply(parse(ports[1])) // its own TCP port, the same abstract socket
	if err == nil || !strings.Contains(err.Error(), "another socket listens on abns@"+name) {
		t.Errorf("a second LB on the same abstract socket: %v", err)
	}
	get("after the other LB's attempt")
}
