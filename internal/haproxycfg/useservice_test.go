package haproxycfg

import (
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

const statsListen = "listen stats\n  bind 127.0.0.1:47019\n  mode http\n  stats enable\n  stats uri /stats\n"

// TestUseServicePrometheus: the exporter's line in a stats listen, with
// the conditions accepted.
func TestUseServicePrometheus(t *testing.T) {
	prom := func(c *lbconfig.Config) any { return c.Stats[0].Prometheus }
	runAccept(t, []acceptCase{
		{
			name: "if path",
			conf: func(t *testing.T) string {
				return base + statsListen + "  http-request use-service prometheus-exporter if { path /metrics }\n"
			},
			get:  prom,
			want: &lbconfig.PrometheusService{Paths: []string{"/metrics"}},
		},
		{
			name: "unless two paths, before stats enable",
			conf: func(t *testing.T) string {
				return base + "listen stats\n  bind 127.0.0.1:47019\n  mode http\n  http-request use-service prometheus-exporter unless { path /a /b }\n  stats enable\n"
			},
			get:  prom,
			want: &lbconfig.PrometheusService{Paths: []string{"/a", "/b"}, Unless: true},
		},
		{
			name: "no condition",
			conf: func(t *testing.T) string {
				return base + statsListen + "  http-request use-service prometheus-exporter\n"
			},
			get:  prom,
			want: &lbconfig.PrometheusService{},
		},
	})
}

func TestUseServiceErrors(t *testing.T) {
	for _, tt := range []struct {
		name, conf, want string
	}{
		{"another service", base + statsListen + "  http-request use-service lua.x\n",
			`h.cfg:16: http-request use-service: service "lua.x" is not supported by vipstack (accepted: http-request use-service prometheus-exporter [if|unless { path PATH... }] in a stats listen)`},
		{"another condition", base + statsListen + "  http-request use-service prometheus-exporter if { path_beg /m }\n",
			`h.cfg:16: http-request use-service: condition "if { path_beg /m }" is not supported by vipstack`},
		{"twice", base + statsListen + "  http-request use-service prometheus-exporter\n  http-request use-service prometheus-exporter\n",
			`h.cfg:17: http-request use-service: a second use-service in listen stats is not supported by vipstack`},
		{"without a stats page", base + "listen metrics\n  bind 127.0.0.1:47019\n  mode http\n  http-request use-service prometheus-exporter if { path /metrics }\n",
			`h.cfg:11: listen metrics serves use-service prometheus-exporter without a stats page`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("h.cfg", []byte(tt.conf))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
