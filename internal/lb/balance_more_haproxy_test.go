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
// server fills up to its maxconn.
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
			// Each wait is a connection, which takes a server: one
			// each, so both runs start from the same place.
			waitListening(t, "tcp", haddr)
			waitListening(t, "tcp", vaddr)
			h, v := runOf(t, haddr, tc.n, tc.hold), runOf(t, vaddr, tc.n, tc.hold)
			if h != v {
				t.Errorf("servers in turn:\nhaproxy  %s\nvipstack %s", h, v)
			} else {
				t.Logf("both: %s", v)
			}
		})
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
