package lb

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// exporterRoutingConf: a frontend whose http-request rules send /metrics
// to haproxy's exporter, after a header rule and a deny that come first,
// and everything else on to use_backend and default_backend; backend api
// serves the exporter too, at /api/metrics.
const exporterRoutingConf = `defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:{{P0}}
  acl metrics path /metrics
  http-request set-header X-Route fe
  http-request deny deny_status 403 if metrics { hdr(x-block) -m found }
  http-request use-service prometheus-exporter if metrics
  use_backend api if { path_beg /api }
  default_backend web
backend api
  http-request use-service prometheus-exporter if { path /api/metrics }
  server a1 {{A}}
backend web
  server w1 {{W}}
`

// exporterListenConf: corpus 044's shape, a listen with no server that
// serves only the exporter; what its rule does not take gets 503.
const exporterListenConf = `defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
listen metrics
  bind 127.0.0.1:{{P0}}
  http-request use-service prometheus-exporter if { path /metrics }
`

// exporterLeftOut are the metric families of haproxy 2.6.12's exporter
// that vipstack does not write (docs/haproxy-cfg.md lists them).
var exporterLeftOut = []string{
	// process (60)
	"haproxy_process_active_peers", "haproxy_process_build_info", "haproxy_process_busy_polling_enabled",
	"haproxy_process_bytes_out_rate", "haproxy_process_bytes_out_total", "haproxy_process_connected_peers",
	"haproxy_process_connections_total", "haproxy_process_current_backend_ssl_key_rate",
	"haproxy_process_current_connection_rate", "haproxy_process_current_connections",
	"haproxy_process_current_frontend_ssl_key_rate", "haproxy_process_current_run_queue",
	"haproxy_process_current_session_rate", "haproxy_process_current_ssl_connections",
	"haproxy_process_current_ssl_rate", "haproxy_process_current_tasks", "haproxy_process_current_zlib_memory",
	"haproxy_process_dropped_logs_total", "haproxy_process_failed_resolutions",
	"haproxy_process_frontend_ssl_reuse", "haproxy_process_hard_max_connections",
	"haproxy_process_http_comp_bytes_in_total", "haproxy_process_http_comp_bytes_out_total",
	"haproxy_process_idle_time_percent", "haproxy_process_jobs", "haproxy_process_limit_connection_rate",
	"haproxy_process_limit_http_comp", "haproxy_process_limit_session_rate", "haproxy_process_limit_ssl_rate",
	"haproxy_process_listeners", "haproxy_process_max_backend_ssl_key_rate",
	"haproxy_process_max_connection_rate", "haproxy_process_max_connections", "haproxy_process_max_fds",
	"haproxy_process_max_frontend_ssl_key_rate", "haproxy_process_max_memory_bytes",
	"haproxy_process_max_pipes", "haproxy_process_max_session_rate", "haproxy_process_max_sockets",
	"haproxy_process_max_ssl_connections", "haproxy_process_max_ssl_rate", "haproxy_process_max_zlib_memory",
	"haproxy_process_nbproc", "haproxy_process_nbthread", "haproxy_process_pipes_free_total",
	"haproxy_process_pipes_used_total", "haproxy_process_pool_allocated_bytes",
	"haproxy_process_pool_failures_total", "haproxy_process_pool_used_bytes", "haproxy_process_recv_logs_total",
	"haproxy_process_relative_process_id", "haproxy_process_requests_total",
	"haproxy_process_spliced_bytes_out_total", "haproxy_process_ssl_cache_lookups_total",
	"haproxy_process_ssl_cache_misses_total", "haproxy_process_ssl_connections_total",
	"haproxy_process_start_time_seconds", "haproxy_process_stopping", "haproxy_process_unstoppable_jobs",
	"haproxy_process_uptime_seconds",
	// frontend (12)
	"haproxy_frontend_denied_connections_total", "haproxy_frontend_denied_sessions_total",
	"haproxy_frontend_failed_header_rewriting_total", "haproxy_frontend_http_cache_hits_total",
	"haproxy_frontend_http_cache_lookups_total", "haproxy_frontend_http_comp_bytes_bypassed_total",
	"haproxy_frontend_http_comp_bytes_in_total", "haproxy_frontend_http_comp_bytes_out_total",
	"haproxy_frontend_http_comp_responses_total", "haproxy_frontend_http_responses_total",
	"haproxy_frontend_intercepted_requests_total", "haproxy_frontend_internal_errors_total",
	// backend (15)
	"haproxy_backend_agg_check_status", "haproxy_backend_agg_server_check_status",
	"haproxy_backend_agg_server_status", "haproxy_backend_connection_attempts_total",
	"haproxy_backend_connection_reuses_total", "haproxy_backend_failed_header_rewriting_total",
	"haproxy_backend_http_cache_hits_total", "haproxy_backend_http_cache_lookups_total",
	"haproxy_backend_http_comp_bytes_bypassed_total", "haproxy_backend_http_comp_bytes_in_total",
	"haproxy_backend_http_comp_bytes_out_total", "haproxy_backend_http_comp_responses_total",
	"haproxy_backend_http_requests_total", "haproxy_backend_http_responses_total",
	"haproxy_backend_internal_errors_total",
	// server (17)
	"haproxy_server_check_failures_total", "haproxy_server_check_up_down_total",
	"haproxy_server_connection_attempts_total", "haproxy_server_connection_reuses_total",
	"haproxy_server_current_throttle", "haproxy_server_downtime_seconds_total",
	"haproxy_server_failed_header_rewriting_total", "haproxy_server_http_responses_total",
	"haproxy_server_idle_connections_current", "haproxy_server_idle_connections_limit",
	"haproxy_server_internal_errors_total", "haproxy_server_limit_sessions",
	"haproxy_server_need_connections_current", "haproxy_server_queue_limit",
	"haproxy_server_safe_idle_connections_current", "haproxy_server_unsafe_idle_connections_current",
	"haproxy_server_used_connections_current",
}

