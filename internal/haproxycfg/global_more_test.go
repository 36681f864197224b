package haproxycfg

import (
	"os"
	"path/filepath"
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
				// a state file that exists: without one, haproxy's
				// warning (TestParseAccepts)
				state := filepath.Join(t.TempDir(), "state")
				if err := os.WriteFile(state, []byte("1\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				return "global\n  ulimit-n 65536\n  spread-checks 5\n  hard-stop-after 30s\n  log-send-hostname lb1\n" +
					"  tune.ssl.default-dh-param 2048\n  server-state-file " + state + "\n" + base
			},
			get: func(c *lbconfig.Config) any {
				return []any{c.UlimitN, c.SpreadChecks, c.HardStopAfter, c.LogHostname}
			},
			want: []any{65536, 5, 30 * time.Second, "lb1"},
		},
	})
}

// TestBindAndHashType: port ranges, v6only and name on bind lines, and
// hash-type.
func TestBindAndHashType(t *testing.T) {
	runAccept(t, []acceptCase{
		{
			name: "range, v6only, name, hash-type consistent",
			conf: func(t *testing.T) string {
				return edit(t, "  bind 127.0.0.1:47011\n", "  bind :::47011-47013 v6only name np\n") + "  balance source\n  hash-type consistent\n"
			},
			get: func(c *lbconfig.Config) any {
				return []any{len(c.Frontends[0].Binds), c.Frontends[0].Binds[2].Addr.Port(), c.Frontends[0].Binds[0].V6Only, c.Backends[0].HashType}
			},
			want: []any{3, uint16(47013), true, "consistent"},
		},
		{
			// defaults' hash-type and fullconn: backends start from
			// them, their own win (haproxy 2.6 takes them in defaults).
			name: "hash-type and fullconn in defaults",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  balance source\n  hash-type consistent\n  fullconn 500\n") +
					"backend other\n  hash-type map-based\n  fullconn 20\n  server o0 127.0.0.1:47013\n"
			},
			get: func(c *lbconfig.Config) any {
				return []any{c.Backends[0].HashType, c.Backends[1].HashType, c.Backends[0].FullConn, c.Backends[1].FullConn}
			},
			want: []any{"consistent", "map-based", 500, 20},
		},
	})
}

// TestStatsSocketWildcard: stats socket *:PORT listens on every IPv4
// address.
func TestStatsSocketWildcard(t *testing.T) {
	runAccept(t, []acceptCase{{
		name: "stats socket *:PORT",
		conf: func(t *testing.T) string { return "global\n  stats socket *:47099 level admin\n" + base },
		get:  func(c *lbconfig.Config) any { return []string{c.StatsSockets[0].Network, c.StatsSockets[0].Address} },
		want: []string{"tcp", "0.0.0.0:47099"},
	}})
}
