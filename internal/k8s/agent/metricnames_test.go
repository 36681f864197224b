package agent

import (
	"testing"

	basemetrics "github.com/vipstack/vipstack/internal/metrics"
	"github.com/vipstack/vipstack/internal/metrics/metricstest"
)

// TestMetricNamesLint: the agent's own series pass promlint (the engine's
// are linted in package engine; vipstack_agent_announced is checked on a
// live scrape by TestEndToEnd).
func TestMetricNamesLint(t *testing.T) {
	reg := basemetrics.NewRegistry()
	m := newAgentMetrics(reg)
	m.reloads.WithLabelValues("ok").Inc()
	metricstest.Lint(t, reg)
}
