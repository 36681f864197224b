package httploop

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lb/httpproxy"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// fakeCore picks the servers in turn, skipping those in skip, and
// counts what the engine tells it.
type fakeCore struct {
	mu           sync.Mutex
	n            int
	next         int
	began, ended int
	failed       int
	opened       int
	closed       int
}

func (c *fakeCore) Pick(_ string, _ netip.Addr, _ uint32, _ bool, skip uint64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for range c.n {
		i := c.next % c.n
		c.next++
		if skip&(1<<uint(i)) == 0 {
			return i
		}
	}
	return -1
}
func (c *fakeCore) Usable(string, int) bool { return true }
func (c *fakeCore) Begin(string, int) func(bool) {
	c.mu.Lock()
	c.began++
	c.mu.Unlock()
	return func(failed bool) {
		c.mu.Lock()
		c.ended++
		if failed {
			c.failed++
		}
		c.mu.Unlock()
	}
}
func (c *fakeCore) Opened(string) func() {
	c.mu.Lock()
	c.opened++
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		c.closed++
		c.mu.Unlock()
	}
}

// origin is an HTTP server that echoes what it got: the method, path,
// X-Forwarded-For, the body, and the server connection's client port.
func origin(t *testing.T) netip.AddrPort { return originB(t) }

func originB(t testing.TB) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/early" {
			w.WriteHeader(http.StatusRequestEntityTooLarge) // without reading the body
			return
		}
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/chunked" {
			w.(http.Flusher).Flush() // no length: chunked
		}
		fmt.Fprintf(w, "%s %s xff=%q conn=%q body=%q", r.Method, r.URL.Path, r.Header.Get("X-Forwarded-For"), r.Header.Get("Connection"), body)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return netip.MustParseAddrPort(ln.Addr().String())
}

func closedAddr(t *testing.T) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddrPort(ln.Addr().String())
	ln.Close()
	return a
}

func startEngine(t *testing.T, core *fakeCore, servers []netip.AddrPort, mutate func(*httpproxy.Config)) string {
	return startEngineM(t, core, servers, mutate)
}

func startEngineB(t testing.TB, core *fakeCore, servers []netip.AddrPort) string {
	return startEngineM(t, core, servers, nil)
}

func startEngineM(t testing.TB, core *fakeCore, servers []netip.AddrPort, mutate func(*httpproxy.Config)) string {
	t.Helper()
	b := &lbconfig.Backend{Name: "be", HTTP: &lbconfig.HTTPBackend{}}
	for i, a := range servers {
		b.Servers = append(b.Servers, lbconfig.Server{Name: fmt.Sprintf("s%d", i+1), Addr: a, Weight: 1})
	}
	core.n = len(servers)
	cfg := httpproxy.Config{
		Frontend: lbconfig.Frontend{Name: "fe", Backend: "be", HTTP: &lbconfig.HTTPFrontend{HTTPProxy: lbconfig.HTTPProxy{ForwardFor: &lbconfig.ForwardFor{Header: "X-Forwarded-For"}}}},
		Backends: map[string]*lbconfig.Backend{"be": b},
		Timeouts: lbconfig.Timeouts{Connect: time.Second, Client: 10 * time.Second, Server: 10 * time.Second},
		Retries:  3,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	e, err := New(core, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serve(ln); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		ln.Close()
	})
	return ln.Addr().String()
}

type answer struct {
	Status int
	Body   string
	Close  bool
}

// readAnswer reads one answer to a GET.
func readAnswer(br *bufio.Reader) (answer, error) {
	resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		return answer{}, err
	}
	body, err := io.ReadAll(resp.Body)
	return answer{Status: resp.StatusCode, Body: string(body), Close: resp.Close}, err
}

// exchange writes raw on c and reads one answer.
func exchange(t *testing.T, c net.Conn, br *bufio.Reader, raw, method string) answer {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%.80q: %v", raw, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%.80q: body: %v", raw, err)
	}
	return answer{Status: resp.StatusCode, Body: string(body), Close: resp.Close}
}