// scrapeFamilies GETs path at addr and returns the status, the
// content type and the metric families (# TYPE lines) of the answer.
func scrapeFamilies(t *testing.T, addr, path string) (int, string, []string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: bound}).Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var fams []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			fams = append(fams, f[2])
		}
	}
	slices.Sort(fams)
	return resp.StatusCode, resp.Header.Get("Content-Type"), fams
}

// TestExporterInFrontendMatchesHaproxy runs a frontend that serves
// haproxy's Prometheus exporter through `http-request use-service
// prometheus-exporter if COND` in haproxy 2.6 and in vipstack: /metrics
// gets the same status and content type and the same metric families
// (but exporterLeftOut) from both; the rules before it apply first (a
// deny), and the requests its condition does not select reach the same
// backend in both.
func TestExporterInFrontendMatchesHaproxy(t *testing.T) {
	ports := startHTTPPair(t, exporterRoutingConf)
	haddr, vaddr := "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1]
	want := askBoth(t, []rawRequest{
		{"root", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"api", "GET /api/x HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"another path", "GET /metrics/x HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"denied before the exporter", "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Block: 1\r\n\r\n"},
	}, haddr, vaddr)
	for i, server := range []string{"web", "api", "web"} {
		if a := want[i].Arrived; a == nil || a.Server != server || a.Header.Get("X-Route") != "fe" {
			t.Errorf("request %d: haproxy sent it to %+v, want %s with X-Route", i, a, server)
		}
	}
	if want[3].Status != http.StatusForbidden {
		t.Errorf("haproxy answered the denied /metrics %d, want 403", want[3].Status)
	}
	compareExporters(t, haddr, vaddr, "/metrics")
	compareExporters(t, haddr, vaddr, "/api/metrics") // the backend's rule
}

// TestExporterListenMatchesHaproxy: a listen with no server that serves
// the exporter (corpus 044's) answers /metrics like haproxy's and 503
// with haproxy's body elsewhere.
func TestExporterListenMatchesHaproxy(t *testing.T) {
	ports := startHTTPPair(t, exporterListenConf)
	haddr, vaddr := "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1]
	want := askBoth(t, []rawRequest{
		{"another path", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"},
	}, haddr, vaddr)
	if want[0].Status != http.StatusServiceUnavailable {
		t.Errorf("haproxy answered / with %d, want 503", want[0].Status)
	}
	compareExporters(t, haddr, vaddr, "/metrics")
}

// compareExporters scrapes path from haproxy at haddr and vipstack at
// vaddr: both answer 200 with the same content type, and vipstack's
// metric families are haproxy's but exporterLeftOut.
func compareExporters(t *testing.T, haddr, vaddr, path string) {
	t.Helper()
	hs, hct, hf := scrapeFamilies(t, haddr, path)
	vs, vct, vf := scrapeFamilies(t, vaddr, path)
	if hs != http.StatusOK || vs != hs || vct != hct {
		t.Errorf("%s: haproxy %d %q, vipstack %d %q", path, hs, hct, vs, vct)
	}
	t.Logf("%s: metric families: haproxy %d, vipstack %d", path, len(hf), len(vf))
	var extra []string
	for _, f := range vf {
		if !slices.Contains(hf, f) {
			extra = append(extra, f)
		}
	}
	if len(extra) > 0 {
		t.Errorf("vipstack's families that haproxy's exporter does not have: %q", extra)
	}
	implemented := slices.DeleteFunc(slices.Clone(hf), func(f string) bool { return slices.Contains(exporterLeftOut, f) })
	if diff := cmp.Diff(implemented, vf); diff != "" {
		t.Errorf("families (-haproxy's but exporterLeftOut +vipstack's):\n%s", diff)
	}
}

// TestExporterLogMatchesHaproxy: with option httplog, a request the
// exporter answers is logged as haproxy logs it (its applet <PROMEX>,
// locally processed), beside a forwarded one; dates, ports, timings and
// sizes masked.
func TestExporterLogMatchesHaproxy(t *testing.T) {
	web := startOrigin(t, "web")
	conf := func(sock string, ports []string) string {
		return strings.NewReplacer("{{SOCK}}", sock, "{{P0}}", ports[0], "{{W}}", web.addr()).Replace(`defaults
  mode http
  log {{SOCK}} local0
  option httplog
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:{{P0}}
  http-request use-service prometheus-exporter if { path /metrics }
  default_backend web
backend web
  server w1 {{W}}
`)
	}
	want, got := logBoth(t, conf, []string{"/metrics", "/other"})
	if !slices.ContainsFunc(want, func(l string) bool { return strings.Contains(l, "fe/<PROMEX>") }) {
		t.Errorf("haproxy logged no fe/<PROMEX> line: %q", want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("httplog lines (-haproxy +vipstack):\n%s", diff)
	}
}
