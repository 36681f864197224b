// Package metricstest checks, in tests, that what a vipstack registry
// exports follows Prometheus' naming conventions (promlint).
package metricstest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Problems returns promlint's findings on what g gathers, one line each
// ("vipstack_x: counter metrics should have \"_total\" suffix").
func Problems(g prometheus.Gatherer) ([]string, error) {
	ps, err := testutil.GatherAndLint(g)
	var out []string
	for _, p := range ps {
		out = append(out, p.Metric+": "+p.Text)
	}
	return out, err
}

// Lint fails t for every promlint finding on what g gathers, and when g
// gathers no vipstack_ series at all (a lint of nothing proves nothing).
func Lint(t testing.TB, g prometheus.Gatherer) {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	n := 0
	for _, f := range fams {
		if len(f.GetName()) > 9 && f.GetName()[:9] == "vipstack_" {
			n++
		}
	}
	if n == 0 {
		t.Fatalf("the registry gathers no vipstack_ series to lint")
	}
	ps, err := Problems(g)
	if err != nil {
		t.Fatalf("lint: %v", err)
	}
	for _, p := range ps {
		t.Errorf("metric name lint: %s", p)
	}
}
