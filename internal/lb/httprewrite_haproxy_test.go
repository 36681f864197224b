package lb

import "testing"

const httpRewriteConf = `defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:{{P0}}
  http-request replace-path /strip/(.*) /\1
  http-request replace-path (.*) /pre\1 if { path_beg /addpre }
  http-request replace-uri ^/u/([^?]*)\?(.*)$ /uri/\1?moved=\2
  http-request replace-header X-Rep ^v([0-9]+)$ ver-\1-%[src]
  http-request replace-value X-Val ^a(.*) b\1
  http-response set-header X-Set fe
  http-response replace-header X-Rep ^(.*)-srv$ \1-fe
  use_backend api if { path_beg /api }
  default_backend web
backend web
  http-request replace-header Host ^(.*)\.old$ \1.new
  http-response add-header X-Add be
  http-response del-header X-Del
  http-response replace-value X-Val ^s(.*) t\1
  acl st path_beg /status
  http-response set-status 202 if { method DELETE }
  http-response set-status 203 if st
  http-response set-status 201 if !{ path_beg /status }  { method PUT }
  server w1 {{W}}
backend api
  http-response set-header X-Set api
  http-response replace-header X-Rep ^(.*)$ api-\1
  server a1 {{A}}
`

// TestHTTPRewriteMatchesHaproxy runs http-request replace-path,
// replace-uri, replace-header and replace-value and the http-response
// rules (set-, add-, del-, replace-header, replace-value, set-status) in
// haproxy 2.6 and in vipstack: the same requests arrive at the origins
// with the same path, Host and headers, and the clients get the same
// status and headers back.
func TestHTTPRewriteMatchesHaproxy(t *testing.T) {
	ports := startHTTPPair(t, httpRewriteConf)
	reqs := []rawRequest{
		{"replace-path strips", "GET /strip/a/b?q=1 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"replace-path matches inside", "GET /x/strip/c HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"replace-path with a condition", "GET /addpre/x?k=v HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"replace-path escaped", "GET /strip/a%20b HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"replace-uri", "GET /u/x?y=1 HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"replace-uri no match", "GET /u/x HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"replace-header with a sample", "GET / HTTP/1.1\r\nHost: a.example\r\nX-Rep: v12\r\n\r\n"},
		{"replace-header each line", "GET / HTTP/1.1\r\nHost: a.example\r\nX-Rep: v1\r\nX-Rep: w2\r\nX-Rep: v3\r\n\r\n"},
		{"replace-header whole line", "GET / HTTP/1.1\r\nHost: a.example\r\nX-Rep: v1, v2\r\n\r\n"},
		{"replace-value each value", "GET / HTTP/1.1\r\nHost: a.example\r\nX-Val: a1, x2,a3\r\n\r\n"},
		{"replace-header Host", "GET / HTTP/1.1\r\nHost: site.old\r\n\r\n"},
		{"response rules", "GET / HTTP/1.1\r\nHost: a.example\r\nX-Send: X-Rep: one-srv\r\nX-Send: X-Del: gone\r\nX-Send: X-Val: s1, z2,s3\r\nX-Send: X-Set: origin\r\n\r\n"},
		{"response rules, backend's before frontend's", "GET /api/r HTTP/1.1\r\nHost: a.example\r\nX-Send: X-Rep: r-srv\r\n\r\n"},
		{"set-status", "DELETE /x HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"a request fetch never matches in http-response", "GET /status HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"a request fetch never matches, negated", "PUT /status HTTP/1.1\r\nHost: a.example\r\nContent-Length: 0\r\n\r\n"},
	}
	want := askBoth(t, reqs, "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1])
	if a := want[0].Arrived; a == nil || a.Path != "/a/b?q=1" {
		t.Fatalf("haproxy did not rewrite as the test expects: %+v", want[0])
	}
	if n := len(reqs); want[n-3].Status != 202 || want[n-2].Status != 200 || want[n-1].Status != 201 {
		t.Fatalf("haproxy's set-status answers are not what the test expects: %d %d %d", want[n-3].Status, want[n-2].Status, want[n-1].Status)
	}
}

// TestOriginalToMatchesHaproxy runs option originalto in a frontend and
// in backends (its own header name, an except network) in haproxy 2.6
// and in vipstack: the same header, or none, arrives.
func TestOriginalToMatchesHaproxy(t *testing.T) {
	ports := startHTTPPair(t, `defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:{{P0}}
  option originalto
  use_backend api if { path_beg /api }
  use_backend except if { path_beg /except }
  default_backend web
backend web
  server w1 {{W}}
backend api
  option originalto header X-Dst
  server a1 {{A}}
backend except
  option originalto except 127.0.0.0/8
  server a1 {{A}}
`)
	reqs := []rawRequest{
		{"frontend's", "GET / HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"backend's header name", "GET /api HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"backend's except", "GET /except HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"one already there", "GET / HTTP/1.1\r\nHost: a.example\r\nX-Original-To: 192.0.2.1\r\n\r\n"},
	}
	want := askBoth(t, reqs, "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1])
	if a := want[0].Arrived; a == nil || a.Header.Get("X-Original-To") != "127.0.0.1" {
		t.Fatalf("haproxy did not add X-Original-To as the test expects: %+v", want[0])
	}
}
