package haproxycfg

import (
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestGlobalMore: ulimit-n, spread-checks, hard-stop-after,
// log-send-hostname, tune.ssl.default-dh-param and server-state-file.
func TestGlobalMore(t *testing.T) {
	runAccept(t, []acceptCase{
		{
			name: "global settings",
			conf: func(t *testing.T) string {
				return "global\n  ulimit-n 65536\n  spread-checks 5\n  hard-stop-after 30s\n  log-send-hostname lb1\n" +
					"  tune.ssl.default-dh-param 2048\n  server-state-file /var/lib/haproxy/state\n" + base
			},
			get: func(c *lbconfig.Config) any {
				return []any{c.UlimitN, c.SpreadChecks, c.HardStopAfter, c.LogHostname}
			},
			want: []any{65536, 5, 30 * time.Second, "lb1"},
		},
	})
}
