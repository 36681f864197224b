package lb

import (
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"html"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/vipstack/vipstack/internal/healthcheck"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// site is what an HTTP listener serves: a monitor URI or a stats page.
type site struct {
	lb      *LB
	monitor *lbconfig.Monitor
	stats   *lbconfig.Stats
	// logs receive a "Connect from" line per request (syslog.go); nil
	// for none.
	logs *logDests
	// count is the section's cumulated connections, for the soft
	// stop's "Proxy NAME stopped" line (syslog.go); nil in tests that
	// build a site by hand.
	count *webCount
}

// webCount is what haproxy's "cumulated conns" count for a monitor or
// stats section: FE, the connections accepted; BE, the requests that
// reached its (serverless) backend, answered 503 (measured).
type webCount struct {
	fe, be atomic.Uint64
}

func (s *site) countConn() {
	if s.count != nil {
		s.count.fe.Add(1)
	}
}

func (s *site) countBackend() {
	if s.count != nil {
		s.count.be.Add(1)
	}
}

// name is the section's name.
func (s *site) name() string {
	if s.monitor != nil {
		return s.monitor.Name
	}
	if s.stats != nil {
		return s.stats.Name
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
func (h *httpListener) respond(r *request) *response {
	s := h.site.Load()
	switch {
	case s.monitor != nil:
		return s.serveMonitor(r)
	case s.stats != nil:
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

var reasons = map[int]string{200: "OK", 303: "See Other", 401: "Unauthorized", 503: "Service Unavailable"}

// serveMonitor answers 200 at the monitor URI while a server is UP, and
// 503 otherwise, whatever the method (measured: haproxy answers POST, FOO
// and a lower-case get alike; HEAD gets the head alone). Other URIs get
// 503: the section has no servers. As in haproxy, the request's URI must
// be the monitor URI exactly, query included: "/haproxy_ready?x" is
// another URI. A request in absolute form ("GET http://host/haproxy_ready",
// as a proxy would send it) matches by its path, as in haproxy 2.6
// (measured: 200).
func (s *site) serveMonitor(r *request) *response {
	if requestPath(r.uri, s.monitor.URI) != s.monitor.URI {
		s.countBackend()
		return htmlAnswer(503, body503)
	}
	if s.lb.Healthy() {
		return htmlAnswer(200, body200)
	}
	return htmlAnswer(503, body503)
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

func (s *site) authorized(r *request) bool {
	users := s.stats.Users
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
func (s *site) serveStats(r *request) *response {
	uri := s.stats.URI
	if uri == "" {
		uri = "/haproxy?stats" // haproxy's default
	}
	reqPath, reqQuery, _ := strings.Cut(requestPath(r.uri, uri), "?")
	path, query, _ := strings.Cut(uri, "?")
	if !strings.HasPrefix(reqPath, path) || (query != "" && !strings.HasPrefix(reqQuery, query)) ||
		(r.method != "GET" && r.method != "HEAD" && r.method != "POST") {
		s.countBackend()
		return htmlAnswer(503, body503)
	}
	if !s.authorized(r) {
		a := htmlAnswer(401, body401)
		a.header = append(a.header, field{"www-authenticate", `Basic realm="HAProxy Statistics"`})
		a.close = true
		return a
	}
	if r.method == "POST" {
		return &response{code: 303, reason: reasons[303], header: []field{{"cache-control", "no-cache"}, {"content-type", "text/plain"},
			{"content-length", "0"}, {"location", uri + ";st=DENY"}}, noLength: true}
	}
	opts := reqPath[len(path):] + ";" + reqQuery
	snap := s.lb.Snapshot()
	if strings.Contains(opts, ";up") {
		snap = snap.HideDown()
	}
	if strings.Contains(opts, ";no-maint") {
		snap = snap.Filter(StatFilter{ProxyID: -1, Types: -1, ServerID: -1, UpOnly: snap.hideDown, NoMaint: true})
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
		ctype, resp.body = "text/html", []byte(s.html(snap, refresh))
	}
	resp.header = []field{{"cache-control", "no-cache"}, {"content-type", ctype}}
	if s.stats.Refresh > 0 && refresh {
		// haproxy sends it with every form, the CSV and JSON included
		// (measured, 2.6.12); ";norefresh" leaves it out.
		resp.header = append(resp.header, field{"refresh", strconv.Itoa(int(s.stats.Refresh.Seconds()))})
	}
	return resp
}

// html renders the page for people; refresh asks the browser to reload
// it every `stats refresh` (haproxy's ";norefresh" turns that off).
func (s *site) html(snap Snapshot, refresh bool) string {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Statistics Report</title>\n")
	if s.stats.Refresh > 0 && refresh {
		fmt.Fprintf(&b, "<meta http-equiv=\"refresh\" content=\"%d\">\n", int(s.stats.Refresh.Seconds()))
	}
	b.WriteString(`<style>body{font-family:sans-serif;font-size:13px}table{border-collapse:collapse;margin-bottom:1.5em}` +
		`th,td{border:1px solid #999;padding:2px 6px;text-align:right}th{background:#ddd}td.n{text-align:left}` +
		`tr.up td{background:#cfc}tr.down td{background:#fcc}tr.going td{background:#ffc}` +
		// A last check's description shows on hover, as on haproxy's page.
		`u{position:relative;text-decoration:none}u .tips{display:none;position:absolute;left:0;top:1.2em;z-index:1;` +
		`background:#ffd;border:1px solid #999;padding:2px 6px;white-space:nowrap}u:hover .tips{display:block}</style></head><body>` + "\n")
	b.WriteString("<h1>vipstack load balancer statistics</h1>\n")
	if !s.stats.HideVersion && s.lb.opts.Version != "" {
		fmt.Fprintf(&b, "<p>vipstack %s</p>\n", html.EscapeString(s.lb.opts.Version))
	}
	state := "healthy: at least one server is UP"
	_, unconfirmed, held := s.lb.health()
	if snap.Healthy && held {
		state = "healthy until the new servers' first checks: none of them has been checked since the reload"
	}
	if !snap.Healthy {
		state = "unhealthy: no server is UP"
		if unconfirmed {
			state = "not healthy yet: no server has passed a check"
		}
		if s.lb.draining.Load() {
			state = "draining: the frontends no longer accept connections"
		}
	}
	fmt.Fprintf(&b, "<p>%s</p>\n", state)

	esc := html.EscapeString
	itoa := func(v int64) string { return strconv.FormatInt(v, 10) }
	utoa := func(v uint64) string { return strconv.FormatUint(v, 10) }
	cells := func(class string, vals ...string) {
		fmt.Fprintf(&b, "<tr class=%q><td class=\"n\">%s</td>", class, esc(vals[0]))
		for _, v := range vals[1:] {
			fmt.Fprintf(&b, "<td>%s</td>", esc(v))
		}
		b.WriteString("</tr>\n")
	}
	for _, f := range snap.Frontends {
		fmt.Fprintf(&b, "<h2>frontend %s</h2>\n<table><tr><th>binds</th><th>backend</th><th>cur</th><th>max</th><th>limit</th><th>total</th><th>queued</th><th>queue timeouts</th><th>no server</th><th>bytes in</th><th>bytes out</th></tr>\n", esc(f.Name))
		limit := "-"
		if f.SessionLimit > 0 {
			limit = strconv.Itoa(f.SessionLimit)
		}
		cells("", strings.Join(f.Binds, " "), f.Backend, itoa(f.Sessions), itoa(f.MaxSessions), limit, utoa(f.TotalSessions),
			itoa(f.Queued), utoa(f.QueueTimeouts), utoa(f.NoServer), utoa(f.BytesIn), utoa(f.BytesOut))
		b.WriteString("</table>\n")
	}
	for _, bk := range snap.Backends {
		fmt.Fprintf(&b, "<h2>backend %s (%s, %s, %d up)</h2>\n", esc(bk.Name), esc(bk.Balance), esc(bk.Status), bk.UpServers)
		b.WriteString("<table><tr><th>server</th><th>address</th><th>status</th><th>last check</th><th>weight</th><th>cur</th><th>max</th>" +
			"<th>total</th><th>selected</th><th>conn errors</th><th>retries</th><th>checks failed</th><th>downs</th><th>last change (s)</th>" +
			"<th>downtime (s)</th><th>bytes in</th><th>bytes out</th></tr>\n")
		for _, s := range bk.Servers {
			if (snap.hideDown && !s.Up) || (snap.filter != nil && snap.filter.NoMaint && s.Admin == AdminMaint) {
				continue
			}
			class := "down"
			switch {
			case s.Up && (s.Status == "UP" || s.Status == "no check"):
				class = "up"
			case s.Up || strings.HasPrefix(s.Status, "DOWN "):
				class = "going"
			}
			check := "" // no check, or none run yet
			if s.CheckStatus != "" {
				check = htmlLastCheck(s)
			}
			fmt.Fprintf(&b, "<tr class=%q><td class=\"n\">%s</td><td>%s</td><td>%s</td><td>%s</td>", class, esc(s.Name), esc(s.Addr), esc(s.Status), check)
			for _, v := range []string{strconv.Itoa(s.Weight), itoa(s.Sessions), itoa(s.MaxSessions),
				utoa(s.TotalSessions), utoa(s.Selected), utoa(s.ConnectErrors), utoa(s.Retries), utoa(s.ChecksFailed), utoa(s.Downs),
				itoa(s.LastChangeSeconds), itoa(s.DowntimeSeconds), utoa(s.BytesIn), utoa(s.BytesOut)} {
				fmt.Fprintf(&b, "<td>%s</td>", v)
			}
			b.WriteString("</tr>\n")
		}
		b.WriteString("</table>\n")
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

// htmlLastCheck is haproxy 2.6.12's LastChk cell for the server's last
// check, as its HTML stats page writes it (measured, check-ssl verify
// none: a server that closes after the ClientHello and one answering in
// plain HTTP give "<u> L6RSP in 3ms<div class=tips>Layer6 invalid
// response: SSL handshake failure</div></u>", one that never answers
// "<u> L6TOUT in 501ms<div class=tips>Layer6 timeout</div></u>"): the
// status, "/code" when there is one, the check's duration, and a tip
// with its description and last_chk, HTML-escaped.
func htmlLastCheck(s ServerStats) string {
	var b strings.Builder
	b.WriteString("<u> " + html.EscapeString(s.CheckStatus))
	if s.CheckCode != 0 {
		fmt.Fprintf(&b, "/%d", s.CheckCode)
	}
	fmt.Fprintf(&b, " in %dms<div class=tips>%s", s.CheckDurationMS, html.EscapeString(healthcheck.Description(s.CheckStatus)))
	if info := s.LastCheck(); info != "" {
		b.WriteString(": " + html.EscapeString(info))
	}
	b.WriteString("</div></u>")
	return b.String()
}
