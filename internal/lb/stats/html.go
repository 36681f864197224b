package stats

import (
	"fmt"
	"html"
	"strconv"
	"strings"
	"time"
)

// Page is what the stats page shows beside the snapshot's tables.
type Page struct {
	// Refresh asks the browser to reload the page that often; 0 for
	// never (no `stats refresh`, or haproxy's ";norefresh").
	Refresh time.Duration
	// Version is shown in the page's head unless empty (`stats
	// hide-version`).
	Version string
	// Unconfirmed: a server is UP but none has passed a check yet.
	// Held: the LB is healthy only because the new servers of a reload
	// wait for their first checks. Draining: the frontends no longer
	// accept (Shutdown has begun).
	Unconfirmed, Held, Draining bool
	// AdminURI, when set, adds haproxy's admin form (`stats admin`)
	// under each backend's table, posted to it.
	AdminURI string
	// Node and Desc are shown in the page's head (`stats show-node`,
	// `stats show-desc`) unless empty; Legends adds the legend of the
	// rows' colours (`stats show-legends`).
	Node, Desc string
	Legends    bool
}

// HTML renders the stats page for people.
func (snap Snapshot) HTML(p Page) string {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Statistics Report</title>\n")
	if p.Refresh > 0 {
		fmt.Fprintf(&b, "<meta http-equiv=\"refresh\" content=\"%d\">\n", int(p.Refresh.Seconds()))
	}
	// The rows' classes are haproxy's (htmlServerClass), with colours
	// of our own; a cell's details show on hover, as on haproxy's page.
	b.WriteString(`<style>body{font-family:sans-serif;font-size:13px}table.tbl{border-collapse:collapse;margin-bottom:0}` +
		`table.tbl th,table.tbl td{border:1px solid #999;padding:1px 4px;text-align:right}tr.titre th{background:#ddd;text-align:center}` +
		`td.ac{text-align:center}.rls{letter-spacing:0.2em;margin-left:0.1em}` +
		`tr.frontend td,tr.backend td{background:#eee}tr.active_up td{background:#cfc}tr.active_down td{background:#fbb}` +
		`tr.active_going_up td{background:#fda}tr.active_going_down td{background:#ffa}tr.active_draining td{background:#ccf}` +
		`tr.active_no_check td{background:#e0e0e0}tr.maintain td{background:#c8c8ff}tr.active_nolb td{background:#ccc}` +
		`u{position:relative;text-decoration:none}u .tips,td>.tips{display:none;position:absolute;z-index:1;text-align:left;` +
		`background:#ffd;border:1px solid #999;padding:2px 6px;white-space:nowrap}u:hover .tips,td:hover>.tips{display:block}</style></head><body>` + "\n")
	b.WriteString("<h1>vipstack load balancer statistics</h1>\n")
	if p.Version != "" {
		fmt.Fprintf(&b, "<p>vipstack %s</p>\n", html.EscapeString(p.Version))
	}
	state := "healthy: at least one server is UP"
	if snap.Healthy && p.Held {
		state = "healthy until the new servers' first checks: none of them has been checked since the reload"
	}
	if !snap.Healthy {
		state = "unhealthy: no server is UP"
		if p.Unconfirmed {
			state = "not healthy yet: no server has passed a check"
		}
		if p.Draining {
			state = "draining: the frontends no longer accept connections"
		}
	}
	fmt.Fprintf(&b, "<p>%s</p>\n", state)
	htmlHead(&b, p)

	htmlProxies(&b, snap, p.AdminURI)
	b.WriteString("</body></html>\n")
	return b.String()
}

// htmlProxies writes the tables of the snapshot's sections, in haproxy's
// order.
func htmlProxies(b *strings.Builder, snap Snapshot, adminURI string) {
	for recs := snap.records(); len(recs) > 0; {
		n := 1
		for n < len(recs) && recs[n].proxyID == recs[0].proxyID {
			n++
		}
		htmlProxy(b, recs[:n])
		if adminURI != "" {
			iid, servers := adminServers(recs[:n])
			htmlAdminForm(b, adminURI, iid, servers)
		}
		recs = recs[n:]
	}
}

