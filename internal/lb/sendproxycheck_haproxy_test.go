package lb

import (
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/proxyproto"
)

// firstBytes is one balancer's set of check servers: each keeps what
// its first check connection sent, in a form that compares across
// balancers (firstWords).
type firstBytes struct {
	mu    sync.Mutex
	got   map[string]string
	addrs map[string]string
}

func newFirstBytes(t *testing.T, names []string) *firstBytes {
	f := &firstBytes{got: map[string]string{}, addrs: map[string]string{}}
	for _, n := range names {
		var self netip.AddrPort
		b := startBackendFunc(t, n, func(c net.Conn) {
			c.SetReadDeadline(time.Now().Add(time.Second))
			var buf []byte
			chunk := make([]byte, 512)
			for {
				n, err := c.Read(chunk)
				buf = append(buf, chunk[:n]...)
				if err != nil {
					break
				}
				if _, hn, err := proxyproto.Parse(buf); err != proxyproto.ErrTruncated && strings.Contains(string(buf[hn:]), "\r\n\r\n") {
					break // a header, or none, and a whole request
				}
			}
			f.mu.Lock()
			if _, ok := f.got[n]; !ok {
				f.got[n] = firstWords(buf, self)
			}
			f.mu.Unlock()
			c.Write([]byte("HTTP/1.0 200 OK\r\n\r\n"))
		})
		self = b.addr
		f.addrs[n] = b.addr.String()
	}
	return f
}

// firstWords describes what a check sent: its PROXY header (the source
// port left out: the check's own), then its first line.
func firstWords(b []byte, server netip.AddrPort) string {
	h, n, err := proxyproto.Parse(b)
	head := "no header"
	if err == nil {
		head = fmt.Sprintf("v%d local=%v src=%v dst-is-server=%v", h.Version, h.Local, h.Src.Addr(), h.Dst == server)
		b = b[n:]
	}
	line, _, _ := strings.Cut(string(b), "\r\n")
	return head + ", then " + fmt.Sprintf("%q", line)
}

func (f *firstBytes) all(n int) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.got) < n {
		return nil
	}
	out := map[string]string{}
	for k, v := range f.got {
		out[k] = v
	}
	return out
}

// TestSendProxyChecksMatchHaproxy: the health checks of servers with
// send-proxy and send-proxy-v2, in haproxy 2.6 and vipstack side by side,
// each against its own servers: a version 1 header naming the check's
// connection, a version 2 LOCAL header, before a connect check and an
// HTTP check; none with the server's `port` or an explicit `tcp-check
// connect` or `http-check connect` rule. The servers with no header
// get a request: haproxy's connect-only check never completes the
// handshake (its last ACK goes with its RST), so such a server sees no
// connection to record.
func TestSendProxyChecksMatchHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	names := []string{"b1", "b2", "b3", "b4", "b5", "b6", "b7"}
	conf := func(p0 string, f *firstBytes) string {
		port := func(n string) string { return f.addrs[n][strings.LastIndex(f.addrs[n], ":")+1:] }
		return `defaults
  mode tcp
  timeout connect 1s
  timeout client 3s
  timeout server 3s
  default-server inter 200ms
frontend fe
  bind 127.0.0.1:` + p0 + `
  default_backend b1
backend b1
  server s ` + f.addrs["b1"] + ` send-proxy check
backend b2
  server s ` + f.addrs["b2"] + ` send-proxy-v2 check
backend b3
  option httpchk GET /
  server s ` + f.addrs["b3"] + ` send-proxy-v2 check
backend b4
  option httpchk GET /
  server s 127.0.0.1:1 send-proxy check port ` + port("b4") + `
backend b5
  option tcp-check
  tcp-check connect
  tcp-check send PING\r\n\r\n
  server s ` + f.addrs["b5"] + ` send-proxy check
backend b6
  option httpchk GET /
  http-check connect
  server s ` + f.addrs["b6"] + ` send-proxy-v2 check
backend b7
  option httpchk GET /
  http-check connect port ` + port("b7") + `
  server s 127.0.0.1:1 send-proxy-v2 check
`
	}
	hf, vf := newFirstBytes(t, names), newFirstBytes(t, names)
	hout := peers.HAProxy(t, conf(freePorts(t, 1)[0], hf))
	newLBOpts(t, Options{}, parseOnLoopback(t, conf("1", vf)))
	var want, got map[string]string
	deadline := time.Now().Add(bound)
	for want == nil || got == nil {
		want, got = hf.all(len(names)), vf.all(len(names))
		if time.Now().After(deadline) {
			t.Fatalf("not every server checked: haproxy %q, vipstack %q\nhaproxy:\n%s", hf.all(0), vf.all(0), hout.String())
		}
		time.Sleep(50 * time.Millisecond) // checks running, bounded
	}
	v1 := `v1 local=false src=127.0.0.1 dst-is-server=true, then ""`
	local := `v2 local=true src=invalid IP dst-is-server=false, then `
	expected := map[string]string{"b1": v1, "b2": local + `""`, "b3": local + `"GET / HTTP/1.0"`, "b4": `no header, then "GET / HTTP/1.0"`,
		"b5": `no header, then "PING"`, "b6": `no header, then "GET / HTTP/1.0"`, "b7": `no header, then "GET / HTTP/1.0"`}
	if diff := cmp.Diff(expected, want); diff != "" {
		t.Errorf("haproxy's checks differ from this test's expectation (-expected +haproxy):\n%s", diff)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("checks (-haproxy +vipstack):\n%s", diff)
	}
}
