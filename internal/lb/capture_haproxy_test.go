package lb

import (
	"bufio"
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// clfLogMask masks what differs between two runs of one request's
// option httplog clf line: the syslog header, the date, the client
// port, the milliseconds, the timings, %B and the connection counts.
var clfLogMask = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`^<(\d+)>\S+ +\d+ \d\d:\d\d:\d\d \S+\[\d+\]: `), "<$1>DATE haproxy[PID]: "},
	{regexp.MustCompile(` \[[^\]]+\] `), " [DATE] "},
	{regexp.MustCompile(`(\d{3}) \d+ "" "" \d+ \d+ `), `$1 B "" "" PORT MS `},
	{regexp.MustCompile(` -?\d+ -?\d+ -?\d+ -?\d+ \d+ (\S{4}) \d+ \d+ `), " TR Tw Tc Tr Ta $1 AC FC "},
	// %Td %Tu: milliseconds that may differ, -1 that must not.
	{regexp.MustCompile(`(T[du])=\d+`), "$1=N"},
}

func maskCLFLog(l string) string {
	l = strings.TrimSuffix(l, "\n")
	for _, m := range clfLogMask {
		l = m.re.ReplaceAllString(l, m.with)
	}
	return l
}

// TestCaptureLogMatchesHaproxy compares the request lines of haproxy and
// vipstack with captured request and answer headers and cookies, in
// option httplog's format (%hr %hs %CC %CS) and in option httplog clf's
// (%hrl %hsl, everything quoted): last occurrences, lengths, absent
// headers, escaped characters, a denied request and a client that sent
// nothing; and %HM %HU %HP %HPO %HQ %HV of an origin-form and an
// absolute-form request.
func TestCaptureLogMatchesHaproxy(t *testing.T) {
	api := startOrigin(t, "api")
	conf := func(sock string, ports []string) string {
		return strings.NewReplacer("{{SOCK}}", sock, "{{P0}}", ports[0], "{{P1}}", ports[1], "{{P2}}", ports[2], "{{P3}}", ports[3], "{{A}}", api.addr()).Replace(`defaults
  mode http
  log {{SOCK}} local0
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:{{P0}}
  option httplog
  capture request header Host len 8
  capture request header X-Long len 4
  capture request header User-Agent len 64
  capture response header X-Resp len 10
  capture response header Content-Type len 32
  capture cookie SESS len 12
  http-request deny if { path /deny }
  default_backend api
frontend clf
  bind 127.0.0.1:{{P1}}
  option httplog clf
  capture request header Host len 20
  capture request header X-Missing len 5
  capture response header X-Resp len 10
  capture cookie SE len 20
  default_backend api
frontend clfnocap
  bind 127.0.0.1:{{P2}}
  option httplog clf
  default_backend api
frontend paths
  bind 127.0.0.1:{{P3}}
  log-format "%HM %HU %HP %HPO %HQ %HV %{+Q}HPO %ci Td=%Td Tu=%Tu"
  default_backend api
backend api
  server a1 {{A}}
`)
	}
	hlog, vlog, hports, vports := startHaproxyAndLB(t, 4, conf)
	reqs := []string{
		"GET /a HTTP/1.1\r\nHost: a.example.long\r\nX-Long: abcdefgh\r\nUser-Agent: x\"y{z|w}#\r\nCookie: other=1; SESSION=abcdefghijklmnop\r\nX-Send: X-Resp: r1\r\nX-Send: Set-Cookie: SESSX=val; Path=/\r\n\r\n",
		"GET /b HTTP/1.1\r\nHost: b\r\nX-Long: 1\r\nX-Long: 22\r\nCookie: SESS=1\r\nX-Send: X-Resp: first\r\nX-Send: X-Resp: second-and-long\r\n\r\n",
		"GET /c HTTP/1.1\r\nHost: c\r\nX-Long:\r\nCookie: SE\r\n\r\n",
		"GET /deny HTTP/1.1\r\nHost: d\r\nCookie: SESS=2\r\n\r\n",
	}
	// The paths frontend: an absolute-form request too.
	abs := "GET http://a.example/x/y?q=1 HTTP/1.1\r\nHost: a.example\r\n\r\n"
	for _, p := range []struct {
		ports []string
		log   *logReader
	}{{hports, hlog}, {vports, vlog}} {
		n := 0
		for i, port := range p.ports {
			// The probe: a client that connects and closes.
			waitListening(t, "tcp", "127.0.0.1:"+port)
			n++ // every line so far, this probe's too
			p.log.waitForN(t, port, "", n)
			for _, raw := range reqs {
				if i >= 2 && raw != reqs[0] {
					continue
				}
				c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, bound)
				if err != nil {
					t.Fatal(err)
				}
				ask(t, c, bufio.NewReader(c), raw)
				c.Close()
				n++
				p.log.waitForN(t, port, "", n)
			}
			if i == 3 {
				c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, bound)
				if err != nil {
					t.Fatal(err)
				}
				ask(t, c, bufio.NewReader(c), abs)
				c.Close()
				n++
				p.log.waitForN(t, port, "", n)
			}
		}
	}
	var want, got []string
	for _, l := range hlog.lines() {
		want = append(want, maskCLFLog(maskHTTPLog(l)))
	}
	for _, l := range vlog.lines() {
		got = append(got, maskCLFLog(maskHTTPLog(l)))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log lines (-haproxy +vipstack):\n%s", diff)
	}
	if len(want) < 10 || !strings.Contains(strings.Join(want, "\n"), "{a.exampl|abcd|") {
		t.Errorf("haproxy's lines are not what the test expects:\n%s", strings.Join(want, "\n"))
	}
}
