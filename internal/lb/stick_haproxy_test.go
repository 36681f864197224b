package lb

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/peers"
)

// stickConf is a frontend and a backend of three servers with `stick on
// src` over a table of type ip; with peers, its table names a peers
// section whose only peer is this host.
func stickConf(t *testing.T, fe string, servers []string, withPeers bool) string {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	peersSection, peersParam := "", ""
	if withPeers {
		peersSection, peersParam = "peers local\n  peer "+host+" 127.0.0.1:"+freePort(t)+"\n", " peers local"
	}
	return peersSection + strings.NewReplacer("{{FE}}", fe, "{{PEERS}}", peersParam,
		"{{S1}}", servers[0], "{{S2}}", servers[1], "{{S3}}", servers[2]).Replace(`defaults
  mode tcp
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend fe
  bind 127.0.0.1:{{FE}}
  default_backend be
backend be
  stick-table type ip size 100 expire 1m{{PEERS}}
  stick on src
  fullconn 2000
  server s1 {{S1}}
  server s2 {{S2}}
  server s3 {{S3}}
`)
}

// askFrom connects to 127.0.0.1:port from each source address in turn
// and returns, by address, the servers that answered, in order.
func askFrom(t *testing.T, port string, from ...string) map[string][]string {
	t.Helper()
	waitListening(t, "tcp", "127.0.0.1:"+port)
	got := map[string][]string{}
	for _, ip := range from {
		d := net.Dialer{Timeout: bound, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		c, err := d.Dial("tcp", "127.0.0.1:"+port)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(bound))
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		got[ip] = append(got[ip], strings.TrimSpace(line))
	}
	return got
}

// sticky summarises askFrom's answers: each address's one server ("" if
// it moved) and how many servers the addresses were spread over.
func sticky(got map[string][]string) (moved []string, spread int) {
	used := map[string]bool{}
	for ip, srvs := range got {
		for _, s := range srvs[1:] {
			if s != srvs[0] {
				moved = append(moved, ip)
				break
			}
		}
		used[srvs[0]] = true
	}
	return moved, len(used)
}

const stickA, stickB, stickC, stickD = "127.0.0.11", "127.0.0.12", "127.0.0.13", "127.0.0.14"

// TestStickOnSrcMatchesHaproxy: `stick on src` sends each client address
// to one server, the first of each balanced, beside haproxy 2.6: the same
// clients, three times each, stay where they first went, spread over the
// three servers alike. The backend's fullconn is its stats' slim in both.
func TestStickOnSrcMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	servers := []string{startBackend(t, "s1").addr.String(), startBackend(t, "s2").addr.String(), startBackend(t, "s3").addr.String()}
	ports := freePorts(t, 2)
	sock := filepath.Join(t.TempDir(), "h.sock")
	peers.HAProxy(t, "global\n  stats socket "+sock+" level admin\n"+stickConf(t, ports[0], servers, false))
	cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(stickConf(t, ports[1], servers, false)))
	if err != nil {
		t.Fatal(err)
	}
	l := newLBOpts(t, Options{}, cfg)
	clients := []string{stickA, stickB, stickC, stickD, stickA, stickB, stickC, stickD, stickA, stickB, stickC, stickD}
	hmoved, hspread := sticky(askFrom(t, ports[0], clients...))
	vmoved, vspread := sticky(askFrom(t, ports[1], clients...))
	if len(hmoved) != 0 || hspread != 3 {
		t.Errorf("haproxy differs from this test's expectation: moved %q, spread over %d servers", hmoved, hspread)
	}
	if len(vmoved) != len(hmoved) || vspread != hspread {
		t.Errorf("vipstack: moved %q, spread over %d servers; haproxy: moved %q, spread over %d", vmoved, vspread, hmoved, hspread)
	}
	hslim, vslim := csvField(haproxyCommand(t, sock, "show stat"), "be", "BACKEND", "slim"), csvField(l.Snapshot().CSV(), "be", "BACKEND", "slim")
	if hslim != "2000" || vslim != hslim {
		t.Errorf("backend slim (fullconn 2000): haproxy %q, vipstack %q", hslim, vslim)
	}
}

// TestStickTableReload: a reload keeps a stick table whose peers section
// has only the local peer, as haproxy's local peer hands it to the next
// worker (measured by hand with haproxy 2.6.12 in master-worker mode and
// `show table` before and after a SIGUSR2), and starts a table without
// peers empty, as haproxy's new worker does. The servers are reordered
// by the reload: entries name their server.
func TestStickTableReload(t *testing.T) {
	s1, s2, s3 := startBackend(t, "s1").addr.String(), startBackend(t, "s2").addr.String(), startBackend(t, "s3").addr.String()
	for _, withPeers := range []bool{true, false} {
		port := freePort(t)
		conf := stickConf(t, port, []string{s1, s2, s3}, withPeers)
		cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(conf))
		if err != nil {
			t.Fatal(err)
		}
		l := newLBOpts(t, Options{}, cfg)
		before := askFrom(t, port, stickA, stickB, stickC)
		reordered := strings.Replace(strings.Replace(conf, "  server s1 "+s1+"\n", "", 1), "  server s3 "+s3+"\n", "  server s3 "+s3+"\n  server s1 "+s1+"\n", 1)
		cfg2, err := haproxycfg.Parse("haproxy.cfg", []byte(reordered))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Apply(cfg2); err != nil {
			t.Fatal(err)
		}
		l.mu.Lock()
		n := l.sticks["be"].len()
		l.mu.Unlock()
		after := askFrom(t, port, stickC, stickB, stickA)
		switch {
		case withPeers && n != 4: // A, B, C and waitListening's 127.0.0.1
			t.Errorf("with a local peer: %d entries after the reload, want 4", n)
		case !withPeers && n != 0:
			t.Errorf("without peers: %d entries after the reload, want 0", n)
		}
		if withPeers {
			for _, ip := range []string{stickA, stickB, stickC} {
				if before[ip][0] != after[ip][0] {
					t.Errorf("with a local peer: %s went to %s, after the reload to %s", ip, before[ip][0], after[ip][0])
				}
			}
		}
	}
}
