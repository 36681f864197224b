package healthcheck

import (
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestResetIsSocketError: a server that resets the connection once it is
// up fails every dialogue check with SOCKERR and the error's text, as in
// haproxy (an I/O error after the connection is established); a server
// that reads what it is sent and closes fails it with the check's own
// response status.
func TestResetIsSocketError(t *testing.T) {
	for _, tc := range []struct {
		name   string
		probe  func(netip.AddrPort) Prober
		closed string // the status when the server closes cleanly
	}{
		{"http", func(a netip.AddrPort) Prober { return HTTP{Addr: a} }, L7RSP},
		{"ssl hello", func(a netip.AddrPort) Prober { return SSLHello{Addr: a} }, L6RSP},
		{"tcp-check", func(a netip.AddrPort) Prober {
			return TCPScript{Addr: a, Steps: []Step{{Send: []byte("PING\r\n")}, {Expect: []byte("+PONG")}}}
		}, L7RSP},
		{"mysql", func(a netip.AddrPort) Prober { return MySQL{Addr: a} }, L7RSP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, reset := range []bool{true, false} {
				addr := closingServer(t, reset)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				r := tc.probe(addr).Probe(ctx)
				cancel()
				want := tc.closed
				if reset {
					want = SOCKERR
				}
				if r.OK || r.Status != want {
					t.Errorf("reset %v: %+v, want status %s", reset, r, want)
				}
				if reset && !strings.Contains(r.Info, "Connection reset by peer") {
					t.Errorf("reset: info %q, want the error's text", r.Info)
				}
			}
		})
	}
}

// closingServer accepts connections on loopback and, once it has read
// what the check sends (or nothing, after a short wait), resets each
// (SO_LINGER 0) or closes it cleanly.
func closingServer(t *testing.T, reset bool) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			_, _ = c.Read(buf) // the request, if the check sends one first
			if reset {
				_ = c.(*net.TCPConn).SetLinger(0)
			} else {
				_ = c.(*net.TCPConn).CloseWrite()
				_, _ = io.Copy(io.Discard, c)
			}
			c.Close()
		}
	}()
	return netip.MustParseAddrPort(ln.Addr().String())
}
