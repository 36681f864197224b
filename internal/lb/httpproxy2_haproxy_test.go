package lb

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lb/httploop"
)

// httpLogLine masks what differs between two runs of one request's
// option httplog line: the syslog header's date and pid, ports, dates
// and timings.
var httpLogMask = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`^<(\d+)>\S+ +\d+ \d\d:\d\d:\d\d \S+\[\d+\]: `), "<$1>DATE haproxy[PID]: "},
	{regexp.MustCompile(`:\d+ \[[^\]]+\] `), ":PORT [DATE] "},
	{regexp.MustCompile(`(\] \S+ \S+/\S+) -?\d+/-?\d+/-?\d+/-?\d+/\d+ `), "$1 TR/Tw/Tc/Tr/Ta "},
	// %ac/%fc: the connections open when the line is written, the
	// previous request's maybe still among them (its close races the
	// next request).
	{regexp.MustCompile(` \d+/\d+/(\d+/\d+/\d+ \d+/\d+ )`), " AC/FC/$1"},
	// %B: haproxy counts the answer's head too, vipstack its body only
	// (docs/lb.md).
	{regexp.MustCompile(`Ta (\d+) \d+ `), "Ta $1 B "},
}

func maskHTTPLog(l string) string {
	l = strings.TrimSuffix(l, "\n")
	for _, m := range httpLogMask {
		l = m.re.ReplaceAllString(l, m.with)
	}
	return l
}

// TestHTTPLogMatchesHaproxy compares option httplog lines of haproxy and
// vipstack for the same requests: a client that closes without a word
// (CR), routed, denied, redirected, to a server that is down; dates,
// ports, timings and the connection counts masked. It runs against each
// HTTP engine.
func TestHTTPLogMatchesHaproxy(t *testing.T) {
	for _, engine := range httpEngines {
		t.Run(string(engine), func(t *testing.T) { testHTTPLog(t, engine) })
	}
}

func testHTTPLog(t *testing.T, engine httploop.Mode) {
	api := startOrigin(t, "api")
	dead := closedPort(t)
	conf := func(sock string, ports []string) string {
		return strings.NewReplacer("{{SOCK}}", sock, "{{P0}}", ports[0], "{{A}}", api.addr(), "{{DEAD}}", dead.String()).Replace(`defaults
  mode http
  log {{SOCK}} local0
  option httplog
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:{{P0}}
  http-request deny if { path /deny }
  redirect location /x if { path /redir }
  use_backend none if { path /none }
  default_backend api
backend api
  server a1 {{A}}
backend none
  server dead {{DEAD}}
`)
	}
	paths := []string{"/ok?q=1", "/deny", "/redir", "/none"}
	want, got := logBothOpts(t, conf, paths, Options{HTTPEngine: engine})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("httplog lines (-haproxy +vipstack):\n%s", diff)
	}
}

