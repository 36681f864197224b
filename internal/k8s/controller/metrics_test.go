package controller

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsSetUpTwice: a second controller in the same process (the
// registry outlives the first) shares the first's collectors instead of
// panicking, so what either counts is served once.
func TestMetricsSetUpTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	first := newMetrics(reg)
	second := newMetrics(reg)
	if first.allocations != second.allocations || first.poolSize != second.poolSize || first.poolUsed != second.poolUsed {
		t.Fatal("the second set-up made collectors of its own")
	}
	second.allocations.WithLabelValues("Allocated").Inc()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "vipstack_k8s_allocations_total" {
			if v := f.GetMetric()[0].GetCounter().GetValue(); v != 1 {
				t.Errorf("allocations = %v, want 1", v)
			}
			return
		}
	}
	t.Error("vipstack_k8s_allocations_total is not registered")
}
