package lb

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// webConfig adds the seed's monitor and stats sections to a TCP config.
func webConfig(cfg *lbconfig.Config) *lbconfig.Config {
	cfg.Monitors = []lbconfig.Monitor{{Name: "health_check_http_url", Binds: []lbconfig.Bind{loopbackBind()}, URI: "/haproxy_ready"}}
	cfg.Stats = []lbconfig.Stats{{Name: "stats", Binds: []lbconfig.Bind{loopbackBind()}, URI: "/haproxy_stats", Refresh: 30 * time.Second,
		HideVersion: true, Users: []lbconfig.UserPass{{User: "Username", Pass: "Password"}}}}
	return cfg
}

type answer struct {
	Code        int
	Body        string
	ContentType string
	Auth        string
}

func get(t *testing.T, url string, header http.Header, user, pass string) answer {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := (&http.Client{Timeout: bound}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{Code: resp.StatusCode, Body: string(b), ContentType: resp.Header.Get("Content-Type"), Auth: resp.Header.Get("WWW-Authenticate")}
}

// newWatchedLB is an LB on a fake clock that records its OnHealthy calls;
// calls returns them so far.
func newWatchedLB(t *testing.T) (l *LB, calls func() []bool) {
	t.Helper()
	var mu sync.Mutex
	var health []bool
	l, err := New(Options{Clock: fakeClock(), OnHealthy: func(h bool) { mu.Lock(); health = append(health, h); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Shutdown(canceled()) })
	return l, func() []bool { mu.Lock(); defer mu.Unlock(); return slices.Clone(health) }
}

func TestMonitor(t *testing.T) {
	a := startBackend(t, "a")
	dead := deadBackend(t, "dead")
	l, calls := newWatchedLB(t)
	if err := l.Apply(webConfig(tcpConfig(lbconfig.RoundRobin, srv("a", a)))); err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addrs("health_check_http_url")[0].String()

	if diff := cmp.Diff(answer{Code: 200, Body: body200, ContentType: "text/html"}, get(t, base+"/haproxy_ready", nil, "", "")); diff != "" {
		t.Errorf("monitor with a server UP (-want +got):\n%s", diff)
	}
	// haproxy matches the whole URI: these are other URIs (503 from
	// haproxy 2.6 too).
	for _, uri := range []string{"/other", "/haproxy_ready?x=1", "/haproxy_ready/", "/haproxy_readyX"} {
		if diff := cmp.Diff(answer{Code: 503, Body: body503, ContentType: "text/html"}, get(t, base+uri, nil, "", "")); diff != "" {
			t.Errorf("URI %s (-want +got):\n%s", uri, diff)
		}
	}
	big := http.Header{"X-Big": {strings.Repeat("a", 2*maxWebHeader)}}
	if code := get(t, base+"/haproxy_ready", big, "", "").Code; code != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a %d-byte header: %d, want 431 (haproxy refuses headers past its buffer too)", 2*maxWebHeader, code)
	}

	// Reload with only a checked server whose port is closed: its first
	// check fails and the monitor turns 503.
	down := webConfig(tcpConfig(lbconfig.RoundRobin, lbconfig.Server{Name: "dead", Addr: dead.addr, Weight: 1, Check: true, Inter: time.Second, Rise: 2, Fall: 3}))
	if err := l.Apply(down); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the monitor to turn 503", func() bool { return get(t, base+"/haproxy_ready", nil, "", "").Code == 503 })
	if l.Healthy() {
		t.Error("Healthy() with no server UP")
	}
	// The server's state is visible before the health callback runs, so
	// wait for the callback rather than read it at once.
	eventually(t, "OnHealthy(false)", func() bool { return len(calls()) >= 2 })
	if diff := cmp.Diff([]bool{true, false}, calls()); diff != "" {
		t.Errorf("OnHealthy calls (-want +got):\n%s", diff)
	}
}

func TestStats(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	reg := prometheus.NewRegistry()
	l, err := New(Options{Clock: fakeClock(), Registry: reg, Version: "v9.9.9"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Shutdown(canceled()) })
	cfg := webConfig(tcpConfig(lbconfig.RoundRobin, srv("a", a), srv("b", b)))
	cfg.MaxConn = 100
	if err := l.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	cl := dial(t, l, "fe")
	cl.greeting(t)
	cl.echo(t, "0123456789")
	cl.CloseWrite()
	cl.closed(t)
	eventually(t, "the session to end", func() bool { return l.serverStats(t, "be", "a").Sessions == 0 })

	base := "http://" + l.Addrs("stats")[0].String() + "/haproxy_stats"
	unauth := answer{Code: 401, Body: body401, ContentType: "text/html", Auth: `Basic realm="HAProxy Statistics"`}
	if diff := cmp.Diff(unauth, get(t, base, nil, "", "")); diff != "" {
		t.Errorf("without credentials (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(unauth, get(t, base+";csv", nil, "Username", "wrong")); diff != "" {
		t.Errorf("with a wrong password (-want +got):\n%s", diff)
	}

	page := get(t, base, nil, "Username", "Password")
	if page.Code != 200 || page.ContentType != "text/html" || !strings.Contains(page.Body, "<h2>backend be (roundrobin, UP, 2 up)</h2>") ||
		!strings.Contains(page.Body, `<meta http-equiv="refresh" content="30">`) || strings.Contains(page.Body, "v9.9.9") {
		t.Errorf("HTML page: %d %s\n%s", page.Code, page.ContentType, page.Body)
	}

	// haproxy's ;norefresh: the same page without the refresh.
	if page := get(t, base+";norefresh", nil, "Username", "Password"); page.Code != 200 || !strings.Contains(page.Body, "<h2>backend be") ||
		strings.Contains(page.Body, `http-equiv="refresh"`) {
		t.Errorf("HTML page with ;norefresh: %d\n%s", page.Code, page.Body)
	}

	for _, u := range []string{base + ";csv", base + "?stats;csv"} {
		c := get(t, u, nil, "Username", "Password")
		if c.Code != 200 || c.ContentType != "text/plain" {
			t.Fatalf("%s: %d %s", u, c.Code, c.ContentType)
		}
		header, _, _ := strings.Cut(c.Body, "\n")
		if diff := cmp.Diff(strings.TrimSuffix(csvHeader, "\n"), header); diff != "" {
			t.Errorf("CSV header (-want +got):\n%s", diff)
		}
		r := csv.NewReader(strings.NewReader(c.Body))
		r.Comment = '#'
		rows, err := r.ReadAll()
		if err != nil {
			t.Fatalf("CSV: %v", err)
		}
		var got [][]string
		for _, row := range rows {
			if len(row) != len(statColumns)+1 { // the trailing comma
				t.Fatalf("row has %d fields, want %d: %q", len(row), len(statColumns)+1, row)
			}
			var cells []string
			for _, c := range []string{"pxname", "svname", "scur", "slim", "stot", "bin", "bout", "status", "weight", "act", "type", "lbtot"} {
				cells = append(cells, row[statColumn[c]])
			}
			got = append(got, cells)
		}
		// The configuration was built without a file order: frontends,
		// listen sections, then backends (lbconfig's ProxyOrder, the
		// order vipstack render writes haproxy.cfg in).
		want := [][]string{
			{"fe", "FRONTEND", "0", "100", "1", "11", "13", "OPEN", "", "", "0", ""},
			{"health_check_http_url", "FRONTEND", "", "256", "", "", "", "OPEN", "", "", "0", ""},
			{"health_check_http_url", "BACKEND", "", "", "", "", "", "UP", "0", "0", "1", "0"},
			{"stats", "FRONTEND", "", "256", "", "", "", "OPEN", "", "", "0", ""},
			{"stats", "BACKEND", "", "", "", "", "", "UP", "0", "0", "1", "0"},
			{"be", "a", "0", "", "1", "11", "13", "no check", "1", "1", "2", "1"},
			{"be", "b", "0", "", "0", "0", "0", "no check", "1", "1", "2", "0"},
			{"be", "BACKEND", "0", "", "1", "11", "13", "UP", "2", "2", "1", "1"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s rows: pxname svname scur slim stot bin bout status weight act type lbtot (-want +got):\n%s", u, diff)
		}
	}

	for _, tc := range []struct {
		url    string
		header http.Header
	}{
		{url: base + ";json"},
		{url: base + ";json;norefresh"},
		{url: base, header: http.Header{"Accept": {"application/json"}}},
	} {
		j := get(t, tc.url, tc.header, "Username", "Password")
		if j.Code != 200 || j.ContentType != "application/json" {
			t.Fatalf("%s: %d %s", tc.url, j.Code, j.ContentType)
		}
		var recs [][]haproxyJSONField
		if err := json.Unmarshal([]byte(j.Body), &recs); err != nil {
			t.Fatalf("JSON: %v\n%s", err, j.Body)
		}
		got := map[string]any{}
		for _, r := range recs {
			for _, f := range r {
				got[f.ObjType+" "+r[0].Value.Value.(string)+"/"+r[1].Value.Value.(string)+" "+f.Field.Name] = f.Value.Value
			}
		}
		for k, v := range map[string]any{
			"Frontend fe/FRONTEND slim": 100.0, "Frontend fe/FRONTEND stot": 1.0,
			"Server be/a bin": 11.0, "Server be/a bout": 13.0, "Server be/a status": "no check", "Server be/b lbtot": 0.0,
			"Backend be/BACKEND act": 2.0, "Backend stats/BACKEND status": "UP",
		} {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", tc.url, k, got[k], v)
			}
		}
		if len(recs) != 8 || len(recs[0]) == 0 || recs[0][0].ObjType != "Frontend" || recs[0][1].Value.Value != "FRONTEND" ||
			recs[7][0].ObjType != "Backend" || recs[7][0].Value.Value != "be" {
			t.Errorf("%s: %d records, want fe, both lines of the 2 listen sections, be a, be b and be BACKEND:\n%s", tc.url, len(recs), j.Body)
		}
	}

	// Prometheus.
	want := map[string]float64{
		`vipstack_lb_server_bytes_in_total{backend="be",server="a"}`:        11,
		`vipstack_lb_server_bytes_in_total{backend="be",server="b"}`:        0,
		`vipstack_lb_server_bytes_out_total{backend="be",server="a"}`:       13,
		`vipstack_lb_server_up{backend="be",server="a"}`:                    1,
		`vipstack_lb_server_sessions_total{backend="be",server="a"}`:        1,
		`vipstack_lb_server_current_sessions{backend="be",server="a"}`:      0,
		`vipstack_lb_frontend_connections_total{frontend="fe"}`:             1,
		`vipstack_lb_frontend_current_connections{frontend="fe"}`:           0,
		`vipstack_lb_frontend_queue_length{frontend="fe"}`:                  0,
		`vipstack_lb_server_connect_retries_total{backend="be",server="a"}`: 0,
		`vipstack_lb_healthy`: 1,
	}
	got := gather(t, reg)
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("metric %s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

// gather flattens a registry into "name{labels}" -> value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName()+"="+strconv.Quote(lp.GetValue()))
			}
			k := mf.GetName()
			if len(labels) > 0 {
				k += "{" + strings.Join(labels, ",") + "}"
			}
			v := m.GetGauge().GetValue()
			if m.GetCounter() != nil {
				v = m.GetCounter().GetValue()
			}
			out[k] = v
		}
	}
	return out
}

