package lb

import (
	"testing"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/peers"
)

// TestEnvVariablesMatchHaproxy runs one file whose bind, servers,
// backend name, acl values (one split into words by [*]) and header
// values come from the environment in haproxy 2.6 and in vipstack, with
// the same environment but the port: the same requests reach the same
// origins with the same headers or are denied alike. An unquoted $NAME
// stays text in both.
func TestEnvVariablesMatchHaproxy(t *testing.T) {
	api, web := startOrigin(t, "api"), startOrigin(t, "web")
	const conf = `defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind "127.0.0.1:${VSE_PORT}"
  acl api path_beg "${VSE_API_PREFIX}"
  acl denied path "${VSE_DENY[*]}"
  http-request deny if denied
  http-request set-header X-Route "${VSE_ROUTE}"
  http-request set-header X-Src "fe-${VSE_UNSET-none}-[$VSE_UNSET]"
  http-request set-header X-Backend $VSE_ROUTE
  use_backend "${VSE_API_BE}" if api
  default_backend web
backend api
  server a1 "${VSE_API_ADDR}"
backend web
  server w1 "${VSE_WEB_ADDR-127.0.0.1:1}"
`
	t.Setenv("VSE_API_PREFIX", "/api")
	t.Setenv("VSE_DENY", "/a  /b")
	t.Setenv("VSE_ROUTE", "from env")
	t.Setenv("VSE_API_BE", "api")
	t.Setenv("VSE_API_ADDR", api.addr())
	t.Setenv("VSE_WEB_ADDR", web.addr())
	ports := freePorts(t, 2)
	t.Setenv("VSE_PORT", ports[0])
	peers.HAProxy(t, conf) // haproxy copies the environment as it is now
	t.Setenv("VSE_PORT", ports[1])
	cfg, err := haproxycfg.ParseWith("haproxy.cfg", []byte(conf), haproxycfg.Options{LookupEnv: haproxycfg.SystemEnv})
	if err != nil {
		t.Fatal(err)
	}
	newLBOpts(t, Options{}, cfg)
	waitListening(t, "tcp", "127.0.0.1:"+ports[0])

	reqs := []rawRequest{
		{"default backend", "GET /c HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"acl from the environment", "GET /api/x HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"first word of [*]", "GET /a HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"second word of [*]", "GET /b HTTP/1.1\r\nHost: a.example\r\n\r\n"},
		{"both words are not one", "GET /a%20%20/b HTTP/1.1\r\nHost: a.example\r\n\r\n"},
	}
	want := askBoth(t, reqs, "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1])
	// Guard against both failing alike.
	if a := want[1].Arrived; a == nil || a.Server != "api" || a.Header.Get("X-Route") != "from env" ||
		a.Header.Get("X-Src") != "fe-none-[]" || a.Header.Get("X-Backend") != "$VSE_ROUTE" || want[2].Status != 403 {
		t.Fatalf("haproxy did not answer as the test expects: %+v, %+v", want[1], want[2])
	}
}
