package lb

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lb/stats/statstest"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/peers"
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

	if diff := cmp.Diff(answer{Code: 200, Body: okBody, ContentType: "text/html"}, get(t, base+"/haproxy_ready", nil, "", "")); diff != "" {
		t.Errorf("monitor with a server UP (-want +got):\n%s", diff)
	}
	// haproxy matches the whole URI: these are other URIs (503 from
	// haproxy 2.6 too).
	for _, uri := range []string{"/other", "/haproxy_ready?x=1", "/haproxy_ready/", "/haproxy_readyX"} {
		if diff := cmp.Diff(answer{Code: 503, Body: unavailBody, ContentType: "text/html"}, get(t, base+uri, nil, "", "")); diff != "" {
			t.Errorf("URI %s (-want +got):\n%s", uri, diff)
		}
	}
	big := http.Header{"X-Big": {strings.Repeat("a", 2*(16<<10))}}
	if code := get(t, base+"/haproxy_ready", big, "", "").Code; code != http.StatusBadRequest {
		t.Errorf("a %d-byte header: %d, want 400 (haproxy 2.6 refuses headers past its buffer with 400, measured)", 2*(16<<10), code)
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
	unauth := answer{Code: 401, Body: unauthBody, ContentType: "text/html", Auth: `Basic realm="HAProxy Statistics"`}
	if diff := cmp.Diff(unauth, get(t, base, nil, "", "")); diff != "" {
		t.Errorf("without credentials (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(unauth, get(t, base+";csv", nil, "Username", "wrong")); diff != "" {
		t.Errorf("with a wrong password (-want +got):\n%s", diff)
	}

	page := get(t, base, nil, "Username", "Password")
	if page.Code != 200 || page.ContentType != "text/html" ||
		!strings.Contains(page.Body, `<meta http-equiv="refresh" content="30">`) || strings.Contains(page.Body, "v9.9.9") {
		t.Errorf("HTML page: %d %s\n%s", page.Code, page.ContentType, page.Body)
	}
	// The backend's row: UP since the start (0s on the fake clock), both
	// servers active, weight 2 of 2; the frontend's: one session of 100
	// at most, 11 bytes in, 13 out.
	rows := pageRows(t, page.Body)
	cells := map[string][]string{
		"be/Backend": {"status", "0s UP", "weight", "2/2", "act", "2",
			"stot", "1 | Cum. sessions: 1 Max / Avg over last 1024 success. conn. - Queue time: 0 / 0 ms - Connect time: 0 / 0 ms - Total time: 0 / 0 ms"},
		"fe/Frontend": {"slim", "100", "stot", "1 | Cum. connections: 1 Cum. sessions: 1", "bin", "11"},
		"be/a":        {"status", "no check", "lbtot", "1", "bout", "13"},
	}
	for key, cells := range cells {
		for i := 0; i < len(cells); i += 2 {
			if r, ok := rows[key]; !ok || r.Cells[slices.Index(pageColumns, cells[i])] != cells[i+1] {
				t.Errorf("HTML page, %s %s: %q, want %q\n%s", key, cells[i], r.Cells, cells[i+1], page.Body)
			}
		}
	}

	// haproxy's ;norefresh: the same page without the refresh.
	if page := get(t, base+";norefresh", nil, "Username", "Password"); page.Code != 200 || !strings.Contains(page.Body, `<a name="be/Backend">`) ||
		strings.Contains(page.Body, `http-equiv="refresh"`) {
		t.Errorf("HTML page with ;norefresh: %d\n%s", page.Code, page.Body)
	}

	for _, u := range []string{base + ";csv", base + "?stats;csv"} {
		c := get(t, u, nil, "Username", "Password")
		if c.Code != 200 || c.ContentType != "text/plain" {
			t.Fatalf("%s: %d %s", u, c.Code, c.ContentType)
		}
		header, _, _ := strings.Cut(c.Body, "\n")
		if diff := cmp.Diff("# "+strings.Join(stats.Columns(), ",")+",", header); diff != "" {
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
			if len(row) != len(stats.Columns())+1 { // the trailing comma
				t.Fatalf("row has %d fields, want %d: %q", len(row), len(stats.Columns())+1, row)
			}
			var cells []string
			for _, c := range []string{"pxname", "svname", "scur", "slim", "stot", "bin", "bout", "status", "weight", "act", "type", "lbtot"} {
				v := row[stats.Column(c)]
				if row[0] == "stats" && (c == "bin" || c == "bout") && v != "" && v != "0" {
					v = "+" // the stats pages' sizes: counted, not compared
				}
				cells = append(cells, v)
			}
			got = append(got, cells)
		}
		// A backend's session limit is haproxy's fullconn: a tenth of
		// the maxconn (100) of the one frontend that uses it.
		// The configuration was built without a file order: frontends,
		// listen sections, then backends (lbconfig's ProxyOrder, the
		// order vipstack render writes haproxy.cfg in).
		want := [][]string{
			{"fe", "FRONTEND", "0", "100", "1", "11", "13", "OPEN", "", "", "0", ""},
			// The monitor had no client; the stats section has the
			// connection of this request, its third (after two 401s,
			// which close theirs), and its backend none.
			{"health_check_http_url", "FRONTEND", "0", "256", "0", "0", "0", "OPEN", "", "", "0", ""},
			{"health_check_http_url", "BACKEND", "0", "10", "0", "0", "0", "UP", "0", "0", "1", "0"},
			{"stats", "FRONTEND", "1", "256", "3", "+", "+", "OPEN", "", "", "0", ""},
			{"stats", "BACKEND", "0", "10", "0", "+", "+", "UP", "0", "0", "1", "0"},
			{"be", "a", "0", "", "1", "11", "13", "no check", "1", "1", "2", "1"},
			{"be", "b", "0", "", "0", "0", "0", "no check", "1", "1", "2", "0"},
			{"be", "BACKEND", "0", "10", "1", "11", "13", "UP", "2", "2", "1", "1"},
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
		var recs [][]statstest.JSONField
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
	if diff := cmp.Diff(answer{Code: 503, Body: unavailBody, ContentType: "text/html"}, get(t, base+"/haproxy_ready", nil, "", "")); diff != "" {
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
// takes effect on the same address (the listener takes them for its
// next requests).
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
		to := l.httpLns[key].Timeouts()
		return to.ReadHeader, to.Idle
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
		got, err := io.ReadAll(c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("%s: the connection was still open after 10s; want it closed after %v", what, short)
		}
		// haproxy answers a head that does not come in time with its
		// 408 (measured), and closes an idle connection without a word.
		want := measured408
		if wantAnswer {
			want = okHead + okBody
		}
		if diff := cmp.Diff(want, string(got)); diff != "" {
			t.Errorf("%s: answer (-want +got):\n%s", what, diff)
		}
	}
	closedByServer("nothing sent", "", false)
	closedByServer("headers that never end", "GET /haproxy_ready HTTP/1.1\r\nHost: x\r\n", false)
	closedByServer("idle after an answer", "GET /haproxy_ready HTTP/1.1\r\nHost: x\r\n\r\n", true)
}

// TestWebReloadKeepsClients: a reload that changes the HTTP timeouts
// leaves the monitor's clients alone: a keep-alive client's next request
// and a client half-way through its head are answered. Found in review:
// such a reload replaced the listener and closed every client of the old
// one (an in-flight monitor poll lost its answer; haproxy's old process
// finishes its requests on reload).
func TestWebReloadKeepsClients(t *testing.T) {
	a := startBackend(t, "a")
	at := closedPort(t)
	conf := func(request time.Duration) *lbconfig.Config {
		cfg := webConfig(tcpConfig(lbconfig.RoundRobin, srv("a", a)))
		cfg.Monitors[0].Binds = []lbconfig.Bind{{Addr: at}}
		cfg.Timeouts.HTTPRequest, cfg.Timeouts.HTTPKeepAlive = request, request
		return cfg
	}
	l := newLB(t, fakeClock(), conf(time.Minute))
	addr := l.Addrs("health_check_http_url")[0].String()
	open := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(bound))
		return c, bufio.NewReader(c)
	}
	read := func(what string, r *bufio.Reader, want string) {
		t.Helper()
		got := make([]byte, len(want))
		if _, err := io.ReadFull(r, got); err != nil || string(got) != want {
			t.Fatalf("%s: got %q, %v; want %q", what, got, err, want)
		}
	}
	const req = "GET /haproxy_ready HTTP/1.1\r\n\r\n"
	keep, keepR := open()
	io.WriteString(keep, req)
	read("before the reload", keepR, okHead+okBody)
	half, halfR := open()
	io.WriteString(half, "GET /haproxy_ready HTTP/1.1\r\n")
	if err := l.Apply(conf(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := l.Addrs("health_check_http_url")[0].String(); got != addr {
		t.Fatalf("monitor address after the reload = %s, want %s", got, addr)
	}
	io.WriteString(keep, req)
	read("a keep-alive client after the reload", keepR, okHead+okBody)
	io.WriteString(half, "\r\n")
	read("a head finished after the reload", halfR, okHead+okBody)
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
	if diff := cmp.Diff(answer{Code: 503, Body: unavailBody, ContentType: "text/html"}, get(t, monitor, nil, "", "")); diff != "" {
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

// haproxy 2.6.12's answers on its monitor and stats listeners, byte for
// byte as it sent them (measured with raw requests on loopback).
const (
	okHead       = "HTTP/1.1 200 OK\r\ncontent-length: 58\r\ncache-control: no-cache\r\ncontent-type: text/html\r\n\r\n"
	okBody       = "<html><body><h1>200 OK</h1>\nService ready.\n</body></html>\n"
	okClose      = "HTTP/1.1 200 OK\r\ncontent-length: 58\r\ncache-control: no-cache\r\ncontent-type: text/html\r\nconnection: close\r\n\r\n" + okBody
	okKeep       = "HTTP/1.1 200 OK\r\ncontent-length: 58\r\ncache-control: no-cache\r\ncontent-type: text/html\r\nconnection: keep-alive\r\n\r\n" + okBody
	unavail      = "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 107\r\ncache-control: no-cache\r\ncontent-type: text/html\r\n\r\n" + unavailBody
	unavailBody  = "<html><body><h1>503 Service Unavailable</h1>\nNo server is available to handle this request.\n</body></html>\n"
	unauthBody   = "<html><body><h1>401 Unauthorized</h1>\nYou need a valid user and password to access this content.\n</body></html>\n"
	unavailClose = "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 107\r\ncache-control: no-cache\r\ncontent-type: text/html\r\nconnection: close\r\n\r\n" + unavailBody
	measured400  = "HTTP/1.1 400 Bad request\r\nContent-length: 90\r\nCache-Control: no-cache\r\nConnection: close\r\nContent-Type: text/html\r\n\r\n" +
		"<html><body><h1>400 Bad request</h1>\nYour browser sent an invalid request.\n</body></html>\n"
	measured408 = "HTTP/1.1 408 Request Time-out\r\nContent-length: 110\r\nCache-Control: no-cache\r\nConnection: close\r\nContent-Type: text/html\r\n\r\n" +
		"<html><body><h1>408 Request Time-out</h1>\nYour browser didn't send a complete request in time.\n</body></html>\n"
	measured413 = "HTTP/1.1 413 Payload Too Large\r\nContent-length: 106\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n" +
		"<html><body><h1>413 Payload Too Large</h1>\nThe request entity exceeds the maximum allowed.\n</body></html>\n"
	measured422 = "HTTP/1.1 422 Unprocessable Content\r\nContent-length: 116\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n" +
		"<html><body><h1>422 Unprocessable Content</h1>\nThe server cannot process the contained instructions.\n</body></html>\n"
	unauth401 = "HTTP/1.1 401 Unauthorized\r\ncontent-length: 112\r\ncache-control: no-cache\r\ncontent-type: text/html\r\nwww-authenticate: Basic realm=\"HAProxy Statistics\"\r\n\r\n" +
		"<html><body><h1>401 Unauthorized</h1>\nYou need a valid user and password to access this content.\n</body></html>\n"
	seeOther = "HTTP/1.1 303 See Other\r\ncache-control: no-cache\r\ncontent-type: text/plain\r\ncontent-length: 0\r\nlocation: /haproxy_stats;st=DENY\r\n\r\n"
	// The stats page's heads; its body is vipstack's own (HTML) or
	// differs in values (CSV, JSON), so only the head is compared.
	csvHead           = "HTTP/1.1 200 OK\r\ncache-control: no-cache\r\ncontent-type: text/plain\r\nrefresh: 30\r\ntransfer-encoding: chunked\r\n\r\n"
	csvHeadHEAD       = "HTTP/1.1 200 OK\r\ncache-control: no-cache\r\ncontent-type: text/plain\r\nrefresh: 30\r\n\r\n"
	csvHead10         = "HTTP/1.1 200 OK\r\ncache-control: no-cache\r\ncontent-type: text/plain\r\nrefresh: 30\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n"
	csvHead10KA       = "HTTP/1.1 200 OK\r\ncache-control: no-cache\r\ncontent-type: text/plain\r\nrefresh: 30\r\nconnection: keep-alive\r\ntransfer-encoding: chunked\r\n\r\n"
	csvHeadClose      = "HTTP/1.1 200 OK\r\ncache-control: no-cache\r\ncontent-type: text/plain\r\nrefresh: 30\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
	htmlHeadNoRefresh = "HTTP/1.1 200 OK\r\ncache-control: no-cache\r\ncontent-type: text/html\r\ntransfer-encoding: chunked\r\n\r\n"
	jsonHead          = "HTTP/1.1 200 OK\r\ncache-control: no-cache\r\ncontent-type: application/json\r\nrefresh: 30\r\ntransfer-encoding: chunked\r\n\r\n"
)

// rawCase is a raw request to a monitor or stats listener and haproxy's
// answer to it. Where the connection stays open, the test pipelines a
// probe that asks to close after it, and its answer must follow.
type rawCase struct {
	name string
	// stats: sent to the stats listener, else to the monitor.
	stats bool
	req   string
	// want is the whole answer; with headOnly, the beginning of the
	// answer (the stats page's head).
	want     string
	headOnly bool
	// closed: the server ends the connection after its answer.
	closed bool
}

const (
	statsAuth = "Authorization: Basic VXNlcm5hbWU6UGFzc3dvcmQ=\r\n" // Username:Password
	monProbe  = "GET /haproxy_ready HTTP/1.1\r\nConnection: close\r\n\r\n"
	statProbe = "GET /none HTTP/1.1\r\nConnection: close\r\n\r\n"
)

// paddedRequest is a monitor request of n bytes: one header X padded.
func paddedRequest(n int) string {
	head, tail := "GET /haproxy_ready HTTP/1.1\r\nX: ", "\r\n\r\n"
	return head + strings.Repeat("a", n-len(head)-len(tail)) + tail
}

// manyHeaders is a monitor request with n header lines.
func manyHeaders(n int) string {
	var b strings.Builder
	b.WriteString("GET /haproxy_ready HTTP/1.1\r\n")
	for i := range n {
		fmt.Fprintf(&b, "H%03d: v\r\n", i)
	}
	return b.String() + "\r\n"
}

// rawCases: haproxy 2.6.12's answers, measured.
var rawCases = []rawCase{
	{name: "no Host", req: "GET /haproxy_ready HTTP/1.1\r\n\r\n", want: okHead + okBody},
	{name: "LF line ends", req: "GET /haproxy_ready HTTP/1.1\n\n", want: okHead + okBody},
	{name: "leading empty lines", req: "\r\n\r\nGET /haproxy_ready HTTP/1.1\r\n\r\n", want: okHead + okBody},
	{name: "HTTP/1.0", req: "GET /haproxy_ready HTTP/1.0\r\n\r\n", want: okClose, closed: true},
	{name: "HTTP/1.0 keep-alive", req: "GET /haproxy_ready HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", want: okKeep},
	{name: "HTTP/1.1 close", req: "GET /haproxy_ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", want: okClose, closed: true},
	{name: "HTTP/1.1 keep-alive, close", req: "GET /haproxy_ready HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n", want: okClose, closed: true},
	{name: "HEAD", req: "HEAD /haproxy_ready HTTP/1.1\r\nHost: x\r\n\r\n", want: okHead},
	{name: "other URI", req: "GET /other HTTP/1.1\r\nHost: x\r\n\r\n", want: unavail},
	{name: "relative URI", req: "GET haproxy_ready HTTP/1.1\r\n\r\n", want: unavail},
	{name: "unknown method", req: "FOO /haproxy_ready HTTP/1.1\r\nHost: x\r\n\r\n", want: okHead + okBody},
	{name: "lower-case method", req: "get /haproxy_ready HTTP/1.1\r\n\r\n", want: okHead + okBody},
	{name: "method not a token", req: "GE(T /x HTTP/1.1\r\n\r\n", want: measured400, closed: true},
	{name: "tabs", req: "GET\t/x\tHTTP/1.1\r\n\r\n", want: unavail},
	{name: "two spaces", req: "GET  /haproxy_ready HTTP/1.1\r\n\r\n", want: okHead + okBody},
	{name: "HTTP/2.0 line", req: "GET /haproxy_ready HTTP/2.0\r\n\r\n", want: okHead + okBody},
	{name: "HTTP/0.9 line", req: "GET /haproxy_ready HTTP/0.9\r\n\r\n", want: okClose, closed: true},
	{name: "garbage", req: "GARBAGE\r\n\r\n", want: measured400, closed: true},
	{name: "no version", req: "GET /haproxy_ready\r\n\r\n", want: measured400, closed: true},
	{name: "method alone", req: "GET\r\n\r\n", want: measured400, closed: true},
	{name: "four words", req: "GET /haproxy ready HTTP/1.1\r\n\r\n", want: measured400, closed: true},
	{name: "HTTP/1", req: "GET /haproxy_ready HTTP/1\r\n\r\n", want: measured400, closed: true},
	{name: "lower-case version", req: "GET /haproxy_ready http/1.1\r\n\r\n", want: measured400, closed: true},
	{name: "HTTP/1.10", req: "GET /haproxy_ready HTTP/1.10\r\n\r\n", want: measured400, closed: true},
	{name: "control byte in URI", req: "GET /hap\x01roxy_ready HTTP/1.1\r\n\r\n", want: measured400, closed: true},
	{name: "8-bit URI", req: "GET /\xc3\xa9 HTTP/1.1\r\n\r\n", want: measured400, closed: true},
	{name: "header without colon", req: "GET /haproxy_ready HTTP/1.1\r\nHost: x\r\nbad header\r\n\r\n", want: measured400, closed: true},
	{name: "space before colon", req: "GET /haproxy_ready HTTP/1.1\r\nX : y\r\n\r\n", want: measured400, closed: true},
	{name: "empty name", req: "GET /x HTTP/1.1\r\n:y\r\n\r\n", want: measured400, closed: true},
	{name: "empty value", req: "GET /x HTTP/1.1\r\nX:\r\n\r\n", want: unavail},
	{name: "CR in value", req: "GET /x HTTP/1.1\r\nX: a\rb\r\n\r\n", want: measured400, closed: true},
	{name: "folded header", req: "GET /haproxy_ready HTTP/1.1\r\n folded\r\n\r\n", want: measured400, closed: true},
	{name: "two Hosts", req: "GET /haproxy_ready HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", want: measured400, closed: true},
	{name: "same Host twice", req: "GET /haproxy_ready HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", want: okHead + okBody},
	{name: "100 headers", req: manyHeaders(100), want: okHead + okBody},
	{name: "101 headers", req: manyHeaders(101), want: measured400, closed: true},
	{name: "largest head", req: paddedRequest(15277), want: okHead + okBody},
	{name: "head a byte larger", req: paddedRequest(15278), want: measured400, closed: true},
	{name: "head past the buffer", req: paddedRequest(20000), want: measured400, closed: true},
	{name: "body", req: "POST /haproxy_ready HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", want: okHead + okBody},
	{name: "body then a request", req: "POST /haproxy_ready HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /other HTTP/1.1\r\n\r\n", want: okHead + okBody + unavail},
	{name: "body cut short", req: "GET /haproxy_ready HTTP/1.1\r\nContent-Length: 3\r\n\r\nab", want: okClose, closed: true},
	{name: "lengths 5 and 6", req: "GET /haproxy_ready HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", want: measured400, closed: true},
	{name: "length 5,5", req: "GET /haproxy_ready HTTP/1.1\r\nContent-Length: 5,5\r\n\r\nhello", want: okHead + okBody},
	{name: "length abc", req: "GET /haproxy_ready HTTP/1.1\r\nContent-Length: abc\r\n\r\n", want: measured400, closed: true},
	{name: "length past int64", req: "GET /haproxy_ready HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", want: measured400, closed: true},
	{name: "chunked body then a request", req: "GET /haproxy_ready HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /x HTTP/1.1\r\n\r\n", want: okHead + okBody + unavail},
	{name: "length and chunked", req: "GET /x HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", want: unavailClose, closed: true},
	{name: "gzip", req: "GET /haproxy_ready HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", want: measured400, closed: true},
	{name: "gzip, chunked", req: "GET /x HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", want: measured422, closed: true},
	{name: "chunked twice", req: "GET /x HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", want: measured400, closed: true},
	{name: "HTTP/1.0 chunked", req: "GET /haproxy_ready HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", want: measured413, closed: true},
	{name: "pipelined", req: "GET /haproxy_ready HTTP/1.1\r\n\r\nGET /other HTTP/1.1\r\n\r\nGET /haproxy_ready HTTP/1.1\r\nConnection: close\r\n\r\n",
		want: okHead + okBody + unavail + okClose, closed: true},

	// Nasty heads (measured, haproxy 2.6.12).
	{name: "length +5", req: "GET /haproxy_ready HTTP/1.1\r\nContent-Length: +5\r\n\r\nhello", want: measured400, closed: true},
	{name: "length 5,", req: "GET /haproxy_ready HTTP/1.1\r\nContent-Length: 5,\r\n\r\nhello", want: measured400, closed: true},
	{name: "empty length", req: "GET /haproxy_ready HTTP/1.1\r\nContent-Length:\r\n\r\n", want: measured400, closed: true},
	{name: "length 5 5", req: "GET /haproxy_ready HTTP/1.1\r\nContent-Length: 5 5\r\n\r\nhello", want: measured400, closed: true},
	{name: "long zero-padded length", req: "GET /haproxy_ready HTTP/1.1\r\nContent-Length: 00000000000000000000000000005\r\n\r\nhello", want: okHead + okBody},
	{name: "NUL in value", req: "GET /haproxy_ready HTTP/1.1\r\nX: a\x00b\r\n\r\n", want: okHead + okBody},
	{name: "control and 8-bit bytes in value", req: "GET /haproxy_ready HTTP/1.1\r\nX: a\x01\x7f\xffb\r\n\r\n", want: okHead + okBody},
	{name: "8-bit name", req: "GET /haproxy_ready HTTP/1.1\r\nX\xc3: v\r\n\r\n", want: measured400, closed: true},
	{name: "space after the version", req: "GET /haproxy_ready HTTP/1.1 \r\n\r\n", want: measured400, closed: true},
	{name: "space before the method", req: " GET /haproxy_ready HTTP/1.1\r\n\r\n", want: measured400, closed: true},
	{name: "vertical tab separator", req: "GET\x0b/haproxy_ready HTTP/1.1\r\n\r\n", want: measured400, closed: true},
	{name: "lone CR before the request", req: "\rGET /haproxy_ready HTTP/1.1\r\n\r\n", want: measured400, closed: true},
	{name: "Hosts differing in case", req: "GET /haproxy_ready HTTP/1.1\r\nHost: a\r\nHost: A\r\n\r\n", want: okHead + okBody},
	{name: "close then keep-alive", req: "GET /haproxy_ready HTTP/1.1\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n", want: okClose, closed: true},
	{name: "chunk size zz", req: "GET /haproxy_ready HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", want: measured400, closed: true},
	{name: "chunk size +5", req: "GET /haproxy_ready HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n", want: measured400, closed: true},
	{name: "chunk size past 64 bits", req: "GET /haproxy_ready HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFF\r\nhello\r\n0\r\n\r\n", want: measured400, closed: true},
	{name: "chunk longer than its size", req: "GET /haproxy_ready HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n", want: measured400, closed: true},
	{name: "chunk size, space", req: "GET /haproxy_ready HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n", want: okHead + okBody},
	{name: "chunk extension empty", req: "GET /haproxy_ready HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;\r\nhello\r\n0\r\n\r\n", want: okHead + okBody},
	{name: "chunks with LF ends", req: "GET /haproxy_ready HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n", want: okHead + okBody},
	{name: "chunked trailer", req: "GET /haproxy_ready HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: y\r\n\r\n", want: okHead + okBody},
	{name: "gzip and chunked headers", req: "GET /haproxy_ready HTTP/1.1\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", want: measured422, closed: true},
	{name: "CONNECT", req: "CONNECT host:443 HTTP/1.1\r\n\r\n", want: unavail},
	{name: "asterisk", req: "OPTIONS * HTTP/1.1\r\n\r\n", want: unavail},

	{name: "stats POST", stats: true, req: "POST /haproxy_stats HTTP/1.1\r\nHost: x\r\n" + statsAuth + "Content-Length: 5\r\n\r\nhello", want: seeOther},
	{name: "stats POST ;csv", stats: true, req: "POST /haproxy_stats;csv HTTP/1.1\r\n" + statsAuth + "Content-Length: 0\r\n\r\n", want: seeOther},
	{name: "stats POST without credentials", stats: true, req: "POST /haproxy_stats HTTP/1.1\r\nContent-Length: 0\r\n\r\n", want: unauth401, closed: true},
	{name: "stats without credentials", stats: true, req: "GET /haproxy_stats HTTP/1.1\r\n\r\n", want: unauth401, closed: true},
	{name: "stats wrong password", stats: true, req: "GET /haproxy_stats HTTP/1.1\r\nAuthorization: Basic VXNlcm5hbWU6d3Jvbmc=\r\n\r\n", want: unauth401, closed: true},
	{name: "stats Bearer", stats: true, req: "GET /haproxy_stats HTTP/1.1\r\nAuthorization: Bearer x\r\n\r\n", want: unauth401, closed: true},
	{name: "stats PUT", stats: true, req: "PUT /haproxy_stats HTTP/1.1\r\n" + statsAuth + "Content-Length: 0\r\n\r\n", want: unavail},
	{name: "stats unknown method", stats: true, req: "FOO /haproxy_stats HTTP/1.1\r\n" + statsAuth + "\r\n", want: unavail},
	{name: "stats other URI", stats: true, req: "GET /other HTTP/1.1\r\n\r\n", want: unavail},
	{name: "stats HEAD", stats: true, req: "HEAD /haproxy_stats;csv HTTP/1.1\r\n" + statsAuth + "\r\n", want: csvHeadHEAD},
	{name: "stats CSV", stats: true, req: "GET /haproxy_stats;csv HTTP/1.1\r\n" + statsAuth + "\r\n", want: csvHead, headOnly: true},
	{name: "stats JSON", stats: true, req: "GET /haproxy_stats;json HTTP/1.1\r\n" + statsAuth + "\r\n", want: jsonHead, headOnly: true},
	{name: "stats norefresh", stats: true, req: "GET /haproxy_stats;norefresh HTTP/1.1\r\n" + statsAuth + "\r\n", want: htmlHeadNoRefresh, headOnly: true},
	{name: "stats HTTP/1.0", stats: true, req: "GET /haproxy_stats;csv HTTP/1.0\r\n" + statsAuth + "\r\n", want: csvHead10, headOnly: true, closed: true},
	{name: "stats HTTP/1.0 keep-alive", stats: true, req: "GET /haproxy_stats;csv HTTP/1.0\r\nConnection: keep-alive\r\n" + statsAuth + "\r\n", want: csvHead10KA, headOnly: true},
	{name: "stats close", stats: true, req: "GET /haproxy_stats;csv HTTP/1.1\r\nConnection: close\r\n" + statsAuth + "\r\n", want: csvHeadClose, headOnly: true, closed: true},
	{name: "stats garbage", stats: true, req: "GARBAGE\r\n\r\n", want: measured400, closed: true},
}

// rawExchange sends c.req to addr (and a probe that closes, where the
// connection should stay open) and reads until the server closes.
func rawExchange(t *testing.T, addr string, c rawCase) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(bound))
	req := c.req
	switch {
	case c.closed:
	case c.stats:
		req += statProbe
	default:
		req += monProbe
	}
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Errorf("%s: reading the answer: %v (got %q)", c.name, err, got)
	}
	return string(got)
}

// checkRaw compares an answer with the case's, the probe's answer
// included where the connection stays open.
func checkRaw(t *testing.T, who string, c rawCase, got string) {
	t.Helper()
	want := c.want
	if !c.closed {
		probe := okClose
		if c.stats {
			probe = unavailClose
		}
		if !strings.HasSuffix(got, probe) {
			t.Errorf("%s %s: the connection did not stay open for the next request: got %q", who, c.name, got)
		}
		if !c.headOnly {
			want += probe
		}
	}
	if c.headOnly {
		if !strings.HasPrefix(got, want) {
			t.Errorf("%s %s: head (-want +got):\n%s", who, c.name, cmp.Diff(want, got[:min(len(got), len(want)+200)]))
		}
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s %s: answer (-want +got):\n%s", who, c.name, diff)
	}
}

// TestWebRawAnswers: the monitor and stats listeners answer raw requests
// as haproxy 2.6 does (rawCases, measured), the connection closed or kept
// as haproxy does.
func TestWebRawAnswers(t *testing.T) {
	a := startBackend(t, "a")
	l := newLB(t, fakeClock(), webConfig(tcpConfig(lbconfig.RoundRobin, srv("a", a))))
	mon, stats := l.Addrs("health_check_http_url")[0].String(), l.Addrs("stats")[0].String()
	for _, c := range rawCases {
		t.Run(c.name, func(t *testing.T) {
			addr := mon
			if c.stats {
				addr = stats
			}
			checkRaw(t, "vipstack", c, rawExchange(t, addr, c))
		})
	}
}

// webCompareConfig: a monitor and a stats page as in seed 000's
// haproxy.cfg, a frontend with one server so that vipstack's monitor is
// healthy, and a short `timeout http-request` for the slow case.
// webCompareText is webCompareConfig with its frontend, monitor and
// stats ports and its server m1 filled in.
func webCompareText(m1 netip.AddrPort, fe, mon, stats string) string {
	return strings.NewReplacer("{{FE}}", fe, "{{MON}}", mon, "{{STATS}}", stats, "{{M1}}", m1.String()).Replace(webCompareConfig)
}

const webCompareConfig = `defaults
  mode    tcp
  timeout http-request 1s
  timeout http-keep-alive 5s
  timeout connect      10s
  timeout client       86400s
  timeout server       86400s
frontend  main
  bind 127.0.0.1:{{FE}}
  default_backend masters
listen health_check_http_url
  bind 127.0.0.1:{{MON}}
  mode http
  monitor-uri /haproxy_ready
  option dontlognull
listen stats
  bind 127.0.0.1:{{STATS}}
  mode http
  stats enable
  stats hide-version
  stats uri /haproxy_stats
  stats refresh 30s
  stats auth Username:Password
backend masters
   balance roundrobin
   server m1 {{M1}} weight 1
`

// TestWebAnswersMatchHaproxy runs haproxy 2.6 and vipstack with the same
// monitor and stats sections and sends both every raw request of
// rawCases, plus a head that does not come within `timeout http-request`:
// each must give its case's answer (the stats page's head where the body
// is vipstack's own), and close or keep the connection as the case says.
// So the table is checked against haproxy itself wherever it runs.
func TestWebAnswersMatchHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	m1 := startBackend(t, "m1")
	conf := func(fe, mon, stats string) string {
		return webCompareText(m1.addr, fe, mon, stats)
	}
	ports := freePorts(t, 3)
	hmon, hstats := ports[0], ports[1]
	out := peers.HAProxy(t, conf(ports[2], hmon, hstats))

	l := newLB(t, fakeClock(), parseOnLoopback(t, conf("1", "2", "3")))

	servers := []struct{ who, mon, stats string }{
		{"haproxy", "127.0.0.1:" + hmon, "127.0.0.1:" + hstats},
		{"vipstack", l.Addrs("health_check_http_url")[0].String(), l.Addrs("stats")[0].String()},
	}
	deadline := time.Now().Add(bound)
	for {
		c, err := net.Dial("tcp", servers[0].mon)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy did not listen on %s: %v\n%s", servers[0].mon, err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cases := append(slices.Clone(rawCases),
		rawCase{name: "slow head", req: "GET /haproxy_ready HTTP/1.1\r\nHost: x\r\n", want: measured408, closed: true},
		rawCase{name: "nothing sent", req: "", want: measured408, closed: true},
		rawCase{name: "stats slow head", stats: true, req: "GET /haproxy_stats HTTP/1.1\r\n", want: measured408, closed: true})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, s := range servers {
				addr := s.mon
				if c.stats {
					addr = s.stats
				}
				checkRaw(t, s.who, c, rawExchange(t, addr, c))
			}
		})
	}
}

