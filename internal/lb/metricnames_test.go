package lb

import (
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/metrics"
	"github.com/vipstack/vipstack/internal/metrics/metricstest"
)

// TestMetricNamesLint: after a client session through a frontend and a
// visit to the stats section, every series `vipstack lb` serves (its own
// and the shared base) passes promlint.
func TestMetricNamesLint(t *testing.T) {
	a := startBackend(t, "a")
	reg := metrics.NewRegistry()
	l, err := New(Options{Clock: fakeClock(), Registry: reg, Version: "v9.9.9"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Shutdown(canceled()) })
	if err := l.Apply(webConfig(tcpConfig(lbconfig.RoundRobin, srv("a", a)))); err != nil {
		t.Fatal(err)
	}
	cl := dial(t, l, "fe")
	cl.greeting(t)
	cl.echo(t, "0123456789")
	cl.CloseWrite()
	cl.closed(t)
	get(t, "http://"+l.Addrs("stats")[0].String()+"/haproxy_stats", nil, "Username", "Password")
	metricstest.Lint(t, reg)
}