// TestEngineKeepAlive sends a sequence of requests on one client
// connection: each answer, and whether the connection stays, after each
// step.
func TestEngineKeepAlive(t *testing.T) {
	core := &fakeCore{}
	addr := startEngine(t, core, []netip.AddrPort{origin(t)}, nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	big := strings.Repeat("a", 50000)
	steps := []struct {
		name, raw, method string
		want              answer
	}{
		{name: "GET", raw: "GET /a HTTP/1.1\r\nHost: x\r\n\r\n", method: "GET",
			want: answer{Status: 200, Body: `GET /a xff="127.0.0.1" conn="" body=""`}},
		{name: "POST with a length", raw: "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", method: "POST",
			want: answer{Status: 200, Body: `POST /b xff="127.0.0.1" conn="" body="hello"`}},
		{name: "chunked request", raw: "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", method: "POST",
			want: answer{Status: 200, Body: `POST /c xff="127.0.0.1" conn="" body="hello world"`}},
		{name: "chunked answer", raw: "GET /chunked HTTP/1.1\r\nHost: x\r\n\r\n", method: "GET",
			want: answer{Status: 200, Body: `GET /chunked xff="127.0.0.1" conn="" body=""`}},
		{name: "HEAD", raw: "HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n", method: "HEAD",
			want: answer{Status: 200}},
		{name: "hop-by-hop dropped", raw: "GET /d HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n", method: "GET",
			want: answer{Status: 200, Body: `GET /d xff="127.0.0.1" conn="" body=""`}},
		{name: "large body both ways", raw: "POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 50000\r\n\r\n" + big, method: "POST",
			want: answer{Status: 200, Body: `POST /big xff="127.0.0.1" conn="" body="` + big + `"`}},
		{name: "large chunked body", raw: "POST /bigc HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nc350\r\n" + big + "\r\n0\r\n\r\n", method: "POST",
			want: answer{Status: 200, Body: `POST /bigc xff="127.0.0.1" conn="" body="` + big + `"`}},
		{name: "large chunked answer", raw: "POST /chunked HTTP/1.1\r\nHost: x\r\nContent-Length: 50000\r\n\r\n" + big, method: "POST",
			want: answer{Status: 200, Body: `POST /chunked xff="127.0.0.1" conn="" body="` + big + `"`}},
		{name: "close", raw: "GET /e HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", method: "GET",
			want: answer{Status: 200, Body: `GET /e xff="127.0.0.1" conn="" body=""`, Close: true}},
	}
	for _, s := range steps {
		got := exchange(t, c, br, s.raw, s.method)
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", s.name, diff)
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after Connection: close the connection stays: %v", err)
	}
}

// TestEnginePipelined sends two requests in one write: two answers in
// order.
func TestEnginePipelined(t *testing.T) {
	core := &fakeCore{}
	addr := startEngine(t, core, []netip.AddrPort{origin(t)}, nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	io.WriteString(c, "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, p := range []string{"/1", "/2"} {
		got := exchange(t, c, br, "", "GET")
		if !strings.HasPrefix(got.Body, "GET "+p+" ") {
			t.Errorf("answer %s: %+v", p, got)
		}
	}
}

// TestEngineErrors: what the loop answers itself, and how it counts.
func TestEngineErrors(t *testing.T) {
	tests := []struct {
		name    string
		servers func(t *testing.T) []netip.AddrPort
		raw     string
		want    int
		body    string
	}{
		{name: "refused connect, retried on the next server", servers: func(t *testing.T) []netip.AddrPort { return []netip.AddrPort{closedAddr(t), origin(t)} },
			raw: "GET /r HTTP/1.1\r\nHost: x\r\n\r\n", want: 200, body: `GET /r xff="127.0.0.1" conn="" body=""`},
		{name: "every connect refused: 503", servers: func(t *testing.T) []netip.AddrPort { return []netip.AddrPort{closedAddr(t)} },
			raw: "GET / HTTP/1.1\r\nHost: x\r\n\r\n", want: 503, body: httpproxy.ErrorBody(503)},
		{name: "malformed head: haproxy's 400", servers: func(t *testing.T) []netip.AddrPort { return []netip.AddrPort{origin(t)} },
			raw: "GET / HTTP/1.1\r\nX : y\r\n\r\n", want: 400, body: "<html><body><h1>400 Bad request</h1>\nYour browser sent an invalid request.\n</body></html>\n"},
		{name: "HTTP/2's preface: 400", servers: func(t *testing.T) []netip.AddrPort { return []netip.AddrPort{origin(t)} },
			raw: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", want: 400, body: "<html><body><h1>400 Bad request</h1>\nYour browser sent an invalid request.\n</body></html>\n"},
		{name: "two lengths: 400", servers: func(t *testing.T) []netip.AddrPort { return []netip.AddrPort{origin(t)} },
			raw: "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", want: 400, body: "<html><body><h1>400 Bad request</h1>\nYour browser sent an invalid request.\n</body></html>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core := &fakeCore{}
			addr := startEngine(t, core, tt.servers(t), nil)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got := exchange(t, c, bufio.NewReader(c), tt.raw, "GET")
			if got.Status != tt.want || got.Body != tt.body {
				t.Errorf("got %d %q, want %d %q", got.Status, got.Body, tt.want, tt.body)
			}
		})
	}
}

// TestEngineShutdown: an idle client connection is closed at once and
// Shutdown returns once none is left; the frontend's count is back to 0.
func TestEngineShutdown(t *testing.T) {
	core := &fakeCore{}
	b := &lbconfig.Backend{Name: "be", HTTP: &lbconfig.HTTPBackend{}, Servers: []lbconfig.Server{{Name: "s1", Addr: origin(t), Weight: 1}}}
	core.n = 1
	e, err := New(core, httpproxy.Config{Frontend: lbconfig.Frontend{Name: "fe", Backend: "be", HTTP: &lbconfig.HTTPFrontend{}},
		Backends: map[string]*lbconfig.Backend{"be": b}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := e.Serve(ln); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	if got := exchange(t, c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET"); got.Status != 200 {
		t.Fatalf("before shutdown: %+v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e.Shutdown(ctx)
	if ctx.Err() != nil {
		t.Fatal("Shutdown waited for an idle connection")
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("idle connection after Shutdown: %v, want EOF", err)
	}
	core.mu.Lock()
	defer core.mu.Unlock()
	if core.opened != core.closed || core.began != core.ended {
		t.Errorf("opened %d closed %d, began %d ended %d", core.opened, core.closed, core.began, core.ended)
	}
}

// TestEngineEarlyAnswers: an answer that comes before the request body
// is whole reaches the client: a refused upload (then the connection
// closes), and 100 Continue (then the body goes on).
func TestEngineEarlyAnswers(t *testing.T) {
	core := &fakeCore{}
	addr := startEngine(t, core, []netip.AddrPort{origin(t)}, nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	got := exchange(t, c, br, "POST /early HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n"+strings.Repeat("z", 1000), "POST")
	if got.Status != http.StatusRequestEntityTooLarge || !got.Close {
		t.Errorf("refused upload: %+v, want 413 and close", got)
	}

	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetDeadline(time.Now().Add(5 * time.Second))
	br2 := bufio.NewReader(c2)
	io.WriteString(c2, "POST /cont HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	line, err := br2.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
		t.Fatalf("after Expect: 100-continue: %q, %v", line, err)
	}
	if rest, err := br2.ReadString('\n'); err != nil || rest != "\r\n" {
		t.Fatalf("100 Continue's head: %q, %v", rest, err)
	}
	got = exchange(t, c2, br2, "hello", "POST")
	if got.Status != 200 || got.Body != `POST /cont xff="127.0.0.1" conn="" body="hello"` {
		t.Errorf("after 100 Continue: %+v", got)
	}
}
