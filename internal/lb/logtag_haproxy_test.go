package lb

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// syslogTag is the tag and the message of an RFC 3164 datagram.
var syslogTag = regexp.MustCompile(`^<\d+>[A-Z][a-z]{2} [ 123]\d \d\d:\d\d:\d\d (\S+)\[\d+\]: (\S+ )?`)

// TestProxyLogTagMatchesHaproxy: with log-tag in global, defaults, a
// frontend and a backend, each line goes out under the tag haproxy 2.6
// gives it: a frontend's connection log under the frontend's, a
// backend's health check under the backend's, the others under defaults'.
func TestProxyLogTagMatchesHaproxy(t *testing.T) {
	conf := func(sock string, ports []string) string {
		return strings.NewReplacer("{{SOCK}}", sock, "{{P0}}", ports[0], "{{P1}}", ports[1]).Replace(`global
  log-tag glob
defaults
  mode tcp
  log-tag dflt
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend fe
  bind 127.0.0.1:{{P0}}
  log {{SOCK}} local0
  log-tag front
  default_backend be
frontend fe2
  bind 127.0.0.1:{{P1}}
  log {{SOCK}} local0
  default_backend be2
backend be
  log {{SOCK}} local0
  log-tag back
  option log-health-checks
  server s1 127.0.0.1:9 check inter 200ms fall 1 rise 1
backend be2
  log {{SOCK}} local0
  server s1 127.0.0.1:9 check inter 200ms fall 1 rise 1
`)
	}
	hlog, vlog, hports, vports := startHaproxyAndLB(t, 2, conf)
	for _, ports := range [][]string{hports, vports} {
		waitListening(t, "tcp", "127.0.0.1:"+ports[0])
		exchange(t, "127.0.0.1:"+ports[1], "")
	}
	tags := func(r *logReader, who string) []string {
		r.waitFor(t, who, "Health check for server be/s1")
		r.waitFor(t, who, "Server be2/s1 is DOWN")
		r.waitForN(t, who, "Connect from", 2)
		var out []string
		for _, d := range r.lines() {
			m := syslogTag.FindStringSubmatch(d)
			if m == nil {
				t.Errorf("%s: not an RFC 3164 datagram: %q", who, d)
				continue
			}
			kind := "other"
			for _, k := range []string{"Connect from", "Health check for", "is DOWN", "has no server available"} {
				if strings.Contains(d, k) {
					kind = k
				}
			}
			if kind == "Connect from" {
				kind += " " + d[strings.LastIndex(d, "(")+1:strings.LastIndex(d, "/")]
			}
			out = append(out, m[1]+": "+kind)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	want, got := tags(hlog, "haproxy"), tags(vlog, "vipstack")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tags (-haproxy +vipstack):\n%s", diff)
	}
	t.Logf("haproxy:\n%s", strings.Join(want, "\n"))
}
