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

// TestDisabledServerMatchesHaproxy: a server marked `disabled` starts in
// maintenance in haproxy 2.6 and in vipstack: MAINT on the stats, no
// check and no client for it, every client to the other server.
func TestDisabledServerMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	greeter := func(name string) string {
		return startBackendFunc(t, name, func(c net.Conn) { c.Write([]byte(name + "\n")) }).addr.String()
	}
	one, two := greeter("one"), greeter("two")
	dir := t.TempDir()
	port := freePorts(t, 1)[0]
	conf := strings.NewReplacer("{{DIR}}", dir, "{{P0}}", port, "{{ONE}}", one, "{{TWO}}", two).Replace(`global
  stats socket {{DIR}}/haproxy.sock mode 600 level admin
defaults
  mode tcp
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend fe
  bind 127.0.0.1:{{P0}}
  default_backend be
backend be
  server s1 {{ONE}} check inter 200ms disabled
  server s2 {{TWO}} check inter 200ms
`)
	peers.HAProxy(t, conf)
	l := newLBOpts(t, Options{}, parseOnLoopback(t, conf))
	waitListening(t, "unix", dir+"/haproxy.sock")
	waitListening(t, "tcp", "127.0.0.1:"+port)
	// s2's first check in both: s1's would have come with it.
	stat := func() string { return haproxyCommand(t, dir+"/haproxy.sock", "show stat") }
	server := func(name string) (status, check string) {
		for _, b := range l.Snapshot().Backends {
			for _, s := range b.Servers {
				if s.Name == name {
					return s.Status, s.CheckStatus
				}
			}
		}
		return "", ""
	}
	for deadline := time.Now().Add(bound); ; {
		_, v2 := server("s2")
		h2 := strings.TrimPrefix(haproxyCheckColumn(stat(), "s2", "check_status")["be"], "* ")
		if v2 != "" && h2 != "" && h2 != "INI" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("s2 not checked: haproxy %q, vipstack %q", h2, v2)
		}
		time.Sleep(50 * time.Millisecond) // checks running, bounded
	}
	hst := haproxyCheckColumn(stat(), "s1", "status")["be"]
	hchk := haproxyCheckColumn(stat(), "s1", "check_status")["be"]
	vst, vchk := server("s1")
	if hst != "MAINT" || hchk != "" {
		t.Fatalf("haproxy: s1 %q, check %q; this test expects MAINT and no check", hst, hchk)
	}
	if vst != hst || vchk != hchk {
		t.Errorf("s1: status %q check %q in vipstack, %q %q in haproxy", vst, vchk, hst, hchk)
	}
	got := map[string][]string{}
	for who, addr := range map[string]string{"haproxy": "127.0.0.1:" + port, "vipstack": l.Addrs("fe")[0].String()} {
		for range 4 {
			c, err := net.DialTimeout("tcp", addr, bound)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(bound))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			got[who] = append(got[who], strings.TrimSpace(line))
		}
	}
	if diff := cmp.Diff([]string{"two", "two", "two", "two"}, got["haproxy"]); diff != "" {
		t.Errorf("haproxy differs from this test's expectation (-want +haproxy):\n%s", diff)
	}
	if diff := cmp.Diff(got["haproxy"], got["vipstack"]); diff != "" {
		t.Errorf("(-haproxy +vipstack):\n%s", diff)
	}
}
