package lb

import (
	"bufio"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/peers"
)

// TestServerWithoutPortMatchesHaproxy: a server written without a port
// takes each connection on the port its client connected to, in haproxy
// 2.6 and in vipstack: one frontend on two ports, two servers listening
// on 127.0.0.2 at those ports.
func TestServerWithoutPortMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	ports := freePorts(t, 2)
	for i, name := range []string{"one", "two"} {
		ln, err := net.Listen("tcp", "127.0.0.2:"+ports[i])
		if err != nil {
			t.Skipf("127.0.0.2: %v", err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Write([]byte(name + "\n"))
				c.Close()
			}
		}()
	}
	conf := func(ip string) string {
		return strings.NewReplacer("{{IP}}", ip, "{{P0}}", ports[0], "{{P1}}", ports[1]).Replace(`defaults
  mode tcp
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend fe
  bind {{IP}}:{{P0}}
  bind {{IP}}:{{P1}}
  default_backend be
backend be
  server a 127.0.0.2
`)
	}
	peers.HAProxy(t, conf("127.0.0.3"))
	cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(conf("127.0.0.1")))
	if err != nil {
		t.Fatal(err)
	}
	newLBOpts(t, Options{}, cfg)
	got := map[string][]string{}
	for who, ip := range map[string]string{"haproxy": "127.0.0.3", "vipstack": "127.0.0.1"} {
		for _, p := range ports {
			waitListening(t, "tcp", ip+":"+p)
			c, err := net.DialTimeout("tcp", ip+":"+p, bound)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(bound))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			got[who] = append(got[who], strings.TrimSpace(line))
		}
	}
	if diff := cmp.Diff([]string{"one", "two"}, got["haproxy"]); diff != "" {
		t.Errorf("haproxy differs from this test's expectation (-want +haproxy):\n%s", diff)
	}
	if diff := cmp.Diff(got["haproxy"], got["vipstack"]); diff != "" {
		t.Errorf("(-haproxy +vipstack):\n%s", diff)
	}
}
