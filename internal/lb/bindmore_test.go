package lb

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/haproxycfg"
)

// TestBindPortRange: bind ADDRESS:LOW-HIGH listens on each port of the
// range, and a server written without a port gets each client on the
// port it came to (the OKD NodePort layout, bind *:30000-32767).
func TestBindPortRange(t *testing.T) {
	ports := freePorts(t, 1)
	base, _ := strconv.Atoi(ports[0])
	if base+2 > 65535 {
		t.Skip("no room for a range")
	}
	for i := 0; i < 3; i++ {
		ln, err := net.Listen("tcp", "127.0.0.2:"+strconv.Itoa(base+i))
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
				c.Write([]byte(ln.Addr().String() + "\n"))
				c.Close()
			}
		}()
	}
	conf := "defaults\n  mode tcp\n  timeout connect 1s\n  timeout client 3s\n  timeout server 3s\nfrontend np\n  bind 127.0.0.1:" +
		strconv.Itoa(base) + "-" + strconv.Itoa(base+2) + "\n  default_backend be\nbackend be\n  server s 127.0.0.2\n"
	cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	l := newLBOpts(t, Options{}, cfg)
	if n := len(l.Addrs("np")); n != 3 {
		t.Fatalf("frontend listens on %d addresses, want 3", n)
	}
	for i := 0; i < 3; i++ {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(base+i), bound)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(bound))
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if want := "127.0.0.2:" + strconv.Itoa(base+i); strings.TrimSpace(line) != want {
			t.Errorf("port %d reached %q, want %s", base+i, strings.TrimSpace(line), want)
		}
	}
}

// TestBindV6Only: bind :::PORT v6only takes IPv6 clients only, whatever
// the system's default.
func TestBindV6Only(t *testing.T) {
	if c, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skip("no IPv6 loopback")
	} else {
		c.Close()
	}
	a := startBackend(t, "a")
	port := freePort(t)
	conf := "defaults\n  mode tcp\n  timeout connect 1s\n  timeout client 3s\n  timeout server 3s\nfrontend fe\n  bind :::" + port +
		" v6only\n  default_backend be\nbackend be\n  server a " + a.addr.String() + "\n"
	cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	newLBOpts(t, Options{}, cfg)
	c, err := net.DialTimeout("tcp", "[::1]:"+port, bound)
	if err != nil {
		t.Fatalf("IPv6 client: %v", err)
	}
	c.Close()
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, bound); err == nil {
		c.Close()
		t.Error("an IPv4 client connected to a v6only listener")
	}
}
