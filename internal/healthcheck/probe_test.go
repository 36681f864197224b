package healthcheck

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func addrOf(t *testing.T, a net.Addr) netip.AddrPort {
	t.Helper()
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	return ap
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := addrOf(t, ln.Addr())
	ln.Close()
	return a
}

func TestProbes(t *testing.T) {
	type seen struct{ Method, Path, Proto string }
	requests := make(chan seen, 16)
	handler := func(w http.ResponseWriter, r *http.Request) {
		requests <- seen{r.Method, r.URL.Path, r.Proto}
		switch r.URL.Path {
		case "/readyz":
			w.Write([]byte("ok"))
		case "/moved":
			http.Redirect(w, r, "/readyz", http.StatusFound)
		default:
			http.Error(w, "not ready", http.StatusServiceUnavailable)
		}
	}
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(handler))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // failed handshakes are expected
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	plainSrv := httptest.NewServer(http.HandlerFunc(handler))
	defer plainSrv.Close()
	tlsAddr, plainAddr, closed := addrOf(t, tlsSrv.Listener.Addr()), addrOf(t, plainSrv.Listener.Addr()), closedPort(t)

	tests := []struct {
		name     string
		probe    Prober
		want     Result
		wantSeen *seen
	}{
		{name: "https 200", probe: HTTP{Addr: tlsAddr, Method: "GET", URI: "/readyz", Version: "HTTP/1.0", TLS: TLSConfig(false, tlsAddr)},
			want: Result{OK: true, Status: L7OK, Code: 200, Info: "OK"}, wantSeen: &seen{"GET", "/readyz", "HTTP/1.0"}},
		{name: "https 302 passes", probe: HTTP{Addr: tlsAddr, Method: "GET", URI: "/moved", Version: "HTTP/1.1", TLS: TLSConfig(false, tlsAddr)},
			want: Result{OK: true, Status: L7OK, Code: 302, Info: "Found"}, wantSeen: &seen{"GET", "/moved", "HTTP/1.1"}},
		{name: "https 503 fails", probe: HTTP{Addr: tlsAddr, Method: "HEAD", URI: "/other", TLS: TLSConfig(false, tlsAddr)},
			want: Result{Status: L7STS, Code: 503, Info: "Service Unavailable"}, wantSeen: &seen{"HEAD", "/other", "HTTP/1.0"}},
		{name: "default request is OPTIONS / HTTP/1.0", probe: HTTP{Addr: plainAddr},
			want: Result{Status: L7STS, Code: 503, Info: "Service Unavailable"}, wantSeen: &seen{"OPTIONS", "/", "HTTP/1.0"}},
		{name: "verify on with the test CA unknown", probe: HTTP{Addr: tlsAddr, Method: "GET", URI: "/readyz", TLS: TLSConfig(true, tlsAddr)},
			want: Result{Status: L6RSP, Info: "tls: failed to verify certificate: x509: certificate signed by unknown authority"}},
		{name: "TLS to a plain server", probe: HTTP{Addr: plainAddr, Method: "GET", URI: "/readyz", TLS: TLSConfig(false, plainAddr)},
			want: Result{Status: L6RSP, Info: "tls: first record does not look like a TLS handshake"}},
		{name: "refused", probe: HTTP{Addr: closed, Method: "GET", URI: "/readyz"},
			want: Result{Status: L4CON, Info: "Connection refused"}},
		{name: "tcp", probe: TCP{Addr: plainAddr}, want: Result{OK: true, Status: L4OK}},
		{name: "tcp with TLS handshake", probe: TCP{Addr: tlsAddr, TLS: TLSConfig(false, tlsAddr)}, want: Result{OK: true, Status: L6OK}},
		{name: "tcp refused", probe: TCP{Addr: closed}, want: Result{Status: L4CON, Info: "Connection refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.probe.Probe(context.Background())
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Probe (-want +got):\n%s", diff)
			}
			if tt.wantSeen != nil {
				select {
				case s := <-requests:
					if diff := cmp.Diff(*tt.wantSeen, s); diff != "" {
						t.Errorf("request the server saw (-want +got):\n%s", diff)
					}
				default:
					t.Errorf("the server saw no request")
				}
			}
		})
	}
}

