package lb

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/lb/logging/logtest"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestTLSBindTCP runs a mode tcp frontend with an ssl bind on loopback:
// the client's plaintext reaches the server through the event loops,
// the session and the connection log show the client's own address and
// the bind's (not the socketpair's), %ft ends in "~", the bytes are
// counted, and a reload that changes the certificate applies to the next
// handshake while the listener stays.
func TestTLSBindTCP(t *testing.T) {
	ca := newTestCA(t)
	b := startBackend(t, "b1")
	dir := t.TempDir()
	logs := logtest.ListenUnixgram(t, dir+"/log")
	cfg := tcpConfig(lbconfig.RoundRobin, srv("b1", b))
	cfg.Frontends[0].Binds[0] = widenableBind(t) // a port of its own: a reload keeps the listener
	bindTLS := func(cn string) *lbconfig.BindTLS {
		return &lbconfig.BindTLS{Certs: []lbconfig.Cert{{Path: cn + ".pem", PEM: ca.issue(t, cn)}}}
	}
	cfg.Frontends[0].Binds[0].TLS = bindTLS("one.test")
	cfg.Frontends[0].LogTargets = []lbconfig.LogTarget{{Network: "unixgram", Address: dir + "/log", Facility: 16, Level: lbconfig.LevelDebug, Raw: true}}
	cfg.Frontends[0].Log = &lbconfig.ConnLog{Format: "%ci %ft %fi:%fp %B %U"}
	l := newLB(t, fakeClock(), cfg)

	connect := func() (*tls.Conn, *bufio.Reader, string) {
		t.Helper()
		addrs := l.Addrs("fe")
		if len(addrs) != 1 {
			t.Fatalf("fe listens on %v", addrs)
		}
		raw, err := net.DialTimeout("tcp", addrs[0].String(), bound)
		if err != nil {
			t.Fatal(err)
		}
		raw.SetDeadline(time.Now().Add(bound))
		tc := tls.Client(raw, &tls.Config{InsecureSkipVerify: true})
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		return tc, bufio.NewReader(tc), tc.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	tc, r, cn := connect()
	if cn != "one.test" {
		t.Fatalf("certificate %q, want one.test", cn)
	}
	if g, _ := r.ReadString('\n'); g != "b1\n" {
		t.Fatalf("greeting %q, want the server's", g)
	}
	io.WriteString(tc, "ping\n")
	if got, _ := r.ReadString('\n'); got != "ping\n" {
		t.Fatalf("echo %q", got)
	}

	// While it lasts: the session names the client and the bind.
	client := netip.MustParseAddrPort(tc.LocalAddr().String())
	bind := netip.MustParseAddrPort(tc.RemoteAddr().String())
	var found bool
	eventually(t, "the session is listed", func() bool {
		for _, s := range l.Sessions() {
			if s.Frontend == "fe" && s.Client == client {
				found = s.Listener == bind
				return true
			}
		}
		return false
	})
	if !found {
		t.Errorf("session's listener is not the bind %s: %+v", bind, l.Sessions())
	}

	// The client's half-close reaches the server, which closes: the
	// client reads the end of file.
	tc.CloseWrite()
	if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
		t.Errorf("after the half-close: %q, %v; want the end of file", rest, err)
	}
	tc.Close()
	l.accessLog.Flush()
	line := logtest.ReadDatagram(t, logs, bound)
	want := client.Addr().String() + " fe~ " + bind.String() + " 8 5\n" // "b1\nping\n" down, "ping\n" up
	if !strings.HasSuffix(line, want) {
		t.Errorf("log line %q, want it to end in %q", line, want)
	}

	// A reload with another certificate: the same listener, the new
	// certificate.
	cfg2 := tcpConfig(lbconfig.RoundRobin, srv("b1", b))
	cfg2.Frontends[0].Binds[0] = lbconfig.Bind{Addr: bind, TLS: bindTLS("two.test")}
	kept := l.tlsLns[bindKey(cfg2.Frontends[0].Binds[0])]
	if err := l.Apply(cfg2); err != nil {
		t.Fatal(err)
	}
	if kept == nil || l.tlsLns[bindKey(cfg2.Frontends[0].Binds[0])] != kept {
		t.Errorf("the reload replaced the ssl listener; it should keep it and take the new certificate")
	}
	if got := l.Addrs("fe"); len(got) != 1 || got[0].String() != bind.String() {
		t.Fatalf("after the reload fe listens on %v, want %s", got, bind)
	}
	tc2, _, cn2 := connect()
	defer tc2.Close()
	if cn2 != "two.test" {
		t.Errorf("after the reload: certificate %q, want two.test", cn2)
	}
}

