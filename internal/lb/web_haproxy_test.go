package lb

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/peers"
)

// pageConfig is a frontend to a backend of three checked servers (m3
// refuses connections: DOWN), a frontend to a backend whose one server,
// unchecked, refuses every connect (retried), and the stats page with
// auth and refresh.
const pageConfig = `global
  stats socket {{DIR}}/haproxy.sock mode 600 level admin
defaults
  mode    tcp
  maxconn 2000
  retries 3
  timeout connect 1s
  timeout client  10s
  timeout server  10s
frontend main
  bind 127.0.0.1:{{FE}}
  default_backend masters
frontend fail
  bind 127.0.0.1:{{FAIL}}
  default_backend broken
backend masters
  balance roundrobin
  server m1 {{M1}} weight 1 check inter 200ms fall 2 rise 3
  server m2 {{M2}} weight 1 check inter 200ms fall 2 rise 3
  server m3 {{M3}} weight 1 check inter 200ms fall 2 rise 3
backend broken
  server b1 {{B1}}
listen stats
  bind 127.0.0.1:{{STATS}}
  mode http
  stats enable
  stats uri /haproxy_stats
  stats refresh 30s
  stats auth Username:Password
`

// pageColumns names the 31 columns of a row of haproxy's stats page.
var pageColumns = []string{"name", "qcur", "qmax", "qlimit", "rate", "rate_max", "rate_lim", "scur", "smax", "slim",
	"stot", "lbtot", "lastsess", "bin", "bout", "dreq", "dresp", "ereq", "econ", "eresp", "wretr", "wredis",
	"status", "lastchk", "weight", "act", "bck", "chk", "dwn", "dwntme", "thrtle"}

// pageRow is one row of a stats page: its class and its cells, a cell
// per column (a cell spanning n columns is followed by n-1 empty ones).
// A cell is its text, digits in haproxy's "rls" span in brackets
// ("[2]000"), then " | " and its tip's text when it has one.
type pageRow struct {
	Class string
	Cells []string
}

