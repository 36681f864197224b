package haproxycfg

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestParseAccepts checks configurations that parse, the values they
// resolve to and the warnings they produce; haproxy -c must accept them
// too unless haproxyRejects says why not.
func TestParseAccepts(t *testing.T) {
	const (
		fe  = "  bind 127.0.0.1:47011\n"
		srv = "  server m0 127.0.0.1:47012 check\n"
	)
	binds := func(c *lbconfig.Config) any { return c.Frontends[0].Binds }
	server := func(c *lbconfig.Config) any { return c.Backends[0].Servers[0] }
	ap := netip.MustParseAddrPort
	tests := []struct {
		name           string
		conf           func(t *testing.T) string
		get            func(*lbconfig.Config) any
		want           any
		wantWarnings   []string
		haproxyRejects string // why haproxy -c rejects it, when it does
	}{
		// A monitor under defaults' log format, whose targets get no
		// info lines (haproxy's request lines there are info,
		// measured): accepted, and it sends nothing.
		{
			name: "listen under a log format, notice target",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  log /run/l.sock local0 notice alert\n  option tcplog\n") +
					"listen mon\n  bind 127.0.0.1:47013\n  mode http\n  monitor-uri /ready\n"
			},
			get:  func(c *lbconfig.Config) any { return c.Monitors[0].Log },
			want: (*lbconfig.ConnLog)(nil),
		},
		// Under an info target, its requests are logged in that format
		// (internal/lb's TestListenRequestLogMatchesHaproxy).
		{
			name: "listen under a log format, info target",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  log /run/l.sock local0\n  option tcplog\n") +
					"listen mon\n  bind 127.0.0.1:47013\n  mode http\n  monitor-uri /ready\n"
			},
			get:  func(c *lbconfig.Config) any { return c.Monitors[0].Log },
			want: &lbconfig.ConnLog{Format: lbconfig.TCPLogFormat},
		},
		{
			name: "option httplog in a stats listen",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  log /run/l.sock local0\n") +
					"listen stats\n  bind 127.0.0.1:47013\n  mode http\n  option httplog\n  stats enable\n"
			},
			get:  func(c *lbconfig.Config) any { return c.Stats[0].Log },
			want: &lbconfig.ConnLog{Format: lbconfig.HTTPLogFormat},
		},
		{
			name: "listen under a log format, no log",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  log /run/l.sock local0\n  option tcplog\n") +
					"listen mon\n  bind 127.0.0.1:47013\n  mode http\n  monitor-uri /ready\n  no log\n"
			},
			get:  func(c *lbconfig.Config) any { return c.Monitors[0].LogTargets },
			want: []lbconfig.LogTarget(nil),
			// haproxy 2.6 says so too (proxywarn.go).
			wantWarnings: []string{"h.cfg:13: log format ignored for proxy 'mon' since it has no log address."},
		},
		// Global process settings.
		{
			name: "global process settings",
			conf: func(t *testing.T) string {
				return "global\n  daemon\n  chroot /var/empty\n  user nobody\n  group nogroup\n  pidfile /run/vshp.pid\n  nbthread 2\n" +
					"  stats socket /run/vshp.sock mode 600 level admin\n  stats timeout 30s\n" +
					"  ca-base /etc/ssl/certs\n  crt-base /etc/ssl/private\n  ssl-default-bind-ciphers ECDHE-RSA-AES128-GCM-SHA256\n" +
					"  ssl-default-bind-options no-sslv3 no-tlsv10 no-tls-tickets\n  ssl-default-server-ciphers ECDHE-RSA-AES128-GCM-SHA256\n" + base
			},
			get: func(c *lbconfig.Config) any {
				return []any{c.Chroot, c.User, c.Group, c.PIDFile, c.NbThread, c.StatsSockets[0].IdleTimeout}
			},
			want: []any{"/var/empty", "nobody", "nogroup", "/run/vshp.pid", 2, 30 * time.Second},
			wantWarnings: []string{
				"h.cfg:2: daemon: vipstack lb stays in the foreground, as haproxy does in master-worker mode under a supervisor (-Ws); run it from systemd or another supervisor",
			},
		},
		{
			name: "uid and gid",
			conf: func(t *testing.T) string { return "global\n  uid 65534\n  gid 65534\n" + base },
			get:  func(c *lbconfig.Config) any { return []string{c.User, c.Group} },
			want: []string{"65534", "65534"},
		},
		// HTTP settings in defaults behind TCP proxies: haproxy's
		// warnings, in its words, and option tcplog's format.
		{
			name: "defaults mode http, TCP proxies",
			conf: func(t *testing.T) string {
				return strings.Replace(strings.Replace(strings.Replace(base,
					"  mode tcp\n", "  mode http\n  option httplog\n  option http-server-close\n  option forwardfor except 127.0.0.0/8\n  log 127.0.0.1:514 local0\n", 1),
					"  default_backend masters\n", "  mode tcp\n  default_backend masters\n", 1),
					"\nbackend masters\n", "\nbackend masters\n  mode tcp\n", 1)
			},
			get:  func(c *lbconfig.Config) any { return c.Frontends[0].Log.Format },
			want: lbconfig.TCPLogFormat,
			wantWarnings: []string{
				"h.cfg:3: 'option httplog' not usable with frontend 'main' (needs 'mode http'). Falling back to 'option tcplog'.",
				"h.cfg:5: 'option forwardfor' ignored for frontend 'main' as it requires HTTP mode.",
				"h.cfg:5: 'option forwardfor' ignored for backend 'masters' as it requires HTTP mode.",
			},
		},
		{
			name: "own option forwardfor in TCP proxies",
			conf: func(t *testing.T) string {
				return edit(t, fe, fe+"  option forwardfor\n") + "listen l\n  bind 127.0.0.1:47013\n  option forwardfor header X-Real\n  server s 127.0.0.1:47014\n"
			},
			get:  func(c *lbconfig.Config) any { return c.Frontends[0].HTTP == nil && c.Frontends[1].HTTP == nil },
			want: true,
			wantWarnings: []string{
				"h.cfg:8: 'option forwardfor' ignored for frontend 'main' as it requires HTTP mode.",
				"h.cfg:14: 'option forwardfor' ignored for proxy 'l' as it requires HTTP mode.",
			},
		},
		{
			name: "defaults mode http, monitor inherits it",
			conf: func(t *testing.T) string {
				return strings.Replace(strings.Replace(strings.Replace(base,
					"  mode tcp\n", "  mode http\n", 1),
					"  default_backend masters\n", "  mode tcp\n  default_backend masters\n", 1),
					"\nbackend masters\n", "\nbackend masters\n  mode tcp\n", 1) + "listen ready\n  bind 127.0.0.1:47013\n  monitor-uri /ready\n"
			},
			get:  func(c *lbconfig.Config) any { return c.Monitors[0].URI },
			want: "/ready",
		},
		{
			name: "errorfile in TCP proxies",
			conf: func(t *testing.T) string {
				f := filepath.Join(t.TempDir(), "503.http")
				if err := os.WriteFile(f, []byte("HTTP/1.0 503 Service Unavailable\r\n\r\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return edit(t, "  mode tcp\n", "  mode tcp\n  errorfile 503 "+f+"\n")
			},
			get:  func(c *lbconfig.Config) any { return len(c.Frontends) },
			want: 1,
		},
		// Health checks.
		{
			name: "timeout check",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  timeout check 3s\n")
			},
			get:  func(c *lbconfig.Config) any { return c.Backends[0].Servers[0].CheckTimeout },
			want: 5 * time.Second, // min(timeout connect 5s, inter 2s) + 3s
		},
		{
			name: "default-server in defaults and backend",
			conf: func(t *testing.T) string {
				return strings.Replace(edit(t, "  mode tcp\n", "  mode tcp\n  default-server inter 3s fall 4\n"), srv,
					"  default-server rise 5\n"+srv+"  server m1 127.0.0.1:47013 check fall 1\n", 1)
			},
			get: func(c *lbconfig.Config) any {
				var out [][3]any
				for _, s := range c.Backends[0].Servers {
					out = append(out, [3]any{s.Inter, s.Fall, s.Rise})
				}
				return out
			},
			want: [][3]any{{3 * time.Second, 4, 5}, {3 * time.Second, 1, 5}},
		},
		{
			name: "default-server applies to the servers after it",
			conf: func(t *testing.T) string {
				return edit(t, srv, srv+"  default-server weight 7\n  server m1 127.0.0.1:47013 check\n")
			},
			get: func(c *lbconfig.Config) any {
				return []int{c.Backends[0].Servers[0].Weight, c.Backends[0].Servers[1].Weight}
			},
			want: []int{1, 7},
		},
		{
			name: "tcp-check dialogue",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  option tcp-check\n  tcp-check connect port 6379\n  tcp-check send PING\\r\\n\n  tcp-check expect string +PONG\n"+srv)
			},
			get:  func(c *lbconfig.Config) any { return c.Backends[0].TCPCheck },
			want: []lbconfig.TCPCheckRule{{Connect: true, Port: 6379}, {Send: "PING\r\n"}, {Expect: "+PONG"}},
		},
		{
			name: "option tcp-check alone",
			conf: func(t *testing.T) string { return edit(t, srv, "  option tcp-check\n"+srv) },
			get:  func(c *lbconfig.Config) any { return c.Backends[0].TCPCheck },
			want: []lbconfig.TCPCheckRule(nil),
		},
		{
			name:         "option tcplog in a backend",
			conf:         func(t *testing.T) string { return edit(t, srv, "  option tcplog\n"+srv) },
			get:          func(c *lbconfig.Config) any { return len(c.Backends[0].Servers) },
			want:         1,
			wantWarnings: []string{"h.cfg:10: backend 'masters' : 'option tcplog' directive is ignored in backends."},
		},
		{
			name: "option ssl-hello-chk",
			conf: func(t *testing.T) string { return edit(t, srv, "  option ssl-hello-chk\n"+srv) },
			get:  func(c *lbconfig.Config) any { return c.Backends[0].SSLHelloCheck },
			want: true,
		},
		{
			name: "http-check expect status",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  option httpchk GET /healthz\n  http-check expect status 200\n"+srv)
			},
			get:  func(c *lbconfig.Config) any { return c.Backends[0].Check.ExpectStatus },
			want: "200",
		},
		{
			name: "rules without their option",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  http-check expect status 200\n  tcp-check send PING\\r\\n\n"+srv)
			},
			get: func(c *lbconfig.Config) any {
				return []any{c.Backends[0].Check.ExpectStatus, len(c.Backends[0].TCPCheck)}
			},
			want: []any{"", 0},
			wantWarnings: []string{
				"h.cfg:10: backend 'masters' uses http-check rules without 'option httpchk', so the rules are ignored.",
				"h.cfg:11: backend 'masters' uses tcp-check rules without 'option tcp-check', so the rules are ignored.",
			},
		},
		// A listen section that forwards (the OpenShift UPI layout).
		{
			name: "listen that forwards",
			conf: func(t *testing.T) string {
				return "defaults\n  mode http\n  option httplog\n  option forwardfor\n  log 127.0.0.1:514 local0\n" +
					"  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n" +
					"listen api-server-6443\n  bind 127.0.0.1:47016\n  mode tcp\n  balance source\n  option httpchk GET /readyz HTTP/1.0\n" +
					"  option log-health-checks\n  server b0 127.0.0.1:47017 check check-ssl inter 1s fall 2 rise 3 verify none\n"
			},
			get: func(c *lbconfig.Config) any {
				return []any{c.Frontends[0].Name, c.Frontends[0].Backend, c.Frontends[0].Binds[0].Addr.String(), c.Frontends[0].Log.Format,
					c.Backends[0].Name, c.Backends[0].Balance, c.Backends[0].Check.URI, c.Backends[0].Servers[0].Addr.String(), c.Proxies}
			},
			want: []any{"api-server-6443", "api-server-6443", "127.0.0.1:47016", lbconfig.TCPLogFormat,
				"api-server-6443", lbconfig.Source, "/readyz", "127.0.0.1:47017",
				[]string{"frontend api-server-6443", "backend api-server-6443"}},
			wantWarnings: []string{
				"h.cfg:3: 'option httplog' not usable with proxy 'api-server-6443' (needs 'mode http'). Falling back to 'option tcplog'.",
				"h.cfg:4: 'option forwardfor' ignored for proxy 'api-server-6443' as it requires HTTP mode.",
			},
		},
		{
			name: "listen that forwards, tcp-check",
			conf: func(t *testing.T) string {
				return base + "listen redis\n  bind 127.0.0.1:47016\n  option tcp-check\n  tcp-check send PING\\r\\n\n  tcp-check expect string +PONG\n" +
					"  default-server inter 3s\n  server r0 127.0.0.1:47017 check\n"
			},
			get: func(c *lbconfig.Config) any {
				return []any{len(c.Backends[1].TCPCheck), c.Backends[1].Servers[0].Inter}
			},
			want: []any{2, 3 * time.Second},
		},
		// Addresses.
		{
			name: "all IPv6 and IPv4",
			conf: func(t *testing.T) string { return edit(t, "127.0.0.1:47011", ":::47011 v4v6") },
			get:  binds,
			want: []lbconfig.Bind{{Addr: ap("[::]:47011"), V4V6: true}},
		},
		{
			name: "port only is all IPv4",
			conf: func(t *testing.T) string { return edit(t, "127.0.0.1:47011", ":47011") },
			get:  binds,
			want: []lbconfig.Bind{{Addr: ap("0.0.0.0:47011")}},
		},
		{
			name: "star is all IPv4",
			conf: func(t *testing.T) string { return edit(t, "127.0.0.1:47011", "*:47011") },
			get:  binds,
			want: []lbconfig.Bind{{Addr: ap("0.0.0.0:47011")}},
		},
		{
			name: "localhost",
			conf: func(t *testing.T) string { return edit(t, "127.0.0.1:47011", "localhost:47011") },
			get:  binds,
			want: []lbconfig.Bind{{Addr: ap("127.0.0.1:47011"), Host: "localhost"}},
		},
		{
			name: "bracketed and bare IPv6, comma list",
			conf: func(t *testing.T) string { return edit(t, "127.0.0.1:47011", "[::1]:47011,::1:47012,127.0.0.1:47013") },
			get:  binds,
			want: []lbconfig.Bind{{Addr: ap("[::1]:47011")}, {Addr: ap("[::1]:47012")}, {Addr: ap("127.0.0.1:47013")}},
		},
		{
			name: "binds on several lines",
			conf: func(t *testing.T) string { return edit(t, fe, fe+"  bind [::1]:47011 v4v6\n") },
			get: func(c *lbconfig.Config) any {
				return []any{c.Frontends[0].Binds, c.Source["frontend main/bind 0"], c.Source["frontend main/bind 1"]}
			},
			want:         []any{[]lbconfig.Bind{{Addr: ap("127.0.0.1:47011")}, {Addr: ap("[::1]:47011"), V4V6: true}}, "h.cfg:7", "h.cfg:8"},
			wantWarnings: []string{"h.cfg:8: frontend main, bind [::1]:47011: v4v6 applies to the IPv6 wildcard (:::PORT), which then takes IPv4 too; on [::1]:47011 it changes nothing"},
		},
		{
			name:         "v4v6 on an IPv4 wildcard",
			conf:         func(t *testing.T) string { return edit(t, "127.0.0.1:47011", "0.0.0.0:47011 v4v6") },
			get:          binds,
			want:         []lbconfig.Bind{{Addr: ap("0.0.0.0:47011"), V4V6: true}},
			wantWarnings: []string{"h.cfg:7: frontend main, bind 0.0.0.0:47011: v4v6 applies to the IPv6 wildcard (:::PORT), which then takes IPv4 too; on 0.0.0.0:47011 it changes nothing"},
		},
		{
			name: "IPv6 servers and a name ending in a dot",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  server etcd-0.ocp4.osd2019.local. [fd00::1]:6443\n  server m1 fd00::2:6443\n")
			},
			get: func(c *lbconfig.Config) any {
				return []string{c.Backends[0].Servers[0].Name, c.Backends[0].Servers[0].Addr.String(), c.Backends[0].Servers[1].Addr.String()}
			},
			want: []string{"etcd-0.ocp4.osd2019.local.", "[fd00::1]:6443", "[fd00::2]:6443"},
		},

		// Times.
		{
			name: "time units",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  timeout tunnel 1d\n  timeout queue 2m\n  timeout http-request 1h\n"+
					"  timeout http-keep-alive 500us\n")
			},
			get: func(c *lbconfig.Config) any { return c.Timeouts },
			want: lbconfig.Timeouts{Connect: 5 * time.Second, Client: 30 * time.Second, Server: 30 * time.Second,
				Tunnel: 24 * time.Hour, Queue: 2 * time.Minute, HTTPRequest: time.Hour, HTTPKeepAlive: time.Millisecond},
		},
		{
			name: "no unit is milliseconds",
			conf: func(t *testing.T) string { return edit(t, "timeout connect 5s", "timeout connect 5000") },
			get:  func(c *lbconfig.Config) any { return c.Timeouts.Connect },
			want: 5 * time.Second,
		},
		{
			name: "largest timeout",
			conf: func(t *testing.T) string { return edit(t, "timeout client 30s", "timeout client 2147483647") },
			get:  func(c *lbconfig.Config) any { return c.Timeouts.Client },
			want: 2147483647 * time.Millisecond,
		},
		{
			name: "server check timing",
			conf: func(t *testing.T) string {
				return edit(t, "47012 check", "47012 check inter 1500ms fall 2 rise 3 weight 256")
			},
			get: server,
			want: lbconfig.Server{Name: "m0", Addr: ap("127.0.0.1:47012"), Weight: 256, Check: true, Verify: true,
				Inter: 1500 * time.Millisecond, Fall: 2, Rise: 3},
		},
		{
			name: "stats refresh is in seconds and rounds up",
			conf: func(t *testing.T) string {
				return base + "listen a\n  bind :47013\n  mode http\n  stats refresh 10\n" +
					"listen b\n  bind :47014\n  mode http\n  stats refresh 1500ms\n"
			},
			get:  func(c *lbconfig.Config) any { return []time.Duration{c.Stats[0].Refresh, c.Stats[1].Refresh} },
			want: []time.Duration{10 * time.Second, 2 * time.Second},
		},

		// Defaults, haproxy's and vipstack's.
		{
			name: "defaults filled",
			conf: func(t *testing.T) string { return base },
			get: func(c *lbconfig.Config) any {
				return []any{c.MaxConn, c.Retries, c.Backends[0].Balance, c.Backends[0].Check, c.Backends[0].Servers[0]}
			},
			want: []any{lbconfig.DefaultMaxConn, 3, lbconfig.RoundRobin, lbconfig.HTTPCheck{},
				lbconfig.Server{Name: "m0", Addr: ap("127.0.0.1:47012"), Weight: 1, Check: true, Verify: true,
					Inter: 2 * time.Second, Fall: 3, Rise: 2}},
		},
		{
			name: "global maxconn is the default maxconn",
			conf: func(t *testing.T) string { return "global\n  maxconn 4000\n" + base },
			get:  func(c *lbconfig.Config) any { return []int{c.GlobalMaxConn, c.MaxConn} },
			want: []int{4000, 4000},
		},
		{
			name: "global after the proxies",
			conf: func(t *testing.T) string { return base + "global\n  maxconn 100\n" },
			get:  func(c *lbconfig.Config) any { return []int{c.GlobalMaxConn, c.MaxConn} },
			want: []int{100, 100},
		},
		{
			name: "defaults options reach every backend",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  option redispatch\n  option dontlognull\n") +
					"backend other\n  option redispatch\n  server o 127.0.0.1:47013\n"
			},
			get: func(c *lbconfig.Config) any {
				return [][]bool{{c.Backends[0].RedispatchOnRetry, c.Backends[0].DontLogNull}, {c.Backends[1].RedispatchOnRetry, c.Backends[1].DontLogNull}}
			},
			want: [][]bool{{true, true}, {true, true}},
		},
		{
			name: "option redispatch in a backend only",
			conf: func(t *testing.T) string { return edit(t, srv, "  option redispatch\n"+srv) },
			get:  func(c *lbconfig.Config) any { return c.Backends[0].RedispatchOnRetry },
			want: true,
		},
		{
			name: "named defaults, mode tcp everywhere, a frontend and a backend with one name",
			conf: func(t *testing.T) string {
				return strings.NewReplacer("defaults\n", "defaults tcp\n", fe, fe+"  mode tcp\n", srv, "  mode tcp\n"+srv,
					"masters", "main").Replace(base)
			},
			get: func(c *lbconfig.Config) any {
				return []string{c.Frontends[0].Name, c.Frontends[0].Backend, c.Backends[0].Name}
			},
			want: []string{"main", "main", "main"},
		},

		// HTTP checks.
		{
			name: "option httpchk alone",
			conf: func(t *testing.T) string { return edit(t, srv, "  option httpchk\n"+srv) },
			get:  func(c *lbconfig.Config) any { return c.Backends[0].Check },
			want: lbconfig.HTTPCheck{Method: "OPTIONS", URI: "/", Version: "HTTP/1.0"},
		},
		{
			name: "option httpchk URI",
			conf: func(t *testing.T) string { return edit(t, srv, "  option httpchk /readyz\n"+srv) },
			get:  func(c *lbconfig.Config) any { return c.Backends[0].Check },
			want: lbconfig.HTTPCheck{Method: "OPTIONS", URI: "/readyz", Version: "HTTP/1.0"},
		},
		{
			name: "option httpchk METHOD URI",
			conf: func(t *testing.T) string { return edit(t, srv, "  option httpchk HEAD /readyz\n"+srv) },
			get:  func(c *lbconfig.Config) any { return c.Backends[0].Check },
			want: lbconfig.HTTPCheck{Method: "HEAD", URI: "/readyz", Version: "HTTP/1.0"},
		},
		{
			name: "option httpchk METHOD URI VERSION",
			conf: func(t *testing.T) string { return edit(t, srv, "  option httpchk GET /readyz?verbose HTTP/1.1\n"+srv) },
			get:  func(c *lbconfig.Config) any { return c.Backends[0].Check },
			want: lbconfig.HTTPCheck{Method: "GET", URI: "/readyz?verbose", Version: "HTTP/1.1"},
		},
		{
			name:         "verify without check-ssl",
			conf:         func(t *testing.T) string { return edit(t, "47012 check", "47012 verify required check") },
			get:          func(c *lbconfig.Config) any { return c.Backends[0].Servers[0].CheckSSL },
			want:         false,
			wantWarnings: []string{"h.cfg:10: backend masters, server m0: verify applies to TLS (ssl, check-ssl), which this server does not have: it changes nothing here"},
		},
		{
			name: "TLS checks verify by default",
			conf: func(t *testing.T) string { return edit(t, "47012 check", "47012 check check-ssl") },
			get:  func(c *lbconfig.Config) any { return c.Backends[0].Servers[0].Verify },
			want: true,
			wantWarnings: []string{"h.cfg:10: backend masters, server m0: its health checks verify the server certificate against the system's CA pool " +
				"(haproxy 2.6 needs a ca-file for this; give one with ca-file, or write verify none to skip verification)"},
			haproxyRejects: "verify is enabled by default but no CA file specified",
		},

		// Words.
		{
			name: "quotes, escapes and comments",
			conf: func(t *testing.T) string {
				return base + "listen 'st'   # a comment\n\t bind\t\"127.0.0.1:47013\"\n  mode http#no space needed\n" +
					`  stats uri "/a"'/#'\#\x41` + "\n" + `  stats auth us\ er:"p\"w\$"` + "\n"
			},
			get:          func(c *lbconfig.Config) any { return c.Stats },
			want:         []lbconfig.Stats{{Name: "st", Binds: []lbconfig.Bind{{Addr: ap("127.0.0.1:47013")}}, URI: "/a/##A", Users: []lbconfig.UserPass{{User: "us er", Pass: `p"w$`}}}},
			wantWarnings: nil,
		},
		{
			name: "CRLF line ends and blank lines",
			conf: func(t *testing.T) string { return strings.ReplaceAll(base, "\n", "\r\n\r\n") },
			get:  func(c *lbconfig.Config) any { return c.Source["backend masters/server m0"] },
			want: "h.cfg:19",
		},

		// Listen sections.
		{
			name: "stats with defaults",
			conf: func(t *testing.T) string { return base + "listen st\n  bind :47013\n  mode http\n  stats enable\n" },
			get:  func(c *lbconfig.Config) any { return c.Stats[0] },
			want: lbconfig.Stats{Name: "st", Binds: []lbconfig.Bind{{Addr: ap("0.0.0.0:47013")}}, URI: "/haproxy?stats"},
		},
		{
			name: "monitor",
			conf: func(t *testing.T) string {
				return base + "listen ready\n  bind :::47013 v4v6\n  mode http\n  monitor-uri /ready\n  option dontlognull\n"
			},
			get:  func(c *lbconfig.Config) any { return c.Monitors },
			want: []lbconfig.Monitor{{Name: "ready", Binds: []lbconfig.Bind{{Addr: ap("[::]:47013"), V4V6: true}}, URI: "/ready"}},
		},

		// Warnings.
		{
			name: "stats sockets",
			conf: func(t *testing.T) string {
				return "global\n  stats socket /run/h.sock mode 600 level admin expose-fd listeners\n" +
					"  stats socket unix@/run/h2.sock user root gid 0\n" +
					"  stats socket ipv4@127.0.0.1:47019 level operator\n  stats socket [::1]:47019\n" + base
			},
			get: func(c *lbconfig.Config) any { return c.StatsSockets },
			want: []lbconfig.StatsSocket{
				{Network: "unix", Address: "/run/h.sock", Mode: 0o600, Level: "admin"},
				{Network: "unix", Address: "/run/h2.sock", Level: "user", User: "root", Group: "0"},
				{Network: "tcp", Address: "127.0.0.1:47019", Level: "operator"},
				{Network: "tcp", Address: "[::1]:47019", Level: "user"},
			},
		},
		{
			name: "log global with nothing in global",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  log /dev/log local0 info\n  log global\n")
			},
			get:          func(c *lbconfig.Config) any { return c.Frontends[0].LogTargets },
			want:         []lbconfig.LogTarget{{Network: "unixgram", Address: "/dev/log", Facility: 16, Level: 6}},
			wantWarnings: []string{"h.cfg:4: log global: global has no log line (above this one): nothing is sent"},
		},
		{
			// Measured with haproxy 2.6.12: a proxy's own log lines add
			// to those of defaults; `no log` drops the inherited ones;
			// `log global` adds global's.
			name: "log targets by section",
			conf: func(t *testing.T) string {
				return "global\n  log 127.0.0.1 local1 notice\n  log-tag hx\n" +
					edit(t, "  mode tcp\n", "  mode tcp\n  log unix@/run/d.sock format raw local0 info warning\n")
			},
			get: func(c *lbconfig.Config) any {
				return []any{c.LogTag, c.Frontends[0].LogTargets, c.Backends[0].LogTargets}
			},
			want: []any{"hx",
				[]lbconfig.LogTarget{{Network: "unixgram", Address: "/run/d.sock", Raw: true, Facility: 16, Level: 6, MinLevel: 4}},
				[]lbconfig.LogTarget{{Network: "unixgram", Address: "/run/d.sock", Raw: true, Facility: 16, Level: 6, MinLevel: 4}},
			},
		},
		{
			// haproxy 2.6.12 takes len from 80 to 65535, before format
			// (measured with haproxy -c); an explicit format rfc3164
			// is not the default format (its header has a host name).
			name: "log len, format rfc3164",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  log /run/d.sock len 80 format raw local0\n  log /run/e.sock len 65535 local0\n"+
					"  log /run/f.sock format rfc3164 local0\n")
			},
			get: func(c *lbconfig.Config) any { return c.Frontends[0].LogTargets },
			want: []lbconfig.LogTarget{
				{Network: "unixgram", Address: "/run/d.sock", Raw: true, Facility: 16, Level: 7, Len: 80},
				{Network: "unixgram", Address: "/run/e.sock", Facility: 16, Level: 7, Len: 65535},
				{Network: "unixgram", Address: "/run/f.sock", RFC3164: true, Facility: 16, Level: 7},
			},
		},
		{
			name: "frontend and backend log lines",
			conf: func(t *testing.T) string {
				c := "global\n  log [::1]:1514 local1\n" + edit(t, "  mode tcp\n", "  mode tcp\n  log /run/d.sock local0\n")
				c = strings.Replace(c, fe, fe+"  no log\n  log global\n  log udp@127.0.0.1 local2 info\n", 1)
				return strings.Replace(c, srv, srv+"  log stderr local3\n", 1)
			},
			get: func(c *lbconfig.Config) any { return []any{c.Frontends[0].LogTargets, c.Backends[0].LogTargets} },
			want: []any{
				[]lbconfig.LogTarget{{Network: "udp", Address: "[::1]:1514", Facility: 17, Level: 7}, {Network: "udp", Address: "127.0.0.1:514", Facility: 18, Level: 6}},
				[]lbconfig.LogTarget{{Network: "unixgram", Address: "/run/d.sock", Facility: 16, Level: 7}, {Network: "stderr", Facility: 19, Level: 7}},
			},
		},
		{
			// Measured with haproxy 2.6.12 (a monitor request's Connect
			// line counted at the socket): `log global` adds each of
			// global's lines to a section once, however many say it
			// (defaults' and the section's, or twice in the section:
			// one datagram); a line naming the same target explicitly
			// adds a second (two datagrams). Listen sections take log
			// lines as the others do.
			name: "log global once per section, listen log lines",
			conf: func(t *testing.T) string {
				c := "global\n  log /run/g.sock local0\n" + edit(t, "  mode tcp\n", "  mode tcp\n  log global\n")
				c = strings.Replace(c, fe, fe+"  log global\n  log global\n", 1)
				c = strings.Replace(c, srv, srv+"  log /run/g.sock local0\n", 1)
				return c + "listen mon\n  bind 127.0.0.1:47013\n  mode http\n  log global\n  monitor-uri /ready\n" +
					"listen mon2\n  bind 127.0.0.1:47014\n  mode http\n  no log\n  log /run/g.sock local2 notice\n  log global\n  monitor-uri /ready\n" +
					"listen st\n  bind 127.0.0.1:47015\n  mode http\n  log stderr local1\n  stats enable\n"
			},
			get: func(c *lbconfig.Config) any {
				return []any{c.Frontends[0].LogTargets, c.Backends[0].LogTargets, c.Monitors[0].LogTargets, c.Monitors[1].LogTargets, c.Stats[0].LogTargets}
			},
			want: func() []any {
				g := lbconfig.LogTarget{Network: "unixgram", Address: "/run/g.sock", Facility: 16, Level: 7}
				l2 := lbconfig.LogTarget{Network: "unixgram", Address: "/run/g.sock", Facility: 18, Level: 5}
				e := lbconfig.LogTarget{Network: "stderr", Facility: 17, Level: 7}
				return []any{[]lbconfig.LogTarget{g}, []lbconfig.LogTarget{g, g}, []lbconfig.LogTarget{g}, []lbconfig.LogTarget{l2, g}, []lbconfig.LogTarget{g, e}}
			}(),
		},
		// haproxy's warnings per section, at the file's end
		// (proxywarn.go), in its words.
		{
			name:         "missing timeouts",
			conf:         func(t *testing.T) string { return edit(t, "  timeout connect 5s\n  timeout client 30s\n", "") },
			get:          func(c *lbconfig.Config) any { return c.Timeouts },
			want:         lbconfig.Timeouts{Server: 30 * time.Second},
			wantWarnings: []string{"h.cfg:4: " + missingTimeouts("frontend", "main"), "h.cfg:7: " + missingTimeouts("backend", "masters")},
		},
		{
			name: "missing timeouts and log format without log address, listen sections",
			conf: func(t *testing.T) string {
				return edit(t, "  timeout client 30s\n", "  option tcplog\n") + "listen api\n  bind 127.0.0.1:47013\n  server a0 127.0.0.1:47014\n" +
					"listen stats\n  bind 127.0.0.1:47015\n  mode http\n  stats enable\n"
			},
			get:  func(c *lbconfig.Config) any { return []any{c.Frontends[0].Log, len(c.Stats)} },
			want: []any{(*lbconfig.ConnLog)(nil), 1},
			wantWarnings: []string{
				"h.cfg:6: " + missingTimeouts("frontend", "main"),
				"h.cfg:6: log format ignored for frontend 'main' since it has no log address.",
				"h.cfg:11: " + missingTimeouts("proxy", "api"),
				"h.cfg:11: log format ignored for proxy 'api' since it has no log address.",
				"h.cfg:14: " + missingTimeouts("proxy", "stats"),
				"h.cfg:14: log format ignored for proxy 'stats' since it has no log address.",
			},
		},
		{
			// In mode tcp timeout tunnel stands in for timeout server; a
			// backend without servers needs neither.
			name: "timeout tunnel for server, backend without servers",
			conf: func(t *testing.T) string {
				return edit(t, "  timeout server 30s\n", "  timeout tunnel 1h\n") + "backend spare\n"
			},
			get:          func(c *lbconfig.Config) any { return len(c.Backends) },
			want:         2,
			wantWarnings: []string{"h.cfg:11: backend spare: has no server: its frontends close every connection"},
		},
		// http-request return (TestHTTPReturnMatchesHaproxy runs it),
		// with haproxy's warnings for what it ignores.
		{
			name: "http-request return",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode http\n") + "frontend web\n  bind 127.0.0.1:47013\n" +
					"  http-request return status 503 content-type text/plain lf-string \"down %[path]\" hdr X-A 1 hdr Content-Length 9 if { path /down }\n" +
					"  http-request return content-type text/plain if { path /bare }\n  default_backend masters\n"
			},
			get: func(c *lbconfig.Config) any {
				var out []any
				for _, r := range c.Frontends[1].HTTP.Rules {
					out = append(out, r.Status, *r.Return)
				}
				return out
			},
			want: []any{503, lbconfig.HTTPReturn{ContentType: "text/plain", Body: "down %[path]", Format: true, Headers: []lbconfig.HTTPReturnHeader{{Name: "X-A", Value: "1"}}},
				200, lbconfig.HTTPReturn{}},
			wantWarnings: []string{
				"h.cfg:13: header 'Content-Length' always ignored by the http reply.",
				"h.cfg:14: content-type 'text/plain' ignored by the http reply because neither errorfile nor payload defined.",
			},
		},
		// disabled: in maintenance from the start
		// (TestDisabledServerMatchesHaproxy); enabled undoes
		// default-server's.
		{
			name: "server disabled, default-server disabled and enabled",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  server m0 127.0.0.1:47012 check disabled\n") + "backend other\n  default-server disabled\n" +
					"  server o0 127.0.0.1:47013\n  server o1 127.0.0.1:47014 enabled\n"
			},
			get: func(c *lbconfig.Config) any {
				return []bool{c.Backends[0].Servers[0].Disabled, c.Backends[1].Servers[0].Disabled, c.Backends[1].Servers[1].Disabled}
			},
			want: []bool{true, true, false},
		},
		{
			name: "option pgsql-check user",
			conf: func(t *testing.T) string { return edit(t, srv, "  option pgsql-check user postgres\n"+srv) },
			get:  func(c *lbconfig.Config) any { return c.Backends[0].PgSQLUser },
			want: "postgres",
		},
		// server-state-file: no effect without
		// load-server-state-from-file, but haproxy opens it at start
		// and warns when it cannot.
		{
			name: "server-state-file that does not open",
			conf: func(t *testing.T) string {
				return "global\n  server-state-file /nonexistent-vcp/haproxy.state\n" + base
			},
			get:  func(c *lbconfig.Config) any { return len(c.Frontends) },
			want: 1,
			wantWarnings: []string{
				"h.cfg:2: config: Can't open global server state file '/nonexistent-vcp/haproxy.state': No such file or directory",
			},
		},
		{
			name: "server-state-file under server-state-base",
			conf: func(t *testing.T) string {
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, "haproxy.state"), []byte("1\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				return "global\n  server-state-base " + dir + "\n  server-state-file haproxy.state\n" + base
			},
			get:  func(c *lbconfig.Config) any { return len(c.Frontends) },
			want: 1,
		},
		// option redis-check (healthcheck.Redis;
		// TestCheckDialectsMatchHaproxy runs it); the last check option
		// wins.
		{
			name: "option redis-check",
			conf: func(t *testing.T) string { return edit(t, srv, "  option redis-check\n"+srv) },
			get:  func(c *lbconfig.Config) any { return c.Backends[0].RedisCheck },
			want: true,
		},
		{
			name: "option redis-check, then option httpchk",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  option redis-check\n  option httpchk GET /ready\n"+srv)
			},
			get:  func(c *lbconfig.Config) any { return []any{c.Backends[0].RedisCheck, c.Backends[0].Check.URI} },
			want: []any{false, "/ready"},
		},
		{
			name: "option redis-check in a listen section",
			conf: func(t *testing.T) string {
				return base + "listen cache\n  bind 127.0.0.1:47013\n  option redis-check\n  server c0 127.0.0.1:47014 check\n"
			},
			get:  func(c *lbconfig.Config) any { return c.Backends[1].RedisCheck },
			want: true,
		},
		// http-check expect on the body (healthcheck.BodyMatch;
		// TestCheckDialectsMatchHaproxy runs them).
		{
			name: "http-check expect string",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  option httpchk GET /ready\n  http-check expect string ready\n"+srv)
			},
			get:  func(c *lbconfig.Config) any { return c.Backends[0].Check.ExpectBody },
			want: &lbconfig.BodyExpect{Text: "ready"},
		},
		{
			name: "http-check expect ! rstring",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  option httpchk GET /ready\n  http-check expect ! rstring ^status:\\ r\n"+srv)
			},
			get:  func(c *lbconfig.Config) any { return c.Backends[0].Check.ExpectBody },
			want: &lbconfig.BodyExpect{Text: "^status: r", Regex: true, Not: true},
		},
		// haproxy 2.6 reads a time's unit from its first letters and
		// warns about the rest ("15min" is 15 minutes).
		{
			name: "time with text after its unit",
			conf: func(t *testing.T) string {
				return strings.Replace(edit(t, "timeout client 30s", "timeout client 15min"), "check\n", "check inter 2sec\n", 1)
			},
			get: func(c *lbconfig.Config) any {
				return []time.Duration{c.Timeouts.Client, c.Backends[0].Servers[0].Inter}
			},
			want: []time.Duration{15 * time.Minute, 2 * time.Second},
			wantWarnings: []string{
				"h.cfg:4: unexpected character 'i' after the timer value '15min', only (us=microseconds,ms=milliseconds,s=seconds,m=minutes,h=hours,d=days) are supported. This will be reported as an error in next versions.",
				"h.cfg:10: unexpected character 'e' after the timer value '2sec', only (us=microseconds,ms=milliseconds,s=seconds,m=minutes,h=hours,d=days) are supported. This will be reported as an error in next versions.",
			},
		},
		// Rules written after rules that run after them, and after a
		// final rule: haproxy's warnings (TestMisplacedRulesMatchHaproxy
		// runs them).
		{
			name: "misplaced http-request and redirect rules",
			conf: func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode http\n") + misplacedRules },
			get: func(c *lbconfig.Config) any {
				return []int{len(c.Frontends[1].HTTP.Rules), len(c.Frontends[1].HTTP.Redirects), len(c.Frontends[2].HTTP.Rules)}
			},
			want: []int{3, 1, 1},
			wantWarnings: []string{
				"h.cfg:14: a 'redirect' rule placed after a 'use_backend' rule will still be processed before.",
				"h.cfg:15: a 'http-request' rule placed after a 'redirect' rule will still be processed before.",
				"h.cfg:16: a 'http-request' rule placed after a 'redirect' rule will still be processed before.",
				"h.cfg:17: previous 'http-request' action is final and has no condition attached, further entries are NOOP.",
				"h.cfg:17: a 'http-request' rule placed after a 'redirect' rule will still be processed before.",
				"h.cfg:22: a 'http-request' rule placed after a 'use_backend' rule will still be processed before.",
			},
		},
		{
			// A named acl without a pattern: haproxy's warning, which
			// `--` silences; an anonymous one: vipstack's own (haproxy
			// says nothing).
			name: "acl without a pattern",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode http\n") + "frontend web\n  bind 127.0.0.1:47013\n" +
					"  acl none path_beg\n  acl meant path_beg --\n  acl there path -m found\n" +
					"  http-request deny if { path_beg } || none || meant\n  default_backend masters\n"
			},
			get:  func(c *lbconfig.Config) any { return len(c.Frontends[1].HTTP.ACLs) },
			want: 3,
			wantWarnings: []string{
				"h.cfg:13: parsing acl keyword 'path_beg' : no pattern to match against were provided, so this ACL will never match. " +
					"If this is what you intended, please add '--' to get rid of this warning. If you intended to match only for existence, " +
					"please use '-m found'. If you wanted to force an int to match as a bool, please use '-m bool'.",
				"h.cfg:16: acl path_beg has no value to match: it never matches",
			},
		},
		// defaults' errorfiles answer for a monitor and a stats listen
		// (TestListenErrorfileMatchesHaproxy).
		{
			name: "errorfile in defaults with a monitor and stats",
			conf: func(t *testing.T) string {
				f := filepath.Join(t.TempDir(), "503.http")
				if err := os.WriteFile(f, []byte("HTTP/1.0 503 Service Unavailable\r\n\r\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return edit(t, "  mode tcp\n", "  mode tcp\n  errorfile 503 "+f+"\n") + "listen ready\n  bind 127.0.0.1:47013\n  mode http\n  monitor-uri /ready\n" +
					"listen stats\n  bind 127.0.0.1:47014\n  mode http\n  stats enable\n"
			},
			get: func(c *lbconfig.Config) any {
				return []string{string(c.Monitors[0].ErrorFiles[503]), string(c.Stats[0].ErrorFiles[503])}
			},
			want: []string{"HTTP/1.0 503 Service Unavailable\r\n\r\n", "HTTP/1.0 503 Service Unavailable\r\n\r\n"},
		},
		// defaults' balance: backends start from it, their own wins.
		{
			name: "balance in defaults",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  balance leastconn\n") + "backend other\n  balance source\n" + srv
			},
			get:  func(c *lbconfig.Config) any { return []lbconfig.Balance{c.Backends[0].Balance, c.Backends[1].Balance} },
			want: []lbconfig.Balance{lbconfig.LeastConn, lbconfig.Source},
		},
		// rstatus: the codes the regex matches, anywhere in the three
		// digits (TestCheckDialectsMatchHaproxy runs it).
		{
			name: "http-check expect rstatus",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  option httpchk GET /healthz\n  http-check expect rstatus (2|3)[0-9][0-9]\n"+srv)
			},
			get:  func(c *lbconfig.Config) any { return c.Backends[0].Check.ExpectStatus },
			want: "200-399",
		},
		{
			name: "http-check expect rstatus unanchored",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  option httpchk GET /healthz\n  http-check expect rstatus 04\n"+srv)
			},
			get:  func(c *lbconfig.Config) any { return c.Backends[0].Check.ExpectStatus },
			want: "104,204,304,404,504",
		},
		{
			name: "ignore-persist in an HTTP backend",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode http\n") + "backend web\n  cookie SRV insert\n  ignore-persist if { always_true }\n  server w1 127.0.0.1:47014 cookie w1\n"
			},
			get:  func(c *lbconfig.Config) any { return len(c.Backends[1].HTTP.IgnorePersist) },
			want: 1,
		},
		// The kubeadm-style API frontends' inspect delay, without
		// content rules: no effect (TestInspectDelayWithoutRulesMatchesHaproxy).
		{
			name: "tcp-request inspect-delay, twice",
			conf: func(t *testing.T) string {
				return edit(t, fe, fe+"  tcp-request inspect-delay 5s\n  tcp-request inspect-delay 6s\n")
			},
			get:          func(c *lbconfig.Config) any { return c.Frontends[0].Backend },
			want:         "masters",
			wantWarnings: []string{"h.cfg:9: ignoring tcp-request inspect-delay (was already defined) in frontend 'main'"},
		},
		{
			name:         "backend without servers",
			conf:         func(t *testing.T) string { return edit(t, srv, "") },
			get:          func(c *lbconfig.Config) any { return len(c.Backends[0].Servers) },
			want:         0,
			wantWarnings: []string{"h.cfg:9: backend masters: has no server: its frontends close every connection"},
		},
		{
			name: "server without check in a checked backend",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  option httpchk GET /readyz\n"+srv+"  server m1 127.0.0.1:47013\n")
			},
			get:  func(c *lbconfig.Config) any { return c.Backends[0].Servers[1].Check },
			want: false,
			wantWarnings: []string{
				"h.cfg:12: backend masters, server m1: no check: backend masters's HTTP check is not run on this server, which is always up",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := tt.conf(t)
			cfg, err := Parse("h.cfg", []byte(conf))
			if err != nil {
				t.Fatalf("Parse: %v\n%s", err, conf)
			}
			if diff := cmp.Diff(tt.want, tt.get(cfg), cmpOpts); diff != "" {
				t.Errorf("value mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWarnings, cfg.Warnings); diff != "" {
				t.Errorf("warnings mismatch (-want +got):\n%s", diff)
			}
			ok, out := haproxyCheck(t, []byte(conf))
			switch {
			case tt.haproxyRejects == "" && !ok:
				t.Errorf("haproxy -c rejects it:\n%s", out)
			case tt.haproxyRejects != "" && (ok || !strings.Contains(out, tt.haproxyRejects)):
				t.Errorf("haproxy -c: valid=%v, want a rejection saying %q; output:\n%s", ok, tt.haproxyRejects, out)
			}
			// Warnings quoting haproxy must be haproxy's words.
			for _, w := range tt.wantWarnings {
				_, msg, _ := strings.Cut(w, ": ")
				if quotesHaproxy(msg) && !haproxyWarned(out, msg) {
					t.Errorf("haproxy -c does not warn %q; output:\n%s", msg, out)
				}
			}
		})
	}
}

// missingTimeouts is haproxy 2.6's warning about a section without client,
// connect or server timeout.
func missingTimeouts(what, name string) string {
	return "missing timeouts for " + what + " '" + name + "'. While not properly invalid, you will certainly encounter " +
		"various problems with such a configuration. To fix this, please ensure that all following timeouts are set to a " +
		"non-zero value: 'client', 'connect', 'server'."
}

// misplacedRules follow base (in mode http): rules that haproxy runs in
// another order than written.
const misplacedRules = "frontend front\n" + // 11
	"  bind 127.0.0.1:47013\n" + // 12
	"  use_backend masters if { path_beg /api }\n" + // 13
	"  redirect prefix /new if { path_beg /old }\n" + // 14: after use_backend
	"  http-request set-header X-A 1\n" + // 15: after redirect
	"  http-request deny\n" + // 16: after redirect
	"  http-request set-header X-B 1\n" + // 17: after a final rule, and redirect
	"  default_backend masters\n" + // 18
	"frontend side\n" + // 19
	"  bind 127.0.0.1:47014\n" + // 20
	"  use_backend masters if { path_beg /api }\n" + // 21
	"  http-request set-header X-D 1\n" + // 22: after use_backend
	"  default_backend masters\n" // 23
