package lb

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lb/stats/statstest"
	"github.com/vipstack/vipstack/internal/peers"
)

// statsConfig is seed 000's haproxy.cfg on loopback ports, with shorter
// check intervals: a stats socket, a TCP frontend, a monitor, the stats
// page and a backend of three checked servers, m3 dead.
const statsConfig = `global
  stats socket {{DIR}}/haproxy.sock mode 600 level admin
defaults
  maxconn 20000
  mode    tcp
  option  dontlognull
  retries 3
  timeout http-request 30s
  timeout queue        1m
  timeout connect      10s
  timeout client       86400s
  timeout server       86400s
  timeout tunnel       86400s
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
   option  httpchk GET /readyz HTTP/1.0
   option  log-health-checks
   balance roundrobin
   server m1 {{M1}} weight 1 check inter 200ms fall 2 rise 3
   server m2 {{M2}} weight 1 check inter 200ms fall 2 rise 3
   server m3 {{M3}} weight 1 check inter 200ms fall 2 rise 3
`

// freePort is a port nothing used, on any address, a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	return freePorts(t, 1)[0]
}

// freePorts is n different ports nothing used, on any address, a moment
// ago. They are picked on the wildcard address, IPv6 and IPv4 together
// (the haproxy configurations bind `:::PORT v4v6` too, and a port free on
// 127.0.0.1 may be taken on another address), all held until the last is
// picked (the kernel hands a port just given back out again: two calls of
// freePort gave two frontends one port), and below the kernel's ephemeral
// range (ip_local_port_range), where no bind to port 0 lands: between
// their release and haproxy's bind, a balancer of the same test (or any
// other) binding port 0 got one of them, and as haproxy and vipstack both
// set SO_REUSEPORT both binds succeeded and the kernel split the clients
// between the two (a clean-clone run, TestConnLogMatchesHaproxy: a client
// of haproxy's frontend was logged by vipstack's).
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				low = v
			}
		}
	}
	const from = 10000
	if low-from < 1000 {
		t.Fatalf("the ephemeral port range starts at %d: no room below it for the test's ports", low)
	}
	var ports []string
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			t.Fatalf("found %d free ports of %d between %d and %d", len(ports), n, from, low)
		}
		ln, err := net.Listen("tcp", fmt.Sprintf(":%d", from+rand.IntN(low-from)))
		if err != nil {
			continue // taken
		}
		defer ln.Close()
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		ports = append(ports, port)
	}
	return ports
}

// statsFetch gets the stats page at addr with opts (";json", ";csv").
func statsFetch(t *testing.T, addr, opts string) (string, bool) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+"/haproxy_stats"+opts, nil)
	req.SetBasicAuth("Username", "Password")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err == nil && resp.StatusCode == 200
}

