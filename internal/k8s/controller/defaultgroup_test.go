package controller_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// TestDefaultGroupAndClass runs a controller that is the cluster's default
// load-balancer implementation (DefaultGroup) with a class of its own: a
// Service with no annotation is served by the default group, with or
// without the class; one of another class (vipstack's usual one included)
// is left alone.
func TestDefaultGroupAndClass(t *testing.T) {
	h := newHarness(t)
	h.namespace("infra")
	h.namespace("demo")
	h.node("n1", "198.18.0.11", nil)
	h.create(pool("auto", true, nil, "198.18.20.0/30"))
	h.create(group("infra", "default", nil))
	h.create(group("infra", "other", nil))
	const class = "example.org/vips"
	h.startController(controller.Options{DefaultGroup: k8s.GroupRef{Namespace: "infra", Name: "default"}, LoadBalancerClass: class})

	withClass := func(name, cls string, ann map[string]string) {
		s := lbService("demo", name, ann)
		if cls != "" {
			s.Spec.LoadBalancerClass = &cls
		}
		h.create(s)
	}
	steps := []struct {
		name, class string
		ann         map[string]string
		wantGroup   string // "": left alone
		wantReason  string
	}{
		{name: "plain", wantGroup: "infra/default", wantReason: controller.ReasonDefaultGroup},
		{name: "classed", class: class, wantGroup: "infra/default", wantReason: controller.ReasonDefaultGroup},
		{name: "named", ann: groupAnn("infra/other"), wantGroup: "infra/other"},
		{name: "foreign-class", class: "other.example/lb"},
		{name: "vipstack-class", class: k8s.LoadBalancerClass},
		{name: "last", wantGroup: "infra/default", wantReason: controller.ReasonDefaultGroup},
	}
	for _, st := range steps {
		withClass(st.name, st.class, st.ann)
	}
	for _, st := range steps {
		if st.wantGroup == "" {
			continue
		}
		c := h.waitCondition("demo", st.name, v1alpha1.ServiceConditionAllocated, metav1.ConditionTrue, controller.ReasonAllocated)
		if want := "from group " + st.wantGroup; !strings.Contains(c.Message, want) {
			t.Errorf("%s: condition %q, want it to say %q", st.name, c.Message, want)
		}
		g := meta.FindStatusCondition(h.service("demo", st.name).Status.Conditions, v1alpha1.ServiceConditionGroup)
		switch {
		case st.wantReason == "" && g != nil:
			t.Errorf("%s names its group but has condition %+v", st.name, *g)
		case st.wantReason != "" && (g == nil || g.Status != metav1.ConditionTrue || g.Reason != st.wantReason || g.Message != st.wantGroup):
			t.Errorf("%s: condition %s = %+v, want True %s %q", st.name, v1alpha1.ServiceConditionGroup, g, st.wantReason, st.wantGroup)
		}
	}
	// "last" was created after the ones left alone and is served: they
	// have been seen and stay untouched.
	for _, st := range steps {
		if st.wantGroup != "" {
			continue
		}
		s := h.service("demo", st.name)
		if len(s.Status.LoadBalancer.Ingress) > 0 || len(s.Status.Conditions) > 0 {
			t.Errorf("%s (class %s) was touched: ingress %v conditions %+v", st.name, st.class, s.Status.LoadBalancer.Ingress, s.Status.Conditions)
		}
	}
}
