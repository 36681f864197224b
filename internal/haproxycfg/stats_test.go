package haproxycfg

import (
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestStatsKeywords: the stats page settings of the corpus's stats
// listens, with the values they resolve to.
func TestStatsKeywords(t *testing.T) {
	runAccept(t, []acceptCase{
		{
			name: "realm, admin, show-*, timeouts",
			conf: func(t *testing.T) string {
				return base + "listen stats\n  bind 127.0.0.1:47013\n  mode http\n  timeout client 1h\n  stats enable\n" +
					"  stats realm Haproxy\\ Statistics\n  stats admin if TRUE\n  stats show-node\n  stats show-desc Stats for ocp4 cluster\n  stats show-legends\n"
			},
			get: func(c *lbconfig.Config) any {
				s := c.Stats[0]
				return []any{s.Realm, s.Admin, s.ShowNode, s.Node, s.Desc, s.Legends, s.Timeouts.Client}
			},
			want: []any{"Haproxy Statistics", lbconfig.AdminAll, true, "", "Stats for ocp4 cluster", true, time.Hour},
		},
		{
			name: "admin for local clients, named node",
			conf: func(t *testing.T) string {
				return base + "listen stats\n  bind 127.0.0.1:47013\n  mode http\n  stats enable\n  stats admin if LOCALHOST\n  stats show-node lb1\n"
			},
			get:  func(c *lbconfig.Config) any { return []any{c.Stats[0].Admin, c.Stats[0].Node} },
			want: []any{lbconfig.AdminLocal, "lb1"},
		},
		{
			name: "the stats page of a mode http frontend (OpenShift's)",
			conf: func(t *testing.T) string {
				return base + "frontend stats\n  bind 127.0.0.1:47013\n  mode http\n  maxconn 10\n  stats enable\n  stats show-node\n" +
					"  stats show-desc Stats for ocp4 cluster \n  stats realm Our\\ Stats\n  stats show-legends\n  stats admin if LOCALHOST\n  stats uri /stats\n"
			},
			get: func(c *lbconfig.Config) any {
				s := c.Frontends[1].HTTP.Stats
				return []any{s.URI, s.ShowNode, s.Desc, s.Realm, s.Legends, s.Admin}
			},
			want: []any{"/stats", true, "Stats for ocp4 cluster", "Our Stats", true, lbconfig.AdminLocal},
		},
	})
}
