package controller_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/testutil"
)

// editPool sets a pool's addresses (the CRD's schema must let them
// through) and returns the new generation.
func (h *harness) editPool(name string, addrs ...string) int64 {
	h.t.Helper()
	var p v1alpha1.IPPool
	// The controller writes the pool's status meanwhile, which changes its
	// resourceVersion: read it again on a conflict, as kubectl edit would.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := h.c.Get(h.t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
			return err
		}
		p.Spec.Addresses = addrs
		return h.c.Update(h.t.Context(), &p)
	})
	if err != nil {
		h.t.Fatalf("edit pool %s to %v: %v", name, addrs, err)
	}
	return p.Generation
}

// poolReady waits until the pool's Ready condition has the status, is for
// generation gen and its message holds every one of want.
func (h *harness) poolReady(name string, gen int64, status metav1.ConditionStatus, want ...string) *v1alpha1.IPPool {
	h.t.Helper()
	var p v1alpha1.IPPool
	testutil.Eventually(h.t, 30*time.Second, func() error {
		if err := h.c.Get(h.t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
			return err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Status != status || c.ObservedGeneration != gen {
			return fmt.Errorf("pool %s: Ready is %+v, want %s for generation %d", name, c, status, gen)
		}
		for _, w := range want {
			if !strings.Contains(c.Message, w) {
				return fmt.Errorf("pool %s: Ready message %q does not hold %q", name, c.Message, w)
			}
		}
		return nil
	})
	return &p
}

// TestInvalidPoolEdit runs the controller against a real API server and
// edits a pool in use into specs the CRD's schema accepts but the
// controller refuses. The last valid version stays in effect (as MetalLB
// keeps its last valid configuration), and the pool's Ready condition says
// it is refused, why, and which generation serves; after a restart that
// version is unknown, the pool serves nothing and the condition says so.
// Throughout, no Service loses its address and none is given twice.
func TestInvalidPoolEdit(t *testing.T) {
	h := newHarness(t)
	for _, ns := range []string{"infra", "demo"} {
		h.namespace(ns)
	}
	lb := map[string]string{"vipstack.io/lb": "true"}
	h.node("n1", "198.18.0.11", lb)
	h.create(group("infra", "workers", lb))
	h.create(pool("edit", true, nil, "198.18.30.0/30"))
	ctl := h.startController(controller.Options{})
	h.poolReady("edit", 1, metav1.ConditionTrue)
	h.create(lbService("demo", "a", groupAnn("infra/workers")))
	h.waitIngress("demo", "a", "198.18.30.0")

	held := map[string]string{"a": "198.18.30.0"}
	checkHeld := func(t *testing.T) {
		t.Helper()
		seen := map[string]string{}
		for name, want := range held {
			got := ingressIPs(h.service("demo", name))
			if !slices.Equal(got, []string{want}) {
				t.Errorf("Service %s shows %v, want %s kept", name, got, want)
			}
			for _, a := range got {
				if other, ok := seen[a]; ok {
					t.Errorf("%s given to both %s and %s", a, other, name)
				}
				seen[a] = name
			}
		}
	}

	// Each edit passes the CRD's schema and CEL rules (editPool's Update
	// fails otherwise) and is refused by the controller.
	edits := []struct {
		name  string
		addrs []string
		why   string // in the Ready message
		next  string // the address a new Service gets from generation 1
	}{
		{name: "range ends before it starts", addrs: []string{"198.18.30.0/30", "198.18.31.9-198.18.31.1"},
			why: "the range ends (198.18.31.1) before it starts (198.18.31.9)", next: "198.18.30.1"},
		{name: "ranges overlap within the pool", addrs: []string{"198.18.30.0/30", "198.18.30.2"},
			why: "range 198.18.30.2 overlaps its range 198.18.30.0/30", next: "198.18.30.2"},
	}
	for i, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			gen := h.editPool("edit", e.addrs...)
			p := h.poolReady("edit", gen, metav1.ConditionFalse, e.why, "generation 1 (the last valid one) is still in effect: 198.18.30.0/30")
			if r := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady); r.Reason != controller.ReasonInvalid {
				t.Errorf("Ready reason %s, want %s", r.Reason, controller.ReasonInvalid)
			}
			if p.Status.Size != 4 {
				t.Errorf("status.size %d, want 4 (generation 1's)", p.Status.Size)
			}
			h.waitEvent("", "IPPool", "edit", corev1.EventTypeWarning, controller.ReasonInvalid)
			name := fmt.Sprintf("new%d", i)
			h.create(lbService("demo", name, groupAnn("infra/workers")))
			h.waitIngress("demo", name, e.next)
			held[name] = e.next
			checkHeld(t)
		})
	}

	t.Run("restart with the invalid spec: nothing new from the pool, nothing taken", func(t *testing.T) {
		ctl.stop(t)
		h.startController(controller.Options{})
		h.poolReady("edit", 3, metav1.ConditionFalse, edits[1].why, "no valid version of the pool is in effect", "not kept across restarts")
		h.create(lbService("demo", "late", groupAnn("infra/workers")))
		h.waitCondition("demo", "late", v1alpha1.ServiceConditionAllocated, metav1.ConditionFalse, controller.ReasonNoPool)
		if got := ingressIPs(h.service("demo", "late")); len(got) != 0 {
			t.Errorf("Service late got %v from a pool not in effect", got)
		}
		checkHeld(t)
	})

	t.Run("fixed: the pool serves its new spec, held addresses stay", func(t *testing.T) {
		gen := h.editPool("edit", "198.18.30.0/30", "198.18.31.0/31")
		h.poolReady("edit", gen, metav1.ConditionTrue, "6 addresses")
		h.waitIngress("demo", "late", "198.18.30.3")
		held["late"] = "198.18.30.3"
		checkHeld(t)
	})
}
