package lb

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/peers"
)

// TestBalanceMoreMatchesHaproxy: the same listen with balance static-rr
// or first, in haproxy 2.6 and in vipstack, sends the same run of clients
// to the same servers. first's clients stay connected, so that each
// server fills up to its maxconn (the first, takeOne's, holds one of
// s0's two: s0 s1 s1 s2 s2).
func TestBalanceMoreMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	for _, tc := range []struct {
		name, balance, params string
		weights               []int
		n                     int
		hold                  bool
	}{
		{name: "static-rr weights 3 1 2", balance: "static-rr", weights: []int{3, 1, 2}, n: 13},
		{name: "static-rr equal", balance: "static-rr", weights: []int{1, 1, 1}, n: 7},
		{name: "first, maxconn 2", balance: "first", params: " maxconn 2", weights: []int{1, 1, 1}, n: 5, hold: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var servers strings.Builder
			for i, w := range tc.weights {
				b := startBackend(t, fmt.Sprintf("s%d", i))
				fmt.Fprintf(&servers, "  server s%d %s weight %d%s\n", i, b.addr, w, tc.params)
			}
			ports := freePorts(t, 2)
			conf := func(port string) string {
				return "defaults\n  mode tcp\n  timeout connect 1s\n  timeout client 5s\n  timeout server 5s\n" +
					"listen l\n  bind 127.0.0.1:" + port + "\n  balance " + tc.balance + "\n" + servers.String()
			}
			peers.HAProxy(t, conf(ports[0]))
			cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(conf(ports[1])))
			if err != nil {
				t.Fatal(err)
			}
			newLBOpts(t, Options{}, cfg)
			haddr, vaddr := "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1]
			// Each balancer's first client takes one server and stays,
			// so that both runs start from the same place.
			takeOne(t, haddr)
			takeOne(t, vaddr)
			h, v := runOf(t, haddr, tc.n, tc.hold), runOf(t, vaddr, tc.n, tc.hold)
			if h != v {
				t.Errorf("servers in turn:\nhaproxy  %s\nvipstack %s", h, v)
			} else {
				t.Logf("both: %s", v)
			}
		})
	}
}

// takeOne waits until addr accepts, then holds one client there until
// the test ends, having read its server's greeting: that server was then
// surely chosen, before any later client. waitListening's probe was not
// enough: it connects and leaves without a word, and haproxy (two threads
// here) may choose its server after the next client's, or still count
// it against a server's maxconn when the next client comes (balance
// first), so both runs started from different places: 1 of 30 runs
// alone, 8 of 40 with two busy loops beside (static-rr equal: haproxy
// s0 s2 s0 s1..., its probe served after the first client; first:
// s0 s1 s0 s1 s2, the probe still holding one of s0's two).
func takeOne(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(bound)
	var c net.Conn
	for {
		var err error
		if c, err = net.DialTimeout("tcp", addr, bound); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond) // starting, bounded; a refused connect takes no server
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(bound))
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		t.Fatalf("%s: the first client got no greeting: %v", addr, err)
	}
}

// runOf connects n clients to addr one after the other and returns the
// servers that greeted them; with hold, every client stays connected
// until the end.
func runOf(t *testing.T, addr string, n int, hold bool) string {
	t.Helper()
	var names []string
	for range n {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			names = append(names, "-")
		} else {
			names = append(names, strings.TrimSpace(line))
		}
		if hold {
			defer c.Close()
		} else {
			c.Close()
		}
	}
	return strings.Join(names, " ")
}
