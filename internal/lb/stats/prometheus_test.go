package stats

import (
	"strings"
	"testing"
)

// TestPrometheusGolden: the exporter's text of a known state, byte for
// byte (regenerate with -update), and a few lines whose values follow
// from the state.
func TestPrometheusGolden(t *testing.T) {
	text := string(measuredSnapshot(t).Prometheus())
	golden(t, "TestPrometheusGolden.golden", []byte(text))
	for _, want := range []string{
		`haproxy_frontend_sessions_total{proxy="main"} 4`,
		`haproxy_frontend_status{proxy="main",state="UP"} 1`,
		`haproxy_backend_active_servers{proxy="masters"} 2`,
		`haproxy_server_status{proxy="masters",server="m3",state="DOWN"} 1`,
		`haproxy_server_status{proxy="masters",server="m3",state="UP"} 0`,
		`haproxy_server_check_status{proxy="masters",server="m3",state="L4CON"} 1`,
		`haproxy_server_check_status{proxy="masters",server="m1",state="L7OK"} 1`,
		`haproxy_server_total_time_average_seconds{proxy="masters",server="m1"} 0.003000`,
	} {
		if !strings.Contains(text, "\n"+want+"\n") {
			t.Errorf("no line %q in:\n%s", want, text)
		}
	}
	// One HELP and one TYPE per metric.
	seen := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "# HELP ") {
			name := strings.Fields(l)[2]
			if seen[name] {
				t.Errorf("HELP of %s twice", name)
			}
			seen[name] = true
		}
	}
}
