package web

import (
	"bytes"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Core is what a site needs of the load balancer.
type Core interface {
	// Healthy is the monitor's verdict: 200 or 503.
	Healthy() bool
	// Snapshot is the figures the stats page shows.
	Snapshot() stats.Snapshot
	// PageHealth is what the stats page says beside its tables: a
	// server is UP but not confirmed by a check yet, the verdict is the
	// one held over a reload, the LB is shutting down.
	PageHealth() (unconfirmed, held, draining bool)
}

// Site is what a Listener serves: a monitor URI or a stats page.
type Site struct {
	Monitor *lbconfig.Monitor
	Stats   *lbconfig.Stats
	Core    Core
	Clock   clock.Clock
	// Version is the stats page's version, unless the section hides it.
	Version string
	// Log sends a "Connect from" line per request for the section
	// called section; nil for none.
	Log func(section string, c net.Conn)
	// LogRequest writes a stream's line in the section's log format;
	// nil for none (then Log may send "Connect from").
	LogRequest func(RequestLog)
	// Count is the section's counts, kept over reloads; nil in tests
	// that build a site by hand.
	Count *Count
}

// Count is what haproxy 2.6.12 counts for a monitor or stats section:
// its FRONTEND and BACKEND lines of the stats (ListenStats) and its soft
// stop's "cumulated conns", kept over reloads. Measured with haproxy
// 2.6.12 (Debian 12), read from `show stat` after raw requests on
// loopback:
//
//   - Every connection is a frontend session (stot, conn_tot, scur and
//     smax, rate and conn_rate), and every request counts (req_tot,
//     req_rate, hrsp_*), also on a keep-alive connection (three requests
//     on one connection: stot 1, req_tot 3).
//   - A request the section answers itself (the monitor URI, whatever
//     its answer; the stats page, its 303 to a POST and its 401) is
//     intercepted. Another request goes to the section's backend, which
//     has no server: 503, and the backend counts a session (stot,
//     rate), a connection error (econ), a request (req_tot) and its 5xx.
//     The backend's lastsess is the last request of a stats section,
//     whoever answered it; a monitor's stays -1, also after requests to
//     its backend.
//   - A refused request (400, 413, 422) and a head that did not come in
//     time (408) count as a request error (ereq) with a 4xx, and no
//     bytes; so does a client that connects and closes without a word
//     (haproxy counts the 400 it would have sent), and one that sends a
//     part of a head and closes. A connection closed while idle between
//     keep-alive requests counts nothing.
//   - bin and bout are the requests' and answers' sizes as haproxy stores
//     them (HTX, htxSize), not the bytes on the wire: three curl requests
//     of 92 bytes give bin 285. The backend line shows the frontend's
//     bin and bout (also when every request was intercepted).
type Count struct {
	// fe: the connections accepted; be: the requests passed to the
	// backend (also the soft stop's FE and BE).
	fe, be atomic.Uint64
	// cur, smax: the connections open and the most at once; beCur,
	// beSmax: the requests at the backend.
	cur, smax, beCur, beSmax atomic.Int64
	bin, bout                atomic.Uint64
	reqs, intercepted, ereq  atomic.Uint64
	// hrsp counts the answers by class: 1xx to 5xx, then other codes.
	hrsp                  [6]atomic.Uint64
	rate, reqRate, beRate stats.RateCounter
	beLast                stats.LastSession
}

func (s *Site) countConn() {
	if s.Count == nil {
		return
	}
	s.Count.fe.Add(1)
	stats.StoreMax(&s.Count.smax, s.Count.cur.Add(1))
	s.Count.rate.Add(s.Clock.Now())
}

// countClose counts a connection's end.
func (s *Site) countClose() {
	if s.Count != nil {
		s.Count.cur.Add(-1)
	}
}

// countRefused counts a request refused before it was parsed: a 400,
// 408, 413 or 422 of haproxy's (or the 400 of a client that closed).
func (s *Site) countRefused() {
	if s.Count == nil {
		return
	}
	s.Count.reqs.Add(1)
	s.Count.reqRate.Add(s.Clock.Now())
	s.Count.ereq.Add(1)
	s.Count.hrsp[3].Add(1)
}

// answer answers a parsed request and counts it; body is the size of its
// body as haproxy stores it.
func (h *Listener) answer(req *request, body int64) *response {
	s := h.site.Load()
	c := s.Count
	if c == nil {
		return h.respond(req)
	}
	now := s.Clock.Now()
	c.reqs.Add(1)
	c.reqRate.Add(now)
	c.bin.Add(req.htxSize() + uint64(max(body, 0)))
	resp := h.respond(req)
	if resp.backend {
		c.be.Add(1)
		stats.StoreMax(&c.beSmax, c.beCur.Add(1))
		c.beRate.Add(now)
		c.beCur.Add(-1)
	} else {
		c.intercepted.Add(1)
	}
	if s.Stats != nil {
		c.beLast.Set(now)
	}
	class := resp.code/100 - 1
	if class < 0 || class > 4 {
		class = 5
	}
	c.hrsp[class].Add(1)
	c.bout.Add(resp.htxSize(req.method == "HEAD"))
	return resp
}

// name is the section's name.
func (s *Site) name() string {
	if s.Monitor != nil {
		return s.Monitor.Name
	}
	if s.Stats != nil {
		return s.Stats.Name
	}
	return ""
}

// haproxy's own bodies, so that scripts matching on them keep working.
const (
	body200 = "<html><body><h1>200 OK</h1>\nService ready.\n</body></html>\n"
	body503 = "<html><body><h1>503 Service Unavailable</h1>\nNo server is available to handle this request.\n</body></html>\n"
	body401 = "<html><body><h1>401 Unauthorized</h1>\nYou need a valid user and password to access this content.\n</body></html>\n"
)

// respond answers a request on a monitor or stats listener.
func (h *Listener) respond(r *request) *response {
	s := h.site.Load()
	switch {
	case s.Monitor != nil:
		return s.serveMonitor(r)
	case s.Stats != nil && s.monitorHit(r):
		m := *s
		m.Monitor = &lbconfig.Monitor{Name: s.Stats.Name, URI: s.Stats.MonitorURI}
		return m.serveMonitor(r)
	case s.Stats != nil && s.Stats.Prometheus != nil && s.Stats.Prometheus.Matches(pathOnly(r.uri)):
		return s.servePrometheus()
	case s.Stats != nil:
		return s.serveStats(r)
	}
	return htmlAnswer(503, body503)
}

// htmlAnswer is one of haproxy's short HTML answers, with its header lines
// in haproxy's order (measured).
func htmlAnswer(code int, body string) *response {
	return &response{code: code, reason: reasons[code], body: []byte(body),
		header: []field{{"cache-control", "no-cache"}, {"content-type", "text/html"}}}
}

// toBackend is the answer of the section's backend, which has no server.
func (s *Site) toBackend() *response {
	a := s.errorAnswer(503, body503)
	a.backend = true
	return a
}

// errorFiles are the section's errorfiles (defaults'), by status code.
func (s *Site) errorFiles() map[int][]byte {
	switch {
	case s.Monitor != nil:
		return s.Monitor.ErrorFiles
	case s.Stats != nil:
		return s.Stats.ErrorFiles
	}
	return nil
}

// errorAnswer is the section's answer with status code: its errorfile
// for the code when it has one, else haproxy's own (body). haproxy 2.6
// sends an errorfile as it parsed it at load (measured): the file's
// status line, its header names in lower case, without its connection
// header, and the file's body; a file without content-length ends the
// connection after it, one with it keeps the connection. Its 400 and 408 to a request that did not parse
// or come in time stay haproxy's own (measured), which http1.go sends.
func (s *Site) errorAnswer(code int, body string) *response {
	if raw, ok := s.errorFiles()[code]; ok {
		if a := errorfileAnswer(raw); a != nil {
			return a
		}
	}
	return htmlAnswer(code, body)
}

// errorfileAnswer reads an errorfile; nil if it is no HTTP answer (the
// parser checked it; a file changed since falls back).
func errorfileAnswer(raw []byte) *response {
	// The head ends at the first empty line, CRLF or LF; the body is
	// the file's bytes after it.
	end, skip := bytes.Index(raw, []byte("\r\n\r\n")), 4
	if i := bytes.Index(raw, []byte("\n\n")); i >= 0 && (end < 0 || i < end) {
		end, skip = i, 2
	}
	if end < 0 {
		return nil
	}
	b := raw[end+skip:]
	lines := strings.Split(strings.ReplaceAll(string(raw[:end]), "\r\n", "\n"), "\n")
	proto, rest, ok := strings.Cut(lines[0], " ")
	if !ok || !strings.HasPrefix(proto, "HTTP/") {
		return nil
	}
	codeText, reason, _ := strings.Cut(rest, " ")
	code, err := strconv.Atoi(codeText)
	if err != nil || code < 100 || code > 999 {
		return nil
	}
	a := &response{code: code, reason: reason, proto: proto, body: b, noLength: true, close: true}
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			return nil
		}
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "connection" {
			continue
		}
		if name == "content-length" {
			a.close = false
		}
		a.header = append(a.header, field{name, strings.TrimSpace(value)})
	}
	return a
}

