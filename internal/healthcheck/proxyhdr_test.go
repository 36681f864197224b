package healthcheck

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/proxyproto"
)

// TestProbeSendsProxyHeader: with SendProxy, a connect check and an HTTP
// check start with the PROXY header: version 1 naming the check's own
// connection, version 2 LOCAL; the HTTP request follows it.
func TestProbeSendsProxyHeader(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := netip.MustParseAddrPort(ln.Addr().String())
	for _, tc := range []struct {
		name  string
		probe Prober
		v     int
		rest  string
	}{
		{name: "connect, v1", probe: TCP{Addr: addr, SendProxy: 1}, v: 1},
		{name: "connect, v2", probe: TCP{Addr: addr, SendProxy: 2}, v: 2},
		{name: "http, v2", probe: HTTP{Addr: addr, Method: "GET", URI: "/", SendProxy: 2}, v: 2, rest: "GET / HTTP/1.0\r\nConnection: close\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			done := make(chan Result, 1)
			go func() { done <- tc.probe.Probe(ctx) }()
			c, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			var got []byte
			buf := make([]byte, 256)
			for {
				n, err := c.Read(buf)
				got = append(got, buf[:n]...)
				if _, hn, perr := proxyproto.Parse(got); err != nil || perr == nil && len(got)-hn >= len(tc.rest) {
					break
				}
			}
			c.Write([]byte("HTTP/1.0 200 OK\r\n\r\n"))
			c.Close()
			<-done
			h, n, err := proxyproto.Parse(got)
			if err != nil {
				t.Fatalf("no header in %q: %v", got, err)
			}
			want := proxyproto.Header{Version: tc.v, Local: tc.v == 2}
			if tc.v == 1 {
				want.Src, want.Dst = netip.MustParseAddrPort(c.RemoteAddr().String()), addr
			}
			if h.Version != want.Version || h.Local != want.Local || h.Src != want.Src || h.Dst != want.Dst {
				t.Errorf("header %+v, want %+v", h, want)
			}
			if rest := string(got[n:]); rest != tc.rest {
				t.Errorf("after the header %q, want %q", rest, tc.rest)
			}
		})
	}
}
