package lb

import (
	"encoding/csv"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/syncbuf"
)

// TestCheckInfoMatchesHaproxy: what a server answers its HTTP check is
// shown as haproxy 2.6.12 shows it, in the stats' last_chk and in the
// health check's log line, run here beside haproxy on the same servers:
// a reason of control characters, quotes and angle brackets (last_chk
// keeps the bytes, the log line writes them <XX>), a long reason with
// UTF-8 (127 bytes kept, cut within a sequence), an answer that is not
// HTTP and a head past haproxy's buffer (L7RSP, no info in either).
func TestCheckInfoMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	answers := map[string]string{
		"ctl":     "HTTP/1.0 503 <b>\x1b[31m\"q\" \\ #%\x7f\u00e9\r\nContent-Length: 0\r\n\r\n",
		"long":    "HTTP/1.0 503 " + strings.Repeat("A", 100) + strings.Repeat("\u00e9", 20) + strings.Repeat("B", 80) + "\r\nContent-Length: 0\r\n\r\n",
		"garbage": "garbage\r\n\r\n",
		"huge":    "HTTP/1.0 503 " + strings.Repeat("a", 20000) + "\r\nContent-Length: 0\r\n\r\n",
	}
	names := []string{"ctl", "garbage", "huge", "long"}
	r := strings.NewReplacer()
	var pairs []string
	for _, name := range names {
		answer := answers[name]
		addr := startBackendFunc(t, name, func(c net.Conn) {
			c.SetDeadline(time.Now().Add(bound))
			c.Read(make([]byte, 4096)) // the check's request
			c.Write([]byte(answer))
		}).addr.String()
		pairs = append(pairs, "{{"+strings.ToUpper(name)+"}}", addr)
	}
	r = strings.NewReplacer(pairs...)
	dir := t.TempDir()
	conf := func(port string) string {
		return strings.NewReplacer("{{DIR}}", dir, "{{P0}}", port).Replace(r.Replace(`global
  stats socket {{DIR}}/haproxy.sock mode 600 level admin
defaults
  mode tcp
  log stdout format raw local0
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend fe
  bind 127.0.0.1:{{P0}}
  default_backend ctl
backend ctl
  option httpchk GET /
  option log-health-checks
  server s1 {{CTL}} check inter 500ms fall 1 rise 1
backend garbage
  option httpchk GET /
  option log-health-checks
  server s1 {{GARBAGE}} check inter 500ms fall 1 rise 1
backend huge
  option httpchk GET /
  option log-health-checks
  server s1 {{HUGE}} check inter 500ms fall 1 rise 1
backend long
  option httpchk GET /
  option log-health-checks
  server s1 {{LONG}} check inter 500ms fall 1 rise 1
`))
	}
	ports := freePorts(t, 1)
	hout := peers.HAProxy(t, conf(ports[0]))
	var vout syncbuf.Buffer
	l := newLBOpts(t, Options{Stdout: &vout}, parseOnLoopback(t, conf("1")))

	// The stats' check_status, check_code and last_chk: haproxy's from
	// its CSV, vipstack's from the fields its CSV writes them from (its
	// CSV writes a '"' in a field unquoted, where haproxy quotes the
	// field: not this test's matter).
	fields := []string{"check_status", "check_code", "last_chk"}
	// checks reads the servers' check fields from a show stat CSV, or
	// nil until every server has had a check.
	checks := func(out string) map[string][]string {
		recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(out, "# "))).ReadAll()
		if err != nil || len(recs) == 0 {
			return nil
		}
		got := map[string][]string{}
		for _, rec := range recs[1:] {
			if len(rec) != len(recs[0]) || rec[1] != "s1" {
				continue
			}
			var vals []string
			for _, f := range fields {
				vals = append(vals, strings.TrimPrefix(rec[slices.Index(recs[0], f)], "* "))
			}
			if vals[0] == "" || vals[0] == "INI" {
				return nil
			}
			got[rec[0]] = vals
		}
		if len(got) != len(names) {
			return nil
		}
		return got
	}
	// lines reads each backend's first health check line, the duration
	// masked, or nil until every backend has one.
	duration := regexp.MustCompile(`check duration: \d+ms`)
	lines := func(out string) map[string]string {
		got := map[string]string{}
		for _, ln := range strings.Split(out, "\n") {
			ln = strings.Trim(ln, "\x00 ")
			for _, name := range names {
				if _, ok := got[name]; !ok && strings.HasPrefix(ln, "Health check for server "+name+"/s1 ") {
					got[name] = duration.ReplaceAllString(ln, "check duration: Nms")
				}
			}
		}
		if len(got) != len(names) {
			return nil
		}
		return got
	}
	waitListening(t, "unix", dir+"/haproxy.sock")
	var want, got map[string][]string
	var wantLines, gotLines map[string]string
	deadline := time.Now().Add(bound)
	for want == nil || got == nil || wantLines == nil || gotLines == nil {
		if want == nil {
			want = checks(haproxyCommand(t, dir+"/haproxy.sock", "show stat"))
		}
		if got == nil {
			got = vipstackChecks(l, names)
		}
		wantLines, gotLines = lines(hout.String()), lines(vout.String())
		if time.Now().After(deadline) {
			t.Fatalf("not every server checked: haproxy %q %q, vipstack %q %q", want, wantLines, got, gotLines)
		}
		time.Sleep(50 * time.Millisecond) // checks running, bounded
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("check_status, check_code, last_chk (-haproxy +vipstack):\n%s", diff)
	}
	if diff := cmp.Diff(wantLines, gotLines); diff != "" {
		t.Errorf("health check lines (-haproxy +vipstack):\n%s", diff)
	}
	t.Logf("haproxy: %q\n%q", want, wantLines)
}

// vipstackChecks is checks of TestCheckInfoMatchesHaproxy for l: each
// backend's server s1's check_status, check_code and last_chk, or nil
// until every one has had a check.
func vipstackChecks(l *LB, backends []string) map[string][]string {
	got := map[string][]string{}
	for _, b := range l.Snapshot().Backends {
		for _, s := range b.Servers {
			if s.Name != "s1" || !slices.Contains(backends, b.Name) || s.CheckStatus == "" {
				continue
			}
			code := ""
			if s.CheckCode != 0 {
				code = strconv.Itoa(s.CheckCode)
			}
			got[b.Name] = []string{s.CheckStatus, code, s.LastCheck()}
		}
	}
	if len(got) != len(backends) {
		return nil
	}
	return got
}
