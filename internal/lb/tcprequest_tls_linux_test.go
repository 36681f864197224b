package lb

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTCPRequestOnSSLBindMatchesHaproxy: on a mode tcp ssl bind, the
// connection rules run before the TLS handshake, as haproxy runs them:
// a rejected client gets a reset instead of a server hello, an allowed
// one its handshake and the server's greeting.
func TestTCPRequestOnSSLBindMatchesHaproxy(t *testing.T) {
	b := startBackend(t, "banner")
	crt := filepath.Join(t.TempDir(), "a.pem")
	if err := os.WriteFile(crt, newTestCA(t).issue(t, "a.test"), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := func(sock string, ports []string) string {
		return strings.NewReplacer("{{P0}}", ports[0], "{{S1}}", b.addr.String(), "{{CRT}}", crt).Replace(`defaults
  mode tcp
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.2:{{P0}} ssl crt {{CRT}}
  tcp-request connection reject if { src 127.0.1.5 }
  default_backend be
backend be
  server s1 {{S1}}
`)
	}
	_, _, hports, vports := startHaproxyAndLB(t, 1, conf)
	for _, p := range []struct{ name, port string }{{"haproxy", hports[0]}, {"vipstack", vports[0]}} {
		addr := "127.0.0.2:" + p.port
		waitListening(t, "tcp", addr)
		for _, c := range []struct{ src, want string }{{"127.0.0.5", "banner"}, {"127.0.1.5", "reset"}} {
			if got := tlsOutcome(netip.MustParseAddr(c.src), addr); got != c.want {
				t.Errorf("%s from %s: %s, want %s", p.name, c.src, got, c.want)
			}
		}
	}
}

// tlsOutcome connects over TLS from src to addr: the greeting, or
// "reset" when the connection is reset before or during the handshake.
func tlsOutcome(src netip.Addr, addr string) string {
	d := &net.Dialer{Timeout: bound, LocalAddr: &net.TCPAddr{IP: src.AsSlice()}}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if errors.Is(err, syscall.ECONNRESET) {
		return "reset"
	}
	if err != nil {
		return "handshake: " + err.Error()
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(bound))
	got, err := bufio.NewReader(c).ReadString('\n')
	switch {
	case got != "":
		return strings.TrimSpace(got)
	case errors.Is(err, io.EOF):
		return "closed"
	}
	return err.Error()
}
