package lb

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestListenRequestLogMatchesHaproxy: a stats and a monitor listen under
// defaults' option httplog, then option tcplog, log each stream as
// haproxy 2.6 does (dates, ports, durations and the stats page's size
// masked): the page (LR), the password prompt (logged 400), another URI
// (SC), a post without stats admin (303), a client that connects and
// closes (CR), garbage (PR), a silent client (cR at timeout
// http-request), the monitor's URI (no line) and another URI of the
// monitor (SC).
func TestListenRequestLogMatchesHaproxy(t *testing.T) {
	for _, format := range []string{"httplog", "tcplog"} {
		t.Run(format, func(t *testing.T) {
			conf := func(sock string, ports []string) string {
				return strings.NewReplacer("{{SOCK}}", sock, "{{P0}}", ports[0], "{{P1}}", ports[1], "{{FORMAT}}", format).Replace(`defaults
  mode http
  log {{SOCK}} local0
  option {{FORMAT}}
  timeout connect 1s
  timeout client 3s
  timeout server 3s
  timeout http-request 500ms
listen stats
  bind 127.0.0.1:{{P0}}
  stats enable
  stats uri /st
  stats auth u:p
listen mon
  bind 127.0.0.1:{{P1}}
  monitor-uri /ready
`)
			}
			hlog, vlog, hports, vports := startHaproxyAndLB(t, 2, conf)
			run := func(ports []string) {
				st, mon := "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1]
				waitListening(t, "tcp", mon) // a connection that closes: a CR line, as below
				get := func(addr, method, path string, auth bool) {
					req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(""))
					if auth {
						req.SetBasicAuth("u", "p")
					}
					c := &http.Client{Timeout: bound, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
						Transport: &http.Transport{DisableKeepAlives: true}}
					resp, err := c.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				get(st, "GET", "/st", true)
				get(st, "GET", "/st", false)
				get(st, "GET", "/other", true)
				get(st, "POST", "/st", true)
				exchange(t, st, "")
				exchange(t, st, "garbage\r\n\r\n")
				c, err := net.DialTimeout("tcp", st, bound)
				if err != nil {
					t.Fatal(err)
				}
				c.SetDeadline(time.Now().Add(bound))
				io.Copy(io.Discard, c) // answered 408 at timeout http-request
				c.Close()
				get(mon, "GET", "/ready", false)
				get(mon, "GET", "/other", false)
			}
			run(hports)
			run(vports)
			for _, w := range []struct {
				who string
				r   *logReader
			}{{"haproxy", hlog}, {"vipstack", vlog}} {
				w.r.waitForN(t, w.who, "stats stats/", 7)
				w.r.waitForN(t, w.who, "mon mon/", 2)
			}
			if diff := cmp.Diff(maskRequestLines(hlog.lines()), maskRequestLines(vlog.lines())); diff != "" {
				t.Errorf("request lines (-haproxy +vipstack):\n%s", diff)
			}
		})
	}
}

var (
	reqLogDate    = regexp.MustCompile(`\[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d\.\d{3}\]`)
	reqLogTimes   = regexp.MustCompile(`( [-\d]+(/[-\d]+){2,4}) `)
	reqLogNumber  = regexp.MustCompile(`\d+`)
	reqLogPageLen = regexp.MustCompile(`^(.* 200 )\d+( .*)$`)
	reqLogTCPPage = regexp.MustCompile(`^(.* stats/<STATS> N/N/N )\d+( LR .*)$`)
)

// maskRequestLines keeps the lines of the stats and mon sections, with
// the date, the ports, the durations (not their -1s) and the page's size
// masked, sorted: a client that connects and closes is logged when its
// close is seen, which may come after the next client's line.
func maskRequestLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		m := maskDatagram(l)
		if !strings.Contains(m, "stats stats/") && !strings.Contains(m, "mon mon/") {
			continue
		}
		m = reqLogDate.ReplaceAllString(m, "[DATE]")
		m = reqLogTimes.ReplaceAllStringFunc(m, func(s string) string {
			return reqLogNumber.ReplaceAllStringFunc(s, func(n string) string { return "N" })
		})
		m = reqLogPageLen.ReplaceAllString(m, "${1}LEN$2")
		m = reqLogTCPPage.ReplaceAllString(m, "${1}LEN$2")
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}
