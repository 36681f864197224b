package haproxycfg

import (
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestTCPFrontendHTTPBackend: a mode tcp frontend whose default backend
// is mode http becomes an HTTP frontend in TCP mode, whatever the order
// of the sections; one with a log format is refused.
func TestTCPFrontendHTTPBackend(t *testing.T) {
	httpBackend := "  default_backend masters\nbackend masters\n  mode http\n"
	runAccept(t, []acceptCase{
		{
			name: "backend after the frontend",
			conf: func(t *testing.T) string {
				return edit(t, "  default_backend masters\nbackend masters\n", httpBackend)
			},
			get:  func(c *lbconfig.Config) any { return c.Frontends[0].HTTP },
			want: &lbconfig.HTTPFrontend{TCPMode: true},
		},
		{
			name: "tcp backend: no change",
			conf: func(t *testing.T) string { return base },
			get:  func(c *lbconfig.Config) any { return c.Frontends[0].HTTP },
			want: (*lbconfig.HTTPFrontend)(nil),
		},
	})
	conf := strings.Replace(base, "  default_backend masters\nbackend masters\n", "  log 127.0.0.1:514 local0\n  option tcplog\n"+httpBackend, 1)
	_, err := Parse("h.cfg", []byte(conf))
	want := "tcp frontend main with a log format (option tcplog, log-format) uses backend masters, which is mode http"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Parse error = %v, want one containing %q", err, want)
	}
}
