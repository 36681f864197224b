package lb

import (
	"net/http"
	"testing"
)

// TestHTTPReturnMatchesHaproxy runs `http-request return` in haproxy 2.6
// and in vipstack: a fixed text, no body (status 200 by default, and
// another status), headers and a body from log-formats, a return in a
// backend, and a request the rules let through: the same status, body,
// headers and Content-Type.
func TestHTTPReturnMatchesHaproxy(t *testing.T) {
	ports := startHTTPPair(t, `defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:{{P0}}
  http-request return status 200 content-type text/plain string "ok" if { path /healthz }
  http-request return if { path /bare }
  http-request return status 404 if { path /missing }
  http-request return status 503 content-type text/csv string "a,b" hdr X-Set %[path] hdr X-Add fixed if { path /down }
  http-request return content-type text/plain lf-string "path=%[path] host=%[req.hdr(host)]" if { path_beg /lf }
  use_backend api if { path_beg /api/ }
  default_backend web
backend api
  http-request return status 429 content-type text/plain string "slow down" if { path /api/limited }
  server a1 {{A}}
backend web
  server w1 {{W}}
`)
	reqs := []rawRequest{
		{"a text", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"no body", "GET /bare HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"a status without body", "GET /missing HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"headers", "GET /down HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"lf-string", "GET /lf/page HTTP/1.1\r\nHost: example.com\r\n\r\n"},
		{"in a backend", "GET /api/limited HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"not returned", "GET /api/v1 HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"HEAD", "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"},
	}
	want := askBoth(t, reqs, "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1])
	if want[0].Status != 200 || want[0].Body != "ok" || want[3].Status != 503 || want[4].Body != "path=/lf/page host=example.com" ||
		want[5].Status != 429 || want[6].Arrived == nil {
		t.Fatalf("haproxy did not answer as the test expects: %+v", want)
	}
	for _, path := range []string{"/healthz", "/bare", "/down"} {
		var types [2][]string
		for i, port := range ports {
			resp, err := (&http.Client{Timeout: bound}).Get("http://127.0.0.1:" + port + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			types[i] = resp.Header.Values("Content-Type")
		}
		if len(types[0]) != len(types[1]) || len(types[0]) > 0 && types[0][0] != types[1][0] {
			t.Errorf("%s: Content-Type %q from haproxy, %q from vipstack", path, types[0], types[1])
		}
	}
}