// htmlHeader is the head of haproxy 2.6.12's table of a section.
const htmlHeader = `<tr class="titre"><th rowspan=2></th><th colspan=3>Queue</th><th colspan=3>Session rate</th>` +
	`<th colspan=6>Sessions</th><th colspan=2>Bytes</th><th colspan=2>Denied</th><th colspan=3>Errors</th>` +
	`<th colspan=2>Warnings</th><th colspan=9>Server</th></tr>` + "\n" +
	`<tr class="titre"><th>Cur</th><th>Max</th><th>Limit</th><th>Cur</th><th>Max</th><th>Limit</th><th>Cur</th>` +
	`<th>Max</th><th>Limit</th><th>Total</th><th>LbTot</th><th>Last</th><th>In</th><th>Out</th><th>Req</th><th>Resp</th>` +
	`<th>Req</th><th>Conn</th><th>Resp</th><th>Retr</th><th>Redis</th><th>Status</th><th>LastChk</th><th>Wght</th>` +
	`<th>Act</th><th>Bck</th><th>Chk</th><th>Dwn</th><th>Dwntme</th><th>Thrtle</th></tr>` + "\n"

// htmlProxy writes one section's lines (its frontend, servers and
// backend, from the stats records) as haproxy 2.6.12's page does: a title
// table with the section's anchor, then a table of 30 columns, a row per
// line, with haproxy's classes, anchors and cells (measured, see
// TestStatsPageMatchesHaproxy). A field the line has is shown as haproxy
// shows it (numbers grouped by three digits, times as "1m5s"); a field
// it does not have (what vipstack does not measure: rates, the last
// session's age, queue and connect times) is an empty cell, as haproxy
// shows a field without a value.
func htmlProxy(b *strings.Builder, recs []*statRecord) {
	px := html.EscapeString(recs[0].text("pxname"))
	fmt.Fprintf(b, "<table class=\"tbl\" width=\"100%%\">\n<tr class=\"titre\"><th class=\"pxname\" width=\"10%%\">"+
		"<a name=\"%s\"></a><a class=px href=\"#%s\">%s</a></th><th class=\"empty\" width=\"90%%\"></th></tr>\n</table>\n", px, px, px)
	b.WriteString("<table class=\"tbl\" width=\"100%\">\n" + htmlHeader)
	for i, r := range recs {
		if i > 0 {
			b.WriteString("\n")
		}
		switch r.objType {
		case objFrontend:
			htmlFrontendRow(b, r)
		case objServer:
			htmlServerRow(b, r)
		case objBackend:
			htmlBackendRow(b, r)
		}
	}
	b.WriteString("</table><p>\n")
}

// text is a string field of the line, "" when it has none.
func (r *statRecord) text(name string) string { return r.str[statColumn[name]] }

// val is a number field of the line and whether it has it.
func (r *statRecord) val(name string) (uint64, bool) {
	i := statColumn[name]
	return r.num[i], r.set[i]
}

// h is a number field as haproxy's page writes one (htmlNumber), ""
// when the line does not have it.
func (r *statRecord) h(name string) string {
	v, ok := r.val(name)
	if !ok {
		return ""
	}
	return htmlNumber(v)
}

// limit is a limit field: "-" when there is none (0 or absent), as
// haproxy's LIM2A.
func (r *statRecord) limit(name string) string {
	if v, _ := r.val(name); v > 0 {
		return strconv.FormatUint(v, 10)
	}
	return "-"
}

// age is a time field in haproxy's human_time form, "" when the line
// does not have it.
func (r *statRecord) age(name string) string {
	v, ok := r.val(name)
	if !ok {
		return ""
	}
	return humanTime(v)
}

// anchor is the row's first cell: the line's name and its anchor.
func htmlAnchor(b *strings.Builder, class string, r *statRecord, label string) {
	name := html.EscapeString(r.text("pxname") + "/" + label)
	fmt.Fprintf(b, "<tr class=%q><td class=ac><a name=\"%s\"></a><a class=lfsb href=\"#%s\">%s</a></td>", class, name, name, html.EscapeString(label))
}