// TestStatsPageCells checks the page's server rows' classes and status cells against haproxy 2.6.12's:
// measured where the comparison with haproxy reaches them
// (TestStatsPageMatchesHaproxy: 9984 and 2000 grouped, "no check",
// MAINT, DRAIN, DOWN), and from haproxy's naming of its row classes for
// the passing states ("UP 1/2", "DOWN 1/3"), which no comparison catches
// reliably.
func TestStatsPageCells(t *testing.T) {
	snap := stats.Snapshot{Backends: []stats.BackendStats{{Name: "be", Status: "UP", Servers: []stats.ServerStats{
		{Name: "up", Status: "UP", Up: true, Check: true, LastChangeSeconds: 75},
		{Name: "fading", Status: "UP 1/2", Up: true, Check: true},
		{Name: "rising", Status: "DOWN 1/3", Check: true},
		{Name: "down", Status: "DOWN", Check: true, DowntimeSeconds: 3700},
		{Name: "maint", Status: "MAINT", Admin: stats.AdminMaint, Check: true},
		{Name: "drain", Status: "DRAIN", Up: true, Admin: stats.AdminDrain, Check: true},
		{Name: "unchecked", Status: "no check", Up: true},
	}}}}
	rows := pageRows(t, snap.HTML(stats.Page{}))
	col := func(name string) int { return slices.Index(pageColumns, name) }
	for _, c := range []struct{ name, class, status, lastchk, dwntme string }{
		{"up", "active_up", "1m15s UP", "", "0s"},
		{"fading", "active_going_down", "0s UP 1/2", "", "0s"},
		{"rising", "active_going_up", "0s DOWN 1/3", "", "0s"},
		{"down", "active_down", "0s DOWN", "", "1h1m"},
		{"maint", "maintain", "0s MAINT", "", "0s"},
		{"drain", "active_draining", "0s DRAIN", "", "0s"},
		{"unchecked", "active_no_check", "no check", "", ""},
	} {
		r := rows["be/"+c.name]
		if r.Class != c.class || len(r.Cells) != len(pageColumns) || r.Cells[col("status")] != c.status ||
			r.Cells[col("lastchk")] != c.lastchk || r.Cells[col("dwntme")] != c.dwntme {
			t.Errorf("%s: class %q, cells %q; want class %q, status %q, last check %q, downtime %q", c.name, r.Class, r.Cells,
				c.class, c.status, c.lastchk, c.dwntme)
		}
	}
}
