package controller_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestAllocationsMetric: vipstack_k8s_allocations_total counts outcomes
// (an address given, a new refusal), not reconciles: a Service looked at
// again with nothing new to decide leaves it alone.
func TestAllocationsMetric(t *testing.T) {
	h := newHarness(t)
	h.namespace("infra")
	h.namespace("demo")
	lb := map[string]string{"vipstack.io/lb": "true"}
	h.node("n1", "198.18.0.11", lb)
	h.create(pool("auto", true, nil, "198.18.10.0/31"))
	h.create(group("infra", "workers", lb))
	reg := prometheus.NewRegistry()
	h.startController(controller.Options{Registry: reg})
	count := func(g prometheus.Gatherer, name, label, value string) float64 {
		t.Helper()
		fams, err := g.Gather()
		if err != nil {
			t.Fatal(err)
		}
		n := 0.0
		for _, f := range fams {
			if f.GetName() != name {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == label && l.GetValue() == value {
						n += m.GetCounter().GetValue()
					}
				}
			}
		}
		return n
	}
	allocations := func(result string) float64 {
		return count(reg, "vipstack_k8s_allocations_total", "result", result)
	}
	// touch changes a Service's labels, so that the controller looks at it
	// again with nothing new to decide, and waits until it has
	// (controller-runtime's reconcile counter, in its global registry).
	touch := func(name string, i int) {
		t.Helper()
		before := count(crmetrics.Registry, "controller_runtime_reconcile_total", "controller", "vipstack-services")
		s := h.service("demo", name)
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels["touch"] = fmt.Sprint(i)
		if err := h.c.Update(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 30*time.Second, func() error {
			if n := count(crmetrics.Registry, "controller_runtime_reconcile_total", "controller", "vipstack-services"); n <= before {
				return fmt.Errorf("no reconcile of the Services after touching %s", name)
			}
			return nil
		})
	}

	h.create(lbService("demo", "web", groupAnn("infra/workers")))
	h.waitIngress("demo", "web", "198.18.10.0")
	// The count follows the status write the test just saw.
	atLeast := func(result string, n float64) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, func() error {
			if got := allocations(result); got < n {
				return fmt.Errorf("allocations_total{result=%s} = %v, want %v", result, got, n)
			}
			return nil
		})
	}
	atLeast(controller.ReasonAllocated, 1)
	for i := range 3 {
		touch("web", i)
	}
	if got := allocations(controller.ReasonAllocated); got != 1 {
		t.Errorf("after three reconciles with nothing new: allocations_total{result=Allocated} = %v, want 1", got)
	}
	// A second Service gets the other address; a third is refused once,
	// however often it is looked at again.
	h.create(lbService("demo", "api", groupAnn("infra/workers")))
	h.waitIngress("demo", "api", "198.18.10.1")
	h.create(lbService("demo", "late", groupAnn("infra/workers")))
	h.waitCondition("demo", "late", v1alpha1.ServiceConditionAllocated, metav1.ConditionFalse, controller.ReasonPoolExhausted)
	atLeast(controller.ReasonAllocated, 2)
	atLeast(controller.ReasonPoolExhausted, 1)
	for i := range 2 {
		touch("late", i)
	}
	if got, want := [2]float64{allocations(controller.ReasonAllocated), allocations(controller.ReasonPoolExhausted)}, [2]float64{2, 1}; got != want {
		t.Errorf("allocations_total{Allocated, PoolExhausted} = %v, want %v", got, want)
	}
}
