package lb

import (
	"bufio"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
)

// TestTuneBufSizeMatchesHaproxy: tune.bufsize and tune.maxrewrite set
// the request head a stats listener takes, in haproxy 2.6 and in
// vipstack alike: with one header X of n bytes, the largest n answered
// and the next refused with 400 are the same in both, for a larger
// buffer, a maxrewrite past half the buffer (haproxy takes half), and
// a smaller buffer.
func TestTuneBufSizeMatchesHaproxy(t *testing.T) {
	cases := []struct {
		name, global string
		n            int // the largest X answered (measured with haproxy 2.6.12: 24457 for the first)
	}{
		{name: "32768 and 8192", global: "  tune.bufsize 32768\n  tune.maxrewrite 8192\n", n: 32768 - 8192 - 69 - 50},
		{name: "maxrewrite past half", global: "  tune.bufsize 16384\n  tune.maxrewrite 20000\n", n: 16384 - 8192 - 69 - 50},
		{name: "8192 alone", global: "  tune.bufsize 8192\n", n: 8192 - 1024 - 69 - 50},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conf := func(port string) string {
				return "global\n" + tc.global + `defaults
  mode http
  timeout client 5s
listen st
  bind 127.0.0.1:` + port + `
  stats enable
  stats uri /haproxy_ready
`
			}
			ports := freePorts(t, 1)
			peers.HAProxy(t, conf(ports[0]))
			l := newLB(t, fakeClock(), parseOnLoopback(t, conf("1")))
			haddr, vaddr := "127.0.0.1:"+ports[0], l.Addrs("st")[0].String()
			waitListening(t, "tcp", haddr)
			for _, n := range []int{tc.n, tc.n + 1} {
				h, v := headStatus(t, haddr, n), headStatus(t, vaddr, n)
				want := "HTTP/1.1 200 OK"
				if n > tc.n {
					want = "HTTP/1.1 400 Bad request"
				}
				if h != want || v != want {
					t.Errorf("X of %d bytes: haproxy %q, vipstack %q; want %q", n, h, v, want)
				}
			}
		})
	}
}

// headStatus sends a request for /haproxy_ready with one header X of n bytes and
// returns the answer's status line.
func headStatus(t *testing.T, addr string, n int) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, bound)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(bound))
	if _, err := c.Write([]byte("GET /haproxy_ready HTTP/1.1\r\nX: " + strings.Repeat("a", n) + "\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("%s: %v", addr, err)
	}
	return strings.TrimRight(line, "\r\n")
}

// TestTuneBufSizeChecksMatchHaproxy: a check reads an answer into a
// buffer of tune.bufsize, in haproxy 2.6 as in vipstack. A server whose
// expected word follows 20000 other bytes fails a tcp-check (L7RSP) and
// an HTTP check with a status line that long (L7RSP) under the default
// 16384, and passes both under tune.bufsize 32768 (measured first with
// haproxy 2.6.12 by hand: DOWN L7RSP, then UP L7OK).
func TestTuneBufSizeChecksMatchHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	junk := strings.Repeat("x", 20000)
	chatty := startBackendFunc(t, "chatty", func(c net.Conn) {
		c.Write([]byte(junk + "OK\n"))
	}).addr.String()
	longReason := startBackendFunc(t, "longreason", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(bound))
		bufio.NewReader(c).ReadString('\n')
		c.Write([]byte("HTTP/1.1 200 " + junk + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
	}).addr.String()
	for _, tc := range []struct {
		name, global string
		want         string
	}{
		{name: "default", global: "", want: "L7RSP"},
		{name: "32768", global: "  tune.bufsize 32768\n", want: "L7OK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			conf := func(p0 string) string {
				return "global\n  stats socket " + dir + "/haproxy.sock mode 600 level admin\n" + tc.global + `defaults
  mode tcp
  timeout connect 1s
  timeout client 3s
  timeout server 3s
  timeout check 1s
  default-server inter 300ms fall 1 rise 1
listen tcpcheck
  bind 127.0.0.1:` + p0 + `
  option tcp-check
  tcp-check expect string OK
  server s1 ` + chatty + ` check
backend httpcheck
  option httpchk GET /
  server s1 ` + longReason + ` check
`
			}
			ports := freePorts(t, 1)
			hout := peers.HAProxy(t, conf(ports[0]))
			l := newLBOpts(t, Options{}, parseOnLoopback(t, conf("1")))
			waitListening(t, "unix", dir+"/haproxy.sock")
			var want, got map[string]string
			deadline := time.Now().Add(bound)
			for want == nil || got == nil {
				if want == nil {
					want = haproxyCheckStatuses(haproxyCommand(t, dir+"/haproxy.sock", "show stat"), 2)
				}
				if got == nil {
					got = lbCheckStatuses(l, 2)
				}
				if time.Now().After(deadline) {
					t.Fatalf("not every server checked: haproxy %q, vipstack %q\nhaproxy:\n%s", want, got, hout.String())
				}
				time.Sleep(50 * time.Millisecond) // checks running, bounded
			}
			expected := map[string]string{"tcpcheck": tc.want, "httpcheck": tc.want}
			if diff := cmp.Diff(expected, want); diff != "" {
				t.Errorf("haproxy's check_status differs from this test's expectation (-expected +haproxy):\n%s", diff)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("check_status (-haproxy +vipstack):\n%s", diff)
			}
		})
	}
}
