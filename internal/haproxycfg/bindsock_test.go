package haproxycfg

import (
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestBindSock: the bind parameters that set socket options, and a
// proxy's backlog for its binds that set none (from defaults too).
func TestBindSock(t *testing.T) {
	binds := func(c *lbconfig.Config) any {
		var out []lbconfig.BindSock
		for _, f := range c.Frontends {
			for _, b := range f.Binds {
				out = append(out, b.Sock)
			}
		}
		return out
	}
	runAccept(t, []acceptCase{
		{
			name: "every parameter",
			conf: func(t *testing.T) string {
				return edit(t, "  bind 127.0.0.1:47011\n", "  bind 127.0.0.1:47011 defer-accept tfo interface lo transparent backlog 64\n")
			},
			get:  binds,
			want: []lbconfig.BindSock{{DeferAccept: true, TFO: true, Interface: "lo", Transparent: true, Backlog: 64}},
		},
		{
			name: "proxy backlog for binds without one",
			conf: func(t *testing.T) string {
				return edit(t, "  bind 127.0.0.1:47011\n", "  backlog 100\n  bind 127.0.0.1:47011\n  bind 127.0.0.1:47013 backlog 7\n")
			},
			get:  binds,
			want: []lbconfig.BindSock{{Backlog: 100}, {Backlog: 7}},
		},
		{
			name: "defaults backlog, a listen's own",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  backlog 50\n") +
					"listen l\n  bind 127.0.0.1:47014 tfo\n  backlog 9\n  server s 127.0.0.1:47012\n"
			},
			get:  binds,
			want: []lbconfig.BindSock{{Backlog: 50}, {TFO: true, Backlog: 9}},
		},
		{
			name: "a stats page's backlog",
			conf: func(t *testing.T) string {
				return base + "listen st\n  bind 127.0.0.1:47013 defer-accept\n  mode http\n  stats enable\n  backlog 12\n"
			},
			get:  func(c *lbconfig.Config) any { return c.Stats[0].Binds[0].Sock },
			want: lbconfig.BindSock{DeferAccept: true, Backlog: 12},
		},
		{
			name: "backlog in a backend: haproxy's warning",
			conf: func(t *testing.T) string { return edit(t, srv10, srv10+"  backlog 10\n") },
			get:  binds,
			want: []lbconfig.BindSock{{}},
			wantWarnings: []string{
				"h.cfg:11: 'backlog' ignored because backend 'masters' has no frontend capability.",
			},
		},
	})
}

// TestBindSockErrors: what the socket parameters refuse.
func TestBindSockErrors(t *testing.T) {
	tests := []struct {
		name, from, to, want string
	}{
		{name: "interface without a name", from: "  bind 127.0.0.1:47011\n", to: "  bind 127.0.0.1:47011 interface\n",
			want: "h.cfg:7: bind parameter interface needs a value (accepted: interface NAME, a network interface name)"},
		{name: "interface too long", from: "  bind 127.0.0.1:47011\n", to: "  bind 127.0.0.1:47011 interface abcdefghijklmnopq\n",
			want: `h.cfg:7: bind parameter interface "abcdefghijklmnopq" is not an interface name (accepted: at most 15 characters, no '/' or space)`},
		{name: "backlog 0", from: "  bind 127.0.0.1:47011\n", to: "  bind 127.0.0.1:47011 backlog 0\n",
			want: "h.cfg:7: bind backlog 0 is out of range (accepted: a queue length of 1 or more)"},
		{name: "proxy backlog twice", from: "  bind 127.0.0.1:47011\n", to: "  bind 127.0.0.1:47011\n  backlog 1\n  backlog 2\n",
			want: "h.cfg:9: backlog is already set in frontend main at line 8 (accepted: once per section)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("h.cfg", []byte(edit(t, tt.from, tt.to)))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Parse error\n got %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestBalanceMore: static-rr, first and random in backends and defaults;
// random(2) is random.
func TestBalanceMore(t *testing.T) {
	runAccept(t, []acceptCase{
		{
			name: "backend static-rr, defaults first",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  balance first\n") +
					"backend b2\n  balance static-rr\n  server s 127.0.0.1:47013\n"
			},
			get:  func(c *lbconfig.Config) any { return []lbconfig.Balance{c.Backends[0].Balance, c.Backends[1].Balance} },
			want: []lbconfig.Balance{lbconfig.First, lbconfig.StaticRR},
		},
		{
			name: "random(2)",
			conf: func(t *testing.T) string { return edit(t, srv10, "  balance random(2)\n"+srv10) },
			get:  func(c *lbconfig.Config) any { return c.Backends[0].Balance },
			want: lbconfig.Random,
		},
	})
}
