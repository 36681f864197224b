package ipfailover

import (
	"testing"

	basemetrics "github.com/vipstack/vipstack/internal/metrics"
	"github.com/vipstack/vipstack/internal/metrics/metricstest"
)

// TestMetricNamesLint: the pool's own series (the engine's are linted in
// package engine) pass promlint.
func TestMetricNamesLint(t *testing.T) {
	spec, err := Parse(Input{Env: map[string]string{EnvVirtualIPs: "198.18.0.100"}})
	if err != nil {
		t.Fatal(err)
	}
	reg := basemetrics.NewRegistry()
	if _, err := New(Options{Spec: spec, Registry: reg}); err != nil {
		t.Fatal(err)
	}
	metricstest.Lint(t, reg)
}
