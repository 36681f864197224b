package lb

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestListenStatsOverTime counts a monitor's and a stats section's
// requests on the fake clock, step by step: the connection and request
// rates as haproxy's freq_ctr reads them (rates.go), their maxima, and
// the backend's lastsess, which a stats request sets and a monitor's
// never does (web.Count). TestListenStatsMatchHaproxy compares the same
// counters with haproxy's.
func TestListenStatsOverTime(t *testing.T) {
	a := startBackend(t, "a")
	clk := fakeClock()
	cfg := webConfig(tcpConfig(lbconfig.RoundRobin, srv("a", a)))
	cfg.Stats[0].Users = nil
	reg := prometheus.NewRegistry()
	l := newLBOpts(t, Options{Clock: clk, Registry: reg}, cfg)
	send := func(section, text string) {
		c, err := net.DialTimeout("tcp", l.Addrs(section)[0].String(), bound)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(bound))
		io.WriteString(c, text)
		io.Copy(io.Discard, c) // to the answer's end: counted by then
		c.Close()
		eventually(t, "the connection's end", func() bool {
			for _, ls := range l.Snapshot().Listens {
				if ls.Sessions != 0 {
					return false
				}
			}
			return true
		})
	}
	// Sizes as haproxy stores them (htxSize): 3+14+8+20+1 for a
	// monitor request without headers, 3+6+8+20+1 for GET /other with
	// only Connection: close; the monitor's 200 is 150, its 503 217.
	const twoHits = "GET /haproxy_ready HTTP/1.1\r\n\r\nGET /haproxy_ready HTTP/1.1\r\n\r\n"
	const other = "GET /other HTTP/1.1\r\nConnection: close\r\n\r\n"
	for _, step := range []struct {
		name    string
		advance time.Duration
		section string // where send goes, "" for nothing
		send    string
		want    stats.ListenStats // the section's
	}{{
		name: "two hits and a request to the backend on one connection", section: "health_check_http_url", send: twoHits + other,
		want: stats.ListenStats{Name: "health_check_http_url", MaxSessions: 1, TotalSessions: 1, BytesIn: 46 + 46 + 38, BytesOut: 150 + 150 + 217,
			Requests: 3, Intercepted: 2, Responses: map[string]uint64{"2xx": 2, "5xx": 1}, Rate: 1, MaxRate: 1, RequestRate: 3, MaxRequestRate: 3,
			BackendRequests: 1, BackendMaxSessions: 1, BackendRate: 1, BackendMaxRate: 1, BackendLastSessionSec: -1},
	}, {
		name: "0.6 s on: still the first period", advance: 600 * time.Millisecond,
		want: stats.ListenStats{Name: "health_check_http_url", MaxSessions: 1, TotalSessions: 1, BytesIn: 130, BytesOut: 517,
			Requests: 3, Intercepted: 2, Responses: map[string]uint64{"2xx": 2, "5xx": 1}, Rate: 1, MaxRate: 1, RequestRate: 3, MaxRequestRate: 3,
			BackendRequests: 1, BackendMaxSessions: 1, BackendRate: 1, BackendMaxRate: 1, BackendLastSessionSec: -1},
	}, {
		name: "1.5 s on: half of the last period weighs", advance: 900 * time.Millisecond,
		want: stats.ListenStats{Name: "health_check_http_url", MaxSessions: 1, TotalSessions: 1, BytesIn: 130, BytesOut: 517,
			Requests: 3, Intercepted: 2, Responses: map[string]uint64{"2xx": 2, "5xx": 1}, Rate: 0, MaxRate: 1, RequestRate: 1, MaxRequestRate: 3,
			BackendRequests: 1, BackendMaxSessions: 1, BackendRate: 0, BackendMaxRate: 1, BackendLastSessionSec: -1},
	}, {
		name: "2.6 s on: a monitor request to the backend, then no rate left of the first", advance: 1100 * time.Millisecond,
		section: "health_check_http_url", send: other,
		want: stats.ListenStats{Name: "health_check_http_url", MaxSessions: 1, TotalSessions: 2, BytesIn: 130 + 38, BytesOut: 517 + 217,
			Requests: 4, Intercepted: 2, Responses: map[string]uint64{"2xx": 2, "5xx": 2}, Rate: 1, MaxRate: 1, RequestRate: 1, MaxRequestRate: 3,
			BackendRequests: 2, BackendMaxSessions: 1, BackendRate: 1, BackendMaxRate: 1, BackendLastSessionSec: -1},
	}} {
		clk.Advance(step.advance)
		if step.section != "" {
			send(step.section, step.send)
		}
		var got stats.ListenStats
		for _, ls := range l.Snapshot().Listens {
			if ls.Name == step.want.Name {
				got = ls
			}
		}
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", step.name, diff)
		}
	}

	// The stats section: a page request sets its backend's lastsess,
	// which then ages on the clock.
	send("stats", "GET /haproxy_stats;csv HTTP/1.1\r\nConnection: close\r\n\r\n")
	for _, step := range []struct {
		advance time.Duration
		want    int64
	}{{0, 0}, {time.Second, 1}, {5 * time.Second, 6}} {
		clk.Advance(step.advance)
		for _, ls := range l.Snapshot().Listens {
			if ls.Name == "stats" && (ls.BackendLastSessionSec != step.want || ls.Intercepted != 1 || ls.BackendRequests != 0) {
				t.Errorf("stats after %v more: lastsess %d, intercepted %d, backend requests %d; want %d, 1, 0",
					step.advance, ls.BackendLastSessionSec, ls.Intercepted, ls.BackendRequests, step.want)
			}
		}
	}

	// The monitor's counters in Prometheus.
	got := gather(t, reg)
	for k, v := range map[string]float64{
		`vipstack_lb_listen_connections_total{section="health_check_http_url"}`:           2,
		`vipstack_lb_listen_current_connections{section="health_check_http_url"}`:         0,
		`vipstack_lb_listen_responses_total{class="2xx",section="health_check_http_url"}`: 2,
		`vipstack_lb_listen_responses_total{class="5xx",section="health_check_http_url"}`: 2,
		`vipstack_lb_listen_responses_total{class="4xx",section="health_check_http_url"}`: 0,
		`vipstack_lb_listen_intercepted_total{section="health_check_http_url"}`:           2,
		`vipstack_lb_listen_backend_requests_total{section="health_check_http_url"}`:      2,
		`vipstack_lb_listen_request_errors_total{section="health_check_http_url"}`:        0,
		`vipstack_lb_listen_intercepted_total{section="stats"}`:                           1,
	} {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("metric %s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}
