package haproxycfg

import (
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestWebListenMaxconn: a monitor's or stats page's own maxconn is
// taken; without one the section keeps 0 (internal/lb/web's own cap),
// whatever defaults say.
func TestWebListenMaxconn(t *testing.T) {
	get := func(c *lbconfig.Config) any {
		var out []int
		for _, m := range c.Monitors {
			out = append(out, m.MaxConn)
		}
		for _, s := range c.Stats {
			out = append(out, s.MaxConn)
		}
		return out
	}
	runAccept(t, []acceptCase{
		{name: "stats and monitor with their own",
			conf: func(t *testing.T) string {
				return base + "listen mon\n  bind 127.0.0.1:47013\n  mode http\n  monitor-uri /ready\n  maxconn 5\n" +
					"listen st\n  bind 127.0.0.1:47014\n  mode http\n  stats enable\n  maxconn 10\n"
			},
			get: get, want: []int{5, 10}},
		{name: "none of their own, defaults maxconn",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  maxconn 300\n") + "listen st\n  bind 127.0.0.1:47014\n  mode http\n  stats enable\n"
			},
			get: get, want: []int{0}},
	})
}

// TestRuntimeAPIOnly: a file whose only listener is the runtime API
// (`stats socket`) is valid, as haproxy -c says and haproxy runs it.
func TestRuntimeAPIOnly(t *testing.T) {
	runAccept(t, []acceptCase{{
		name: "stats socket, a backend, no frontend",
		conf: func(t *testing.T) string {
			return "global\n  stats socket /run/vipstack-test.sock mode 600 level admin\ndefaults\n  timeout connect 1s\n  timeout client 1s\n  timeout server 1s\n" +
				"backend b\n  server s 127.0.0.1:47012\n"
		},
		get:  func(c *lbconfig.Config) any { return []int{len(c.Frontends), len(c.StatsSockets), len(c.Backends)} },
		want: []int{0, 1, 1},
	}})
}