// TestHTTPPersistenceMatchesHaproxy runs cookie insert persistence,
// balance uri and an errorfile in both: the first answer sets the
// server's cookie, a request with it goes to that server, a request with
// a cookie of no server is balanced and gets one; balance uri sends a
// URI to one server every time; a backend without a server answers the
// errorfile.
func TestHTTPPersistenceMatchesHaproxy(t *testing.T) {
	s1, s2 := startOrigin(t, "s1"), startOrigin(t, "s2")
	ef := filepath.Join(t.TempDir(), "503.http")
	if err := os.WriteFile(ef, []byte("HTTP/1.0 503 Service Unavailable\r\nCache-Control: no-cache\r\nContent-Type: text/plain\r\n\r\nsorry, down\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dead := closedPort(t)
	conf := func(sock string, ports []string) string {
		return strings.NewReplacer("{{P0}}", ports[0], "{{S1}}", s1.addr(), "{{S2}}", s2.addr(), "{{DEAD}}", dead.String(), "{{EF}}", ef).Replace(`defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:{{P0}}
  use_backend byuri if { path_beg /u/ }
  use_backend down if { path_beg /down }
  default_backend sticky
backend sticky
  cookie SRVID insert indirect nocache
  ignore-persist if { path_beg /nopersist }
  server s1 {{S1}} cookie one
  server s2 {{S2}} cookie two
backend byuri
  balance uri
  server s1 {{S1}}
  server s2 {{S2}}
backend down
  errorfile 503 {{EF}}
  server dead {{DEAD}}
`)
	}
	_, _, hports, vports := startHaproxyAndLB(t, 1, conf)
	waitListening(t, "tcp", "127.0.0.1:"+hports[0])
	type result struct {
		Status              int
		SetCookie, CacheCtl string
		Server              string
		Body                string
		CookieArrived       string
	}
	do := func(port, path, cookie string) result {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, bound)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		raw := "GET " + path + " HTTP/1.1\r\nHost: a.example\r\n"
		if cookie != "" {
			raw += "Cookie: " + cookie + "\r\n"
		}
		raw += "\r\n"
		c.Write([]byte(raw))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf strings.Builder
		bufio.NewReader(resp.Body).WriteTo(&buf)
		r := result{Status: resp.StatusCode, SetCookie: resp.Header.Get("Set-Cookie"), CacheCtl: resp.Header.Get("Cache-Control")}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			var x arrived
			jsonDecode(t, buf.String(), &x)
			r.Server, r.CookieArrived = x.Server, x.Header.Get("Cookie")
		} else {
			r.Body = buf.String()
		}
		return r
	}
	for _, p := range []struct{ name, port string }{{"haproxy", hports[0]}, {"vipstack", vports[0]}} {
		first := do(p.port, "/", "")
		if first.Server == "" || !strings.HasPrefix(first.SetCookie, "SRVID=") {
			t.Fatalf("%s: first request: %+v", p.name, first)
		}
		// With the cookie: the same server, no new cookie, the
		// cookie not passed on (indirect).
		val := strings.TrimPrefix(strings.SplitN(first.SetCookie, ";", 2)[0], "SRVID=")
		for range 4 {
			again := do(p.port, "/", "SRVID="+val+"; other=1")
			want := result{Status: 200, Server: first.Server, CookieArrived: "other=1"}
			if diff := cmp.Diff(want, again); diff != "" {
				t.Errorf("%s: with cookie %s (-want +got):\n%s", p.name, val, diff)
			}
		}
		// ignore-persist: the cookie is not looked at, the requests
		// are balanced over both servers.
		seen := map[string]bool{}
		for range 4 {
			seen[do(p.port, "/nopersist", "SRVID="+val).Server] = true
		}
		if !seen["s1"] || !seen["s2"] {
			t.Errorf("%s: ignore-persist: 4 requests with cookie %s reached %v, want s1 and s2", p.name, val, seen)
		}
		// A cookie of no server: balanced, and given one.
		if r := do(p.port, "/", "SRVID=nosuch"); r.Server == "" || !strings.HasPrefix(r.SetCookie, "SRVID=") || r.CookieArrived != "" {
			t.Errorf("%s: unknown cookie: %+v", p.name, r)
		}
		// balance uri: a URI goes to one server.
		for _, u := range []string{"/u/a", "/u/b", "/u/c", "/u/d"} {
			first := do(p.port, u, "").Server
			for range 3 {
				if s := do(p.port, u, "").Server; s != first {
					t.Errorf("%s: balance uri: %s went to %s, then %s", p.name, u, first, s)
				}
			}
		}
	}
	// The errorfile and the cookie's header lines, compared.
	for _, path := range []string{"/down", "/", "/cacheable"} {
		h, v := do(hports[0], path, ""), do(vports[0], path, "")
		h.Server, v.Server = "", "" // which server is first may differ
		h.SetCookie = regexp.MustCompile(`=(one|two)`).ReplaceAllString(h.SetCookie, "=X")
		v.SetCookie = regexp.MustCompile(`=(one|two)`).ReplaceAllString(v.SetCookie, "=X")
		if diff := cmp.Diff(h, v); diff != "" {
			t.Errorf("%s (-haproxy +vipstack):\n%s", path, diff)
		}
	}
}

