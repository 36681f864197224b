package haproxycfg

import (
	"net/netip"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestServerParams: the server parameters of the kubeadm guide's
// default-server line and of Patroni's balancers, with the values they
// resolve to.
func TestServerParams(t *testing.T) {
	ap := netip.MustParseAddrPort
	const srv = "  server m0 127.0.0.1:47012 check\n"
	server := func(c *lbconfig.Config) any { return c.Backends[0].Servers[0] }
	runAccept(t, []acceptCase{
		{
			name: "kubeadm guide's default-server",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  option tcp-check\n  default-server inter 10s downinter 5s rise 2 fall 2 slowstart 60s maxconn 250 maxqueue 256 weight 100\n"+srv)
			},
			get: server,
			want: lbconfig.Server{Name: "m0", Addr: ap("127.0.0.1:47012"), Check: true, Verify: true, Inter: 10 * time.Second,
				DownInter: 5 * time.Second, Rise: 2, Fall: 2, SlowStart: time.Minute, MaxConn: 250, MaxQueue: 256, Weight: 100},
		},
		{
			name: "Patroni: on-marked-down, check port, maxconn",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  option httpchk GET /master\n  http-check expect status 200\n"+
					"  default-server inter 3s fall 3 rise 2 on-marked-down shutdown-sessions\n"+
					"  server m0 127.0.0.1:47012 maxconn 100 check port 8008\n")
			},
			get: server,
			want: lbconfig.Server{Name: "m0", Addr: ap("127.0.0.1:47012"), Check: true, Verify: true, Inter: 3 * time.Second,
				Rise: 2, Fall: 3, Weight: 1, ShutdownOnDown: true, MaxConn: 100, CheckPort: 8008},
		},
		{
			name: "backup, fastinter, id, allbackups",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  option allbackups\n  server m0 127.0.0.1:47012 check fastinter 500ms id 7\n  server m1 127.0.0.1:47013 check backup\n")
			},
			get: func(c *lbconfig.Config) any {
				b := c.Backends[0]
				return []any{b.AllBackups, b.Servers[0].FastInter, b.Servers[0].ID, b.Servers[1].Backup}
			},
			want: []any{true, 500 * time.Millisecond, 7, true},
		},
	})
}