// htmlTotal is a Sessions Total cell: the count, with its parts on hover.
func htmlTotal(r *statRecord, parts ...string) string {
	v := r.h("stot")
	if v == "" {
		return "<td></td>"
	}
	var b strings.Builder
	b.WriteString("<td><u>" + v + "<div class=tips><table class=det>")
	for _, p := range parts {
		fmt.Fprintf(&b, "<tr><th>%s:</th><td>%s</td></tr>", p, v)
	}
	http := r.text("mode") == "http"
	if http {
		htmlHTTPTotals(&b, r)
	}
	if _, ok := r.val("ttime"); ok && http {
		// An HTTP backend's times (measured, haproxy 2.6.12): the
		// response time between connect and total.
		fmt.Fprintf(&b, "<tr><th colspan=3>Max / Avg over last %d success. conn.</th></tr>", timeSamples)
		for _, x := range [][3]string{{"Queue", "qtime_max", "qtime"}, {"Connect", "ctime_max", "ctime"}, {"Responses", "rtime_max", "rtime"}, {"Total", "ttime_max", "ttime"}} {
			fmt.Fprintf(&b, "<tr><th>- %s time:</th><td>%s / %s</td><td>ms</td></tr>", x[0], r.h(x[1]), r.h(x[2]))
		}
	} else if ok {
		// A server's or backend's times, as haproxy 2.6.12 writes them in
		// TCP mode (measured): "<tr><th colspan=3>Max / Avg over last
		// 1024 success. conn.</th></tr><tr><th>- Queue time:</th><td>0 /
		// 0</td><td>ms</td></tr>", then Connect and Total time.
		fmt.Fprintf(&b, "<tr><th colspan=3>Max / Avg over last %d success. conn.</th></tr>", timeSamples)
		for _, x := range [][3]string{{"Queue", "qtime_max", "qtime"}, {"Connect", "ctime_max", "ctime"}, {"Total", "ttime_max", "ttime"}} {
			fmt.Fprintf(&b, "<tr><th>- %s time:</th><td>%s / %s</td><td>ms</td></tr>", x[0], r.h(x[1]), r.h(x[2]))
		}
	}
	b.WriteString("</table></div></u></td>")
	return b.String()
}

// htmlHTTPTotals is the HTTP part of the tip of an HTTP section's Total
// cell (a monitor or stats section), as haproxy 2.6.12 writes it
// (measured): a backend's new and reused connections, the requests, the
// answers by class, a frontend's intercepted requests, and the counters
// of features vipstack does not have (compression, cache, header
// rewrites, internal errors) at 0.
func htmlHTTPTotals(b *strings.Builder, r *statRecord) {
	row := func(label, v string) { fmt.Fprintf(b, "<tr><th>%s</th><td>%s</td></tr>", label, v) }
	if r.objType == objBackend {
		row("New connections:", r.h("connect"))
		fmt.Fprintf(b, "<tr><th>Reused connections:</th><td>%s</td><td>(0%%)</td></tr>", r.h("reuse"))
	}
	row("Cum. HTTP requests:", r.h("req_tot"))
	for _, class := range []string{"1xx", "2xx", "3xx", "4xx", "5xx"} {
		row("- HTTP "+class+" responses:", r.h("hrsp_"+class))
		if class == "2xx" {
			b.WriteString("<tr><th>&nbsp;&nbsp;Compressed 2xx:</th><td>0</td><td>(0%)</td></tr>")
		}
	}
	row("- other responses:", r.h("hrsp_other"))
	if r.objType == objFrontend {
		row("Intercepted requests:", r.h("intercepted"))
	}
	row("Cache lookups:", r.h("cache_lookups"))
	b.WriteString("<tr><th>Cache hits:</th><td>" + r.h("cache_hits") + "</td><td>(0%)</td></tr>")
	row("Failed hdr rewrites:", r.h("wrew"))
	row("Internal errors:", r.h("eint"))
}