// TestTLSBindHTTP runs a mode http frontend with an ssl bind on
// loopback: HTTP/1.1 and, by ALPN, HTTP/2 requests reach the origin with
// X-Forwarded-Proto set by `if { ssl_fc }`, and a reload that changes
// the certificate keeps the listener and applies to the next handshake.
func TestTLSBindHTTP(t *testing.T) {
	ca := newTestCA(t)
	o := startOrigin(t, "web")
	conf := func() *lbconfig.Config {
		cfg, err := haproxycfg.Parse("h.cfg", []byte("defaults\n  mode http\n  timeout connect 1s\n  timeout client 5s\n  timeout server 5s\n"+
			"frontend fe\n  bind 127.0.0.1:1\n  http-request set-header X-Forwarded-Proto https if { ssl_fc }\n  default_backend be\n"+
			"backend be\n  server s1 "+o.addr()+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	bind := widenableBind(t)
	cfg := conf()
	bind.TLS = &lbconfig.BindTLS{Certs: []lbconfig.Cert{{Path: "one.pem", PEM: ca.issue(t, "one.test")}}, ALPN: []string{"h2", "http/1.1"}}
	cfg.Frontends[0].Binds = []lbconfig.Bind{bind}
	l := newLB(t, fakeClock(), cfg)

	get := func(h2 bool) (string, string, *arrived) {
		t.Helper()
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: h2}
		if !h2 {
			tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
		}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: bound}).Get("https://" + bind.Addr.String() + "/x")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a arrived
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			t.Fatal(err)
		}
		return resp.Proto, resp.TLS.PeerCertificates[0].Subject.CommonName, &a
	}
	for _, h2 := range []bool{false, true} {
		proto, cn, a := get(h2)
		want := map[bool]string{false: "HTTP/1.1", true: "HTTP/2.0"}[h2]
		if proto != want || cn != "one.test" || a.Header.Get("X-Forwarded-Proto") != "https" {
			t.Errorf("h2 %v: %s from %s, X-Forwarded-Proto %q; want %s from one.test, https", h2, proto, cn, a.Header.Get("X-Forwarded-Proto"), want)
		}
	}

	cfg2 := conf()
	bind.TLS = &lbconfig.BindTLS{Certs: []lbconfig.Cert{{Path: "two.pem", PEM: ca.issue(t, "two.test")}}}
	cfg2.Frontends[0].Binds = []lbconfig.Bind{bind}
	kept := l.proxyLns[bindKey(bind)]
	if err := l.Apply(cfg2); err != nil {
		t.Fatal(err)
	}
	if kept == nil || l.proxyLns[bindKey(bind)] != kept {
		t.Errorf("the reload replaced the ssl listener; it should keep it and take the new certificate")
	}
	if proto, cn, _ := get(true); cn != "two.test" || proto != "HTTP/1.1" {
		t.Errorf("after the reload: %s from %s, want HTTP/1.1 (no alpn now) from two.test", proto, cn)
	}
}

// TestTLSBindGlobalMaxconn: at the global maxconn, an ssl bind's next
// client is not served (its handshake waits, as a plain bind's client
// waits in the backlog) until a connection ends.
func TestTLSBindGlobalMaxconn(t *testing.T) {
	ca := newTestCA(t)
	b := startBackend(t, "b1")
	cfg := tcpConfig(lbconfig.RoundRobin, srv("b1", b))
	cfg.GlobalMaxConn = 1
	cfg.Frontends[0].Binds[0].TLS = &lbconfig.BindTLS{Certs: []lbconfig.Cert{{Path: "a.pem", PEM: ca.issue(t, "a.test")}}}
	l := newLB(t, fakeClock(), cfg)
	addr := l.Addrs("fe")[0].String()
	start := func() (chan string, net.Conn) {
		raw, err := net.DialTimeout("tcp", addr, bound)
		if err != nil {
			t.Fatal(err)
		}
		raw.SetDeadline(time.Now().Add(bound))
		got := make(chan string, 1)
		go func() {
			tc := tls.Client(raw, &tls.Config{InsecureSkipVerify: true})
			g, _ := bufio.NewReader(tc).ReadString('\n')
			got <- g
		}()
		return got, raw
	}
	first, c1 := start()
	if g := <-first; g != "b1\n" {
		t.Fatalf("first client: %q, want the greeting", g)
	}
	second, c2 := start()
	defer c2.Close()
	select {
	case g := <-second:
		t.Fatalf("second client served (%q) while the first holds the only slot", g)
	case <-time.After(200 * time.Millisecond): // a negative check: not served meanwhile
	}
	c1.Close()
	if g := <-second; g != "b1\n" {
		t.Errorf("second client after the first left: %q, want the greeting", g)
	}
}
