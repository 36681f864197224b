package lb

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestHTTPSoftStopFinishesRequests soft-stops an LB while a request is
// at its server: the listener closes at once, and the request in flight
// gets its answer.
func TestHTTPSoftStopFinishesRequests(t *testing.T) {
	release, arrived := make(chan struct{}), make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	origin := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		io.WriteString(w, "done")
	})}
	go origin.Serve(ln)
	t.Cleanup(func() { origin.Close() })
	cfg := parseOnLoopback(t, `defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:1
  default_backend be
backend be
  server s1 `+ln.Addr().String()+`
`)
	l, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	addr := l.Addrs("fe")[0].String()
	c, err := net.DialTimeout("tcp", addr, bound)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(bound))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-arrived
	stopped := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	go func() { stopped <- l.SoftStop(ctx) }()
	// The listener goes; the request stays.
	eventually(t, "the listener closed", func() bool {
		nc, err := net.DialTimeout("tcp", addr, bound)
		if err == nil {
			nc.Close()
		}
		return err != nil
	})
	select {
	case err := <-stopped:
		t.Fatalf("SoftStop returned (%v) with a request in flight", err)
	default:
	}
	close(release)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "done" {
		t.Errorf("answer %d %q, want 200 done", resp.StatusCode, body)
	}
	if err := <-stopped; err != nil {
		t.Errorf("SoftStop: %v", err)
	}
}

// TestHTTPModeReload switches a frontend's bind between mode tcp and mode
// http by reloads: each configuration serves the next request (the
// header the HTTP frontend sets shows which one did), on the same port.
func TestHTTPModeReload(t *testing.T) {
	origin := startOrigin(t, "o")
	port := freePorts(t, 1)[0]
	conf := func(mode, extra string) *lbconfig.Config {
		cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(`defaults
  mode `+mode+`
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:`+port+`
`+extra+`  default_backend be
backend be
  server s1 `+origin.addr()+`
`))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	l := newLB(t, nil, conf("tcp", ""))
	get := func(step string) http.Header {
		t.Helper()
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, bound)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		defer c.Close()
		a := ask(t, c, bufio.NewReader(c), "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if a.Arrived == nil {
			t.Fatalf("%s: %+v", step, a)
		}
		return a.Arrived.Header
	}
	steps := []struct {
		name, mode, extra, wantRoute string
	}{
		{"tcp", "tcp", "", ""},
		{"to http", "http", "  http-request set-header X-Route http1\n", "http1"},
		{"http, new rule", "http", "  http-request set-header X-Route http2\n", "http2"},
		{"back to tcp", "tcp", "", ""},
	}
	for _, st := range steps {
		if err := l.Apply(conf(st.mode, st.extra)); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := get(st.name).Get("X-Route"); got != st.wantRoute {
			t.Errorf("%s: X-Route %q, want %q", st.name, got, st.wantRoute)
		}
	}
}

// TestHTTPClientTimeout: a client that stops sending in the middle of a
// request body is cut after `timeout client` of silence, as haproxy's
// inactivity timeout does, while one that keeps sending slowly is not.
func TestHTTPClientTimeout(t *testing.T) {
	origin := startOrigin(t, "o")
	cfg := parseOnLoopback(t, `defaults
  mode http
  timeout connect 1s
  timeout client 1s
  timeout server 5s
frontend fe
  bind 127.0.0.1:1
  default_backend be
backend be
  server s1 `+origin.addr()+`
`)
	l := newLB(t, nil, cfg)
	addr := l.Addrs("fe")[0].String()

	// Slow but steady: 6 pieces 250ms apart, 1.5s in all, longer than
	// timeout client but never silent for it.
	c, err := net.DialTimeout("tcp", addr, bound)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(bound))
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\n")
	for range 6 {
		time.Sleep(250 * time.Millisecond) // the client's pace, well below timeout client
		io.WriteString(c, "x")
	}
	a := ask(t, c, bufio.NewReader(c), "")
	if a.Arrived == nil || a.Arrived.Body != "xxxxxx" {
		t.Fatalf("slow steady body: %+v", a)
	}

	// Silent in the middle of the body: closed.
	s, err := net.DialTimeout("tcp", addr, bound)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetDeadline(time.Now().Add(bound))
	io.WriteString(s, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
	buf := make([]byte, 4096)
	for {
		_, err := s.Read(buf)
		if err == nil {
			continue // an answer (haproxy: 408), then the close
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("a client silent mid-body was not cut within %v", bound)
		}
		break
	}
}