// htmlRate is a frontend's session rate cell (name rate or rate_max),
// with the connection and session rates on hover, as haproxy 2.6.12
// writes it in TCP mode (measured: "<td><u>0<div class=tips><table
// class=det><tr><th>Current connection rate:</th><td>0/s</td></tr><tr>
// <th>Current session rate:</th><td>0/s</td></tr></table></div></u></td>",
// "Max connection rate:" and "Max session rate:" for rate_max).
func htmlRate(r *statRecord, name, label string) string {
	v := r.h(name)
	if v == "" {
		return "<td></td>"
	}
	conn := r.h(strings.Replace(name, "rate", "conn_rate", 1))
	req := ""
	if r.text("mode") == "http" {
		// An HTTP frontend's request rate too (measured, 2.6.12).
		req = fmt.Sprintf("<tr><th>%s request rate:</th><td>%s/s</td></tr>", label, r.h(strings.Replace(name, "rate", "req_rate", 1)))
	}
	return fmt.Sprintf("<td><u>%s<div class=tips><table class=det><tr><th>%s connection rate:</th><td>%s/s</td></tr>"+
		"<tr><th>%s session rate:</th><td>%s/s</td></tr>%s</table></div></u></td>", v, label, conn, label, v, req)
}

// htmlLastSession is a server's or backend's Last cell: the time since its
// last session, "?" for none (haproxy's, measured, for lastsess -1).
func htmlLastSession(r *statRecord) string {
	v, ok := r.val("lastsess")
	if !ok {
		return ""
	}
	if int64(v) < 0 {
		return "?"
	}
	return humanTime(v)
}

// htmlBytesOut is a frontend's or backend's Bytes Out cell: in TCP mode
// haproxy's "Response bytes in" is the bytes out (measured), and the
// compression figures 0 (vipstack does not compress).
func htmlBytesOut(r *statRecord) string {
	v := r.h("bout")
	if v == "" {
		return "<td></td>"
	}
	return "<td>" + v + "<div class=tips><table class=det><tr><th>Response bytes in:</th><td>" + v + "</td></tr>" +
		"<tr><th>Compression in:</th><td>0</td></tr><tr><th>Compression out:</th><td>0</td><td>(0%)</td></tr>" +
		"<tr><th>Compression bypass:</th><td>0</td></tr><tr><th>Total bytes saved:</th><td>0</td><td>(0%)</td></tr>" +
		"</table></div></td>"
}

// htmlResponseErrors is a server's or backend's Errors Resp cell, with
// the aborts on hover (haproxy's cli_abrt and srv_abrt).
func htmlResponseErrors(r *statRecord) string {
	v := r.h("eresp")
	if v == "" {
		return "<td></td>"
	}
	return fmt.Sprintf("<td><u>%s<div class=tips>Connection resets during transfers: %s client, %s server</div></u></td>",
		v, r.h("cli_abrt"), r.h("srv_abrt"))
}

// htmlStatus is a Status cell: the time since the last change, if the
// line has it, and the status. A server without a check has its status
// alone, in italics (measured: "<td class=ac><i>no check</i></td>").
func htmlStatus(r *statRecord) string {
	st := r.text("status")
	if strings.HasPrefix(st, "MAINT") {
		st = "MAINT"
	}
	if _, checked := r.val("chkfail"); r.objType == objServer && !checked {
		return "<td class=ac><i>" + html.EscapeString(st) + "</i></td>"
	}
	if t := r.age("lastchg"); t != "" {
		st = t + " " + st
	}
	return "<td class=ac>" + html.EscapeString(st) + "</td>"
}

