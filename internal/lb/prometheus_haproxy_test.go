package lb

import (
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
)

// prometheusConfig: a stats listen with haproxy's exporter at /metrics,
// and a TCP frontend to one checked server.
const prometheusConfig = `defaults
  timeout connect 1s
  timeout client 10s
  timeout server 10s
listen stats
  bind 127.0.0.1:{{STATS}}
  mode http
  http-request use-service prometheus-exporter if { path /metrics }
  stats enable
  stats uri /stats
frontend fe
  bind 127.0.0.1:{{FE}}
  default_backend be
backend be
  server s1 {{S1}} check inter 200ms
`

// promLine is a sample line: name, labels, value.
var promLine = regexp.MustCompile(`^([a-z_]+)(\{[^}]*\})? (\S+)$`)

// promSamples reads an exposition: sample (name and labels) to value.
func promSamples(t *testing.T, text string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, l := range strings.Split(text, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		m := promLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("not a sample line: %q", l)
		}
		out[m[1]+m[2]] = m[3]
	}
	return out
}

// promShape is a sample's name and label names, without values.
var promLabelValue = regexp.MustCompile(`="[^"]*"`)

// TestPrometheusExporterMatchesHaproxy: `http-request use-service
// prometheus-exporter if { path /metrics }` in a stats listen answers
// with haproxy's metric names and labels, each of vipstack's among
// haproxy 2.6.12's own exporter's, and the same values for the
// sessions, bytes and states after the same traffic. The metrics haproxy
// has and vipstack leaves out are logged (docs/haproxy-cfg.md lists
// them).
func TestPrometheusExporterMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	s1 := startBackend(t, "s1")
	ports := freePorts(t, 2)
	conf := strings.NewReplacer("{{STATS}}", ports[0], "{{FE}}", ports[1], "{{S1}}", s1.addr.String()).Replace(prometheusConfig)
	peers.HAProxy(t, conf)
	l := newLBOpts(t, Options{}, parseOnLoopback(t, conf))
	waitListening(t, "tcp", "127.0.0.1:"+ports[0])
	waitListening(t, "tcp", l.Addrs("stats")[0].String())

	scrape := func(addr, path string) (string, http.Header) {
		t.Helper()
		resp, err := (&http.Client{Timeout: bound}).Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), resp.Header
	}
	got := map[string]map[string]string{}
	for _, b := range []struct{ who, fe, stats string }{
		{"haproxy", "127.0.0.1:" + ports[1], "127.0.0.1:" + ports[0]},
		{"vipstack", l.Addrs("fe")[0].String(), l.Addrs("stats")[0].String()},
	} {
		eventually(t, b.who+": s1 UP", func() bool {
			text, _ := scrape(b.stats, "/metrics")
			return strings.Contains(text, `haproxy_server_status{proxy="be",server="s1",state="UP"} 1`)
		})
		for range 3 {
			c, err := net.DialTimeout("tcp", b.fe, bound)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(bound))
			io.WriteString(c, "hello\n")
			c.(*net.TCPConn).CloseWrite()
			io.ReadAll(c)
			c.Close()
		}
		eventually(t, b.who+": the sessions ended", func() bool {
			text, _ := scrape(b.stats, "/metrics")
			s := promSamples(t, text)
			return s[`haproxy_frontend_current_sessions{proxy="fe"}`] == "0" && s[`haproxy_frontend_sessions_total{proxy="fe"}`] == "3"
		})
		text, h := scrape(b.stats, "/metrics")
		if ct := h.Get("Content-Type"); ct != "text/plain; version=0.0.4" {
			t.Errorf("%s: content type %q", b.who, ct)
		}
		got[b.who] = promSamples(t, text)
		// Another path is the stats page's, not the exporter's.
		if page, _ := scrape(b.stats, "/stats;csv"); !strings.HasPrefix(page, "# pxname,") {
			t.Errorf("%s: /stats;csv is not the CSV: %.80q", b.who, page)
		}
	}

	shapes := func(m map[string]string) []string {
		var out []string
		for k := range m {
			if s := promLabelValue.ReplaceAllString(k, ""); !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		slices.Sort(out)
		return out
	}
	hs, vs := shapes(got["haproxy"]), shapes(got["vipstack"])
	var extra, missing []string
	for _, s := range vs {
		if !slices.Contains(hs, s) {
			extra = append(extra, s)
		}
	}
	for _, s := range hs {
		if !slices.Contains(vs, s) {
			missing = append(missing, s)
		}
	}
	if len(extra) > 0 {
		t.Errorf("vipstack's metrics that haproxy's exporter does not have: %q", extra)
	}
	if len(vs) < 40 {
		t.Errorf("vipstack wrote %d metrics, want at least 40: %q", len(vs), vs)
	}
	t.Logf("haproxy's metrics vipstack leaves out (%d of %d):\n%s", len(missing), len(hs), strings.Join(missing, "\n"))

	// Samples of both whose values depend only on the traffic and the
	// check.
	for _, k := range []string{
		`haproxy_frontend_sessions_total{proxy="fe"}`,
		`haproxy_frontend_bytes_in_total{proxy="fe"}`,
		`haproxy_frontend_status{proxy="fe",state="UP"}`,
		`haproxy_backend_sessions_total{proxy="be"}`,
		`haproxy_backend_status{proxy="be",state="UP"}`,
		`haproxy_backend_active_servers{proxy="be"}`,
		`haproxy_backend_loadbalanced_total{proxy="be"}`,
		`haproxy_server_sessions_total{proxy="be",server="s1"}`,
		`haproxy_server_bytes_in_total{proxy="be",server="s1"}`,
		`haproxy_server_status{proxy="be",server="s1",state="UP"}`,
		`haproxy_server_status{proxy="be",server="s1",state="DOWN"}`,
		`haproxy_server_check_status{proxy="be",server="s1",state="L4OK"}`,
		`haproxy_server_weight{proxy="be",server="s1"}`,
	} {
		h, v := got["haproxy"][k], got["vipstack"][k]
		if h == "" || h != v {
			t.Errorf("%s: haproxy %q, vipstack %q", k, h, v)
		}
	}
	if d := cmp.Diff(got["haproxy"][`haproxy_server_sessions_total{proxy="be",server="s1"}`], "3"); d != "" {
		t.Errorf("server sessions (-haproxy +3):\n%s", d)
	}
}
