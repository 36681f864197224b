package haproxycfg

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestGlobalNodeDesc: global's node and description are what stats
// show-node and show-desc show without their own, in a listen and in a
// mode http frontend, wherever global stands in the file.
func TestGlobalNodeDesc(t *testing.T) {
	stats := "listen st\n  bind 127.0.0.1:47013\n  mode http\n  stats enable\n  stats show-node\n  stats show-desc\n"
	runAccept(t, []acceptCase{
		{
			name: "listen, global first",
			conf: func(t *testing.T) string {
				return "global\n  node lb-7\n  description edge pair  A\n" + base + stats
			},
			get:  func(c *lbconfig.Config) any { return []string{c.Stats[0].Node, c.Stats[0].Desc} },
			want: []string{"lb-7", "edge pair A"},
		},
		{
			name: "frontend, global last, own node kept",
			conf: func(t *testing.T) string {
				return base + "frontend st\n  bind 127.0.0.1:47013\n  mode http\n  stats enable\n  stats show-node own\n  stats show-desc\n" +
					"global\n  node lb-7\n  description d\n"
			},
			get: func(c *lbconfig.Config) any {
				return []string{c.Frontends[1].HTTP.Stats.Node, c.Frontends[1].HTTP.Stats.Desc}
			},
			want: []string{"own", "d"},
		},
		{
			name: "no global node: the page shows the host name",
			conf: func(t *testing.T) string { return "global\n  description d\n" + base + stats },
			get:  func(c *lbconfig.Config) any { return []any{c.Stats[0].ShowNode, c.Stats[0].Node} },
			want: []any{true, ""},
		},
	})
}

func TestGlobalNodeDescErrors(t *testing.T) {
	stats := "listen st\n  bind 127.0.0.1:47013\n  mode http\n  stats enable\n  stats show-desc\n"
	for _, tt := range []struct{ name, conf, want string }{
		{name: "show-desc with nothing to show", conf: base + stats,
			want: "h.cfg:15: stats show-desc needs a description: it has none and global has no description (accepted: stats show-desc TEXT, or global's description TEXT)"},
		{name: "node without a name", conf: "global\n  node\n" + base,
			want: "h.cfg:2: node needs a value (accepted: node TEXT)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("h.cfg", []byte(tt.conf))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Parse error\n got %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestProxyLogTag: a section's log-tag, defaults' for those without one.
func TestProxyLogTag(t *testing.T) {
	runAccept(t, []acceptCase{{
		name: "defaults, frontend, backend, listen, stats",
		conf: func(t *testing.T) string {
			return edit(t, "  mode tcp\n", "  mode tcp\n  log-tag dflt\n") +
				"backend b2\n  log-tag bk\n  server s 127.0.0.1:47013\n" +
				"listen l\n  bind 127.0.0.1:47014\n  log-tag ls\n  server s 127.0.0.1:47015\n" +
				"listen st\n  bind 127.0.0.1:47016\n  mode http\n  stats enable\n  log-tag st\n"
		},
		get: func(c *lbconfig.Config) any {
			return []string{c.Frontends[0].LogTag, c.Backends[0].LogTag, c.Backends[1].LogTag,
				c.Frontends[1].LogTag, c.Backends[2].LogTag, c.Stats[0].LogTag}
		},
		want: []string{"dflt", "dflt", "bk", "ls", "ls", "st"},
	}})
}

// TestServerTemplate: a server-template line gives the backend the
// model the same server lines give it.
func TestServerTemplate(t *testing.T) {
	for _, tt := range []struct{ name, template, lines string }{
		{name: "count", template: "  server-template web 3 127.0.0.1:47012 check weight 5\n",
			lines: "  server web1 127.0.0.1:47012 check weight 5\n  server web2 127.0.0.1:47012 check weight 5\n  server web3 127.0.0.1:47012 check weight 5\n"},
		{name: "range in a listen", template: "  server-template w 4-5 127.0.0.1:47012 maxconn 9\n",
			lines: "  server w4 127.0.0.1:47012 maxconn 9\n  server w5 127.0.0.1:47012 maxconn 9\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conf := func(servers string) string {
				if tt.name == "range in a listen" {
					return base + "listen l\n  bind 127.0.0.1:47014\n" + servers
				}
				return edit(t, srv10, servers)
			}
			want, err := Parse("h.cfg", []byte(conf(tt.lines)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse("h.cfg", []byte(conf(tt.template)))
			if err != nil {
				t.Fatal(err)
			}
			be := len(got.Backends) - 1
			if diff := cmp.Diff(want.Backends[be].Servers, got.Backends[be].Servers, cmpOpts); diff != "" {
				t.Errorf("servers (-server lines +server-template):\n%s", diff)
			}
			if ok, out := haproxyCheck(t, []byte(conf(tt.template))); !ok {
				t.Errorf("haproxy -c rejects it:\n%s", out)
			}
		})
	}
	for _, tt := range []struct{ name, line, want string }{
		{name: "zero", line: "  server-template s 0 127.0.0.1:47012\n",
			want: `h.cfg:10: server-template s: "0" is not a number of servers or a range LOW-HIGH of 1 or more (accepted: server-template PREFIX NUM|LOW-HIGH ADDRESS[:PORT] [params])`},
		{name: "resolvers", line: "  server-template s 2 db.example:5432 resolvers dns\n",
			want: "h.cfg:10: server-template s with resolvers is not supported by vipstack yet: haproxy spreads the DNS answer's addresses over the servers (accepted: server-template without resolvers, every server at the address resolved at start; or server lines with resolvers)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("h.cfg", []byte(edit(t, srv10, tt.line)))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Parse error\n got %v\nwant %s", err, tt.want)
			}
		})
	}
}
