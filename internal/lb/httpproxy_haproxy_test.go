package lb

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/lb/httploop"
	"github.com/vipstack/vipstack/internal/peers"
)

// httpOrigin is an HTTP server behind the proxies: it answers each
// request with what arrived (its name, Host, headers, the connection it
// came on) and upgrades /ws to an echo of bytes.
type httpOrigin struct {
	name string
	ln   net.Listener
	srv  *http.Server
}

type arrived struct {
	Server string
	Host   string
	Path   string
	Header http.Header
	Remote string
	Body   string
}

func startOrigin(t *testing.T, name string) *httpOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &httpOrigin{name: name, ln: ln}
	o.srv = &http.Server{Handler: http.HandlerFunc(o.serve)}
	go o.srv.Serve(ln)
	t.Cleanup(func() { o.srv.Close() })
	return o
}

func (o *httpOrigin) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/ws" {
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
		rw.Flush()
		io.Copy(c, rw) // echo until the client closes
		return
	}
	if r.URL.Path == "/cacheable" {
		w.Header().Set("Cache-Control", "max-age=60")
	}
	// X-Send: "Name: value" asks for that header in the answer.
	for _, v := range r.Header.Values("X-Send") {
		if k, val, ok := strings.Cut(v, ": "); ok {
			w.Header().Add(k, val)
		}
	}
	body, _ := io.ReadAll(r.Body)
	a := arrived{Server: o.name, Host: r.Host, Path: r.URL.RequestURI(), Header: r.Header, Remote: r.RemoteAddr, Body: string(body)}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	// X-Status: CODE answers with that status.
	if code, err := strconv.Atoi(r.Header.Get("X-Status")); err == nil {
		w.WriteHeader(code)
	}
	json.NewEncoder(w).Encode(a)
}

func (o *httpOrigin) addr() string { return o.ln.Addr().String() }

// httpAnswer is what a client saw of one request.
type httpAnswer struct {
	Status   int
	Location string
	Body     string // for answers of the proxy itself
	Arrived  *arrived
	// Header is the answer's headers of answerHeaders, when present.
	Header http.Header
}

// answerHeaders are the answer's headers the side-by-side tests compare.
var answerHeaders = []string{"X-Set", "X-Add", "X-Rep", "X-Val", "X-Del", "Content-Encoding", "Vary", "Etag"}

// ask sends one request on c (kept alive) and reads the answer.
func ask(t *testing.T, c net.Conn, br *bufio.Reader, raw string) httpAnswer {
	t.Helper()
	c.SetDeadline(time.Now().Add(bound))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	req, _ := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	body = decompressed(t, resp.Header.Get("Content-Encoding"), body)
	a := httpAnswer{Status: resp.StatusCode, Location: resp.Header.Get("Location")}
	for _, k := range answerHeaders {
		if v := resp.Header.Values(k); len(v) > 0 {
			if a.Header == nil {
				a.Header = http.Header{}
			}
			a.Header[k] = v
		}
	}
	if len(body) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || bytes.HasPrefix(body, []byte(`{"Server":`)) {
		a.Arrived = new(arrived)
		if err := json.Unmarshal(body, a.Arrived); err != nil {
			t.Fatal(err)
		}
	} else {
		a.Body = string(body)
	}
	return a
}

