package lb

import (
	"bufio"
	"crypto/tls"
	"encoding/csv"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
)

// TestCheckDialectsMatchHaproxy runs haproxy 2.6 and vipstack side by
// side on one file using listen sections that forward, default-server,
// option tcp-check with a send/expect dialogue, option ssl-hello-chk,
// option redis-check, option pgsql-check, http-check expect string and
// http-check expect status and rstatus, two check
// options in one backend (the last wins), against the same servers, and
// compares each server's check_status (and the redis checks' info); then
// a client goes through each balancer's forwarding listen.
func TestCheckDialectsMatchHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	// A Redis-like server: +PONG to PING (inline, or in RESP as
	// redis-check sends it), -ERR to anything else.
	redis := startBackendFunc(t, "redis", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(bound))
		r := bufio.NewReader(c)
		line, err := r.ReadString('\n')
		if line == "*1\r\n" {
			n, _ := r.ReadString('\n')
			cmd, _ := r.ReadString('\n')
			line = n + cmd
		}
		switch {
		case line == "PING\r\n" || line == "$4\r\nPING\r\n":
			c.Write([]byte("+PONG\r\n"))
		case err == nil:
			c.Write([]byte("-ERR unknown\r\n"))
		}
	}).addr.String()
	greeter := startBackendFunc(t, "greeter", func(c net.Conn) {
		c.Write([]byte("hello from greeter\n"))
	}).addr.String()
	// A PostgreSQL that takes the user, and one that refuses it: each
	// reads the startup message whole (23 bytes for user postgres).
	pg := func(answer []byte) string {
		return startBackendFunc(t, "pg", func(c net.Conn) {
			c.SetDeadline(time.Now().Add(bound))
			io.ReadFull(c, make([]byte, 23))
			c.Write(answer)
		}).addr.String()
	}
	pgOK := pg([]byte{'R', 0, 0, 0, 8, 0, 0, 0, 0})
	pgFatal := pg(append([]byte{'E', 0, 0, 0, 40}, "SFATAL\x00VFATAL\x00C28000\x00Mno pg_hba.conf entry\x00\x00"...))
	// A Redis that wants a password: it reads the PING whole (no reset
	// for unread bytes) and refuses it.
	noauth := startBackendFunc(t, "noauth", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(bound))
		io.ReadFull(c, make([]byte, len("*1\r\n$4\r\nPING\r\n")))
		c.Write([]byte("-NOAUTH Authentication required.\r\n"))
	}).addr.String()
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
	tlsSrv.TLS = &tls.Config{}
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/", http.StatusFound)
		case "/ready":
			w.WriteHeader(http.StatusServiceUnavailable) // the body decides
			w.Write([]byte("status: ready\n"))
		}
	}))
	defer web.Close()

	dir := t.TempDir()
	conf := func(p0, p1 string) string {
		return strings.NewReplacer("{{DIR}}", dir, "{{P0}}", p0, "{{P1}}", p1, "{{REDIS}}", redis, "{{GREETER}}", greeter, "{{NOAUTH}}", noauth, "{{PGOK}}", pgOK, "{{PGFATAL}}", pgFatal,
			"{{TLS}}", tlsSrv.Listener.Addr().String(), "{{WEB}}", web.Listener.Addr().String()).Replace(`global
  stats socket {{DIR}}/haproxy.sock mode 600 level admin
defaults
  mode http
  option httplog
  timeout connect 1s
  timeout client 3s
  timeout server 3s
  timeout check 1s
  default-server inter 300ms fall 1 rise 1
listen ping
  bind 127.0.0.1:{{P0}}
  mode tcp
  option tcp-check
  tcp-check send PING\r\n
  tcp-check expect string +PONG
  server s1 {{REDIS}} check
listen wrongword
  bind 127.0.0.1:{{P1}}
  mode tcp
  option tcp-check
  tcp-check send PING\r\n
  tcp-check expect string +OK
  server s1 {{REDIS}} check
backend hello
  mode tcp
  option ssl-hello-chk
  server s1 {{TLS}} check
backend hellofail
  mode tcp
  option ssl-hello-chk
  server s1 {{REDIS}} check
backend expect200
  mode tcp
  option httpchk GET /moved
  http-check expect status 200
  server s1 {{WEB}} check
backend expect3xx
  mode tcp
  option httpchk GET /moved
  http-check expect status 300-399
  server s1 {{WEB}} check
backend rstatus3xx
  mode tcp
  option httpchk GET /moved
  http-check expect rstatus (2|3)[0-9][0-9]
  server s1 {{WEB}} check
backend rstatus2xx
  mode tcp
  option httpchk GET /moved
  http-check expect rstatus ^2
  server s1 {{WEB}} check
backend greet
  mode tcp
  default-server inter 200ms
  server s1 {{GREETER}} check
backend lastssl
  mode tcp
  option httpchk GET /healthz
  http-check expect status 200
  option ssl-hello-chk
  server s1 {{TLS}} check
backend lasthttp
  mode tcp
  option ssl-hello-chk
  option httpchk GET /moved
  http-check expect status 300-399
  server s1 {{WEB}} check
backend redisok
  mode tcp
  option redis-check
  server s1 {{REDIS}} check
backend redisfail
  mode tcp
  option redis-check
  server s1 {{NOAUTH}} check
backend pgok
  mode tcp
  option pgsql-check user postgres
  server s1 {{PGOK}} check
backend pgfail
  mode tcp
  option pgsql-check user postgres
  server s1 {{PGFATAL}} check
backend bodyok
  mode tcp
  option httpchk GET /ready
  http-check expect string ready
  server s1 {{WEB}} check
backend bodyunwanted
  mode tcp
  option httpchk GET /ready
  http-check expect ! rstring ^status:\ r
  server s1 {{WEB}} check
backend bodyempty
  mode tcp
  option httpchk GET /
  http-check expect string ready
  server s1 {{WEB}} check
`)
	}
	names := []string{"ping", "wrongword", "hello", "hellofail", "expect200", "expect3xx", "rstatus3xx", "rstatus2xx", "greet", "lastssl", "lasthttp", "redisok", "redisfail", "pgok", "pgfail", "bodyok", "bodyunwanted", "bodyempty"}
	ports := freePorts(t, 2)
	hout := peers.HAProxy(t, conf(ports[0], ports[1]))
	l := newLBOpts(t, Options{}, parseOnLoopback(t, conf("1", "2")))

	statuses := func(out string) map[string]string { return haproxyCheckStatuses(out, len(names)) }
	mine := func() map[string]string { return lbCheckStatuses(l, len(names)) }
	waitListening(t, "unix", dir+"/haproxy.sock")
	var want, got map[string]string
	deadline := time.Now().Add(bound)
	for want == nil || got == nil {
		if want == nil {
			want = statuses(haproxyCommand(t, dir+"/haproxy.sock", "show stat"))
		}
		if got == nil {
			got = mine()
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every server checked: haproxy %q, vipstack %q\nhaproxy:\n%s", want, got, hout.String())
		}
		time.Sleep(50 * time.Millisecond) // checks running, bounded
	}
	// What each dialect should give, so that agreeing on a wrong
	// answer fails too.
	expected := map[string]string{"ping": "L7OK", "wrongword": "L7RSP", "hello": "L6OK", "hellofail": "L6RSP",
		"expect200": "L7STS", "expect3xx": "L7OK", "rstatus3xx": "L7OK", "rstatus2xx": "L7STS", "greet": "L4OK", "lastssl": "L6OK", "lasthttp": "L7OK",
		"redisok": "L7OK", "redisfail": "L7STS", "pgok": "L7OK", "pgfail": "L7RSP", "bodyok": "L7OK", "bodyunwanted": "L7RSP", "bodyempty": "L7RSP"}
	if diff := cmp.Diff(expected, want); diff != "" {
		t.Errorf("haproxy's check_status differs from this test's expectation (-expected +haproxy):\n%s", diff)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("check_status (-haproxy +vipstack):\n%s", diff)
	}
	// The redis, pgsql and body checks' info, haproxy's last_chk.
	hinfo := haproxyCheckColumn(haproxyCommand(t, dir+"/haproxy.sock", "show stat"), "s1", "last_chk")
	vinfo := map[string]string{}
	for _, b := range l.Snapshot().Backends {
		for _, s := range b.Servers {
			vinfo[b.Name] = s.CheckInfo
		}
	}
	for _, name := range []string{"redisok", "redisfail", "pgok", "pgfail", "bodyok", "bodyunwanted", "bodyempty"} {
		if hinfo[name] != vinfo[name] {
			t.Errorf("%s: check info %q in haproxy, %q in vipstack", name, hinfo[name], vinfo[name])
		}
	}
	// The forwarding listen "ping" carries a client to the server in
	// both.
	for who, addr := range map[string]string{"haproxy": "127.0.0.1:" + ports[0], "vipstack": l.Addrs("ping")[0].String()} {
		c, err := net.DialTimeout("tcp", addr, bound)
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		c.SetDeadline(time.Now().Add(bound))
		c.Write([]byte("PING\r\n"))
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if line != "+PONG\r\n" {
			t.Errorf("%s: listen ping answered %q, want +PONG", who, line)
		}
	}
}

