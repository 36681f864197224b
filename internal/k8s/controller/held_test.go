package controller_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestHeldAddresses checks, against a real API server, that a Service
// keeps a working address through what happens around it: a newer pool
// that overlaps its pool, its pool deleted, a move to a full pool,
// another pool edited to overlap its pool, a restart after another Service's externalIPs were edited to name its
// address; and that spec.externalIPs of a Service with
// externalTrafficPolicy Local get the instance the agents need for them.
func TestHeldAddresses(t *testing.T) {
	h := newHarness(t)
	for _, ns := range []string{"infra", "demo"} {
		h.namespace(ns)
	}
	lb := map[string]string{"vipstack.io/lb": "true"}
	h.node("n1", "198.18.0.11", lb)
	h.node("n2", "198.18.0.12", lb)
	h.create(pool("zeta", false, []string{"demo"}, "198.18.20.0/30"))
	h.create(pool("manual", false, nil, "198.18.21.0/30"))
	h.create(group("infra", "workers", lb))
	h.create(group("infra", "other", lb))
	ctl := h.startController(controller.Options{})

	h.create(lbService("demo", "bypool", map[string]string{k8s.GroupAnnotation: "infra/workers", k8s.PoolAnnotation: "zeta"}))
	h.waitIngress("demo", "bypool", "198.18.20.0")

	t.Run("a newer overlapping pool is refused, the older one stays", func(t *testing.T) {
		// "alpha" sorts before "zeta" but came later: it is the one in the
		// wrong, and zeta (in use, limited to namespace demo) must go on
		// serving.
		h.create(pool("alpha", true, nil, "198.18.20.0/29"))
		a := h.poolCondition("alpha", v1alpha1.ConditionReady, metav1.ConditionFalse)
		if !strings.Contains(a.Message, "overlaps range 198.18.20.0/30 of pool zeta") {
			t.Errorf("alpha's Ready message %q does not name the pool it overlaps", a.Message)
		}
		h.poolCondition("zeta", v1alpha1.ConditionReady, metav1.ConditionTrue)
		// zeta still hands out addresses.
		h.create(lbService("demo", "bypool2", map[string]string{k8s.GroupAnnotation: "infra/workers", k8s.PoolAnnotation: "zeta"}))
		h.waitIngress("demo", "bypool2", "198.18.20.1")
		h.waitIngress("demo", "bypool", "198.18.20.0")
		if err := h.c.Delete(t.Context(), &v1alpha1.IPPool{ObjectMeta: metav1.ObjectMeta{Name: "alpha"}}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a Service that names a pool keeps its address when the pool goes", func(t *testing.T) {
		if err := h.c.Delete(t.Context(), &v1alpha1.IPPool{ObjectMeta: metav1.ObjectMeta{Name: "zeta"}}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 30*time.Second, func() error {
			var p v1alpha1.IPPool
			if err := h.c.Get(t.Context(), client.ObjectKey{Name: "zeta"}, &p); err == nil {
				return fmt.Errorf("pool zeta still there")
			}
			return nil
		})
		// Move the Service to another group, so that the controller looks
		// at it again: it must say its pool is gone, and keep the address.
		s := h.service("demo", "bypool")
		s.Annotations[k8s.GroupAnnotation] = "infra/other"
		if err := h.c.Update(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		c := h.waitCondition("demo", "bypool", v1alpha1.ServiceConditionAllocated, metav1.ConditionFalse, controller.ReasonNoPool)
		if !strings.Contains(c.Message, "pool zeta") {
			t.Errorf("condition message %q does not name the pool", c.Message)
		}
		if got := ingressIPs(h.service("demo", "bypool")); !slices.Equal(got, []string{"198.18.20.0"}) {
			t.Errorf("after its pool was deleted the Service shows %v; want 198.18.20.0 kept", got)
		}
		// The pool back: the condition is True again, same address.
		h.create(pool("zeta", false, []string{"demo"}, "198.18.20.0/30"))
		h.waitCondition("demo", "bypool", v1alpha1.ServiceConditionAllocated, metav1.ConditionTrue, controller.ReasonAllocated)
		h.waitIngress("demo", "bypool", "198.18.20.0")
	})

	t.Run("a Service moved to a full pool keeps its address until one is free", func(t *testing.T) {
		h.create(pool("one", false, nil, "198.18.22.0"))
		h.create(lbService("demo", "holder", map[string]string{k8s.GroupAnnotation: "infra/workers", k8s.PoolAnnotation: "one"}))
		h.waitIngress("demo", "holder", "198.18.22.0")
		h.create(lbService("demo", "mover", map[string]string{k8s.GroupAnnotation: "infra/workers", k8s.PoolAnnotation: "zeta"}))
		s := h.waitService("demo", "mover", "an address", func(s *corev1.Service) bool { return len(s.Status.LoadBalancer.Ingress) == 1 })
		old := ingressIPs(s)[0]
		s.Annotations[k8s.PoolAnnotation] = "one"
		if err := h.c.Update(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		h.waitCondition("demo", "mover", v1alpha1.ServiceConditionAllocated, metav1.ConditionFalse, controller.ReasonPoolExhausted)
		if got := ingressIPs(h.service("demo", "mover")); !slices.Equal(got, []string{old}) {
			t.Errorf("moved to a full pool, the Service shows %v; want %s kept until pool one has room", got, old)
		}
		if err := h.c.Delete(t.Context(), h.service("demo", "holder")); err != nil {
			t.Fatal(err)
		}
		h.waitIngress("demo", "mover", "198.18.22.0")
		h.waitCondition("demo", "mover", v1alpha1.ServiceConditionAllocated, metav1.ConditionTrue, controller.ReasonAllocated)
		note := h.waitEvent("demo", "Service", "mover", corev1.EventTypeNormal, controller.ReasonReleased)
		if note != "released "+old {
			t.Errorf("Released Event note %q, want %q", note, "released "+old)
		}
	})

	t.Run("a pool edited to overlap one in use is refused, the one in use stays", func(t *testing.T) {
		// zeta is older than one, but one serves its range as it is and
		// zeta's edit is what overlaps.
		var p v1alpha1.IPPool
		if err := h.c.Get(t.Context(), client.ObjectKey{Name: "zeta"}, &p); err != nil {
			t.Fatal(err)
		}
		orig := p.Spec.Addresses
		h.editPool("zeta", append(slices.Clone(orig), "198.18.22.0")...)
		z := h.poolCondition("zeta", v1alpha1.ConditionReady, metav1.ConditionFalse)
		if !strings.Contains(z.Message, "overlaps range 198.18.22.0 of pool one") {
			t.Errorf("zeta's Ready message %q does not name the pool it overlaps", z.Message)
		}
		h.poolCondition("one", v1alpha1.ConditionReady, metav1.ConditionTrue)
		// The edit undone: zeta serves again.
		h.editPool("zeta", orig...)
		h.poolCondition("zeta", v1alpha1.ConditionReady, metav1.ConditionTrue)
	})

	t.Run("externalIPs of a Local Service get an instance", func(t *testing.T) {
		s := lbService("demo", "ext-local", groupAnn("infra/workers"))
		s.Spec.Type = corev1.ServiceTypeClusterIP
		s.Spec.AllocateLoadBalancerNodePorts = nil
		s.Spec.ExternalIPs = []string{"198.18.21.3"}
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		h.create(s)
		h.waitCondition("demo", "ext-local", v1alpha1.ServiceConditionExternalIPs, metav1.ConditionTrue, controller.ReasonAllowed)
		h.groupStatus("infra", "workers", func(g *v1alpha1.VIPGroup) error {
			if _, ok := vrids(g)["service/demo/ext-local"]; !ok {
				return fmt.Errorf("no instance for demo/ext-local, whose externalIPs the agents hold only on nodes with a ready endpoint: %+v", g.Status.Instances)
			}
			return nil
		})
	})

	t.Run("an address whose status write failed is given back when the Service stops naming a group", func(t *testing.T) {
		// The API refuses every status write to Services with this label
		// (a ValidatingAdmissionPolicy), so the controller picks an
		// address that no status ever shows.
		const block = "test.vipstack.io/block-status"
		h.denyServiceStatus(block)
		h.create(pool("leak", false, nil, "198.18.23.0"))
		s := lbService("demo", "unwritten", map[string]string{k8s.GroupAnnotation: "infra/workers", k8s.PoolAnnotation: "leak"})
		s.Labels = map[string]string{block: "true"}
		h.create(s)
		// Another Service asking for that address learns who holds it.
		s = lbService("demo", "asker", groupAnn("infra/workers"))
		s.Spec.LoadBalancerIP = "198.18.23.0"
		h.create(s)
		c := h.waitCondition("demo", "asker", v1alpha1.ServiceConditionAllocated, metav1.ConditionFalse, controller.ReasonIPInUse)
		if !strings.Contains(c.Message, "held by demo/unwritten") {
			t.Fatalf("asker's condition %q; want the address held by demo/unwritten", c.Message)
		}
		// unwritten stops naming a group: not ours any more, so what the
		// controller held for it goes, shown or not.
		s = h.service("demo", "unwritten")
		delete(s.Annotations, k8s.GroupAnnotation)
		if err := h.c.Update(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		h.waitIngress("demo", "asker", "198.18.23.0")
		h.waitCondition("demo", "asker", v1alpha1.ServiceConditionAllocated, metav1.ConditionTrue, controller.ReasonAllocated)
	})

	t.Run("a restart does not hand a Service's address to externalIPs edited meanwhile", func(t *testing.T) {
		// a-ext is older (and first by name): the rebuild looks at it
		// before b-lb.
		s := lbService("demo", "a-ext", groupAnn("infra/workers"))
		s.Spec.Type = corev1.ServiceTypeClusterIP
		s.Spec.AllocateLoadBalancerNodePorts = nil
		s.Spec.ExternalIPs = []string{"198.18.21.0"}
		h.create(s)
		h.waitCondition("demo", "a-ext", v1alpha1.ServiceConditionExternalIPs, metav1.ConditionTrue, controller.ReasonAllowed)
		h.create(lbService("demo", "b-lb", map[string]string{k8s.GroupAnnotation: "infra/workers", k8s.PoolAnnotation: "manual"}))
		h.waitIngress("demo", "b-lb", "198.18.21.1")

		ctl.stop(t)
		s = h.service("demo", "a-ext")
		s.Spec.ExternalIPs = append(s.Spec.ExternalIPs, "198.18.21.1")
		if err := h.c.Update(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		h.startController(controller.Options{})
		c := h.waitCondition("demo", "a-ext", v1alpha1.ServiceConditionExternalIPs, metav1.ConditionFalse, controller.ReasonIPNotInPool)
		if !strings.Contains(c.Message, "198.18.21.1") || !strings.Contains(c.Message, "held by demo/b-lb") {
			t.Errorf("a-ext's condition %q does not name the address and its holder", c.Message)
		}
		h.waitIngress("demo", "b-lb", "198.18.21.1")
		h.waitCondition("demo", "b-lb", v1alpha1.ServiceConditionAllocated, metav1.ConditionTrue, controller.ReasonAllocated)
	})
}

// poolCondition waits for a pool's condition to have the given status.
func (h *harness) poolCondition(name, typ string, status metav1.ConditionStatus) *metav1.Condition {
	h.t.Helper()
	var c *metav1.Condition
	testutil.Eventually(h.t, 30*time.Second, func() error {
		var p v1alpha1.IPPool
		if err := h.c.Get(h.t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
			return err
		}
		c = meta.FindStatusCondition(p.Status.Conditions, typ)
		if c == nil || c.Status != status {
			return fmt.Errorf("pool %s: condition %s is %+v, want %s", name, typ, c, status)
		}
		return nil
	})
	return c
}

// denyServiceStatus makes the API server refuse every write of a
// Service's status while the Service has the label, and waits until it
// does (a ValidatingAdmissionPolicy takes a moment to apply).
func (h *harness) denyServiceStatus(label string) {
	h.t.Helper()
	ctx := h.t.Context()
	fail := admissionregistrationv1.Fail
	h.create(&admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-service-status"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services/status"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("!has(object.metadata.labels) || !(%q in object.metadata.labels)", label),
				Message:    "status writes are blocked by the test",
			}},
		},
	})
	h.create(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-service-status"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "deny-service-status",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	})
	probe := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "status-probe", Labels: map[string]string{label: "true"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	h.create(probe)
	testutil.Eventually(h.t, 30*time.Second, func() error {
		var s corev1.Service
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(probe), &s); err != nil {
			return err
		}
		s.Status.Conditions = []metav1.Condition{{Type: "Probe", Status: metav1.ConditionTrue, Reason: "Probe", LastTransitionTime: metav1.Now()}}
		if err := h.c.Status().Update(ctx, &s); err == nil {
			return fmt.Errorf("a status write to a labelled Service is still accepted")
		}
		return nil
	})
}
