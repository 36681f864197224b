package lb

import (
	"bufio"
	"net"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/lb/httploop"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// httpEngines are the HTTP engines the side-by-side tests of what both
// support run against.
var httpEngines = []httploop.Mode{httploop.Std, httploop.Loop}

// httpPlainConf is a mode http configuration the loop engine serves:
// keep-alive both sides, option forwardfor, default_backend.
const httpPlainConf = `defaults
  mode http
  option forwardfor
  retries 3
  timeout connect 1s
  timeout client 5s
  timeout server 5s
  timeout http-request 5s
frontend fe
  bind 127.0.0.1:{{P0}}
  default_backend web
backend web
  balance roundrobin
  option forwardfor except 10.0.0.0/8
  server w1 {{W}}
`

// httpDeadConf: the only server refuses connections.
const httpDeadConf = `defaults
  mode http
  retries 2
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:{{P0}}
  default_backend none
backend none
  server dead {{DEAD}}
`

// TestHTTPEnginesMatchHaproxy sends haproxy 2.6 and vipstack, with each
// HTTP engine, the same requests: the server sees the same path, body
// and X-Forwarded-For (the backend's option), the client the same
// status and body, HTTP/1.0, chunked and HEAD requests included, and a
// backend whose server is down gives both the same 503.
func TestHTTPEnginesMatchHaproxy(t *testing.T) {
	reqs := []rawRequest{
		{"GET", "GET /index.html?q=1 HTTP/1.1\r\nHost: a.example\r\nX-Keep: k\r\n\r\n"},
		{"an existing X-Forwarded-For is kept", "GET /x HTTP/1.1\r\nHost: a.example\r\nX-Forwarded-For: 192.0.2.7\r\n\r\n"},
		{"POST with a length", "POST /up HTTP/1.1\r\nHost: a.example\r\nContent-Length: 5\r\n\r\nhello"},
		{"chunked body", "POST /up HTTP/1.1\r\nHost: a.example\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"},
		{"HEAD", "HEAD /h HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"HTTP/1.0", "GET /old HTTP/1.0\r\nHost: a.example\r\n\r\n"},
		{"the server's 404", "GET /nf HTTP/1.1\r\nHost: a.example\r\nX-Status: 404\r\n\r\n"},
		{"Connection: close", "GET /c HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n"},
		{"a body larger than a buffer", "POST /big HTTP/1.1\r\nHost: a.example\r\nContent-Length: 40000\r\n\r\n" + strings.Repeat("b", 40000)},
		{"a chunked body larger than a buffer", "POST /bigc HTTP/1.1\r\nHost: a.example\r\nTransfer-Encoding: chunked\r\n\r\n9c40\r\n" + strings.Repeat("c", 40000) + "\r\n0\r\n\r\n"},
	}
	dead := []rawRequest{{"server down", "GET / HTTP/1.1\r\nHost: a.example\r\n\r\n"}}
	for _, engine := range httpEngines {
		t.Run(string(engine), func(t *testing.T) {
			ports := startHTTPPairOpts(t, httpPlainConf, Options{HTTPEngine: engine})
			want := askBoth(t, reqs, "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1])
			if want[0].Arrived == nil || want[0].Arrived.Server != "web" || want[0].Arrived.Header.Get("X-Forwarded-For") != "127.0.0.1" {
				t.Fatalf("haproxy did not forward as the test expects: %+v", want[0])
			}
			ports = startHTTPPairOpts(t, httpDeadConf, Options{HTTPEngine: engine})
			if want := askBoth(t, dead, "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1]); want[0].Status != 503 {
				t.Fatalf("haproxy answered %d to a backend whose server is down, want 503", want[0].Status)
			}
		})
	}
}

// TestHTTPEngineLoopRefuses: with --http-engine loop, a frontend using
// what the loop lacks refuses the start, naming the file and line, the
// proxy and the directive; auto starts it on std.
func TestHTTPEngineLoopRefuses(t *testing.T) {
	conf := strings.NewReplacer("{{P0}}", freePorts(t, 1)[0], "{{A}}", "127.0.0.1:1", "{{W}}", "127.0.0.1:1", "{{DEAD}}", "127.0.0.1:1").Replace(httpRoutingConf) +
		"  http-response set-header X-A b\n"
	cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(Options{HTTPEngine: httploop.Loop})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Shutdown(t.Context())
	err = l.Apply(cfg)
	if err == nil {
		t.Fatal("Apply with --http-engine loop took a backend with http-response rules")
	}
	for _, s := range []string{"--http-engine loop", "haproxy.cfg:47: frontend fe (backend none)", `"http-response set-header" needs the std HTTP engine`, "--http-engine auto or std"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the refusal does not say %q: %v", s, err)
		}
	}
	a, err := New(Options{HTTPEngine: httploop.Auto})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown(t.Context())
	if err := a.Apply(cfg); err != nil {
		t.Errorf("Apply with --http-engine auto: %v", err)
	}
}

// TestHTTPEngineLoopReload: a reload gives the loop engine's bind its
// new configuration (here option forwardfor's header) for the requests
// that follow, on the same listener; under auto, a frontend that now
// needs std moves to it on the same port.
func TestHTTPEngineLoopReload(t *testing.T) {
	web := startOrigin(t, "web")
	port := freePorts(t, 1)[0]
	conf := func(extra string) *lbconfig.Config {
		cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(strings.NewReplacer("{{P0}}", port, "{{W}}", web.addr()).Replace(`defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:{{P0}}
`+extra+`  default_backend web
backend web
  server w1 {{W}}
`)))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	l := newLBOpts(t, Options{HTTPEngine: httploop.Auto}, conf("  option forwardfor header X-One\n"))
	get := func() *arrived {
		t.Helper()
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, bound)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		a := ask(t, c, bufio.NewReader(c), "GET / HTTP/1.1\r\nHost: a.example\r\n\r\n")
		if a.Arrived == nil {
			t.Fatalf("no answer from the origin: %+v", a)
		}
		return a.Arrived
	}
	if a := get(); a.Header.Get("X-One") != "127.0.0.1" {
		t.Fatalf("before the reload: headers %v", a.Header)
	}
	if onLoop := engineOf(t, l); !onLoop {
		t.Fatal("under auto, a frontend the loop serves is on std")
	}
	if err := l.Apply(conf("  option forwardfor header X-Two\n")); err != nil {
		t.Fatal(err)
	}
	if a := get(); a.Header.Get("X-Two") != "127.0.0.1" || a.Header.Get("X-One") != "" {
		t.Fatalf("after the reload: headers %v", a.Header)
	}
	if err := l.Apply(conf("  option forwardfor header X-Two\n  compression algo gzip\n")); err != nil {
		t.Fatal(err)
	}
	if onLoop := engineOf(t, l); onLoop {
		t.Fatal("under auto, a frontend that now needs std stays on the loop")
	}
	if a := get(); a.Header.Get("X-Two") != "127.0.0.1" {
		t.Fatalf("after the move to std: headers %v", a.Header)
	}
}

// engineOf reports whether l's only HTTP bind is on the loop engine.
func engineOf(t *testing.T, l *LB) (loop bool) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.proxyLns) != 1 {
		t.Fatalf("%d HTTP binds, want 1", len(l.proxyLns))
	}
	for _, pl := range l.proxyLns {
		loop = pl.loop != nil
	}
	return loop
}
