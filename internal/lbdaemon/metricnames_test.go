package lbdaemon

import (
	"testing"

	"github.com/vipstack/vipstack/internal/metrics"
	"github.com/vipstack/vipstack/internal/metrics/metricstest"
)

// TestMetricNamesLint: the reload series of `vipstack lb` pass promlint.
func TestMetricNamesLint(t *testing.T) {
	reg := metrics.NewRegistry()
	m, err := newReloadMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.refused()
	metricstest.Lint(t, reg)
}