// TestStatsLayoutMatchesHaproxy runs haproxy 2.6 and vipstack with the
// same configuration (on loopback ports of their own) and compares their
// `;json` and `;csv`: the same lines (objType, pxname, svname) in the
// same order with the same proxy and server ids; every field vipstack
// gives, haproxy gives on that line at the same position with the same
// tags and type; and the fields that do not depend on time or traffic
// (status, weights, check results, ids, mode) have the same values. The
// CSV header is the same, every line has haproxy's number of columns, and
// the same cells are empty or not where vipstack fills them. The fields
// haproxy gives and vipstack does not are logged.
func TestStatsLayoutMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	m1, m2 := httptest.NewServer(ok), httptest.NewServer(ok)
	t.Cleanup(m1.Close)
	t.Cleanup(m2.Close)
	dir := t.TempDir()
	ports := freePorts(t, 4)
	m3 := "127.0.0.1:" + ports[3]
	conf := func(fe, mon, stats string) string {
		return strings.NewReplacer("{{DIR}}", dir, "{{FE}}", fe, "{{MON}}", mon, "{{STATS}}", stats,
			"{{M1}}", m1.Listener.Addr().String(), "{{M2}}", m2.Listener.Addr().String(), "{{M3}}", m3).Replace(statsConfig)
	}

	// haproxy.
	hfe, hstats := ports[0], ports[2]
	out := peers.HAProxy(t, conf(hfe, ports[1], hstats))

	// vipstack, from the same text: its listeners on ports of its own.
	l := newLBOpts(t, Options{}, parseOnLoopback(t, conf("1", "2", "3")))
	haproxy := map[string]string{"fe": "127.0.0.1:" + hfe, "stats": "127.0.0.1:" + hstats}
	vipstack := map[string]string{"fe": l.Addrs("main")[0].String(), "stats": l.Addrs("stats")[0].String()}

	// Both settled: m1 and m2 UP after a passed check, m3 DOWN; then
	// two clients through each frontend.
	settled := func(addr string) bool {
		c, ok := statsFetch(t, addr, ";csv")
		return ok && strings.Contains(c, "\nmasters,m1,") && strings.Contains(c, ",UP,1,1,0,") &&
			strings.Count(c, ",L7OK,200,") == 2 && strings.Count(c, ",DOWN,1,1,0,") == 1 && strings.Contains(c, ",L4CON,")
	}
	deadline := time.Now().Add(bound)
	for !settled(haproxy["stats"]) || !settled(vipstack["stats"]) {
		if time.Now().After(deadline) {
			h, _ := statsFetch(t, haproxy["stats"], ";csv")
			v, _ := statsFetch(t, vipstack["stats"], ";csv")
			t.Fatalf("timed out waiting for m1, m2 UP and m3 DOWN\nhaproxy:\n%s\n%s\nvipstack:\n%s", h, out.String(), v)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, lb := range []map[string]string{haproxy, vipstack} {
		for range 2 {
			resp, err := (&http.Client{Timeout: bound}).Get("http://" + lb["fe"] + "/")
			if err != nil {
				t.Fatalf("through %s: %v", lb["fe"], err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}

	var hrecs, vrecs [][]statstest.JSONField
	for _, x := range []struct {
		addr string
		recs *[][]statstest.JSONField
	}{{haproxy["stats"], &hrecs}, {vipstack["stats"], &vrecs}} {
		body, ok := statsFetch(t, x.addr, ";json")
		if !ok {
			t.Fatalf("%s ;json failed", x.addr)
		}
		if err := json.Unmarshal([]byte(body), x.recs); err != nil {
			t.Fatalf("%s ;json: %v\n%s", x.addr, err, body)
		}
	}
	stable := []string{"pxname", "svname", "status", "last_chk", "weight", "uweight", "act", "bck", "pid", "iid", "sid", "type", "mode",
		"check_status", "check_code", "check_desc", "check_rise", "check_fall", "check_health"}
	statstest.CompareLayout(t, hrecs, vrecs, stable)

	// CSV: the same header, lines and columns; vipstack's filled cells
	// are filled in haproxy's CSV too.
	hcsv, _ := statsFetch(t, haproxy["stats"], ";csv")
	vcsv, _ := statsFetch(t, vipstack["stats"], ";csv")
	hhead, _, _ := strings.Cut(hcsv, "\n")
	vhead, _, _ := strings.Cut(vcsv, "\n")
	if diff := cmp.Diff(hhead, vhead); diff != "" {
		t.Errorf("CSV header (-haproxy +vipstack):\n%s", diff)
	}
	rows := func(s string) [][]string {
		r := csv.NewReader(strings.NewReader(s))
		r.Comment = '#'
		rs, err := r.ReadAll()
		if err != nil {
			t.Fatalf("CSV: %v\n%s", err, s)
		}
		return rs
	}
	hrows, vrows := rows(hcsv), rows(vcsv)
	if len(hrows) != len(vrows) {
		t.Fatalf("CSV: haproxy %d lines, vipstack %d\n%s\n%s", len(hrows), len(vrows), hcsv, vcsv)
	}
	names := strings.Split(strings.TrimPrefix(hhead, "# "), ",")
	statusCol := slices.Index(names, "check_status")
	for i, v := range vrows {
		h := hrows[i]
		if len(h) != len(v) {
			t.Errorf("CSV line %d: haproxy %d columns, vipstack %d", i+1, len(h), len(v))
			continue
		}
		// haproxy marks a check running at the moment of the read with
		// "* " before the last status, and its code is 0 meanwhile.
		running := statusCol >= 0 && strings.HasPrefix(h[statusCol], "* ")
		if running {
			h = slices.Clone(h)
			h[statusCol] = strings.TrimPrefix(h[statusCol], "* ")
		}
		for c := range v {
			name := names[c]
			if v[c] != "" && h[c] == "" {
				t.Errorf("CSV %s/%s: %s = %q, empty in haproxy's", v[0], v[1], name, v[c])
			}
			if running && name == "check_code" {
				continue
			}
			if slices.Contains(stable, name) && v[c] != h[c] {
				t.Errorf("CSV %s/%s: %s = %q, haproxy %q", v[0], v[1], name, v[c], h[c])
			}
		}
	}

	// ";up" leaves the DOWN server (m3) out and the others keep their
	// ids; ";no-maint" (no server in maintenance here) leaves all in.
	sidCol := slices.Index(strings.Split(strings.TrimPrefix(hhead, "# "), ","), "sid")
	lines := func(addr, opts string) []string {
		body, ok := statsFetch(t, addr, opts)
		if !ok {
			t.Fatalf("%s %s failed", addr, opts)
		}
		var out []string
		for _, r := range rows(body) {
			out = append(out, r[0]+"/"+r[1]+"/"+r[sidCol])
		}
		return out
	}
	for _, opts := range []string{";up;csv", ";no-maint;csv", ";csv;up"} {
		h, v := lines(haproxy["stats"], opts), lines(vipstack["stats"], opts)
		if diff := cmp.Diff(h, v); diff != "" {
			t.Errorf("%s lines (-haproxy +vipstack):\n%s", opts, diff)
		}
		if listed, up := slices.Contains(v, "masters/m3/3"), strings.Contains(opts, ";up"); listed == up {
			t.Errorf("%s: m3 (DOWN) listed: %v, want %v: %q", opts, listed, !up, v)
		}
	}
	// haproxy's Refresh header (stats refresh 30s) comes with every form
	// and goes with ";norefresh".
	for _, opts := range []string{";csv", ";json", "", ";csv;norefresh", ";norefresh"} {
		var got [2]string
		for i, addr := range []string{haproxy["stats"], vipstack["stats"]} {
			req, _ := http.NewRequest("GET", "http://"+addr+"/haproxy_stats"+opts, nil)
			req.SetBasicAuth("Username", "Password")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", addr, opts, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			got[i] = resp.Header.Get("Refresh")
		}
		if got[0] != got[1] {
			t.Errorf("%q: Refresh header %q, haproxy %q", opts, got[1], got[0])
		}
	}
	// ";typed": every line vipstack writes, haproxy writes too, with the
	// same object, ids, position, name, tags and type.
	htyped, hok := statsFetch(t, haproxy["stats"], ";typed")
	vtyped, vok := statsFetch(t, vipstack["stats"], ";typed")
	if !hok || !vok || !strings.HasPrefix(vtyped, "F.") {
		t.Errorf(";typed: haproxy %v, vipstack %v %.80q", hok, vok, vtyped)
	}
	hkeys := map[string]bool{}
	for _, line := range strings.Split(htyped, "\n") {
		if f := strings.SplitN(line, ":", 4); len(f) == 4 {
			hkeys[f[0]+":"+f[1]+":"+f[2]] = true
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(vtyped), "\n") {
		if f := strings.SplitN(line, ":", 4); len(f) != 4 || !hkeys[f[0]+":"+f[1]+":"+f[2]] {
			t.Errorf(";typed: vipstack's %q has no haproxy line with the same key, tags and type", line)
		}
	}
	// The page for people follows ";up" too.
	for opts, want := range map[string]bool{"": true, ";up": false} {
		page, ok := statsFetch(t, vipstack["stats"], opts)
		if !ok || !strings.Contains(page, ">m1<") || strings.Contains(page, ">m3<") != want {
			t.Errorf("HTML page %q: m1 listed %v, m3 listed %v, want true, %v", opts, strings.Contains(page, ">m1<"), strings.Contains(page, ">m3<"), want)
		}
	}
}

// TestCheckSSLStatsMatchHaproxy compares the check fields of `show stat`
// (check_status, check_code, check_desc, last_chk, status) for check-ssl
// servers whose handshake fails: one that closes after reading the
// ClientHello, one that answers in plain HTTP, and one that never
// answers it (a timeout). haproxy 2.6.12 (measured):
//
//	closer/s1 DOWN L6RSP  "Layer6 invalid response" last_chk "SSL handshake failure"
//	plain/s1  DOWN L6RSP  "Layer6 invalid response" last_chk "SSL handshake failure"
//	silent/s1 DOWN L6TOUT "Layer6 timeout"          last_chk ""
//
// where vipstack showed Go's TLS error ("EOF", "tls: first record does not
// look like a TLS handshake") and "TLS handshake timed out". haproxy
// writes "* L6TOUT" while the next check runs (vipstack has no such mark):
// the "* " is dropped before comparing.
//
// The HTML pages' last check cells are compared too (the check's
// duration aside): haproxy's, measured,
//
//	<u> L6RSP in 3ms<div class=tips>Layer6 invalid response: SSL handshake failure</div></u>
//	<u> L6TOUT in 501ms<div class=tips>Layer6 timeout</div></u>
//
// where vipstack's page showed "L6RSP (EOF)" and "L6TOUT (TLS handshake
// timed out)".
func TestCheckSSLStatsMatchHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	serve := func(handle func(net.Conn)) string {
		return startBackendFunc(t, "tls", func(c net.Conn) {
			c.SetDeadline(time.Now().Add(bound))
			c.Read(make([]byte, 4096)) // the ClientHello
			handle(c)
		}).addr.String()
	}
	closer := serve(func(net.Conn) {})
	plain := serve(func(c net.Conn) { io.WriteString(c, "HTTP/1.0 400 Bad Request\r\n\r\n") })
	silent := serve(func(c net.Conn) { io.Copy(io.Discard, c) }) // until the check gives up (or the test's end)
	backends := []string{"closer", "plain", "silent"}
	dir := t.TempDir()
	conf := func(port string) string {
		return strings.NewReplacer("{{DIR}}", dir, "{{P0}}", port, "{{CLOSER}}", closer, "{{PLAIN}}", plain, "{{SILENT}}", silent).Replace(`global
  stats socket {{DIR}}/haproxy.sock mode 600 level admin
defaults
  mode tcp
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend fe
  bind 127.0.0.1:{{P0}}
  default_backend closer
backend closer
  server s1 {{CLOSER}} check check-ssl verify none inter 500ms fall 1 rise 1
backend plain
  server s1 {{PLAIN}} check check-ssl verify none inter 500ms fall 1 rise 1
backend silent
  server s1 {{SILENT}} check check-ssl verify none inter 500ms fall 1 rise 1
listen stats
  bind 127.0.0.1:{{P1}}
  mode http
  stats enable
  stats uri /haproxy_stats
`)
	}
	ports := freePorts(t, 2)
	peers.HAProxy(t, strings.ReplaceAll(conf(ports[0]), "{{P1}}", ports[1]))
	l := newLBOpts(t, Options{}, parseOnLoopback(t, strings.ReplaceAll(conf("1"), "{{P1}}", "2")))

	fields := []string{"status", "check_status", "check_code", "check_desc", "last_chk"}
	// checks reads the servers' check fields from a show stat CSV, or
	// nil until every server has been found DOWN by a check.
	checks := func(out string) map[string][]string {
		recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(out, "# "))).ReadAll()
		if err != nil || len(recs) == 0 {
			return nil
		}
		got := map[string][]string{}
		for _, r := range recs[1:] {
			if len(r) != len(recs[0]) || r[1] != "s1" {
				continue
			}
			var vals []string
			for _, f := range fields {
				v := r[slices.Index(recs[0], f)]
				if f == "check_status" {
					v = strings.TrimPrefix(v, "* ")
				}
				vals = append(vals, v)
			}
			if vals[0] != "DOWN" || vals[1] == "" {
				return nil
			}
			got[r[0]] = vals
		}
		if len(got) != len(backends) {
			return nil
		}
		return got
	}
	waitListening(t, "unix", dir+"/haproxy.sock")
	var want, got map[string][]string
	deadline := time.Now().Add(bound)
	for want == nil || got == nil {
		if want == nil {
			want = checks(haproxyCommand(t, dir+"/haproxy.sock", "show stat"))
		}
		if got == nil {
			got = checks(l.Snapshot().CSV())
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every server DOWN by a check: haproxy %v, vipstack %v", want, got)
		}
		time.Sleep(50 * time.Millisecond) // checks running, bounded
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s by backend (-haproxy +vipstack):\n%s", strings.Join(fields, ", "), diff)
	}
	for _, b := range backends {
		t.Logf("haproxy %s/s1: %q", b, want[b])
	}

	// cells reads each backend's s1 last check cell from a stats page:
	// the first <u> ...</u> after the server's anchor ("closer/s1").
	cell := regexp.MustCompile(`<u> (?:\* )?(L[^<]*?) in \d+ms(<div class=tips>[^<]*</div>)</u>`)
	cells := func(page string, at func(b string) string) map[string]string {
		got := map[string]string{}
		for _, b := range backends {
			i := strings.Index(page, at(b))
			if i < 0 {
				continue
			}
			if m := cell.FindStringSubmatch(page[i:]); m != nil {
				got[b] = m[1] + " in Nms" + m[2]
			}
		}
		return got
	}
	page := func(addr string) string {
		resp, err := http.Get("http://" + addr + "/haproxy_stats")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	hcells := cells(page("127.0.0.1:"+ports[1]), func(b string) string { return `name="` + b + `/s1"` })
	vcells := cells(page(l.Addrs("stats")[0].String()), func(b string) string { return `name="` + b + `/s1"` })
	if len(hcells) != len(backends) {
		t.Fatalf("haproxy's page: last check cells %q, want one per backend", hcells)
	}
	if diff := cmp.Diff(hcells, vcells); diff != "" {
		t.Errorf("HTML last check cells by backend (-haproxy +vipstack):\n%s", diff)
	}
	for _, b := range backends {
		t.Logf("haproxy's page, %s/s1: %s", b, hcells[b])
	}
}
