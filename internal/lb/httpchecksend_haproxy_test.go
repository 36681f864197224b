package lb

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
)

// checkRequest is what a check's request carried, as a server saw it.
type checkRequest struct {
	Method, Path, Host, Auth, Token, Body string
}

// checkRecorder is a web server for one balancer's checks: it keeps the
// last request per path and passes only requests that carry what each
// backend's rules send, so that a rule left out fails the check.
type checkRecorder struct {
	mu   sync.Mutex
	last map[string]checkRequest
	srv  *httptest.Server
}

func newCheckRecorder(t *testing.T) *checkRecorder {
	r := &checkRecorder{last: map[string]checkRequest{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(q.Body, 1024))
		cr := checkRequest{Method: q.Method, Path: q.URL.Path, Host: q.Host, Auth: q.Header.Get("Authorization"), Token: q.Header.Get("X-Token"), Body: string(body)}
		r.mu.Lock()
		r.last[cr.Path] = cr
		r.mu.Unlock()
		ok := false
		switch cr.Path {
		case "/api":
			ok = cr.Method == "GET" && cr.Host == "localhost" && cr.Auth == "Basic YQ=="
		case "/d", "/port":
			ok = true
		case "/old":
			ok = cr.Method == "HEAD" && cr.Token == "abc"
		case "/b":
			ok = cr.Method == "POST" && cr.Body == "hello"
		}
		if !ok {
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *checkRecorder) requests() map[string]checkRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]checkRequest{}
	for k, v := range r.last {
		out[k] = v
	}
	return out
}

// TestHTTPCheckSendMatchesHaproxy runs haproxy 2.6 and vipstack side by
// side on one file with option httpchk in defaults, http-check send with
// headers and a body, http-check connect port, and headers after option
// httpchk's version, each balancer against its own recording server;
// then compares each server's check_status and what the requests
// carried.
func TestHTTPCheckSendMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	hrec, vrec := newCheckRecorder(t), newCheckRecorder(t)
	dir := t.TempDir()
	closed := closedPort(t).String()
	conf := func(p0 string, rec *checkRecorder) string {
		web := rec.srv.Listener.Addr().String()
		_, webPort, _ := net.SplitHostPort(web)
		return strings.NewReplacer("{{DIR}}", dir, "{{P0}}", p0, "{{WEB}}", web, "{{WEBPORT}}", webPort, "{{CLOSED}}", closed).Replace(`global
  stats socket {{DIR}}/haproxy.sock mode 600 level admin
defaults
  mode tcp
  option httpchk GET /d
  timeout connect 1s
  timeout client 3s
  timeout server 3s
  timeout check 1s
  default-server inter 300ms fall 1 rise 1
frontend fe
  bind 127.0.0.1:{{P0}}
  default_backend fromdefaults
backend fromdefaults
  server s1 {{WEB}} check
backend sendhdr
  option httpchk
  http-check send meth GET uri /api ver HTTP/1.1 hdr Host localhost hdr Authorization "Basic YQ=="
  http-check expect status 200
  server s1 {{WEB}} check
backend wronghdr
  option httpchk
  http-check send meth GET uri /wrong ver HTTP/1.1 hdr Host elsewhere hdr Authorization "Basic YQ=="
  server s1 {{WEB}} check
backend body
  http-check send meth POST uri /b body hello
  server s1 {{WEB}} check
backend oldform
  option httpchk HEAD /old HTTP/1.1\r\nHost:\ h\r\nX-Token:\ abc
  server s1 {{WEB}} check
backend connectport
  option httpchk GET /port
  http-check connect port {{WEBPORT}}
  server s1 {{CLOSED}} check
`)
	}
	names := []string{"fromdefaults", "sendhdr", "wronghdr", "body", "oldform", "connectport"}
	ports := freePorts(t, 1)
	hout := peers.HAProxy(t, conf(ports[0], hrec))
	l := newLBOpts(t, Options{}, parseOnLoopback(t, conf("1", vrec)))

	waitListening(t, "unix", dir+"/haproxy.sock")
	var want, got map[string]string
	deadline := time.Now().Add(bound)
	for want == nil || got == nil {
		if want == nil {
			want = haproxyCheckStatuses(haproxyCommand(t, dir+"/haproxy.sock", "show stat"), len(names))
		}
		if got == nil {
			got = lbCheckStatuses(l, len(names))
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every server checked: haproxy %q, vipstack %q\nhaproxy:\n%s", want, got, hout.String())
		}
		time.Sleep(50 * time.Millisecond) // checks running, bounded
	}
	expected := map[string]string{"fromdefaults": "L7OK", "sendhdr": "L7OK", "wronghdr": "L7STS", "body": "L7OK", "oldform": "L7OK", "connectport": "L7OK"}
	if diff := cmp.Diff(expected, want); diff != "" {
		t.Errorf("haproxy's check_status differs from this test's expectation (-expected +haproxy):\n%s\nhaproxy:\n%s", diff, hout.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("check_status (-haproxy +vipstack):\n%s", diff)
	}
	// The same requests: each HTTP/1.1 one has its own Host header, as
	// vipstack adds one where it has none (healthcheck.HTTP.Request).
	if diff := cmp.Diff(hrec.requests(), vrec.requests()); diff != "" {
		t.Errorf("check requests (-haproxy +vipstack):\n%s", diff)
	}
}
