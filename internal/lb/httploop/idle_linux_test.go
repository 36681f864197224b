package httploop

import (
	"bufio"
	"net"
	"net/netip"
	"runtime"
	"testing"
)

// BenchmarkIdleConns reports the heap a kept-alive client connection
// holds once its request is answered (live bytes after a collection).
func BenchmarkIdleConns(b *testing.B) {
	const n = 1000
	core := &fakeCore{}
	addr := startEngineB(b, core, []netip.AddrPort{originB(b)})
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		conns := make([]net.Conn, 0, n)
		for range n {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			br := bufio.NewReader(c)
			c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
			if _, err := readAnswer(br); err != nil {
				b.Fatal(err)
			}
			conns = append(conns, c)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "B/idle-conn")
		for _, c := range conns {
			c.Close()
		}
	}
}

// BenchmarkKeepAlive measures the heap a keep-alive request allocates
// in the engine and in the test's client and origin (both net/http).
func BenchmarkKeepAlive(b *testing.B) {
	core := &fakeCore{}
	addr := startEngineB(b, core, []netip.AddrPort{originB(b)})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	b.ReportAllocs()
	for b.Loop() {
		c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		if _, err := readAnswer(br); err != nil {
			b.Fatal(err)
		}
	}
}
