package controller

import (
	"testing"

	basemetrics "github.com/vipstack/vipstack/internal/metrics"
	"github.com/vipstack/vipstack/internal/metrics/metricstest"
)

// TestMetricNamesLint: the controller's series, each with a value, pass
// promlint.
func TestMetricNamesLint(t *testing.T) {
	reg := basemetrics.NewRegistry()
	m := newMetrics(reg)
	m.allocations.WithLabelValues("Allocated").Inc()
	m.poolSize.WithLabelValues("p").Set(10)
	m.poolUsed.WithLabelValues("p").Set(1)
	m.poolStale.WithLabelValues("p").Set(0)
	metricstest.Lint(t, reg)
}
