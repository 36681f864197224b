package httpproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testPool is a serverPool in front of srv, as Proxy.transport builds it.
func testPool(srv *httptest.Server) *serverPool {
	d := &net.Dialer{Timeout: 5 * time.Second}
	t := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 1024, DisableCompression: true}
	return &serverPool{t: t, dial: d.DialContext, idleTimeout: time.Minute, direct: true}
}

// TestServerPool: plain requests share one kept-alive connection; a
// connection the server closed while idle is replaced without an error; a
// body closed unread takes its connection with it; a request with a body
// goes through the Transport.
func TestServerPool(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/bye" {
			w.Header().Set("Connection", "close")
		}
		io.WriteString(w, r.Method+" "+r.URL.Path+" "+string(body))
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	p := testPool(srv)
	defer p.closeIdle(true)
	get := func(method, path, body string) string {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header["User-Agent"] = nil
		resp, err := p.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s %s: body: %v", method, path, err)
		}
		return string(b)
	}
	for _, step := range []struct {
		name              string
		method, path      string
		body              string
		want              string
		wantConns         int32
		closeIdleOnServer bool
	}{
		{name: "first request dials", method: "GET", path: "/a", want: "GET /a ", wantConns: 1},
		{name: "second reuses", method: "GET", path: "/b", want: "GET /b ", wantConns: 1},
		{name: "HEAD reuses", method: "HEAD", path: "/c", want: "", wantConns: 1},
		{name: "server closes after its answer", method: "GET", path: "/bye", want: "GET /bye ", wantConns: 1},
		{name: "so the next dials", method: "GET", path: "/d", want: "GET /d ", wantConns: 2},
		{name: "idle connection closed by the server: redialled", method: "GET", path: "/e", want: "GET /e ", wantConns: 3, closeIdleOnServer: true},
		{name: "a body goes through the Transport", method: "POST", path: "/f", body: "x=1", want: "POST /f x=1", wantConns: 4},
	} {
		if step.closeIdleOnServer {
			// Whether the close has reached the idle socket or not,
			// the pool gets no answer on it and dials again.
			srv.CloseClientConnections()
		}
		if got := get(step.method, step.path, step.body); got != step.want {
			t.Errorf("%s: answer %q, want %q", step.name, got, step.want)
		}
		if got := conns.Load(); got != step.wantConns {
			t.Errorf("%s: %d connections to the server, want %d", step.name, got, step.wantConns)
		}
	}

	// A body closed before its end: its connection is not reused.
	req, _ := http.NewRequest("GET", srv.URL+"/g", nil)
	resp, err := p.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := len(p.idle); n != 0 {
		t.Errorf("after a body closed unread: %d idle connections, want 0", n)
	}
}

// TestServerPoolCloseStale: the sweep closes the connections idle for
// idleTimeout or longer, oldest first, and keeps the others.
func TestServerPoolCloseStale(t *testing.T) {
	now := time.Now()
	p := &serverPool{t: &http.Transport{}, idleTimeout: time.Minute}
	defer p.closeIdle(true)
	var closed []net.Conn
	for _, age := range []time.Duration{2 * time.Minute, time.Minute + time.Second, 10 * time.Second, time.Second} {
		c, peer := net.Pipe()
		defer peer.Close()
		closed = append(closed, c)
		p.idle = append(p.idle, &serverConn{c: c, since: now.Add(-age)})
	}
	p.closeStale()
	p.mu.Lock()
	left, armed := slices.Clone(p.idle), p.sweep != nil
	p.mu.Unlock()
	if len(left) != 2 || left[0].c != closed[2] || left[1].c != closed[3] {
		t.Fatalf("after the sweep: %d idle connections, want the 2 youngest", len(left))
	}
	for i, c := range closed {
		c.SetWriteDeadline(now) // an open pipe with no reader: a timeout
		_, err := c.Write([]byte{0})
		if gotClosed := errors.Is(err, io.ErrClosedPipe); gotClosed != (i < 2) {
			t.Errorf("connection %d: closed %v, want %v", i, gotClosed, i < 2)
		}
	}
	if !armed {
		t.Error("no sweep armed for the connections left")
	}
}