// TestProbeTimeouts checks that a probe cancelled by its checker reports
// the stage it was in.
func TestProbeTimeouts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// Once the probe has sent something (request or ClientHello)
			// it is past connecting; never answer.
			if _, err := c.Read(make([]byte, 1)); err != nil {
				c.Close()
				continue
			}
			accepted <- c
		}
	}()
	addr := addrOf(t, ln.Addr())
	tests := []struct {
		name  string
		probe Prober
		want  Result
	}{
		{name: "no HTTP answer", probe: HTTP{Addr: addr, Method: "GET", URI: "/"}, want: Result{Status: L7TOUT, Info: "no response in time"}},
		{name: "no TLS answer", probe: HTTP{Addr: addr, TLS: TLSConfig(false, addr)}, want: Result{Status: L6TOUT, Info: "TLS handshake timed out"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan Result)
			go func() { done <- tt.probe.Probe(ctx) }()
			c := <-accepted // the probe has connected, sent and waits
			defer c.Close()
			cancel()
			if diff := cmp.Diff(tt.want, <-done, cmpopts.IgnoreFields(Result{}, "Duration")); diff != "" {
				t.Errorf("Probe (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHTTPRequest(t *testing.T) {
	tests := []struct {
		name string
		p    HTTP
		want string
	}{
		{name: "seed", p: HTTP{Method: "GET", URI: "/readyz", Version: "HTTP/1.0"}, want: "GET /readyz HTTP/1.0\r\nConnection: close\r\n\r\n"},
		{name: "1.1 gets a Host", p: HTTP{Addr: netip.MustParseAddrPort("[fd00::1]:6443"), Method: "GET", URI: "/healthz", Version: "HTTP/1.1"},
			want: "GET /healthz HTTP/1.1\r\nHost: [fd00::1]:6443\r\nConnection: close\r\n\r\n"},
		{name: "haproxy default", p: HTTP{}, want: "OPTIONS / HTTP/1.0\r\nConnection: close\r\n\r\n"},
		{name: "send hdr: lower case, in order, own Host replaces ours",
			p: HTTP{Addr: netip.MustParseAddrPort("198.18.0.2:80"), Method: "GET", URI: "/api", Version: "HTTP/1.1",
				Headers: []Header{{Name: "Host", Value: "localhost"}, {Name: "Authorization", Value: "Basic YQ=="}}},
			want: "GET /api HTTP/1.1\r\nhost: localhost\r\nauthorization: Basic YQ==\r\nConnection: close\r\n\r\n"},
		{name: "send body: content-length and the body after the head",
			p:    HTTP{Method: "POST", URI: "/p", Version: "HTTP/1.0", Headers: []Header{{Name: "X-A", Value: "b"}}, Body: "hello"},
			want: "POST /p HTTP/1.0\r\nx-a: b\r\ncontent-length: 5\r\nConnection: close\r\n\r\nhello"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.p.Request()); diff != "" {
				t.Errorf("Request (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHaproxyInfo: what haproxy 2.6.12 shows as a failed check's info
// (log lines, the stats' last_chk; measured): its own text for a failed
// TLS handshake, none for a timed-out one nor for an invalid HTTP answer,
// the reason's first 127 bytes for the rest.
func TestHaproxyInfo(t *testing.T) {
	for _, tt := range []struct {
		r    Result
		want string
	}{
		{Result{Status: L6RSP, Info: "tls: failed to verify certificate: x509: certificate signed by unknown authority"}, "SSL handshake failure"},
		{Result{Status: L6RSP, Info: "EOF"}, "SSL handshake failure"},
		{Result{Status: L6TOUT, Info: "TLS handshake timed out"}, ""},
		{Result{Status: L4CON, Info: "Connection refused"}, "Connection refused"},
		{Result{Status: L7STS, Code: 503, Info: "Service Unavailable"}, "Service Unavailable"},
		// haproxy keeps 127 bytes of a reason, cut within a UTF-8
		// sequence if it falls there (measured: 100 'A', then 'é'
		// twenty times: last_chk is the 'A's, 13 'é' and the first
		// byte of the 14th).
		{Result{Status: L7STS, Code: 503, Info: strings.Repeat("A", 100) + strings.Repeat("é", 20) + "\xff\xfe\x80" + strings.Repeat("B", 80)},
			strings.Repeat("A", 100) + strings.Repeat("é", 13) + "\xc3"},
		{Result{Status: L7STS, Code: 503, Info: strings.Repeat("a", 16000)}, strings.Repeat("a", 127)},
		// An invalid answer has no info (measured: no answer, "garbage",
		// a status line cut short, a head past haproxy's buffer).
		{Result{Status: L7RSP, Info: "malformed HTTP response \"garbage\""}, ""},
		{Result{Status: L7RSP, Info: "unexpected EOF"}, ""},
	} {
		if got := HaproxyInfo(tt.r); got != tt.want {
			t.Errorf("%s %.200q: HaproxyInfo = %.200q, want %.200q", tt.r.Status, tt.r.Info, got, tt.want)
		}
	}
}

// TestProbeBoundsTheHead: a server whose answer's head does not end (an
// endless status line) is an invalid response once the head passes
// maxHead, as haproxy 2.6.12 answers L7RSP for a head that does not fit
// its 16 KiB buffer (measured: a reason phrase of 16250 bytes gives
// L7STS, one of 16300 bytes L7RSP). The probe used to read the line
// whole, however long, into memory, until its timeout.
func TestProbeBoundsTheHead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sent := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Read(make([]byte, 512)) // the request
		// At most 64 MiB, and only while the probe reads.
		chunk := make([]byte, 64<<10)
		for i := range chunk {
			chunk[i] = 'a'
		}
		n, _ := c.Write([]byte("HTTP/1.0 503 "))
		total := int64(n)
		for total < 64<<20 {
			n, err := c.Write(chunk)
			total += int64(n)
			if err != nil {
				break
			}
		}
		sent <- total
	}()
	// The bound ends a probe that reads on; it is not asserted.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := HTTP{Addr: addrOf(t, ln.Addr()), Method: "GET", URI: "/"}.Probe(ctx)
	if r.Status != L7RSP {
		t.Errorf("Probe: %s %q, want L7RSP", r.Status, r.Info)
	}
	// The server's writes stop once the probe closes: what it sent is what
	// the probe read, and the kernel's buffers.
	if n := <-sent; n >= 64<<20 {
		t.Errorf("the probe read the whole %d bytes", n)
	}
}

// answering is a loopback server that reads a request and writes answer,
// for every connection until the test ends.
func answering(t *testing.T, answer []byte) netip.AddrPort {
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
			c.Read(make([]byte, 512))
			c.Write(answer)
			c.Close()
		}
	}()
	return addrOf(t, ln.Addr())
}

// TestProbeLongReason: a head within maxHead is read whole, its long
// reason phrase kept (haproxy 2.6.12 too: L7STS for a reason of 16000
// bytes, measured).
func TestProbeLongReason(t *testing.T) {
	reason := strings.Repeat("a", 16000)
	addr := answering(t, []byte("HTTP/1.0 503 "+reason+"\r\nContent-Length: 0\r\n\r\n"))
	r := HTTP{Addr: addr, Method: "GET", URI: "/"}.Probe(context.Background())
	if r.Status != L7STS || r.Code != 503 || r.Info != reason {
		t.Errorf("Probe: %s %d, info of %d bytes; want L7STS 503 and the reason's %d", r.Status, r.Code, len(r.Info), len(reason))
	}
}