var reasons = map[int]string{200: "OK", 303: "See Other", 401: "Unauthorized", 503: "Service Unavailable"}

// serveMonitor answers 200 at the monitor URI while a server is UP, and
// 503 otherwise, whatever the method (measured: haproxy answers POST, FOO
// and a lower-case get alike; HEAD gets the head alone). Other URIs get
// 503: the section has no servers. As in haproxy, the request's URI must
// be the monitor URI exactly, query included: "/haproxy_ready?x" is
// another URI. A request in absolute form ("GET http://host/haproxy_ready",
// as a proxy would send it) matches by its path, as in haproxy 2.6
// (measured: 200).
func (s *Site) serveMonitor(r *request) *response {
	if requestPath(r.uri, s.Monitor.URI) != s.Monitor.URI {
		return s.toBackend()
	}
	if s.Core.Healthy() {
		return htmlAnswer(200, body200)
	}
	return s.errorAnswer(503, body503)
}

// requestPath is the path (with its query) of a request URI in absolute
// form, "scheme://authority/path?query", when want is a path; otherwise
// uri itself.
func requestPath(uri, want string) string {
	if !strings.HasPrefix(want, "/") || strings.HasPrefix(uri, "/") {
		return uri
	}
	_, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return uri
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[i:]
	}
	return "/"
}