func htmlFrontendRow(b *strings.Builder, r *statRecord) {
	htmlAnchor(b, "frontend", r, "Frontend")
	fmt.Fprintf(b, "<td colspan=3></td>%s%s<td>%s</td><td>%s</td><td>%s</td><td>%s</td>%s<td></td><td></td>",
		htmlRate(r, "rate", "Current"), htmlRate(r, "rate_max", "Max"), r.limit("rate_lim"), r.h("scur"), r.h("smax"), r.h("slim"), htmlTotal(r, "Cum. connections", "Cum. sessions"))
	fmt.Fprintf(b, "<td>%s</td>%s<td>%s</td><td>%s</td><td>%s</td><td></td><td></td><td></td><td></td><td class=ac>%s</td><td class=ac colspan=8></td></tr>",
		r.h("bin"), htmlBytesOut(r), r.h("dreq"), r.h("dresp"), r.h("ereq"), html.EscapeString(r.text("status")))
}

// htmlServerClass is the class of a server's row, by its status, as
// haproxy names them: active_up, active_down, active_going_up ("DOWN
// 1/3"), active_going_down ("UP 1/2"), active_draining, active_no_check,
// maintain.
func htmlServerClass(r *statRecord) string {
	st := r.text("status")
	style := "up"
	switch {
	case strings.HasPrefix(st, "MAINT"):
		return "maintain"
	case st == "DOWN" || st == "DOWN (agent)":
		style = "down"
	case strings.HasPrefix(st, "DOWN "):
		style = "going_up"
	case st == "DRAIN":
		style = "draining"
	case strings.HasPrefix(st, "UP ") || strings.HasPrefix(st, "NOLB ") || strings.HasPrefix(st, "DRAIN "):
		style = "going_down"
	case st == "NOLB":
		style = "nolb"
	case st == "no check":
		style = "no_check"
	}
	if v, _ := r.val("bck"); v > 0 {
		return "backup_" + style
	}
	return "active_" + style
}

func htmlServerRow(b *strings.Builder, r *statRecord) {
	htmlAnchor(b, htmlServerClass(r), r, r.text("svname"))
	fmt.Fprintf(b, "<td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td></td><td>%s</td><td>%s</td><td>%s</td>%s<td>%s</td><td>%s</td>",
		r.h("qcur"), r.h("qmax"), r.limit("qlimit"), r.h("rate"), r.h("rate_max"), r.h("scur"), r.h("smax"), r.limit("slim"),
		htmlTotal(r, "Cum. sessions"), r.h("lbtot"), htmlLastSession(r))
	fmt.Fprintf(b, "<td>%s</td><td>%s</td><td></td><td>%s</td><td></td><td>%s</td>%s<td>%s</td><td>%s</td>",
		r.h("bin"), r.h("bout"), r.h("dresp"), r.h("econ"), htmlResponseErrors(r), r.h("wretr"), r.h("wredis"))
	// LastChk: the check's result; empty while a check is paused (MAINT),
	// and without class for a server without a check (measured).
	check := "<td class=ac></td>"
	if r.text("check_status") != "" {
		check = "<td class=ac>" + htmlCheckCell(r) + "</td>"
	} else if _, checked := r.val("chkfail"); !checked {
		check = "<td></td>"
	}
	weight, _ := r.val("weight")
	uweight, _ := r.val("uweight")
	yes := func(name string) string {
		if v, _ := r.val(name); v > 0 {
			return "Y"
		}
		return "-"
	}
	fmt.Fprintf(b, "%s%s<td class=ac>%d/%d</td><td class=ac>%s</td><td class=ac>%s</td>",
		htmlStatus(r), check, weight, uweight, yes("act"), yes("bck"))
	if chkfail, ok := r.val("chkfail"); ok {
		fmt.Fprintf(b, "<td><u>%d<div class=tips>Failed Health Checks</div></u></td><td>%s</td><td>%s</td>", chkfail, r.h("chkdown"), r.age("downtime"))
	} else {
		b.WriteString("<td colspan=3></td>")
	}
	b.WriteString("<td class=ac>-</td></tr>")
}

