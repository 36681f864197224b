package lb

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLogSendHostnameMatchesHaproxy: with global log-send-hostname NAME,
// haproxy 2.6 and vipstack put NAME in the header of every datagram, in
// the default format and in format rfc3164.
func TestLogSendHostnameMatchesHaproxy(t *testing.T) {
	a := startBackend(t, "a")
	conf := func(sock string, ports []string) string {
		return strings.NewReplacer("{{SOCK}}", sock, "{{P0}}", ports[0], "{{A}}", a.addr.String()).Replace(`global
  log {{SOCK}} local0
  log {{SOCK}} format rfc3164 local1
  log-send-hostname lbnode
defaults
  log global
  mode tcp
  option tcplog
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend fe
  bind 127.0.0.1:{{P0}}
  default_backend be
backend be
  server a {{A}}
`)
	}
	hlog, vlog, hports, vports := startHaproxyAndLB(t, 1, conf)
	waitListening(t, "tcp", "127.0.0.1:"+hports[0])
	hlog.waitFor(t, "haproxy", " fe be/a ") // waitListening's connection
	exchange(t, "127.0.0.1:"+hports[0], "x")
	exchange(t, "127.0.0.1:"+vports[0], "x")
	hlog.waitForN(t, "haproxy", " fe be/a ", 4)
	vlog.waitForN(t, "vipstack", " fe be/a ", 2)
	header := regexp.MustCompile(`^(<\d+>)[A-Z][a-z]{2} [ 123]\d \d\d:\d\d:\d\d (\S+ )?haproxy\[\d+\]: `)
	heads := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			if m := header.FindStringSubmatch(l); m != nil && strings.Contains(l, " fe be/a ") {
				out = append(out, m[1]+" "+m[2])
			}
		}
		return out
	}
	want := []string{"<134> lbnode ", "<142> lbnode ", "<134> lbnode ", "<142> lbnode "}
	if diff := cmp.Diff(want, heads(hlog.lines())); diff != "" {
		t.Errorf("haproxy's headers differ from this test's expectation (-want +haproxy):\n%s", diff)
	}
	if diff := cmp.Diff(heads(hlog.lines())[2:], heads(vlog.lines())); diff != "" {
		t.Errorf("headers (-haproxy +vipstack):\n%s", diff)
	}
}
