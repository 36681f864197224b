package httpproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
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

// BenchmarkIdleConns opens b.N client connections to a served listener,
// one keep-alive GET answered on each, leaves them idle and reports what
// each costs the process: goroutines, stack and heap bytes (after a GC).
func BenchmarkIdleConns(b *testing.B) {
	p := benchProxy(b, 3)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go p.Serve(ln)
	// Warm up: the server connections to the backends exist before.
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		if err := benchGet(c, bufio.NewReader(c)); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
	n := max(b.N, 200)
	before := idleStats()
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
		if err := benchGet(c, bufio.NewReaderSize(c, 512)); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	after := idleStats()
	b.ReportMetric(float64(after.goroutines-before.goroutines)/float64(n), "goroutines/conn")
	b.ReportMetric(float64(after.stack-before.stack)/float64(n), "stack-B/conn")
	b.ReportMetric(float64(after.heap-before.heap)/float64(n), "heap-B/conn")
	b.ReportMetric(0, "ns/op")
}

type idleSnapshot struct {
	goroutines  int
	stack, heap int64
}

func idleStats() idleSnapshot {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return idleSnapshot{goroutines: runtime.NumGoroutine(), stack: int64(m.StackInuse), heap: int64(m.HeapAlloc)}
}

func benchGet(c net.Conn, br *bufio.Reader) error {
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: bench\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}