func htmlBackendRow(b *strings.Builder, r *statRecord) {
	htmlAnchor(b, "backend", r, "Backend")
	fmt.Fprintf(b, "<td>%s</td><td>%s</td><td></td><td>%s</td><td>%s</td><td></td><td>%s</td><td>%s</td><td>%s</td>%s<td>%s</td><td>%s</td>",
		r.h("qcur"), r.h("qmax"), r.h("rate"), r.h("rate_max"), r.h("scur"), r.h("smax"), r.h("slim"), htmlTotal(r, "Cum. sessions"), r.h("lbtot"), htmlLastSession(r))
	fmt.Fprintf(b, "<td>%s</td>%s<td>%s</td><td>%s</td><td></td><td>%s</td>%s<td>%s</td><td>%s</td>",
		r.h("bin"), htmlBytesOut(r), r.h("dreq"), r.h("dresp"), r.h("econ"), htmlResponseErrors(r), r.h("wretr"), r.h("wredis"))
	weight, _ := r.val("weight")
	uweight, _ := r.val("uweight")
	fmt.Fprintf(b, "%s<td class=ac>&nbsp;</td><td class=ac>%d/%d</td><td class=ac>%s</td><td class=ac>%s</td><td class=ac>&nbsp;</td><td>%s</td>",
		htmlStatus(r), weight, uweight, r.h("act"), r.h("bck"), r.h("chkdown"))
	if t := r.age("downtime"); t != "" {
		fmt.Fprintf(b, "<td>%s</td>", t)
	} else {
		b.WriteString("<td class=ac>&nbsp;</td>")
	}
	b.WriteString("<td></td></tr>")
}

// htmlNumber is n as haproxy's page writes numbers (ulltoh_r): the first
// digit of each group of three before the last is in a span of class
// "rls", which the style spaces out: 9984 is `<span class="rls">9</span>984`.
func htmlNumber(n uint64) string {
	digits := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i := range len(digits) {
		k := len(digits) - 1 - i // the digit's place, from the right
		if k > 0 && k%3 == 0 {
			b.WriteString(`<span class="rls">` + digits[i:i+1] + "</span>")
		} else {
			b.WriteByte(digits[i])
		}
	}
	return b.String()
}

// humanTime is seconds as haproxy's human_time writes them: at most two
// units of d, h, m and s, leaving out those that are 0 ("1h", "1h1m",
// "1d5s", "0s").
func humanTime(t uint64) string {
	const minute, hour, day = 60, 3600, 86400
	var b strings.Builder
	left := 2
	if t >= day {
		fmt.Fprintf(&b, "%dd", t/day)
		left--
	}
	if left > 0 && t%day/hour > 0 {
		fmt.Fprintf(&b, "%dh", t%day/hour)
		left--
	}
	if left > 0 && t%hour/minute > 0 {
		fmt.Fprintf(&b, "%dm", t%hour/minute)
		left--
	}
	if (left > 0 && t%minute > 0) || t == 0 {
		fmt.Fprintf(&b, "%ds", t%minute)
	}
	return b.String()
}

// htmlCheckCell is haproxy 2.6.12's LastChk cell for the server's last
// check, as its HTML stats page writes it (measured, check-ssl verify
// none: a server that closes after the ClientHello and one answering in
// plain HTTP give "<u> L6RSP in 3ms<div class=tips>Layer6 invalid
// response: SSL handshake failure</div></u>", one that never answers
// "<u> L6TOUT in 501ms<div class=tips>Layer6 timeout</div></u>"; a
// passed check "<u> L4OK in 0ms<div class=tips>Layer4 check
// passed</div></u>"): the status, "/code" when there is one, the check's
// duration, and a tip with its description and last_chk, HTML-escaped.
func htmlCheckCell(r *statRecord) string {
	esc := html.EscapeString
	var b strings.Builder
	b.WriteString("<u> " + esc(r.text("check_status")))
	if code, ok := r.val("check_code"); ok {
		fmt.Fprintf(&b, "/%d", code)
	}
	if ms, ok := r.val("check_duration"); ok {
		fmt.Fprintf(&b, " in %dms", ms)
	}
	b.WriteString("<div class=tips>" + esc(r.text("check_desc")))
	if info := r.text("last_chk"); info != "" {
		b.WriteString(": " + esc(info))
	}
	b.WriteString("</div></u>")
	return b.String()
}
