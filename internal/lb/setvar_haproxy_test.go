package lb

import (
	"testing"

	"github.com/vipstack/vipstack/internal/lb/httploop"
)

// TestSetVarMatchesHaproxy runs http-request set-var and var() (in acls
// with -m str, reg and found, and in header values, in the frontend and
// the backend) in haproxy 2.6 and in vipstack, as the VyOS layout does
// (set-var(txn.txnhost) hdr(host), acls on var(txn.txnhost)): the same
// requests reach the same origins with the same headers.
func TestSetVarMatchesHaproxy(t *testing.T) {
	for _, engine := range httpEngines {
		t.Run(string(engine), func(t *testing.T) { testSetVarMatchesHaproxy(t, engine) })
	}
}

func testSetVarMatchesHaproxy(t *testing.T, engine httploop.Mode) {
	ports := startHTTPPairOpts(t, `defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:{{P0}}
  acl app var(txn.host) -m str -i app.example
  acl app_re var(txn.host) -m reg -i ^app\.example(:[0-9]+)?$
  acl tagged var(req.tag) -m found
  acl late var(txn.late) -m found
  http-request set-var(txn.host) hdr(host)
  http-request set-var(req.tag) req.hdr(x-tag)
  http-request set-var(txn.lit) str(fixed) if { path_beg /lit }
  http-request set-header X-Route %[var(txn.host)]/%[var(txn.lit)]/%[var(req.tag)]
  http-request set-header X-Src %[var(txn.late)]
  use_backend api if app app_re
  use_backend api if tagged late
  default_backend web
backend api
  http-request set-header X-Backend %[var(txn.host)]
  server a1 {{A}}
backend web
  http-request set-var(txn.late) path
  http-request set-header X-Backend web-%[var(txn.late)]
  server w1 {{W}}
`, Options{HTTPEngine: engine})

	reqs := []rawRequest{
		{"host in a variable", "GET /x HTTP/1.1\r\nHost: APP.example\r\n\r\n"},
		{"host with a port", "GET /x HTTP/1.1\r\nHost: app.example:8080\r\n\r\n"},
		{"other host", "GET /lit/y HTTP/1.1\r\nHost: b.example\r\n\r\n"},
		{"tagged, not yet late", "GET /z HTTP/1.1\r\nHost: b.example\r\nX-Tag: t1\r\n\r\n"},
		{"last header occurrence", "GET /z HTTP/1.1\r\nHost: b.example\r\nX-Tag: t1\r\nX-Tag: t2, t3\r\n\r\n"},
	}
	want := askBoth(t, reqs, "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1])
	if a := want[0].Arrived; a == nil || a.Server != "api" || a.Header.Get("X-Backend") != "APP.example" {
		t.Fatalf("haproxy did not route as the test expects: %+v", want[0])
	}
}