// basicAuth is the user and password of a Basic Authorization header.
func basicAuth(r *request) (user, pass string, ok bool) {
	scheme, cred, ok := strings.Cut(r.get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return "", "", false
	}
	dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(dec), ":")
}

func (s *Site) authorized(r *request) bool {
	users := s.Stats.Users
	if len(users) == 0 {
		return true
	}
	user, pass, ok := basicAuth(r)
	if !ok {
		return false
	}
	found := 0
	for _, u := range users {
		// Compare every entry in full: no early exit that times a guess.
		found |= subtle.ConstantTimeCompare([]byte(user), []byte(u.User)) & subtle.ConstantTimeCompare([]byte(pass), []byte(u.Pass))
	}
	return found == 1
}

// serveStats serves the stats page under its URI: HTML, or CSV with
// ";csv", or JSON with ";json" or Accept: application/json. As haproxy
// 2.6 (measured): only GET, HEAD and POST reach it (other methods get
// 503); 401 ends the connection; a POST, with stats admin not supported,
// gets "303 See Other" to the URI with ";st=DENY", no body; the page goes
// out chunked, also to HTTP/1.0 clients, and HEAD gets the head without
// a length.
func (s *Site) serveStats(r *request) *response {
	uri := s.Stats.URI
	if uri == "" {
		uri = "/haproxy?stats" // haproxy's default
	}
	reqPath, reqQuery, _ := strings.Cut(requestPath(r.uri, uri), "?")
	path, query, _ := strings.Cut(uri, "?")
	if !strings.HasPrefix(reqPath, path) || (query != "" && !strings.HasPrefix(reqQuery, query)) ||
		(r.method != "GET" && r.method != "HEAD" && r.method != "POST") {
		return s.toBackend()
	}
	if !s.authorized(r) {
		a := htmlAnswer(401, body401)
		a.header = append(a.header, field{"www-authenticate", `Basic realm="` + s.realm() + `"`})
		a.close = true
		return a
	}
	if r.method == "POST" && s.adminAllowed(r) {
		return s.adminPost(r, uri)
	}
	if r.method == "POST" {
		return &response{code: 303, reason: reasons[303], header: []field{{"cache-control", "no-cache"}, {"content-type", "text/plain"},
			{"content-length", "0"}, {"location", uri + ";st=DENY"}}, noLength: true}
	}
	opts := reqPath[len(path):] + ";" + reqQuery
	snap := s.Core.Snapshot()
	if strings.Contains(opts, ";up") {
		snap = snap.HideDown()
	}
	if strings.Contains(opts, ";no-maint") {
		snap = snap.Filter(stats.StatFilter{ProxyID: -1, Types: -1, ServerID: -1, UpOnly: snap.DownHidden(), NoMaint: true})
	}
	resp := &response{code: 200, reason: reasons[200], chunked: true}
	var ctype string
	switch {
	case strings.Contains(opts, ";csv"):
		ctype, resp.body = "text/plain", []byte(snap.CSV())
	case strings.Contains(opts, ";typed"):
		ctype, resp.body = "text/plain", []byte(snap.Typed())
	case strings.Contains(opts, ";json") || strings.Contains(r.get("Accept"), "application/json"):
		ctype, resp.body = "application/json", snap.JSON()
	}
	refresh := !strings.Contains(opts, ";norefresh")
	if ctype == "" {
		ctype, resp.body = "text/html", []byte(snap.HTML(s.statsPage(r, uri, refresh)))
	}
	resp.header = []field{{"cache-control", "no-cache"}, {"content-type", ctype}}
	if s.Stats.Refresh > 0 && refresh {
		// haproxy sends it with every form, the CSV and JSON included
		// (measured, 2.6.12); ";norefresh" leaves it out.
		resp.header = append(resp.header, field{"refresh", strconv.Itoa(int(s.Stats.Refresh.Seconds()))})
	}
	return resp
}

