// Package metricstest checks, in tests, that what a vipstack registry
// exports follows Prometheus' naming conventions (promlint).
package metricstest

import (
	"strings"
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
// gathers no vipstack_ series beside vipstack_build_info (a lint of
// nothing proves nothing).
func Lint(t testing.TB, g prometheus.Gatherer) {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	n := 0
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "vipstack_") && f.GetName() != "vipstack_build_info" {
			n++
		}
	}
	if n == 0 {
		t.Fatalf("the registry gathers no vipstack_ series of its own to lint")
	}
	ps, err := Problems(g)
	if err != nil {
		t.Fatalf("lint: %v", err)
	}
	for _, p := range ps {
		t.Errorf("metric name lint: %s", p)
	}
}
