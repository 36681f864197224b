package lb

import (
	"bufio"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestSourceHashMatchesHaproxy: with `balance source`, each client
// address lands on the server haproxy 2.6 sends it to, for equal weights
// (OpenShift's ingress listens), for unequal ones reduced by their common
// divisor, and with a server down. Clients connect from 60 addresses of
// 127.0.0.0/8.
func TestSourceHashMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	for _, tc := range []struct {
		name    string
		weights []int
		down    int // a server whose port refuses: -1 none
	}{
		{"equal weights", []int{1, 1, 1}, -1},
		{"weights 2 4 6 (common divisor 2)", []int{2, 4, 6}, -1},
		{"weights 1 3 and one of 5 down", []int{1, 3, 5}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var servers strings.Builder
			for i, w := range tc.weights {
				addr := startBackend(t, fmt.Sprintf("s%d", i)).addr
				if i == tc.down {
					addr = closedPort(t)
				}
				fmt.Fprintf(&servers, "  server s%d %s weight %d check inter 200ms fall 1\n", i, addr, w)
			}
			ports := freePorts(t, 2)
			conf := func(port string) string {
				return `defaults
  mode tcp
  timeout connect 1s
  timeout client 5s
  timeout server 5s
listen src
  bind 127.0.0.1:` + port + `
  balance source
` + servers.String()
			}
			peers.HAProxy(t, conf(ports[0]))
			cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(conf(ports[1])))
			if err != nil {
				t.Fatal(err)
			}
			newLBOpts(t, Options{}, cfg)
			haddr, vaddr := "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1]
			waitListening(t, "tcp", haddr)
			if tc.down >= 0 {
				// Until both have marked the closed port down (inter
				// 200ms fall 1), a client hashed to it gets no server.
				testutil.Eventually(t, 20*time.Second, func() error {
					for i := 2; i < 62; i++ {
						for _, addr := range []string{haddr, vaddr} {
							if _, err := greeting(sourceAddr(i), addr); err != nil {
								return err
							}
						}
					}
					return nil
				})
			}
			differ := 0
			for i := 2; i < 62; i++ {
				src := sourceAddr(i)
				h, v := nameFrom(t, src, haddr), nameFrom(t, src, vaddr)
				if h != v {
					differ++
					t.Errorf("client %s: vipstack sent it to %s, haproxy to %s", src, v, h)
				}
			}
			if differ == 0 {
				t.Logf("60 clients: each on the server haproxy chose")
			}
		})
	}
}

// sourceAddr is client i's address, on 127.0.0.0/8 (every address of it
// is the loopback's).
func sourceAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{127, 0, byte(i / 7), byte(i)}) }

// nameFrom connects to addr from src and returns the name the backend
// greets with.
func nameFrom(t *testing.T, src netip.Addr, addr string) string {
	t.Helper()
	name, err := greeting(src, addr)
	if err != nil {
		t.Fatal(err)
	}
	return name
}

func greeting(src netip.Addr, addr string) (string, error) {
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: src.AsSlice()}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("from %s to %s: %w", src, addr, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("from %s to %s: no greeting: %w", src, addr, err)
	}
	return strings.TrimSpace(line), nil
}
