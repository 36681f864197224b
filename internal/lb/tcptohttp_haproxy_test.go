package lb

import (
	"bufio"
	"io"
	"net"
	"net/http"
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

// tcpToHTTPConfig: a frontend in mode tcp (defaults') whose default
// backend is mode http (the layout of a homelab file of the corpus).
const tcpToHTTPConfig = `global
  stats socket {{ADMIN}} mode 600 level admin
defaults
  log stdout format raw local0
  timeout connect 2s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:{{FE}}
  default_backend be
backend be
  mode http
  server s1 {{S1}}
`

var connectFromLine = regexp.MustCompile(`^Connect from 127\.0\.0\.1:\d+ to 127\.0\.0\.1:\d+ \((\S+)\)$`)

// TestTCPFrontendHTTPBackendMatchesHaproxy: haproxy 2.6.12 proxies the
// connections of such a frontend as HTTP: two requests on one
// connection get the server's answers, each logged "Connect from ...
// (fe/TCP)" (the first at the connection's accept); a request that
// does not parse gets 400, its connection's line at accept; the stats
// show the frontend in mode tcp.
func TestTCPFrontendHTTPBackendMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	srvLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, "ok")
	})}
	go hs.Serve(srvLn)
	t.Cleanup(func() { hs.Close() })

	port := freePorts(t, 1)[0]
	hadmin := filepath.Join(t.TempDir(), "admin.sock")
	conf := func(admin string) string {
		return strings.NewReplacer("{{ADMIN}}", admin, "{{FE}}", port, "{{S1}}", srvLn.Addr().String()).Replace(tcpToHTTPConfig)
	}
	hout := peers.HAProxy(t, conf(hadmin))
	var vout syncbuf.Buffer
	l := newLBOpts(t, Options{Stdout: &vout}, parseOnLoopback(t, conf(filepath.Join(t.TempDir(), "v.sock"))))
	waitListening(t, "tcp", "127.0.0.1:"+port)
	// waitListening's connection has a line of its own.
	eventually(t, "haproxy's line of the listening check", func() bool { return strings.Contains(hout.String(), "(fe/TCP)") })
	skip := len(hout.String())

	type result struct {
		Statuses []string
		Lines    []string
		Modes    []string
	}
	got := map[string]result{}
	for _, b := range []struct {
		who  string
		addr string
		out  *syncbuf.Buffer
		skip int
		csv  func() string
	}{
		{"haproxy", "127.0.0.1:" + port, hout, skip, func() string { return haproxyCommand(t, hadmin, "show stat") }},
		{"vipstack", l.Addrs("fe")[0].String(), &vout, 0, func() string { return l.Snapshot().CSV() }},
	} {
		var r result
		c, err := net.DialTimeout("tcp", b.addr, bound)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(bound))
		br := bufio.NewReader(c)
		for _, path := range []string{"/", "/missing"} {
			io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: a\r\n\r\n")
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("%s: %v", b.who, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			r.Statuses = append(r.Statuses, resp.Status[:3])
		}
		c.Close()
		g, err := net.DialTimeout("tcp", b.addr, bound)
		if err != nil {
			t.Fatal(err)
		}
		g.SetDeadline(time.Now().Add(bound))
		// Longer than HTTP/2's preface, which Go's server waits for.
		io.WriteString(g, "garbage that is no request line\r\n\r\n")
		status, _ := bufio.NewReader(g).ReadString('\n')
		g.Close()
		if f := strings.Fields(status); len(f) > 1 {
			r.Statuses = append(r.Statuses, f[1])
		}
		eventually(t, b.who+": three lines", func() bool { return strings.Count(b.out.String()[b.skip:], "Connect from") >= 3 })
		time.Sleep(100 * time.Millisecond) // a third line, if any, is written
		for _, s := range strings.Split(b.out.String()[b.skip:], "\n") {
			if m := connectFromLine.FindStringSubmatch(strings.Trim(s, "\x00 ")); m != nil {
				r.Lines = append(r.Lines, m[1])
			} else if s != "" {
				r.Lines = append(r.Lines, "other: "+s)
			}
		}
		csv := b.csv()
		r.Modes = []string{csvFields(t, csv, "fe", "FRONTEND")["mode"]}
		got[b.who] = r
	}
	if diff := cmp.Diff(got["haproxy"], got["vipstack"]); diff != "" {
		t.Errorf("(-haproxy +vipstack):\n%s", diff)
	}
	want := result{Statuses: []string{"200", "404", "400"}, Lines: []string{"fe/TCP", "fe/TCP", "fe/TCP"}, Modes: []string{"tcp"}}
	if diff := cmp.Diff(want, got["vipstack"]); diff != "" {
		t.Errorf("vipstack (-want +got):\n%s", diff)
	}
}