// decompressed is body decoded from a Content-Encoding of gzip or
// deflate (zlib, or raw when it has no zlib header), as a client would.
func decompressed(t *testing.T, encoding string, body []byte) []byte {
	t.Helper()
	var r io.Reader
	var err error
	switch encoding {
	case "gzip":
		r, err = gzip.NewReader(bytes.NewReader(body))
	case "deflate":
		if r, err = zlib.NewReader(bytes.NewReader(body)); err != nil {
			r, err = flate.NewReader(bytes.NewReader(body)), nil
		}
	default:
		return body
	}
	if err != nil {
		t.Fatalf("Content-Encoding %s: %v", encoding, err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("Content-Encoding %s: %v", encoding, err)
	}
	return out
}

// masked keeps of what arrived what both proxies must agree on.
func masked(a httpAnswer) httpAnswer {
	if a.Arrived == nil {
		return a
	}
	x := *a.Arrived
	h := http.Header{}
	for _, k := range []string{"X-Forwarded-For", "X-Route", "X-Src", "X-Backend", "X-Remove", "X-Keep", "Cookie", "X-Rep", "X-Val", "Accept-Encoding", "X-Original-To", "X-Dst"} {
		if v := x.Header.Values(k); len(v) > 0 {
			h[k] = v
		}
	}
	for k, v := range x.Header {
		if strings.HasPrefix(k, "X-Rs-") { // TestRegsubMatchesHaproxy's
			h[k] = v
		}
	}
	x.Header, x.Remote = h, ""
	a.Arrived = &x
	return a
}

const httpRoutingConf = `defaults
  mode http
  option forwardfor
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:{{P0}}
  acl is_api path_beg /api
  acl host_b hdr(host) -i b.example
  acl old path /old
  acl js path_end .js
  acl img path_reg ^/img/[0-9]+$
  acl post method POST
  http-request set-header X-Route fe
  http-request add-header X-Src %[src]
  http-request del-header X-Remove
  http-request deny if { path_beg /forbidden }
  http-request deny deny_status 429 if { path_sub slow }
  http-request deny deny_status 400 if { path_beg /d400 }
  http-request deny deny_status 401 if { path_beg /d401 }
  http-request deny deny_status 404 if { path_beg /d404 }
  http-request deny deny_status 405 if { path_beg /d405 }
  http-request deny deny_status 408 if { path_beg /d408 }
  http-request deny deny_status 410 if { path_beg /d410 }
  http-request deny deny_status 413 if { path_beg /d413 }
  http-request deny deny_status 425 if { path_beg /d425 }
  http-request deny deny_status 500 if { path_beg /d500 }
  http-request deny deny_status 501 if { path_beg /d501 }
  http-request deny deny_status 502 if { path_beg /d502 }
  http-request deny deny_status 503 if { path_beg /d503 }
  http-request deny deny_status 504 if { path_beg /d504 }
  redirect scheme https code 301 if { hdr(host) -i secure.example }
  redirect location /new code 302 if old
  redirect prefix /p drop-query if { path_beg /pre }
  use_backend api if is_api || host_b
  use_backend api if js !post
  use_backend api if img
  use_backend none if { path_beg /none }
  default_backend web
backend api
  http-request set-header X-Backend api
  server a1 {{A}}
backend web
  option forwardfor except 10.0.0.0/8 header X-Real
  server w1 {{W}}
backend none
  server dead {{DEAD}}
`

// startRoutingPair runs httpRoutingConf in haproxy and in vipstack in
// front of two origins, api and web, and returns the two frontends' ports
// (haproxy's first) once haproxy listens.
func startRoutingPair(t *testing.T) []string {
	t.Helper()
	return startHTTPPair(t, httpRoutingConf)
}

// startHTTPPair runs a mode http configuration in haproxy and in
// vipstack in front of two origins and returns the two frontends' ports
// (haproxy's first) once haproxy listens. In the configuration,
// {{P0}} is the frontend's port, {{A}} and {{W}} the origins api's and
// web's addresses, {{DEAD}} an address nothing listens on.
func startHTTPPair(t *testing.T, template string) []string {
	t.Helper()
	return startHTTPPairOpts(t, template, Options{})
}

// startHTTPPairOpts is startHTTPPair with vipstack's options (its HTTP
// engine).
func startHTTPPairOpts(t *testing.T, template string, opts Options) []string {
	t.Helper()
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	api, web := startOrigin(t, "api"), startOrigin(t, "web")
	dead := closedPort(t)
	ports := freePorts(t, 2)
	conf := func(port string) string {
		return strings.NewReplacer("{{P0}}", port, "{{A}}", api.addr(), "{{W}}", web.addr(), "{{DEAD}}", dead.String()).Replace(template)
	}
	peers.HAProxy(t, conf(ports[0]))
	cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(conf(ports[1])))
	if err != nil {
		t.Fatal(err)
	}
	newLBOpts(t, opts, cfg)
	waitListening(t, "tcp", "127.0.0.1:"+ports[0])
	return ports
}

