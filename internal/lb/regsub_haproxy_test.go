package lb

import "testing"

// TestRegsubMatchesHaproxy runs the regsub converter in haproxy 2.6 and
// in vipstack: set-path as the openculinary layout writes it, header
// values with the flags g and i, back-references, a bracket inside the
// expression, empty matches, chained converters, a missing header,
// set-var, acls on a converted sample (named and anonymous), an
// http-response value and a redirect: the same requests
// reach the same origins with the same path and headers, and get the
// same answers.
func TestRegsubMatchesHaproxy(t *testing.T) {
	ports := startHTTPPair(t, `defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:{{P0}}
  http-request redirect location %[path,regsub(^/old/,/new/)] if { path_beg /old/ }
  http-request set-header X-Rs-Digits %[path,regsub([0-9]+,N,g)]
  http-request set-header X-Rs-First %[path,regsub(/,_)]
  http-request set-header X-Rs-Case %[req.hdr(x-in),regsub(AB,-,gi)]
  http-request set-header X-Rs-Empty %[req.hdr(x-in),regsub(b*,-,g)]
  http-request set-header X-Rs-Whole %[req.hdr(x-in),regsub(a*,-,g)]
  http-request set-header X-Rs-Chain %[req.hdr(x-in),regsub(a,b),regsub(b,c,g)]
  http-request set-header X-Rs-Missing <%[req.hdr(x-none),regsub(a,b)]>
  http-request set-header X-Rs-Back '%[path,regsub("^/(u)ser/([a-z]+)",/\2/\1)]'
  http-request set-header X-Rs-Hex %[req.hdr(x-in),regsub(a,\x41,g)]
  http-request set-var(txn.host) req.hdr(host),regsub(:[0-9]+$,),regsub(^www\.,)
  http-request set-header X-Rs-Host %[var(txn.host)]
  acl plainhost req.hdr(host),regsub(:[0-9]+$,) example.com
  http-request set-header X-Rs-Acl host if plainhost
  http-request set-header X-Rs-Anon var if { var(txn.host),regsub(^ex,EX) -m beg EXample }
  http-response set-header X-Set %[var(txn.host),regsub(^ex,z)]
  use_backend api if { path_beg /api/ }
  default_backend web
backend api
  http-request set-path %[path,regsub(^/api/,/)]
  server a1 {{A}}
backend web
  server w1 {{W}}
`)

	reqs := []rawRequest{
		{"set-path", "GET /api/v1/items?q=1 HTTP/1.1\r\nHost: www.example.com:8080\r\n\r\n"},
		{"set-path of the prefix alone", "GET /api/ HTTP/1.1\r\nHost: example.com\r\n\r\n"},
		{"digits and slashes", "GET /a12/b3/c HTTP/1.1\r\nHost: x\r\nX-In: abxAbxaB\r\n\r\n"},
		{"empty matches", "GET / HTTP/1.1\r\nHost: x\r\nX-In: abc\r\n\r\n"},
		{"a whole match", "GET / HTTP/1.1\r\nHost: x\r\nX-In: aaa\r\n\r\n"},
		{"back-references", "GET /user/bob/x HTTP/1.1\r\nHost: x\r\nX-In: ab\r\n\r\n"},
		{"redirect", "GET /old/page HTTP/1.1\r\nHost: x\r\n\r\n"},
	}
	want := askBoth(t, reqs, "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1])
	if a := want[0].Arrived; a == nil || a.Server != "api" || a.Path != "/v1/items?q=1" || a.Header.Get("X-Rs-Host") != "example.com" || a.Header.Get("X-Rs-Digits") != "/api/vN/items" {
		t.Fatalf("haproxy did not rewrite as the test expects: %+v", *want[0].Arrived)
	}
}
