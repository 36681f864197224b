package lb

import (
	"testing"

	"github.com/vipstack/vipstack/internal/lb/httploop"
)

// TestMisplacedRulesMatchHaproxy runs rules written in another order
// than haproxy runs them (haproxy -c warns "a 'http-request' rule placed
// after a 'redirect' rule will still be processed before.", and the same
// of redirect after use_backend) in haproxy 2.6 and in vipstack: both
// take the http-request rules first, then redirect, then use_backend,
// whatever the file's order, and nothing after an unconditional deny.
func TestMisplacedRulesMatchHaproxy(t *testing.T) {
	for _, engine := range httpEngines {
		t.Run(string(engine), func(t *testing.T) { testMisplacedRulesMatchHaproxy(t, engine) })
	}
}

func testMisplacedRulesMatchHaproxy(t *testing.T, engine httploop.Mode) {
	ports := startHTTPPairOpts(t, `defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:{{P0}}
  use_backend api if { path_beg /api/ }
  redirect prefix /new if { path_beg /api/old/ }
  http-request deny deny_status 403 if { path_beg /api/old/secret }
  http-request set-header X-Set first if { path_beg /api/ }
  default_backend web
backend web
  redirect prefix /moved if { path_beg /web/old/ }
  http-request set-header X-Set web
  http-request deny if { path_beg /web/old/secret }
  http-request deny
  http-request set-header X-Set never
  server w1 {{W}}
backend api
  server a1 {{A}}
`, Options{HTTPEngine: engine})
	reqs := []rawRequest{
		{"deny before redirect and use_backend", "GET /api/old/secret HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"redirect before use_backend", "GET /api/old/page HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"use_backend after the rules", "GET /api/v1 HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"backend: deny before redirect", "GET /web/old/secret HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"backend: unconditional deny ends the rules", "GET /web/old/page HTTP/1.1\r\nHost: x\r\n\r\n"},
	}
	want := askBoth(t, reqs, "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1])
	if want[0].Status != 403 || want[1].Status != 302 || want[2].Arrived == nil || want[2].Arrived.Server != "api" || want[4].Status != 403 {
		t.Fatalf("haproxy did not answer as the test expects: %+v", want)
	}
}