// TestSectionTimeouts: timeouts in frontends, backends and listens, with
// haproxy's warnings for a repeated one and for one of the side a section
// lacks; the effective timeouts a connection runs with.
func TestSectionTimeouts(t *testing.T) {
	runAccept(t, []acceptCase{
		{
			name: "frontend and backend timeouts over defaults",
			conf: func(t *testing.T) string {
				return edit(t, "  default_backend masters\n", "  default_backend masters\n  timeout client 1m\n  timeout client-fin 5s\n") +
					"  timeout server 2m\n  timeout connect 3s\n  timeout server-fin 4s\n  timeout tunnel 1h\n  timeout queue 9s\n"
			},
			get: func(c *lbconfig.Config) any { return c.Effective(&c.Frontends[0], &c.Backends[0]) },
			want: lbconfig.Timeouts{Client: time.Minute, ClientFin: 5 * time.Second, Server: 2 * time.Minute, Connect: 3 * time.Second,
				ServerFin: 4 * time.Second, Tunnel: time.Hour, Queue: 9 * time.Second},
		},
		{
			name: "repeated timeout and the other side's",
			conf: func(t *testing.T) string {
				return edit(t, "  default_backend masters\n", "  default_backend masters\n  timeout client 1m\n  timeout client 2m\n  timeout server 5s\n") +
					"  timeout client 7s\n"
			},
			get:  func(c *lbconfig.Config) any { return c.Effective(&c.Frontends[0], &c.Backends[0]) },
			want: lbconfig.Timeouts{Client: 2 * time.Minute, Connect: 5 * time.Second, Server: 30 * time.Second},
			wantWarnings: []string{
				"h.cfg:10: overwriting 'timeout client' which was already specified",
				"h.cfg:11: 'timeout server' will be ignored because frontend 'main' has no backend capability",
				"h.cfg:14: 'timeout client' will be ignored because backend 'masters' has no frontend capability",
			},
		},
		{
			name: "timeouts only in the sections (no missing-timeouts warning)",
			conf: func(t *testing.T) string {
				return "frontend fe\n  bind 127.0.0.1:47011\n  mode tcp\n  timeout client 30s\n  maxconn 50\n  option clitcpka\n  default_backend be\n" +
					"backend be\n  mode tcp\n  timeout connect 5s\n  timeout server 30s\n  retries 2\n  option srvtcpka\n  server m0 127.0.0.1:47012\n"
			},
			get: func(c *lbconfig.Config) any {
				return []any{c.Effective(&c.Frontends[0], &c.Backends[0]), c.Frontends[0].MaxConn, c.Frontends[0].KeepAlive, c.Backends[0].KeepAlive, c.Backends[0].Retries}
			},
			want: []any{lbconfig.Timeouts{Client: 30 * time.Second, Connect: 5 * time.Second, Server: 30 * time.Second}, 50, true, true, 2},
		},
		{
			name: "listen that forwards",
			conf: func(t *testing.T) string {
				return base + "listen api\n  bind 127.0.0.1:47013\n  mode tcp\n  timeout client 1h\n  timeout server 1h\n  option tcpka\n  server a 127.0.0.1:47014\n"
			},
			get: func(c *lbconfig.Config) any {
				return []any{c.Effective(&c.Frontends[1], &c.Backends[1]).Client, c.Effective(&c.Frontends[1], &c.Backends[1]).Server, c.Frontends[1].KeepAlive, c.Backends[1].KeepAlive}
			},
			want: []any{time.Hour, time.Hour, true, true},
		},
		{
			name: "log options in defaults",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  log 127.0.0.1:514 local0\n  option tcplog\n  option dontlog-normal\n  option log-separate-errors\n")
			},
			get:  func(c *lbconfig.Config) any { return *c.Frontends[0].Log },
			want: lbconfig.ConnLog{Format: lbconfig.TCPLogFormat, DontLogNormal: true, SeparateErrors: true},
		},
		{
			name: "side options in the wrong section",
			conf: func(t *testing.T) string {
				return edit(t, "  default_backend masters\n", "  default_backend masters\n  option srvtcpka\n  option allbackups\n") + "  option clitcpka\n"
			},
			get: func(c *lbconfig.Config) any {
				return []bool{c.Frontends[0].KeepAlive, c.Backends[0].KeepAlive, c.Backends[0].AllBackups}
			},
			want: []bool{false, false, false},
			wantWarnings: []string{
				"h.cfg:9: 'srvtcpka' ignored because frontend 'main' has no backend capability.",
				"h.cfg:10: 'allbackups' ignored because frontend 'main' has no backend capability.",
				"h.cfg:13: 'clitcpka' ignored because backend 'masters' has no frontend capability.",
			},
		},
	})
}

// TestServerWithoutPort: an address without a port is the client's port;
// its checks need a check port, as in haproxy.
func TestServerWithoutPort(t *testing.T) {
	runAccept(t, []acceptCase{{
		name: "no port, check port",
		conf: func(t *testing.T) string {
			return edit(t, "  server m0 127.0.0.1:47012 check\n", "  server m0 127.0.0.1 check port 47012\n")
		},
		get: func(c *lbconfig.Config) any {
			return []any{c.Backends[0].Servers[0].Addr.String(), c.Backends[0].Servers[0].NoPort}
		},
		want: []any{"127.0.0.1:0", true},
	}})
	_, err := Parse("h.cfg", []byte(edit(t, "  server m0 127.0.0.1:47012 check\n", "  server m0 127.0.0.1 check\n")))
	want := "h.cfg:10: backend masters, server m0: backend 'masters': server 'm0' has neither service port nor check port (accepted: ADDRESS:PORT, or port N for its checks)"
	if err == nil || err.Error() != want {
		t.Errorf("Parse: %v, want %s", err, want)
	}
}
