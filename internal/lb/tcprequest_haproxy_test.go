package lb

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// TestInspectDelayWithoutRulesMatchesHaproxy: `tcp-request
// inspect-delay` in a mode tcp frontend without tcp-request content
// rules (the kubeadm-style API frontends') does not hold the connection:
// a server that speaks first reaches a client that has sent nothing,
// through haproxy and through vipstack alike, though the delay is an
// hour.
func TestInspectDelayWithoutRulesMatchesHaproxy(t *testing.T) {
	b := startBackend(t, "banner")
	conf := func(sock string, ports []string) string {
		return strings.NewReplacer("{{P0}}", ports[0], "{{S1}}", b.addr.String(), "{{SOCK}}", sock).Replace(`defaults
  mode tcp
  log {{SOCK}} local0
  timeout connect 1s
  timeout client 1h
  timeout server 1h
frontend fe
  bind 127.0.0.1:{{P0}}
  tcp-request inspect-delay 1h
  default_backend be
backend be
  server s1 {{S1}}
`)
	}
	_, _, hports, vports := startHaproxyAndLB(t, 1, conf)
	for _, p := range []struct{ name, port string }{{"haproxy", hports[0]}, {"vipstack", vports[0]}} {
		waitListening(t, "tcp", "127.0.0.1:"+p.port)
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+p.port, bound)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(bound))
		got, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if got != "banner\n" {
			t.Errorf("%s: server's greeting before the client sends: %q, %v; want %q", p.name, got, err, "banner\n")
		}
	}
}