// haproxyCheckStatuses reads each backend's server s1 check status from
// haproxy's `show stat` CSV; nil until all n backends have a result.
func haproxyCheckStatuses(out string, n int) map[string]string {
	recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(out, "# "))).ReadAll()
	if err != nil || len(recs) == 0 {
		return nil
	}
	col := slices.Index(recs[0], "check_status")
	got := map[string]string{}
	for _, rec := range recs[1:] {
		if len(rec) == len(recs[0]) && rec[1] == "s1" {
			st := strings.TrimPrefix(rec[col], "* ")
			if st == "" || st == "INI" {
				return nil
			}
			got[rec[0]] = st
		}
	}
	if len(got) != n {
		return nil
	}
	return got
}

// lbCheckStatuses is the same from l's snapshot: each backend's check
// status; nil until all n backends have one.
func lbCheckStatuses(l *LB, n int) map[string]string {
	got := map[string]string{}
	for _, b := range l.Snapshot().Backends {
		for _, s := range b.Servers {
			if s.CheckStatus != "" {
				got[b.Name] = s.CheckStatus
			}
		}
	}
	if len(got) != n {
		return nil
	}
	return got
}

// haproxyCheckColumn reads one column of each backend's server named
// server from haproxy's `show stat` CSV, by backend.
func haproxyCheckColumn(out, server, column string) map[string]string {
	recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(out, "# "))).ReadAll()
	if err != nil || len(recs) == 0 {
		return nil
	}
	col := slices.Index(recs[0], column)
	got := map[string]string{}
	for _, rec := range recs[1:] {
		if col >= 0 && len(rec) == len(recs[0]) && rec[1] == server {
			got[rec[0]] = rec[col]
		}
	}
	return got
}
