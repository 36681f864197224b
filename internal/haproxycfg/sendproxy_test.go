package haproxycfg

import (
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestSendProxy: send-proxy and send-proxy-v2 on servers and
// default-server, and what stays refused.
func TestSendProxy(t *testing.T) {
	const srv = "  server m0 127.0.0.1:47012 check\n"
	get := func(c *lbconfig.Config) any {
		var out []int
		for _, s := range c.Backends[0].Servers {
			out = append(out, s.SendProxy)
		}
		return out
	}
	runAccept(t, []acceptCase{
		{name: "v1 and v2",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  server a 127.0.0.1:47012 send-proxy\n  server b 127.0.0.1:47013 send-proxy-v2\n  server c 127.0.0.1:47014\n")
			},
			get: get, want: []int{1, 2, 0}},
		{name: "with checks",
			conf: func(t *testing.T) string { return edit(t, srv, "  server a 127.0.0.1:47012 check send-proxy\n") },
			get:  get, want: []int{1}},
		{name: "from default-server, checks on another port",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  default-server send-proxy-v2\n  server a 127.0.0.1:47012 check port 47015\n")
			},
			get: get, want: []int{2}},
	})
	for _, tc := range []struct{ name, conf, want string }{
		{name: "mode http", conf: "  mode http\n  server a 127.0.0.1:47012 send-proxy\n",
			want: "send-proxy in a mode http backend is not supported by vipstack"},
		{name: "ssl variant", conf: "  server a 127.0.0.1:47012 send-proxy-v2-ssl\n",
			want: `h.cfg:10: backend masters, server a: parameter "send-proxy-v2-ssl" is not supported by vipstack`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := edit(t, srv, tc.conf)
			if tc.name == "mode http" {
				conf = strings.Replace(conf, "  default_backend masters\n", "  mode http\n  default_backend masters\n", 1)
			}
			_, err := Parse("h.cfg", []byte(conf))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse error %v, want it to contain %q\n%s", err, tc.want, conf)
			}
		})
	}
}
