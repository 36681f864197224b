package lb

import (
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
)

// TestStatsWithMonitorURIMatchesHaproxy: a listen with both stats and
// monitor-uri (an OpenShift layout: stats uri /, monitor-uri /healthz)
// answers the monitor's URI as a monitor, without the page's password,
// and every other URI as the stats page, in haproxy 2.6 and vipstack.
func TestStatsWithMonitorURIMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	a := startBackend(t, "a")
	conf := func(p0, p1 string) string {
		return strings.NewReplacer("{{P0}}", p0, "{{P1}}", p1, "{{A}}", a.addr.String()).Replace(`defaults
  mode tcp
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend fe
  bind 127.0.0.1:{{P0}}
  default_backend be
backend be
  server a {{A}}
listen stats
  bind 127.0.0.1:{{P1}}
  mode http
  stats enable
  stats uri /
  stats auth u:p
  monitor-uri /healthz
`)
	}
	ports := freePorts(t, 2)
	peers.HAProxy(t, conf(ports[0], ports[1]))
	l := newLBOpts(t, Options{}, parseOnLoopback(t, conf("1", "2")))
	get := func(addr, path string, auth bool) string {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		if auth {
			req.SetBasicAuth("u", "p")
		}
		var resp *http.Response
		var err error
		for deadline := time.Now().Add(bound); ; time.Sleep(20 * time.Millisecond) { // haproxy starting, bounded
			if resp, err = (&http.Client{Timeout: bound}).Do(req); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		kind := "other"
		switch {
		case strings.Contains(string(b), "Service ready."):
			kind = "monitor"
		case strings.Contains(string(b), "<table"):
			kind = "page"
		}
		return resp.Status + " " + kind
	}
	got := map[string][]string{}
	for who, addr := range map[string]string{"haproxy": "127.0.0.1:" + ports[1], "vipstack": l.Addrs("stats")[0].String()} {
		got[who] = []string{get(addr, "/healthz", false), get(addr, "/", false), get(addr, "/", true)}
	}
	want := []string{"200 OK monitor", "401 Unauthorized other", "200 OK page"}
	if diff := cmp.Diff(want, got["haproxy"]); diff != "" {
		t.Errorf("haproxy differs from this test's expectation (-want +haproxy):\n%s", diff)
	}
	if diff := cmp.Diff(got["haproxy"], got["vipstack"]); diff != "" {
		t.Errorf("(-haproxy +vipstack):\n%s", diff)
	}
}