// TestHTTPRoutingMatchesHaproxy runs one mode http configuration in
// haproxy 2.6 and in vipstack and sends both the same requests: ACL
// routing to two backends, header rewriting, X-Forwarded-For, deny,
// redirects and a backend whose server is down give the same backend,
// headers, status, Location and body.
// It runs against each HTTP engine.
func TestHTTPRoutingMatchesHaproxy(t *testing.T) {
	for _, engine := range httpEngines {
		t.Run(string(engine), func(t *testing.T) { testHTTPRouting(t, engine) })
	}
}

func testHTTPRouting(t *testing.T, engine httploop.Mode) {
	ports := startHTTPPairOpts(t, httpRoutingConf, Options{HTTPEngine: engine})
	haddr, vaddr := "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1]

	reqs := []rawRequest{
		{"default backend", "GET /index.html HTTP/1.1\r\nHost: a.example\r\nX-Remove: x\r\nX-Keep: k\r\n\r\n"},
		{"path_beg", "GET /api/v1?q=1 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"host acl, case-insensitive", "GET / HTTP/1.1\r\nHost: B.Example\r\n\r\n"},
		{"path_end and not method", "GET /app.js HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"path_end and method POST goes default", "POST /app.js HTTP/1.1\r\nHost: a.example\r\nContent-Length: 5\r\n\r\nhello"},
		{"path_reg", "GET /img/42 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"path_reg no match", "GET /img/x42 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"existing X-Forwarded-For is kept", "GET /api/x HTTP/1.1\r\nHost: a.example\r\nX-Forwarded-For: 192.0.2.7\r\n\r\n"},
		{"chunked body", "POST /api/up HTTP/1.1\r\nHost: a.example\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"},
		{"deny", "GET /forbidden/x HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"deny_status", "GET /is/slow HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"deny_status 400", "GET /d400 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"deny_status 401", "GET /d401 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"deny_status 404", "GET /d404 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"deny_status 405", "GET /d405 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"deny_status 408", "GET /d408 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"deny_status 410", "GET /d410 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"deny_status 413", "GET /d413 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"deny_status 425", "GET /d425 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"deny_status 500", "GET /d500 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"deny_status 501", "GET /d501 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"deny_status 502", "GET /d502 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"deny_status 503", "GET /d503 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"deny_status 504", "GET /d504 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"redirect scheme", "GET /a?b=c HTTP/1.1\r\nHost: secure.example\r\n\r\n"},
		{"redirect location", "GET /old HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"redirect prefix drop-query", "GET /pre/x?y=1 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"server down", "GET /none HTTP/1.1\r\nHost: a.example\r\n\r\n"},
	}
	want := askBoth(t, reqs, haddr, vaddr)
	// The table must have routed somewhere: guard against both failing alike.
	if want[0].Arrived == nil || want[0].Arrived.Server != "web" || want[1].Arrived == nil || want[1].Arrived.Server != "api" {
		t.Fatalf("haproxy did not route as the test expects: %+v %+v", want[0], want[1])
	}
}

// TestHTTPKeepAliveReuse sends several requests on one client connection
// through each proxy: every request arrives, and the proxies reuse one
// server connection for them, as haproxy does by default.
// It runs against each HTTP engine.
func TestHTTPKeepAliveReuse(t *testing.T) {
	for _, engine := range httpEngines {
		t.Run(string(engine), func(t *testing.T) { testHTTPKeepAliveReuse(t, engine) })
	}
}

func testHTTPKeepAliveReuse(t *testing.T, engine httploop.Mode) {
	ports := startHTTPPairOpts(t, httpRoutingConf, Options{HTTPEngine: engine})
	for _, p := range []struct{ name, port string }{{"haproxy", ports[0]}, {"vipstack", ports[1]}} {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+p.port, bound)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		remotes := map[string]bool{}
		for i := range 5 {
			a := ask(t, c, br, "GET /api/"+itoa(i)+" HTTP/1.1\r\nHost: a.example\r\n\r\n")
			if a.Arrived == nil || a.Arrived.Server != "api" {
				t.Fatalf("%s: request %d: %+v", p.name, i, a)
			}
			remotes[a.Arrived.Remote] = true
		}
		c.Close()
		if len(remotes) != 1 {
			t.Errorf("%s: 5 requests on one client connection came on %d server connections: %v", p.name, len(remotes), remotes)
		}
	}
}

// TestHTTPWebSocketRelay upgrades a request through each proxy: after the
// server's 101 the bytes flow both ways.
func TestHTTPWebSocketRelay(t *testing.T) {
	ports := startRoutingPair(t)
	for _, p := range []struct{ name, port string }{{"haproxy", ports[0]}, {"vipstack", ports[1]}} {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+p.port, bound)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(bound))
		io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: a.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		if resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("%s: status %d, want 101", p.name, resp.StatusCode)
		}
		for _, msg := range []string{"ping", strings.Repeat("x", 100000)} {
			if _, err := io.WriteString(c, msg); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, len(msg))
			if _, err := io.ReadFull(br, buf); err != nil || string(buf) != msg {
				t.Fatalf("%s: echo of %d bytes: %v", p.name, len(msg), err)
			}
		}
		c.Close()
	}
}