// pageRows reads the rows of a stats page by their anchor ("px/m1",
// "px/Frontend", "px/Backend").
func pageRows(t *testing.T, page string) map[string]pageRow {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatalf("stats page: %v", err)
	}
	attr := func(n *html.Node, key string) string {
		for _, a := range n.Attr {
			if a.Key == key {
				return a.Val
			}
		}
		return ""
	}
	// text writes n's text to vis, or to tip inside a div of class tips.
	var text func(n *html.Node, vis, tip *strings.Builder, inTip bool)
	text = func(n *html.Node, vis, tip *strings.Builder, inTip bool) {
		w := vis
		if inTip {
			w = tip
		}
		switch {
		case n.Type == html.TextNode:
			w.WriteString(strings.ReplaceAll(n.Data, "\u00a0", " "))
			return
		case n.Type == html.ElementNode && n.Data == "div" && attr(n, "class") == "tips":
			inTip = true
		case n.Type == html.ElementNode && (n.Data == "th" || n.Data == "td") && inTip:
			w.WriteString(" ")
		case n.Type == html.ElementNode && n.Data == "span" && attr(n, "class") == "rls":
			w.WriteString("[")
			defer w.WriteString("]")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			text(c, vis, tip, inTip)
		}
	}
	rows := map[string]pageRow{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "tr" {
			var row pageRow
			row.Class = attr(n, "class")
			key := ""
			for td := n.FirstChild; td != nil; td = td.NextSibling {
				if td.Type != html.ElementNode || td.Data != "td" {
					continue
				}
				if key == "" {
					for a := td.FirstChild; a != nil; a = a.NextSibling {
						if a.Type == html.ElementNode && a.Data == "a" && attr(a, "name") != "" {
							key = attr(a, "name")
						}
					}
				}
				var vis, tip strings.Builder
				text(td, &vis, &tip, false)
				cell := strings.TrimSpace(vis.String())
				if s := strings.Join(strings.Fields(tip.String()), " "); s != "" {
					cell += " | " + s
				}
				row.Cells = append(row.Cells, cell)
				span, _ := strconv.Atoi(attr(td, "colspan"))
				for i := 1; i < span; i++ {
					row.Cells = append(row.Cells, "")
				}
			}
			if strings.Contains(key, "/") && len(row.Cells) == len(pageColumns) {
				rows[key] = row
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return rows
}

var (
	pageDuration = regexp.MustCompile(`^(\d+d)?(\d+h)?(\d+m)?(\d+s)?$`)
	pageCheckMS  = regexp.MustCompile(` in \d+ms`)
	pageLeadAge  = regexp.MustCompile(`^(\d+[dhms])+ `)
	// pageTimes are the connect and total times of a Total's tip: the
	// test's exchanges' durations on the wall clock (loopback connects of
	// 0 to 2 ms, totals of tens of ms), which no two runs share. The
	// queue time stays: 0 in both, no client ever waits.
	pageTimes = regexp.MustCompile(`(- (Connect|Total) time: )\d+ / \d+ ms`)
)

// maskPageRow hides what must differ between two runs: the status's
// age, the last session's age and the downtime ("T"), the check's
// duration ("in Nms") and haproxy's mark of a check running ("* "), and the times in a Total's tip (vipstack does not
// measure them: the tip is cut where haproxy's "Max / Avg" begins).
func maskPageRow(r pageRow) pageRow {
	cells := slices.Clone(r.Cells)
	for i, c := range cells {
		switch pageColumns[i] {
		case "status":
			c = pageLeadAge.ReplaceAllString(c, "T ")
		case "lastsess", "dwntme":
			if c != "" && c != "?" && pageDuration.MatchString(c) {
				c = "T"
			}
		case "lastchk":
			// haproxy marks a check in progress "* " (vipstack has no
			// such mark).
			c = pageCheckMS.ReplaceAllString(strings.TrimPrefix(c, "* "), " in Nms")
		case "stot":
			c = pageTimes.ReplaceAllString(c, "${1}N / N ms")
		}
		cells[i] = c
	}
	return pageRow{Class: r.Class, Cells: cells}
}

// untipped is haproxy's cell without its tip.
func untipped(haproxy string) string {
	v, _, _ := strings.Cut(haproxy, " | ")
	return v
}

// pageKnown is where vipstack's page differs from haproxy's on purpose:
// by row kind and column, vipstack's cell (after maskPageRow) from
// haproxy's, and why.
// Everything else must be haproxy's, cell by cell.
var pageKnown = []struct {
	kind, column string
	vipstack     func(haproxy string) string
	why          string
}{
	// A server's current sessions: haproxy's tip details the server's
	// connections (used, idle, safe, estimated need, limits); vipstack
	// has no idle pool and shows the count alone.
	{"server", "scur", untipped, "no connection pool: no tip"},
}

// TestStatsPageMatchesHaproxy runs haproxy 2.6 and vipstack on the same
// configuration, sends each the same traffic (two clients served, four
// that reset, two whose server resets, one whose server refuses every
// connect, retried), puts m1 in MAINT, m2 in DRAIN with weight 3, and
// compares their HTML stats pages row by row (each frontend, server and
// backend of the two TCP sections, by anchor) and cell by cell: the
// row's class and each cell's text and tip, with the ages and check
// durations masked. Where vipstack differs on purpose (pageKnown: what it
// does not measure) its cell must be the one listed. haproxy 2.6.12
// answered (measured, masked), for example:
//
//	masters/m1 maintain        ... T MAINT |  | 1/1 | Y | - | 1 Failed Health Checks | 2 | T | -
//	masters/m2 active_draining ... T DRAIN | L4OK in Nms | Layer4 check passed | 3/3 | Y | - ...
//	masters/m3 active_down     ... T DOWN  | L4CON in Nms | Layer4 connection problem: Connection refused ...
//	masters/m1 Errors Resp "1 | Connection resets during transfers: 2 client, 1 server"
//	main/Frontend slim "[2]000", Total "8 | Cum. connections: 8 Cum. sessions: 8"
//	main/Frontend rate_max "8 | Max connection rate: 8/s Max session rate: 8/s"
//	masters/m3 rate_max "0", lastsess "?" (never picked); broken/b1 rate_max "1" (4 attempts)
//	masters/m1 Total "4 | Cum. sessions: 4 Max / Avg over last 1024 success. conn.
//	  - Queue time: 0 / 0 ms - Connect time: N / N ms - Total time: N / N ms"
//
// The rows' whole cells are logged.
func TestStatsPageMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	// m1 and m2 answer a line: "ok" gets "hello" and a close, "hold"
	// gets "held" and waits for the client's end, "rst" a reset.
	handle := func(c net.Conn) {
		c.SetDeadline(time.Now().Add(bound))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return // a check
		}
		switch strings.TrimSpace(line) {
		case "ok":
			io.WriteString(c, "hello\n")
		case "hold":
			io.WriteString(c, "held\n")
			io.Copy(io.Discard, c)
		case "rst":
			c.(*net.TCPConn).SetLinger(0)
		}
	}
	m1, m2 := startBackendFunc(t, "m1", handle), startBackendFunc(t, "m2", handle)
	m3, b1 := closedPort(t), closedPort(t)
	dir := t.TempDir()
	conf := func(fe, fail, stats string) string {
		return strings.NewReplacer("{{DIR}}", dir, "{{FE}}", fe, "{{FAIL}}", fail, "{{STATS}}", stats,
			"{{M1}}", m1.addr.String(), "{{M2}}", m2.addr.String(), "{{M3}}", m3.String(), "{{B1}}", b1.String()).Replace(pageConfig)
	}
	ports := freePorts(t, 3)
	out := peers.HAProxy(t, conf(ports[0], ports[1], ports[2]))
	l := newLBOpts(t, Options{}, parseOnLoopback(t, conf("1", "2", "3")))
	waitListening(t, "tcp", "127.0.0.1:"+ports[2])
	type balancer struct {
		name, fe, fail, stats string
		admin                 func(cmd string)
	}
	sock := dir + "/haproxy.sock"
	lbs := []balancer{
		{"haproxy", "127.0.0.1:" + ports[0], "127.0.0.1:" + ports[1], "127.0.0.1:" + ports[2], func(cmd string) {
			if ans := haproxyCommand(t, sock, cmd); strings.TrimSpace(ans) != "" {
				t.Fatalf("haproxy %q: %q", cmd, ans)
			}
		}},
		{"vipstack", l.Addrs("main")[0].String(), l.Addrs("fail")[0].String(), l.Addrs("stats")[0].String(), func(cmd string) {
			var err error
			switch cmd {
			case "set weight masters/m2 3":
				err = l.SetServerWeight("masters", "m2", 3)
			case "set server masters/m1 state maint":
				err = l.SetServerAdmin("masters", "m1", stats.AdminMaint)
			case "set server masters/m2 state drain":
				err = l.SetServerAdmin("masters", "m2", stats.AdminDrain)
			default:
				err = fmt.Errorf("no such command in the test")
			}
			if err != nil {
				t.Fatalf("vipstack %q: %v", cmd, err)
			}
		}},
	}
	fetch := func(b balancer) map[string]pageRow {
		page, ok := statsFetch(t, b.stats, "")
		if !ok {
			t.Fatalf("%s: stats page failed\n%s", b.name, page)
		}
		return pageRows(t, page)
	}
	wait := func(what string, done func(rows map[string]pageRow) bool) {
		t.Helper()
		deadline := time.Now().Add(bound)
		for _, b := range lbs {
			for rows := fetch(b); !done(rows); rows = fetch(b) {
				if time.Now().After(deadline) {
					t.Fatalf("%s: timed out waiting for %s: %v\n%s", b.name, what, rows, out.String())
				}
				time.Sleep(50 * time.Millisecond) // checks and closes in flight, bounded
			}
		}
	}
	status := func(rows map[string]pageRow, key string) string {
		r, ok := rows[key]
		if !ok {
			return ""
		}
		return pageLeadAge.ReplaceAllString(r.Cells[slices.Index(pageColumns, "status")], "")
	}
	wait("m1, m2 UP, m3 DOWN", func(rows map[string]pageRow) bool {
		return status(rows, "masters/m1") == "UP" && status(rows, "masters/m2") == "UP" && status(rows, "masters/m3") == "DOWN" &&
			strings.HasPrefix(rows["masters/m3"].Cells[slices.Index(pageColumns, "lastchk")], "L4CON")
	})

	// The rates' maxima are the most sessions one period of 1 s counted,
	// the period starting at the first session: all 8 of main's when its
	// exchanges take less than a second on both balancers (they take
	// about 0.2 s), or whatever the second's boundary split otherwise.
	// fail's one client is 1 however long its retries take (haproxy's
	// take 3 s: a second between retries).
	var slow []string
	for _, b := range lbs {
		began := time.Now()
		exchange := func(addr, send string, reset bool) {
			c, err := net.DialTimeout("tcp", addr, bound)
			if err != nil {
				t.Fatalf("%s: %v", b.name, err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(bound))
			if send != "" {
				io.WriteString(c, send+"\n")
			}
			if reset {
				bufio.NewReader(c).ReadString('\n') // "held": the server has it
				c.(*net.TCPConn).SetLinger(0)
				return
			}
			io.Copy(io.Discard, c) // to the end, or the reset
		}
		// Each exchange ends on the balancer before the next starts, so
		// that the maximums do not depend on when a close is seen.
		ended := func(fe string) {
			for deadline := time.Now().Add(bound); ; time.Sleep(10 * time.Millisecond) {
				r, ok := fetch(b)[fe+"/Frontend"]
				if ok && r.Cells[slices.Index(pageColumns, "scur")] == "0" {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: %s's connection did not end: %q", b.name, fe, r.Cells)
				}
			}
		}
		for _, x := range []struct {
			send  string
			reset bool
		}{{"ok", false}, {"ok", false}, {"hold", true}, {"hold", true}, {"hold", true}, {"hold", true}, {"rst", false}, {"rst", false}} {
			exchange(b.fe, x.send, x.reset)
			ended("main")
		}
		if took := time.Since(began); took >= 900*time.Millisecond {
			slow = append(slow, fmt.Sprintf("%s's exchanges took %v", b.name, took))
		}
		// A client that waits without a byte, refused 4 times: wretr 3,
		// econ 1. (One that sends bytes first has them in haproxy's
		// Bytes In always, in vipstack's in some runs only: not compared.)
		exchange(b.fail, "", false)
		ended("fail")
	}
	loose := map[string]bool{}
	if len(slow) > 0 {
		t.Logf("main's and masters' rate_max not compared: %s", strings.Join(slow, ", "))
		for _, k := range []string{"main/Frontend", "masters/m1", "masters/m2", "masters/m3", "masters/Backend"} {
			loose[k+" rate_max"] = true
		}
	} else {
		t.Logf("main's exchanges took under 0.9 s on both: rate_max compared")
	}
	wait("the connections' ends", func(rows map[string]pageRow) bool {
		fe := rows["main/Frontend"].Cells
		return fe[slices.Index(pageColumns, "scur")] == "0" && strings.HasPrefix(fe[slices.Index(pageColumns, "stot")], "8 ") &&
			rows["fail/Frontend"].Cells[slices.Index(pageColumns, "scur")] == "0"
	})
	for _, b := range lbs {
		for _, cmd := range []string{"set weight masters/m2 3", "set server masters/m1 state maint", "set server masters/m2 state drain"} {
			b.admin(cmd)
		}
	}
	wait("MAINT and DRAIN", func(rows map[string]pageRow) bool {
		return status(rows, "masters/m1") == "MAINT" && status(rows, "masters/m2") == "DRAIN"
	})

	// Compare, until they agree or the bound: a counter may lag a close.
	keys := []string{"main/Frontend", "masters/m1", "masters/m2", "masters/m3", "masters/Backend", "fail/Frontend", "broken/b1", "broken/Backend"}
	var diffs []string
	var hrows, vrows map[string]pageRow
	for deadline := time.Now().Add(bound); ; time.Sleep(100 * time.Millisecond) {
		hrows, vrows = fetch(lbs[0]), fetch(lbs[1])
		diffs = comparePageRows(keys, hrows, vrows, loose)
		if len(diffs) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, k := range keys {
		t.Logf("haproxy  %s %s %q", k, hrows[k].Class, maskPageRow(hrows[k]).Cells)
		t.Logf("vipstack %s %s %q", k, vrows[k].Class, maskPageRow(vrows[k]).Cells)
	}
	for _, d := range diffs {
		t.Error(d)
	}
}

// comparePageRows compares the rows named keys of two stats pages, masked:
// the class and every cell, but where pageKnown lists the row's kind and
// column, vipstack's cell must be the one listed; loose's cells ("row
// column") are not compared.
func comparePageRows(keys []string, hrows, vrows map[string]pageRow, loose map[string]bool) []string {
	var diffs []string
	for _, k := range keys {
		h, hok := hrows[k]
		v, vok := vrows[k]
		if !hok || !vok {
			diffs = append(diffs, fmt.Sprintf("%s: on haproxy's page %v, on vipstack's %v", k, hok, vok))
			continue
		}
		h, v = maskPageRow(h), maskPageRow(v)
		if h.Class != v.Class {
			diffs = append(diffs, fmt.Sprintf("%s: class %q, haproxy %q", k, v.Class, h.Class))
		}
		kind := "server"
		if strings.HasSuffix(k, "/Frontend") || strings.HasSuffix(k, "/Backend") {
			kind = strings.ToLower(k[strings.LastIndex(k, "/")+1:])
		}
		for i, col := range pageColumns {
			want := h.Cells[i]
			for _, x := range pageKnown {
				if x.kind == kind && x.column == col {
					want = x.vipstack(want)
				}
			}
			if col == "smax" && v.Cells[i] != want && v.Cells[i] != "" && v.Cells[i] <= want && len(v.Cells[i]) == len(want) {
				// haproxy's maximum counts, in some runs, a session whose
				// client is gone while the next one starts (measured: 2 on
				// main's frontend and one server, the clients one at a time
				// and the frontend at 0 sessions between them); vipstack's
				// may be lower, never higher.
				continue
			}
			if loose[k+" "+col] {
				continue
			}
			if v.Cells[i] != want {
				diffs = append(diffs, fmt.Sprintf("%s %s: %q, want %q (haproxy %q)", k, col, v.Cells[i], want, h.Cells[i]))
			}
		}
	}
	return diffs
}
