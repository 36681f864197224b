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

// TestServerParamsMatchHaproxy runs haproxy 2.6 and vipstack side by side
// on one file with backup servers, a check port, on-marked-down
// shutdown-sessions, a server maxconn with its queue, and section
// timeouts, against the same servers, and compares where each client
// lands and what happens to the connections when the active server's
// check fails.
func TestServerParamsMatchHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	a, b, c, d := startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c"), startBackend(t, "d")
	chk, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer chk.Close()
	go func() { // the check port: accept and close
		for {
			cn, err := chk.Accept()
			if err != nil {
				return
			}
			cn.Close()
		}
	}()
	chkPort := itoa(chk.Addr().(*net.TCPAddr).Port)
	conf := func(p0, p1 string) string {
		return strings.NewReplacer("{{P0}}", p0, "{{P1}}", p1, "{{A}}", a.addr.String(), "{{B}}", b.addr.String(),
			"{{C}}", c.addr.String(), "{{D}}", d.addr.String(), "{{CHK}}", chkPort).Replace(`defaults
  mode tcp
  timeout connect 1s
frontend fe
  bind 127.0.0.1:{{P0}}
  timeout client 30s
  default_backend be
backend be
  timeout server 30s
  default-server inter 200ms fall 1 rise 1 on-marked-down shutdown-sessions
  server a {{A}} check port {{CHK}}
  server b {{B}} backup
  server c {{C}} backup
listen lim
  bind 127.0.0.1:{{P1}}
  timeout client 30s
  timeout server 30s
  timeout queue 20s
  server d {{D}} maxconn 1
`)
	}
	ports := freePorts(t, 2)
	peers.HAProxy(t, conf(ports[0], ports[1]))
	l := newLBOpts(t, Options{}, parseOnLoopback(t, conf("1", "2")))
	addrs := map[string][2]string{
		"haproxy":  {"127.0.0.1:" + ports[0], "127.0.0.1:" + ports[1]},
		"vipstack": {l.Addrs("fe")[0].String(), l.Addrs("lim")[0].String()},
	}
	type conn struct {
		c net.Conn
		r *bufio.Reader
	}
	open := func(t *testing.T, addr string) conn {
		var cn net.Conn
		var err error
		for deadline := time.Now().Add(bound); ; time.Sleep(20 * time.Millisecond) { // haproxy starting, bounded
			if cn, err = net.DialTimeout("tcp", addr, bound); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		cn.SetDeadline(time.Now().Add(bound))
		return conn{cn, bufio.NewReader(cn)}
	}
	greet := func(cn conn) string {
		s, _ := cn.r.ReadString('\n')
		return strings.TrimSpace(s)
	}
	type outcome struct {
		Before       []string
		HeldClosed   bool
		After        []string
		Queued       string
		QueuedServed string
	}
	got := map[string]outcome{}
	// Phase 1: the active server up.
	held := map[string]conn{}
	for who, ad := range addrs {
		var o outcome
		for range 3 {
			cn := open(t, ad[0])
			o.Before = append(o.Before, greet(cn))
			cn.c.Close()
		}
		held[who] = open(t, ad[0])
		greet(held[who])
		got[who] = o
	}
	// Phase 2: a's check port closes: a goes DOWN in both.
	chk.Close()
	for who, ad := range addrs {
		o := got[who]
		cn := held[who]
		cn.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := cn.r.ReadByte()
		o.HeldClosed = err != nil && !strings.Contains(err.Error(), "timeout")
		for range 3 {
			cn := open(t, ad[0])
			o.After = append(o.After, greet(cn))
			cn.c.Close()
		}
		// maxconn 1: the second client waits until the first leaves.
		first := open(t, ad[1])
		greet(first)
		second := open(t, ad[1])
		second.c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := second.r.ReadByte(); err != nil && strings.Contains(err.Error(), "timeout") {
			o.Queued = "waiting"
		}
		second.c.SetReadDeadline(time.Now().Add(bound))
		first.c.Close()
		o.QueuedServed = greet(second)
		second.c.Close()
		got[who] = o
	}
	want := outcome{Before: []string{"a", "a", "a"}, HeldClosed: true, After: []string{"b", "b", "b"}, Queued: "waiting", QueuedServed: "d"}
	if diff := cmp.Diff(want, got["haproxy"]); diff != "" {
		t.Errorf("haproxy differs from this test's expectation (-want +haproxy):\n%s", diff)
	}
	if diff := cmp.Diff(got["haproxy"], got["vipstack"]); diff != "" {
		t.Errorf("(-haproxy +vipstack):\n%s", diff)
	}
}
