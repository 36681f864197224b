package lb

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
)

// TestStatsAdminMatchesHaproxy: with `stats admin if TRUE`, `stats
// realm`, show-node, show-desc and show-legends, haproxy 2.6 and vipstack
// ask for the password in the same realm, and take the same admin form
// post (maint, ready, drain, shutdown) with the same redirect, leaving
// the servers in the same state; a post naming no server gets NONE from
// both.
func TestStatsAdminMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	a, b := startBackend(t, "a"), startBackend(t, "b")
	conf := func(fe, stats string) string {
		return strings.NewReplacer("{{A}}", a.addr.String(), "{{B}}", b.addr.String(), "{{FE}}", fe, "{{STATS}}", stats).Replace(`defaults
  mode tcp
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:{{FE}}
  default_backend be
backend be
  server a {{A}}
  server b {{B}}
listen stats
  bind 127.0.0.1:{{STATS}}
  mode http
  timeout client 3s
  stats enable
  stats uri /st
  stats realm Haproxy\ Statistics
  stats auth admin:pw
  stats admin if TRUE
  stats show-node
  stats show-desc Stats for the cluster
  stats show-legends
`)
	}
	ports := freePorts(t, 2)
	port := ports[1]
	peers.HAProxy(t, conf(ports[0], port))
	l := newLBOpts(t, Options{}, parseOnLoopback(t, conf("1", "2")))
	targets := map[string]string{"haproxy": "127.0.0.1:" + port, "vipstack": l.Addrs("stats")[0].String()}
	noRedirect := &http.Client{Timeout: bound, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(addr, form string) string {
		req, _ := http.NewRequest("POST", "http://"+addr+"/st", strings.NewReader(form))
		req.SetBasicAuth("admin", "pw")
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return fmt.Sprint(resp.StatusCode, " ", resp.Header.Get("Location"))
	}
	status := func(addr string) string {
		req, _ := http.NewRequest("GET", "http://"+addr+"/st;csv", nil)
		req.SetBasicAuth("admin", "pw")
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		recs, _ := csv.NewReader(bufio.NewReader(resp.Body)).ReadAll()
		if len(recs) == 0 {
			return ""
		}
		col := slices.Index(recs[0], "status")
		var out []string
		for _, r := range recs[1:] {
			if len(r) > col && r[0] == "be" && r[1] != "BACKEND" {
				out = append(out, r[1]+"="+r[col])
			}
		}
		return strings.Join(out, ",")
	}
	got := map[string][]string{}
	for who, addr := range targets {
		var resp *http.Response
		var err error
		for deadline := time.Now().Add(bound); ; time.Sleep(20 * time.Millisecond) { // haproxy starting, bounded
			if resp, err = http.Get("http://" + addr + "/st"); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		// The backend's number: haproxy's is 2 (fe 1, be 2, stats 3).
		iid := "%232"
		o := []string{resp.Header.Get("Www-Authenticate")}
		o = append(o, post(addr, "s=a&action=maint&b="+iid), status(addr))
		o = append(o, post(addr, "s=a&action=ready&b="+iid), status(addr))
		o = append(o, post(addr, "s=a&s=b&action=drain&b=be"), status(addr))
		o = append(o, post(addr, "s=a&s=b&action=ready&b="+iid), status(addr))
		o = append(o, post(addr, "action=maint&b="+iid))
		// A relayed connection killed from the page.
		cl, err := net.DialTimeout("tcp", l.Addrs("fe")[0].String(), bound)
		if who == "vipstack" && err == nil {
			cl.SetDeadline(time.Now().Add(bound))
			r := bufio.NewReader(cl)
			srv, _ := r.ReadString('\n')
			o = append(o, post(addr, url.Values{"s": {strings.TrimSpace(srv)}, "action": {"shutdown"}, "b": {"be"}}.Encode()))
			_, err := r.ReadByte()
			o = append(o, fmt.Sprint("killed: ", err != nil))
			cl.Close()
		}
		got[who] = o
	}
	want := []string{`Basic realm="Haproxy Statistics"`,
		"303 /st;st=DONE", "a=MAINT,b=no check",
		"303 /st;st=DONE", "a=no check,b=no check",
		"303 /st;st=DONE", "a=DRAIN,b=DRAIN",
		"303 /st;st=DONE", "a=no check,b=no check",
		"303 /st;st=NONE"}
	if diff := cmp.Diff(want, got["haproxy"]); diff != "" {
		t.Errorf("haproxy differs from this test's expectation (-want +haproxy):\n%s", diff)
	}
	if diff := cmp.Diff(append(slices.Clone(got["haproxy"]), "303 /st;st=DONE", "killed: true"), got["vipstack"]); diff != "" {
		t.Errorf("(-haproxy +vipstack):\n%s", diff)
	}
	// What show-node, show-desc, show-legends and the admin form add to
	// vipstack's own page.
	req, _ := http.NewRequest("GET", "http://"+targets["vipstack"]+"/st", nil)
	req.SetBasicAuth("admin", "pw")
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	host, _ := os.Hostname()
	for _, want := range []string{"<p>Node: " + host + "</p>", "<p>Description: Stats for the cluster</p>", "active UP, going down",
		`<form method="post" action="/st"><input type="hidden" name="b" value="#2">`, `<option value="maint">`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("vipstack's page lacks %q", want)
		}
	}
}