func jsonDecode(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%v: %q", err, s)
	}
}

// TestHTTPContinueAndH2 sends through each proxy a request with
// `Expect: 100-continue` (the interim answer comes before the body is
// sent, the body arrives) and requests over HTTP/2 with prior knowledge
// (routed by their path, X-Forwarded-For added).
func TestHTTPContinueAndH2(t *testing.T) {
	ports := startRoutingPair(t)
	for _, p := range []struct{ name, port string }{{"haproxy", ports[0]}, {"vipstack", ports[1]}} {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+p.port, bound)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(bound))
		io.WriteString(c, "POST /api/up HTTP/1.1\r\nHost: a.example\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
		br := bufio.NewReader(c)
		status, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(status, "HTTP/1.1 100 ") {
			t.Fatalf("%s: interim answer %q, %v; want 100 Continue", p.name, status, err)
		}
		for l, _ := br.ReadString('\n'); l != "\r\n"; l, _ = br.ReadString('\n') {
			if l == "" {
				t.Fatalf("%s: interim answer not ended", p.name)
			}
		}
		io.WriteString(c, "hello")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.Close()
		var a arrived
		json.Unmarshal(body, &a)
		if a.Server != "api" || a.Body != "hello" {
			t.Errorf("%s: after 100-continue: %s %q (arrived %+v)", p.name, resp.Status, body, a)
		}

		tr := &http.Transport{Protocols: new(http.Protocols)}
		tr.Protocols.SetUnencryptedHTTP2(true)
		cl := &http.Client{Transport: tr, Timeout: bound}
		for path, want := range map[string]string{"/api/x": "api", "/index": "web"} {
			resp, err := cl.Get("http://127.0.0.1:" + p.port + path)
			if err != nil {
				t.Fatalf("%s: h2: %v", p.name, err)
			}
			var a arrived
			json.NewDecoder(resp.Body).Decode(&a)
			resp.Body.Close()
			if resp.ProtoMajor != 2 || a.Server != want || a.Header.Get("X-Route") != "fe" {
				t.Errorf("%s: h2 %s: proto %s, arrived %+v; want HTTP/2 to %s", p.name, path, resp.Proto, a, want)
			}
		}
		tr.CloseIdleConnections()
	}
}

// rawRequest is one request of a side-by-side HTTP test, sent as written.
type rawRequest struct{ name, raw string }

// askBoth sends each request on its own connection to haproxy's address
// and then to vipstack's, reports every answer that differs, and returns
// haproxy's answers for the test's guard against both failing alike.
func askBoth(t *testing.T, reqs []rawRequest, haddr, vaddr string) []httpAnswer {
	t.Helper()
	run := func(addr string) []httpAnswer {
		var out []httpAnswer
		for _, rq := range reqs {
			c, err := net.DialTimeout("tcp", addr, bound)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, masked(ask(t, c, bufio.NewReader(c), rq.raw)))
			c.Close()
		}
		return out
	}
	want, got := run(haddr), run(vaddr)
	for i, rq := range reqs {
		if diff := cmp.Diff(want[i], got[i]); diff != "" {
			t.Errorf("%s: answers differ (-haproxy +vipstack):\n%s", rq.name, diff)
		}
	}
	return want
}
