package httpproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// benchCore balances round robin over every server and counts nothing.
type benchCore struct {
	n    int
	next atomic.Uint32
}

func (c *benchCore) Pick(_ string, _ netip.Addr, _ uint32, _ bool, skip uint64) int {
	for range c.n {
		i := int(c.next.Add(1)) % c.n
		if skip&bit(i) == 0 {
			return i
		}
	}
	return -1
}
func (c *benchCore) Usable(string, int) bool             { return true }
func (c *benchCore) Begin(string, int) func(failed bool) { return func(bool) {} }
func (c *benchCore) Opened(string) (closed func())       { return func() {} }

// benchProxy is the bench/lb configuration's main frontend in mode http:
// a default backend of servers answering a short body, no rules.
func benchProxy(tb testing.TB, servers int) *Proxy {
	tb.Helper()
	be := &lbconfig.Backend{Name: "masters", HTTP: &lbconfig.HTTPBackend{}}
	for i := range servers {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, fmt.Sprintf("b%d\n", i+1))
		}))
		tb.Cleanup(s.Close)
		be.Servers = append(be.Servers, lbconfig.Server{Name: fmt.Sprintf("b%d", i+1), Addr: netip.MustParseAddrPort(s.Listener.Addr().String()), Weight: 1})
	}
	to := lbconfig.Timeouts{Connect: 10 * time.Second, Client: time.Hour, Server: time.Hour, HTTPRequest: 30 * time.Second}
	p := New(&benchCore{n: servers}, Config{
		Frontend: lbconfig.Frontend{Name: "main", Backend: "masters", HTTP: &lbconfig.HTTPFrontend{}},
		Backends: map[string]*lbconfig.Backend{"masters": be},
		Timeouts: to,
		Retries:  3,
	}, nil)
	tb.Cleanup(p.Close)
	return p
}

// BenchmarkServeHTTP is one request through the proxy's handler: the
// frontend's and backend's rules, the server's choice and the exchange
// with it over a kept-alive connection; allocations per request show.
func BenchmarkServeHTTP(b *testing.B) {
	p := benchProxy(b, 3)
	req := httptest.NewRequest(http.MethodGet, "http://bench/", nil)
	req.RemoteAddr = "198.18.0.1:40000"
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		p.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkKeepAlive is a client's keep-alive requests through a served
// listener, one connection, one request at a time: the whole per-request
// path, net/http's server side included.
func BenchmarkKeepAlive(b *testing.B) {
	p := benchProxy(b, 3)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go p.Serve(ln)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: bench\r\n\r\n"); err != nil {
			b.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
