package lb

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"regexp"
	"strings"
	"syscall"
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

// TestTCPRequestRulesMatchHaproxy: a frontend's tcp-request rules on
// loopback, under haproxy and vipstack: set-src by ipmask (the rules
// after it and the log see the masked address), set-dst (the log's %fi,
// and the server written without an address is reached there), a
// connection reject (a reset, no line) and a content reject (an end of
// file, a PR line). The content rule looks at layer 4 only, so neither
// waits for the hour of inspect-delay: the allowed client gets the
// server's greeting. Clients from three 127.0.x.5 addresses.
// (internal/lbfiles TestRealFilesMatchHaproxy/tcp-request_rules runs a
// listen's rules in network namespaces.)
func TestTCPRequestRulesMatchHaproxy(t *testing.T) {
	b := startBackend(t, "banner")
	_, sport, _ := net.SplitHostPort(b.addr.String())
	conf := func(sock string, ports []string) string {
		return strings.NewReplacer("{{P0}}", ports[0], "{{SPORT}}", sport, "{{SOCK}}", sock).Replace(`defaults
  mode tcp
  log {{SOCK}} local0
  timeout connect 1s
  timeout client 5s
  timeout server 5s
  log-format "%ci:%cp %fi:%fp %ft %b/%s %ts"
frontend fe
  bind 127.0.0.2:{{P0}}
  acl refused src 127.0.1.0
  tcp-request connection set-src src,ipmask(24)
  tcp-request connection reject if refused
  tcp-request connection set-dst ipv4(127.0.0.1)
  tcp-request inspect-delay 1h
  tcp-request content reject if { src 127.0.2.0/24 } { dst 127.0.0.1 }
  default_backend be
backend be
  server s1 0.0.0.0:{{SPORT}}
`)
	}
	hlog, vlog, hports, vports := startHaproxyAndLB(t, 1, conf)
	// The probes that wait for the listeners come from 127.0.0.1, are
	// let through and logged: wait for those lines first.
	waitListening(t, "tcp", "127.0.0.2:"+hports[0])
	waitListening(t, "tcp", "127.0.0.2:"+vports[0])
	hlog.waitFor(t, "haproxy", " fe be/s1 ")
	vlog.waitFor(t, "vipstack", " fe be/s1 ")
	header := regexp.MustCompile(`^<\d+>[^\]]*\]: (.*?)\n?$`)
	for _, c := range []struct {
		src, want, line string
	}{
		{"127.0.0.5", "banner", "127.0.0.0:P 127.0.0.1:F fe be/s1 --"},
		{"127.0.1.5", "reset", ""},
		{"127.0.2.5", "closed", "127.0.2.0:P 127.0.0.1:F fe fe/<NOSRV> PR"}, // no backend yet: haproxy names the frontend
	} {
		for _, p := range []struct {
			name string
			port string
			log  *logReader
		}{{"haproxy", hports[0], hlog}, {"vipstack", vports[0], vlog}} {
			addr := "127.0.0.2:" + p.port
			n := len(p.log.lines())
			if got := tcpOutcome(t, netip.MustParseAddr(c.src), addr); got != c.want {
				t.Errorf("%s from %s: %s, want %s", p.name, c.src, got, c.want)
			}
			var got string
			if c.line != "" {
				deadline := time.Now().Add(bound)
				for len(p.log.lines()) == n && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond) // the log line on its way, bounded
				}
			} else {
				time.Sleep(200 * time.Millisecond) // a line that should not come
			}
			if ls := p.log.lines(); len(ls) > n {
				got = strings.Join(ls[n:], "|")
				if m := header.FindStringSubmatch(got); m != nil {
					got = m[1]
				}
				// %ci:%cp %fi:%fp: the ports masked.
				if f := strings.SplitN(got, " ", 3); len(f) == 3 {
					mask := func(s, as string) string { return s[:strings.LastIndexByte(s, ':')+1] + as }
					got = mask(f[0], "P") + " " + mask(f[1], "F") + " " + f[2]
				}
			}
			if got != c.line {
				t.Errorf("%s from %s: logged %q, want %q", p.name, c.src, got, c.line)
			}
		}
	}
}

// tcpOutcome connects from src to addr and reports what it gets without
// sending: the server's greeting, "reset" or "closed".
func tcpOutcome(t *testing.T, src netip.Addr, addr string) string {
	t.Helper()
	d := net.Dialer{Timeout: bound, LocalAddr: &net.TCPAddr{IP: src.AsSlice()}}
	c, err := d.Dial("tcp", addr)
	if errors.Is(err, syscall.ECONNRESET) {
		return "reset"
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(bound))
	got, err := bufio.NewReader(c).ReadString('\n')
	switch {
	case got != "":
		return strings.TrimSpace(got)
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	case errors.Is(err, io.EOF):
		return "closed"
	}
	return fmt.Sprint(err)
}
