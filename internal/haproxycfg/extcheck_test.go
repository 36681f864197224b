package haproxycfg

import (
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestExternalCheck: option external-check with its command and path,
// the last check option winning, haproxy's bound on the run and its
// warning without insecure-fork-wanted.
func TestExternalCheck(t *testing.T) {
	const global = "global\n  external-check\n"
	withCheck := func(t *testing.T, lines string) string {
		return global + edit(t, "  server m0 127.0.0.1:47012 check\n", lines+"  server m0 127.0.0.1:47012 check\n")
	}
	runAccept(t, []acceptCase{
		{
			name: "command and path, haproxy's warning",
			conf: func(t *testing.T) string {
				return withCheck(t, "  option external-check\n  external-check path \"/usr/bin:/bin\"\n  external-check command check.sh\n")
			},
			get: func(c *lbconfig.Config) any {
				return []any{c.Backends[0].ExternalCheck, c.Backends[0].Servers[0].CheckTimeout}
			},
			want: []any{&lbconfig.ExternalCheck{Command: "check.sh", Path: "/usr/bin:/bin"}, 2 * time.Second},
			wantWarnings: []string{
				"h.cfg:12: Proxy 'masters' : 'insecure-fork-wanted' not enabled in the global section, 'option external-check' will likely fail.",
			},
		},
		{
			name: "timeout check bounds a run by timeout connect",
			conf: func(t *testing.T) string {
				return "global\n  external-check\n  insecure-fork-wanted\n" +
					edit(t, "  server m0 127.0.0.1:47012 check\n", "  timeout check 10s\n  option external-check\n  external-check command /bin/true\n  server m0 127.0.0.1:47012 check\n")
			},
			get:  func(c *lbconfig.Config) any { return c.Backends[0].Servers[0].CheckTimeout },
			want: 2 * time.Second, // min(inter 2s, timeout connect 5s)
		},
		{
			name: "a later check option wins",
			conf: func(t *testing.T) string {
				return withCheck(t, "  option external-check\n  external-check command /bin/true\n  option tcp-check\n")
			},
			get:  func(c *lbconfig.Config) any { return c.Backends[0].ExternalCheck == nil },
			want: true,
		},
		{
			name: "after another check option",
			conf: func(t *testing.T) string {
				return "global\n  external-check\n  insecure-fork-wanted\n" +
					edit(t, "  server m0 127.0.0.1:47012 check\n", "  option httpchk\n  external-check command /bin/true\n  option external-check\n  server m0 127.0.0.1:47012 check\n")
			},
			get: func(c *lbconfig.Config) any {
				return []any{c.Backends[0].ExternalCheck, c.Backends[0].Check}
			},
			want: []any{&lbconfig.ExternalCheck{Command: "/bin/true"}, lbconfig.HTTPCheck{}},
		},
	})
}