// TestHTTPStatsInFrontendMatchesHaproxy serves the stats page and a
// monitor-uri from a mode http frontend that also forwards: the stats URI
// gets the page (with auth), the monitor URI its 200, other requests go
// to the backend; the frontend's sessions count alike.
func TestHTTPStatsInFrontendMatchesHaproxy(t *testing.T) {
	s1 := startOrigin(t, "s1")
	conf := func(sock string, ports []string) string {
		return strings.NewReplacer("{{P0}}", ports[0], "{{S1}}", s1.addr(), "{{SOCK}}", sock).Replace(`defaults
  mode http
  log {{SOCK}} local0
  option httplog
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:{{P0}}
  stats enable
  stats uri /admin?stats
  stats auth u:p
  monitor-uri /ready
  default_backend be
backend be
  server s1 {{S1}}
`)
	}
	hlog, vlog, hports, vports := startHaproxyAndLB(t, 1, conf)
	waitListening(t, "tcp", "127.0.0.1:"+hports[0])
	waitListening(t, "tcp", "127.0.0.1:"+vports[0]) // the same probe for both counts
	stot := map[string]string{}
	for _, p := range []struct{ name, port string }{{"haproxy", hports[0]}, {"vipstack", vports[0]}} {
		for _, tc := range []struct {
			raw        string
			wantStatus int
			wantIn     string
		}{
			{"GET /admin?stats HTTP/1.1\r\nHost: x\r\n\r\n", 401, "401 Unauthorized"},
			{"GET /admin?stats;csv HTTP/1.1\r\nHost: x\r\nAuthorization: Basic dTpw\r\n\r\n", 200, "# pxname,svname"},
			{"GET /other HTTP/1.1\r\nHost: x\r\n\r\n", 200, `"Server":"s1"`},
			{"GET /ready HTTP/1.1\r\nHost: x\r\n\r\n", 200, "<html><body><h1>200 OK</h1>\nService ready.\n</body></html>\n"},
		} {
			c, err := net.DialTimeout("tcp", "127.0.0.1:"+p.port, bound)
			if err != nil {
				t.Fatal(err)
			}
			c.Write([]byte(tc.raw))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			var buf strings.Builder
			bufio.NewReader(resp.Body).WriteTo(&buf)
			resp.Body.Close()
			c.Close()
			if resp.StatusCode != tc.wantStatus || !strings.Contains(buf.String(), tc.wantIn) {
				t.Errorf("%s: %q: status %d, body %.200q; want %d with %q", p.name, tc.raw, resp.StatusCode, buf.String(), tc.wantStatus, tc.wantIn)
			}
			if strings.Contains(tc.raw, ";csv") {
				stot[p.name] = csvField(buf.String(), "fe", "FRONTEND", "stot")
			}
		}
	}
	// The frontend's sessions: the connections so far, the one reading
	// the CSV included.
	if stot["haproxy"] == "" || stot["haproxy"] != stot["vipstack"] {
		t.Errorf("frontend fe stot: haproxy %q, vipstack %q", stot["haproxy"], stot["vipstack"])
	}
	// The request lines: stats page (LR), its 401, the forwarded
	// request; none for the monitor URI.
	hlog.waitFor(t, "haproxy", "GET /other ")
	vlog.waitFor(t, "vipstack", "GET /other ")
	var want, got []string
	for _, l := range hlog.lines() {
		want = append(want, maskHTTPLog(l))
	}
	for _, l := range vlog.lines() {
		got = append(got, maskHTTPLog(l))
	}
	// Compared as sets: each request came on its own connection, and a
	// balancer logs a stream when it ends, which for the 401 (answered,
	// then closed by the client) may come after the next request's line
	// (seen from haproxy under load).
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request lines (-haproxy +vipstack):\n%s", diff)
	}
}

// csvField is a field of the stats CSV's line for proxy px, svname sv.
func csvField(csv, px, sv, field string) string {
	lines := strings.Split(csv, "\n")
	head := strings.Split(strings.TrimPrefix(lines[0], "# "), ",")
	col := slices.Index(head, field)
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) > col && col >= 0 && f[0] == px && f[1] == sv {
			return f[col]
		}
	}
	return ""
}