// Sessions is the section's cumulated connections (fe) and requests
// passed to its backend (be), for the soft stop's "Proxy NAME stopped"
// line.
func (c *Count) Sessions() (fe, be uint64) { return c.fe.Load(), c.be.Load() }

// ListenStats is the section's FRONTEND and BACKEND figures at now.
func (c *Count) ListenStats(name string, now time.Time) stats.ListenStats {
	ls := stats.ListenStats{Name: name, Sessions: c.cur.Load(), MaxSessions: c.smax.Load(), TotalSessions: c.fe.Load(),
		BytesIn: c.bin.Load(), BytesOut: c.bout.Load(),
		Requests: c.reqs.Load(), RequestErrors: c.ereq.Load(), Intercepted: c.intercepted.Load(),
		Rate: c.rate.Read(now), MaxRate: c.rate.Max(),
		RequestRate: c.reqRate.Read(now), MaxRequestRate: c.reqRate.Max(),
		BackendRequests: c.be.Load(), BackendMaxSessions: c.beSmax.Load(),
		BackendRate: c.beRate.Read(now), BackendMaxRate: c.beRate.Max(), BackendLastSessionSec: c.beLast.Age(now)}
	for i, class := range stats.ResponseClasses {
		if n := c.hrsp[i].Load(); n > 0 {
			if ls.Responses == nil {
				ls.Responses = map[string]uint64{}
			}
			ls.Responses[class] = n
		}
	}
	return ls
}

// page is what the stats page shows beside its tables; refresh asks the
// browser to reload it every `stats refresh` (haproxy's ";norefresh"
// turns that off).
func (s *Site) page(refresh bool) stats.Page {
	var p stats.Page
	if refresh {
		p.Refresh = s.Stats.Refresh
	}
	if !s.Stats.HideVersion {
		p.Version = s.Version
	}
	p.Unconfirmed, p.Held, p.Draining = s.Core.PageHealth()
	return p
}

// pathOnly is the path of a request URI, without its query: haproxy's
// `path` fetch.
func pathOnly(uri string) string {
	p, _, _ := strings.Cut(requestPath(uri, "/"), "?")
	return p
}

// servePrometheus answers with the figures in haproxy's Prometheus
// exporter's format, as haproxy 2.6 answers any method there (measured:
// 200, chunked, its content type).
func (s *Site) servePrometheus() *response {
	return &response{code: 200, reason: reasons[200], chunked: true, body: s.Core.Snapshot().Prometheus(),
		header: []field{{"cache-control", "no-cache"}, {"content-type", "text/plain; version=0.0.4"}}}
}
