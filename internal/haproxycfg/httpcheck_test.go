package haproxycfg

import (
	"errors"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestHTTPCheckSend: option httpchk in defaults, http-check connect and
// send, and the older headers after option httpchk's version; each case
// is also given to haproxy -c, which must accept it with the same
// warnings.
func TestHTTPCheckSend(t *testing.T) {
	const srv = "  server m0 127.0.0.1:47012 check\n"
	get := func(c *lbconfig.Config) any { return c.Backends[0].Check }
	hdr := func(kv ...string) []lbconfig.HTTPCheckHeader {
		var out []lbconfig.HTTPCheckHeader
		for i := 0; i < len(kv); i += 2 {
			out = append(out, lbconfig.HTTPCheckHeader{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	runAccept(t, []acceptCase{
		{name: "defaults option httpchk is inherited",
			conf: func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  option httpchk GET /d\n") },
			get:  get, want: lbconfig.HTTPCheck{Method: "GET", URI: "/d", Version: "HTTP/1.0"}},
		{name: "defaults option httpchk, send overrides method and uri",
			conf: func(t *testing.T) string {
				return strings.Replace(edit(t, srv, "  http-check send meth HEAD uri /x\n"+srv), "  mode tcp\n", "  mode tcp\n  option httpchk GET /d\n", 1)
			},
			get: get, want: lbconfig.HTTPCheck{Method: "HEAD", URI: "/x", Version: "HTTP/1.0"}},
		{name: "defaults option httpchk, backend tcp-check wins",
			conf: func(t *testing.T) string {
				return strings.Replace(edit(t, srv, "  option tcp-check\n"+srv), "  mode tcp\n", "  mode tcp\n  option httpchk GET /d\n", 1)
			},
			get: get, want: lbconfig.HTTPCheck{}},
		{name: "connect, send with headers and body, expect",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  option httpchk\n  http-check connect port 47013\n"+
					"  http-check send meth GET uri /api ver HTTP/1.1 hdr Host localhost hdr Authorization \"Basic YQ==\" body hi\n"+
					"  http-check expect status 200\n"+srv)
			},
			get: get, want: lbconfig.HTTPCheck{Method: "GET", URI: "/api", Version: "HTTP/1.1", ExpectStatus: "200",
				Headers: hdr("Host", "localhost", "Authorization", "Basic YQ=="), Body: "hi", Connect: true, ConnectPort: 47013}},
		{name: "headers after the version, haproxy's older form",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  option httpchk HEAD /i HTTP/1.1\\r\\nUser-Agent:\\ HAProxy\\r\\nHost:\\\n"+srv)
			},
			get: get, want: lbconfig.HTTPCheck{Method: "HEAD", URI: "/i", Version: "HTTP/1.1", Headers: hdr("User-Agent", "HAProxy", "Host", "\\")},
			wantWarnings: []string{"h.cfg:10: 'option httpchk' : hiding headers or body at the end of the version string is deprecated. Please, consider to use 'http-check send' directive instead."}},
		{name: "rules without option httpchk are ignored with haproxy's warning",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  http-check connect\n  http-check send meth GET uri /a\n  http-check send hdr Host h\n  http-check expect status 200\n"+srv)
			},
			get: get, want: lbconfig.HTTPCheck{},
			wantWarnings: []string{"h.cfg:10: backend 'masters' uses http-check rules without 'option httpchk', so the rules are ignored."}},
	})
}

// TestHTTPCheckSendErrors: what haproxy refuses, and what vipstack does
// not implement, each named.
func TestHTTPCheckSendErrors(t *testing.T) {
	const srv = "  server m0 127.0.0.1:47012 check\n"
	tests := []struct {
		name, conf, want string
		haproxy          string
	}{
		{name: "second send before an expect",
			conf:    "  option httpchk\n  http-check send meth GET uri /a\n  http-check send hdr Host h\n" + srv,
			want:    "h.cfg:12: 'http-check send' : unable to add http-check send rule (missing connect rule): a second send rule before an expect rule (accepted: one http-check send line, with all its hdr parts, then http-check expect)",
			haproxy: haproxyRejects},
		{name: "log-format uri",
			conf:    "  option httpchk\n  http-check send uri-lf /%[dst]\n" + srv,
			want:    "h.cfg:11: http-check send: \"uri-lf\" is not supported by vipstack (accepted: meth, uri, ver, hdr, body; log-format values (uri-lf, body-lf) are not)",
			haproxy: haproxyAccepts},
		{name: "hdr without a value",
			conf: "  option httpchk\n  http-check send hdr Host\n" + srv,
			want: "h.cfg:11: http-check send: hdr needs 2 value(s) (accepted: " + httpCheckAccepted + ")"},
		{name: "connect over TLS",
			conf:    "  option httpchk\n  http-check connect ssl\n  server m0 127.0.0.1:47012 check verify none\n",
			want:    "h.cfg:11: http-check connect: \"ssl\" is not supported by vipstack (accepted: http-check connect [port PORT] [default])",
			haproxy: haproxyAccepts},
		{name: "connect port out of range",
			conf: "  option httpchk\n  http-check connect port 70000\n" + srv,
			want: "h.cfg:11: http-check connect port 70000 is out of range (accepted: 1..65535)"},
		{name: "header line without a colon after the version",
			conf: "  option httpchk GET / HTTP/1.0\\r\\nfoo\n" + srv,
			want: "h.cfg:10: option httpchk: header line \"foo\" after the version has no ':' (accepted: NAME: VALUE lines, each after \\r\\n)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := edit(t, srv, tt.conf)
			cfg, err := Parse("h.cfg", []byte(conf))
			if cfg != nil || err == nil {
				t.Fatalf("Parse accepted:\n%s", conf)
			}
			var e *Error
			if !errors.As(err, &e) || err.Error() != tt.want {
				t.Errorf("Parse error:\n got %v\nwant %s", err, tt.want)
			}
			if tt.haproxy == "" {
				return
			}
			ok, out := haproxyCheck(t, []byte(conf))
			if ok != (tt.haproxy == haproxyAccepts) {
				t.Errorf("haproxy -c: valid=%v, want %s; output:\n%s", ok, tt.haproxy, out)
			}
		})
	}
}