// TestCheckMetrics: check results are counted by haproxy status.
func TestCheckMetrics(t *testing.T) {
	dead := deadBackend(t, "dead")
	reg := prometheus.NewRegistry()
	l, err := New(Options{Clock: fakeClock(), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Shutdown(canceled()) })
	if err := l.Apply(tcpConfig(lbconfig.RoundRobin, lbconfig.Server{Name: "d", Addr: dead.addr, Weight: 1, Check: true})); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first check", func() bool { return checksDone(l.serverStats(t, "be", "d")) == 1 })
	k := `vipstack_lb_server_check_results_total{backend="be",result="L4CON",server="d"}`
	if got := gather(t, reg)[k]; got != 1 {
		t.Errorf("%s = %v, want 1", k, got)
	}
}

// TestMonitorWaitsForACheck: servers start UP, so traffic flows at once
// (as in haproxy, where the first failed check takes a server DOWN), but
// the monitor answers 200 only once a check of an UP server has passed: a
// node must not announce itself, and take the VIP's redirect, while its
// first checks are still out (a backend that accepts and never answers
// holds one until its timeout).
func TestMonitorWaitsForACheck(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	var held []net.Conn
	var heldMu sync.Mutex
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			heldMu.Lock()
			held = append(held, c) // never read, never answered
			heldMu.Unlock()
		}
	}()
	t.Cleanup(func() {
		heldMu.Lock()
		defer heldMu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	a := startBackend(t, "a")
	l, calls := newWatchedLB(t)
	checked := func(name string, addr netip.AddrPort) lbconfig.Server {
		return lbconfig.Server{Name: name, Addr: addr, Weight: 1, Check: true, Inter: time.Second, Rise: 2, Fall: 3}
	}
	cfg := webConfig(tcpConfig(lbconfig.RoundRobin, checked("silent", netip.MustParseAddrPort(silent.Addr().String()))))
	cfg.Backends[0].Check = lbconfig.HTTPCheck{Method: "GET", URI: "/readyz", Version: "HTTP/1.0"}
	if err := l.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addrs("health_check_http_url")[0].String()
	eventually(t, "the first check to connect", func() bool { heldMu.Lock(); defer heldMu.Unlock(); return len(held) > 0 })
	if got := l.serverStats(t, "be", "silent"); got.Status != "UP" || checksDone(got) != 0 {
		t.Fatalf("silent with its first check out: %+v, want UP and no check done", got)
	}
	if diff := cmp.Diff(answer{Code: 503, Body: body503, ContentType: "text/html"}, get(t, base+"/haproxy_ready", nil, "", "")); diff != "" {
		t.Errorf("monitor with a server UP whose check has not passed (-want +got):\n%s", diff)
	}
	if l.Healthy() {
		t.Error("Healthy() = true before any check passed")
	}
	if st := get(t, "http://"+l.Addrs("stats")[0].String()+"/haproxy_stats", nil, "Username", "Password"); !strings.Contains(st.Body, "not healthy yet: no server has passed a check") {
		t.Errorf("stats page before any check passed:\n%s", st.Body)
	}

	// A server whose check passes joins (another backend): 200.
	cfg2 := webConfig(tcpConfig(lbconfig.RoundRobin, checked("silent", netip.MustParseAddrPort(silent.Addr().String()))))
	cfg2.Backends[0].Check = cfg.Backends[0].Check
	cfg2.Backends = append(cfg2.Backends, lbconfig.Backend{Name: "be2", Balance: lbconfig.RoundRobin, Servers: []lbconfig.Server{checked("a", a.addr)}})
	if err := l.Apply(cfg2); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the monitor to turn 200", func() bool { return get(t, base+"/haproxy_ready", nil, "", "").Code == 200 })
	if got := l.serverStats(t, "be2", "a"); checksDone(got) == 0 || got.CheckStatus != "L4OK" {
		t.Errorf("a when the monitor turned 200: %+v, want a passed check", got)
	}
	eventually(t, "OnHealthy(true)", func() bool { return len(calls()) >= 2 })
	if diff := cmp.Diff([]bool{false, true}, calls()); diff != "" {
		t.Errorf("OnHealthy calls (-want +got):\n%s", diff)
	}
}

// TestWebTimeouts: `timeout http-request` and `timeout http-keep-alive`
// govern the monitor and stats listeners, and a reload that changes them
// takes effect on the same address (a new listener takes over).
func TestWebTimeouts(t *testing.T) {
	a := startBackend(t, "a")
	addr := closedPort(t)
	conf := func(request, keepAlive time.Duration) *lbconfig.Config {
		cfg := webConfig(tcpConfig(lbconfig.RoundRobin, srv("a", a)))
		cfg.Monitors[0].Binds = []lbconfig.Bind{{Addr: addr}}
		cfg.Timeouts.HTTPRequest, cfg.Timeouts.HTTPKeepAlive = request, keepAlive
		return cfg
	}
	l, err := New(Options{Clock: fakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Shutdown(canceled()) })
	key := bindKey(lbconfig.Bind{Addr: addr})
	timeouts := func() (time.Duration, time.Duration) {
		l.mu.Lock()
		defer l.mu.Unlock()
		s := l.httpLns[key].srv
		return s.ReadHeaderTimeout, s.IdleTimeout
	}
	if err := l.Apply(conf(time.Minute, 2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if rh, idle := timeouts(); rh != time.Minute || idle != 2*time.Minute {
		t.Fatalf("timeouts (header, idle) = %v, %v; want 1m, 2m", rh, idle)
	}
	const short = 300 * time.Millisecond
	if err := l.Apply(conf(short, short)); err != nil {
		t.Fatal(err)
	}
	if rh, idle := timeouts(); rh != short || idle != short {
		t.Fatalf("after the reload: timeouts (header, idle) = %v, %v; want %v, %v", rh, idle, short, short)
	}
	if got := l.Addrs("health_check_http_url")[0].String(); got != addr.String() {
		t.Fatalf("monitor address after the reload = %s, want %s", got, addr)
	}
	// The server ends a connection whose headers do not come, and one
	// that stays idle after an answer, well before the test's deadline.
	closedByServer := func(what string, send string, wantAnswer bool) {
		t.Helper()
		c, err := net.Dial("tcp", addr.String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, send); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		if wantAnswer {
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("%s: monitor answered %d, want 200", what, resp.StatusCode)
			}
		}
		rest, err := io.ReadAll(r)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("%s: the connection was still open after 10s; want it closed after %v", what, short)
		}
		if what == "idle after an answer" && len(rest) != 0 {
			t.Errorf("%s: %q after the answer, want nothing", what, rest)
		}
	}
	closedByServer("headers that never end", "GET /haproxy_ready HTTP/1.1\r\nHost: x\r\n", false)
	closedByServer("idle after an answer", "GET /haproxy_ready HTTP/1.1\r\nHost: x\r\n\r\n", true)
}

// TestMonitorWhileDraining: once Shutdown begins the frontends refuse new
// clients, so the monitor answers 503 (and OnHealthy(false)) while the
// open connections drain, though the servers are still UP.
func TestMonitorWhileDraining(t *testing.T) {
	a := startBackend(t, "a")
	l, calls := newWatchedLB(t)
	if err := l.Apply(webConfig(tcpConfig(lbconfig.RoundRobin, srv("a", a)))); err != nil {
		t.Fatal(err)
	}
	monitor := "http://" + l.Addrs("health_check_http_url")[0].String() + "/haproxy_ready"
	if code := get(t, monitor, nil, "", "").Code; code != 200 {
		t.Fatalf("monitor before Shutdown: %d, want 200", code)
	}
	cl := dial(t, l, "fe")
	cl.greeting(t)
	done := make(chan error, 1)
	go func() { done <- l.Shutdown(context.Background()) }()
	eventually(t, "OnHealthy(false)", func() bool { return len(calls()) >= 2 })
	if diff := cmp.Diff(answer{Code: 503, Body: body503, ContentType: "text/html"}, get(t, monitor, nil, "", "")); diff != "" {
		t.Errorf("monitor while draining (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{true, false}, calls()); diff != "" {
		t.Errorf("OnHealthy calls (-want +got):\n%s", diff)
	}
	stats := "http://" + l.Addrs("stats")[0].String() + "/haproxy_stats"
	if got := get(t, stats, nil, "Username", "Password").Body; !strings.Contains(got, "draining") {
		t.Errorf("stats page while draining does not say so:\n%s", got)
	}
	cl.echo(t, "draining but alive")
	cl.CloseWrite()
	cl.closed(t)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(bound):
		t.Fatal("Shutdown did not return after the last connection ended")
	}
}

// TestMonitorAbsoluteURI: haproxy 2.6 matches a monitor URI that is a path
// against the path of a request in absolute form (measured: "GET
// http://x/haproxy_ready" answers 200, "GET http://x/haproxy_ready?x" 503).
func TestMonitorAbsoluteURI(t *testing.T) {
	a := startBackend(t, "a")
	l := newLB(t, fakeClock(), webConfig(tcpConfig(lbconfig.RoundRobin, srv("a", a))))
	addr := l.Addrs("health_check_http_url")[0].String()
	status := func(uri string) int {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(bound))
		if _, err := io.WriteString(c, "GET "+uri+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for uri, want := range map[string]int{
		"http://x/haproxy_ready":    200,
		"http://x:80/haproxy_ready": 200,
		"http://x/haproxy_ready?x":  503,
		"http://x/other":            503,
		"http://x":                  503,
		"/haproxy_ready":            200,
	} {
		if got := status(uri); got != want {
			t.Errorf("GET %s: %d, want %d", uri, got, want)
		}
	}
}

// TestWebTimeoutsFallBack: an unset `timeout http-keep-alive` is `timeout
// http-request`, and an unset `timeout http-request` is `timeout client`,
// as in haproxy 2.6 (measured: `timeout http-request 3s` alone closes an
// idle keep-alive connection after 3 s).
func TestWebTimeoutsFallBack(t *testing.T) {
	for _, c := range []struct {
		to         lbconfig.Timeouts
		header, ka time.Duration
	}{
		{lbconfig.Timeouts{HTTPRequest: 30 * time.Second, Client: 86400 * time.Second}, 30 * time.Second, 30 * time.Second}, // seed000
		{lbconfig.Timeouts{HTTPRequest: time.Minute, HTTPKeepAlive: 10 * time.Second}, time.Minute, 10 * time.Second},       // seed001
		{lbconfig.Timeouts{Client: 5 * time.Second}, 5 * time.Second, 5 * time.Second},
		{lbconfig.Timeouts{HTTPKeepAlive: 2 * time.Second, Client: 5 * time.Second}, 5 * time.Second, 2 * time.Second},
		{lbconfig.Timeouts{}, 30 * time.Second, 10 * time.Second}, // none: lb's own bounds
	} {
		if got, want := webTimeoutsOf(c.to), (webTimeouts{readHeader: c.header, idle: c.ka}); got != want {
			t.Errorf("webTimeoutsOf(%+v) = %+v, want %+v", c.to, got, want)
		}
	}
}
