package haproxycfg

import (
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestAbortOnClose: `option abortonclose` reaches the backends that
// inherit it or say it, and a frontend gets haproxy's warning.
func TestAbortOnClose(t *testing.T) {
	abort := func(c *lbconfig.Config) any {
		var out []bool
		for _, b := range c.Backends {
			out = append(out, b.AbortOnClose)
		}
		return out
	}
	runAccept(t, []acceptCase{
		{
			name: "none",
			conf: func(t *testing.T) string { return base },
			get:  abort,
			want: []bool{false},
		},
		{
			name: "in defaults",
			conf: func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  option abortonclose\n") },
			get:  abort,
			want: []bool{true},
		},
		{
			name: "in the backend",
			conf: func(t *testing.T) string { return base + "  option abortonclose\n" },
			get:  abort,
			want: []bool{true},
		},
		{
			name: "in the frontend: ignored with haproxy's warning",
			conf: func(t *testing.T) string {
				return edit(t, "  default_backend masters\n", "  default_backend masters\n  option abortonclose\n")
			},
			get:          abort,
			want:         []bool{false},
			wantWarnings: []string{"h.cfg:9: 'abortonclose' ignored because frontend 'main' has no backend capability."},
		},
		{
			name: "in a forwarding listen",
			conf: func(t *testing.T) string {
				return base + "listen api\n  bind 127.0.0.1:47013\n  option abortonclose\n  server a1 127.0.0.1:47014\n"
			},
			get:  abort,
			want: []bool{false, true},
		},
	})
}
