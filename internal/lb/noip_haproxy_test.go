package lb

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/peers"
)

// TestServerWithoutIPMatchesHaproxy: a server written `*:PORT` (or
// 0.0.0.0:PORT) takes each connection to the address its client
// connected to, on PORT, in haproxy 2.6 and in vipstack, in mode tcp and
// mode http. Servers answer on 127.0.0.2 and 127.0.0.3 at PORT, and on
// 127.0.0.1 (where a check of 0.0.0.0 lands, in both); each balancer
// binds the two addresses on a port of its own.
func TestServerWithoutIPMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	ports := freePorts(t, 5) // server, tcp and http fronts of haproxy, then of vipstack
	for _, ip := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"} {
		ln, err := net.Listen("tcp", ip+":"+ports[0])
		if err != nil {
			t.Skipf("%s: %v", ip, err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go answerIP(c, ip)
			}
		}()
	}
	conf := func(tcpPort, httpPort string) string {
		return strings.NewReplacer("{{S}}", ports[0], "{{T}}", tcpPort, "{{H}}", httpPort).Replace(`defaults
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend tcpfe
  mode tcp
  bind 127.0.0.2:{{T}}
  bind 127.0.0.3:{{T}}
  default_backend tcpbe
backend tcpbe
  mode tcp
  server a *:{{S}} check inter 200ms
frontend httpfe
  mode http
  bind 127.0.0.2:{{H}}
  bind 127.0.0.3:{{H}}
  default_backend httpbe
backend httpbe
  mode http
  server a 0.0.0.0:{{S}} check inter 200ms
`)
	}
	peers.HAProxy(t, conf(ports[1], ports[2]))
	cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(conf(ports[3], ports[4])))
	if err != nil {
		t.Fatal(err)
	}
	newLBOpts(t, Options{}, cfg)
	got := map[string][]string{}
	for who, p := range map[string][2]string{"haproxy": {ports[1], ports[2]}, "vipstack": {ports[3], ports[4]}} {
		for _, ip := range []string{"127.0.0.2", "127.0.0.3"} {
			waitListening(t, "tcp", ip+":"+p[0])
			got[who] = append(got[who], "tcp "+ip+" -> "+askTCPLine(t, ip+":"+p[0]))
			waitListening(t, "tcp", ip+":"+p[1])
			got[who] = append(got[who], "http "+ip+" -> "+askHTTPBody(t, "http://"+ip+":"+p[1]+"/"))
		}
	}
	want := []string{"tcp 127.0.0.2 -> 127.0.0.2", "http 127.0.0.2 -> 200 127.0.0.2", "tcp 127.0.0.3 -> 127.0.0.3", "http 127.0.0.3 -> 200 127.0.0.3"}
	if diff := cmp.Diff(want, got["haproxy"]); diff != "" {
		t.Errorf("haproxy differs from this test's expectation (-want +haproxy):\n%s", diff)
	}
	if diff := cmp.Diff(got["haproxy"], got["vipstack"]); diff != "" {
		t.Errorf("(-haproxy +vipstack):\n%s", diff)
	}
}

// answerIP answers c with ip: a line to a TCP client, an HTTP response
// to one that sends a request line.
func answerIP(c net.Conn, ip string) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(bound))
	br := bufio.NewReader(c)
	first := make(chan string, 1)
	go func() {
		l, _ := br.ReadString('\n')
		first <- l
	}()
	select {
	case l := <-first:
		if strings.HasPrefix(l, "GET ") {
			req, err := http.ReadRequest(bufio.NewReader(io.MultiReader(strings.NewReader(l), br)))
			if err == nil {
				req.Body.Close()
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+itoa(len(ip))+"\r\nConnection: close\r\n\r\n"+ip)
		}
	case <-time.After(100 * time.Millisecond):
		io.WriteString(c, ip+"\n") // a TCP client (or a check) sends nothing first
	}
}

func askTCPLine(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, bound)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(bound))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}

func askHTTPBody(t *testing.T, url string) string {
	t.Helper()
	cl := &http.Client{Timeout: bound, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Status[:3] + " " + string(b)
}