// TestHTTPStatsOptionsInFrontendMatchesHaproxy: the stats page of a
// mode http frontend that only serves it (OpenShift's layout) with
// stats realm, show-node, show-desc and show-legends: the 401 names the
// realm, and the page shows the node and the description, as haproxy's.
func TestHTTPStatsOptionsInFrontendMatchesHaproxy(t *testing.T) {
	conf := func(sock string, ports []string) string {
		return strings.NewReplacer("{{P0}}", ports[0], "{{SOCK}}", sock).Replace(`defaults
  log {{SOCK}} local0
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend stats
  bind 127.0.0.1:{{P0}}
  mode http
  maxconn 10
  stats enable
  stats hide-version
  stats refresh 30s
  stats realm Our\ Stats
  stats show-node lbnode7
  stats show-desc Stats for the test cluster
  stats show-legends
  stats auth u:p
  stats uri /stats
`)
	}
	_, _, hports, vports := startHaproxyAndLB(t, 1, conf)
	for _, p := range []struct{ name, port string }{{"haproxy", hports[0]}, {"vipstack", vports[0]}} {
		waitListening(t, "tcp", "127.0.0.1:"+p.port)
		for _, tc := range []struct {
			raw        string
			wantStatus int
			wantIn     []string
		}{
			{"GET /stats HTTP/1.1\r\nHost: x\r\n\r\n", 401, []string{`realm="Our Stats"`}},
			{"GET /stats HTTP/1.1\r\nHost: x\r\nAuthorization: Basic dTpw\r\n\r\n", 200, []string{"lbnode7", "Stats for the test cluster", "active UP"}},
		} {
			c, err := net.DialTimeout("tcp", "127.0.0.1:"+p.port, bound)
			if err != nil {
				t.Fatal(err)
			}
			c.Write([]byte(tc.raw))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			var buf strings.Builder
			for k, v := range resp.Header {
				fmt.Fprintf(&buf, "%s: %s\n", k, strings.Join(v, ","))
			}
			bufio.NewReader(resp.Body).WriteTo(&buf)
			resp.Body.Close()
			c.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("%s: %q: status %d, want %d", p.name, tc.raw, resp.StatusCode, tc.wantStatus)
			}
			for _, w := range tc.wantIn {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("%s: %q: response lacks %q", p.name, tc.raw, w)
				}
			}
		}
	}
}

// logBoth starts haproxy and vipstack on conf (one frontend port), sends
// each path to both as a GET, waits for its log line and returns both
// logs, masked (maskHTTPLog): haproxy's first.
func logBoth(t *testing.T, conf func(sock string, ports []string) string, paths []string) (want, got []string) {
	t.Helper()
	return logBothOpts(t, conf, paths, Options{})
}

// logBothOpts is logBoth with vipstack's options.
func logBothOpts(t *testing.T, conf func(sock string, ports []string) string, paths []string, opts Options) (want, got []string) {
	t.Helper()
	hlog, vlog, hports, vports := startHaproxyAndLBOpts(t, 1, conf, opts)
	// The probes connect and close without a word: a CR line each.
	waitListening(t, "tcp", "127.0.0.1:"+hports[0])
	hlog.waitFor(t, "haproxy", "<BADREQ>")
	waitListening(t, "tcp", "127.0.0.1:"+vports[0])
	vlog.waitFor(t, "vipstack", "<BADREQ>")
	for _, p := range []struct {
		port string
		log  *logReader
	}{{hports[0], hlog}, {vports[0], vlog}} {
		for _, path := range paths {
			c, err := net.DialTimeout("tcp", "127.0.0.1:"+p.port, bound)
			if err != nil {
				t.Fatal(err)
			}
			ask(t, c, bufio.NewReader(c), "GET "+path+" HTTP/1.1\r\nHost: a.example\r\n\r\n")
			c.Close()
			p.log.waitFor(t, p.port, "GET "+path+" ")
		}
	}
	for _, l := range hlog.lines() {
		want = append(want, maskHTTPLog(l))
	}
	for _, l := range vlog.lines() {
		got = append(got, maskHTTPLog(l))
	}
	return want, got
}
