package controller_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/kubetest"
)

// TestDualStack runs the controller on a dual-stack API server: a
// PreferDualStack Service gets one address of each family from a pool
// that has both and one address (condition True, saying what it went
// without) from pools of one family; RequireDualStack is refused with a
// condition saying why when no pool gives the second family.
func TestDualStack(t *testing.T) {
	h := newHarnessWith(t, kubetest.Options{DualStack: true})
	h.namespace("infra")
	h.namespace("demo")
	h.node("n1", "198.18.0.11", nil)
	h.create(group("infra", "g", nil))
	h.create(pool("v4only", true, nil, "198.18.30.0/30"))
	h.create(pool("both", false, nil, "198.18.31.0/30", "fd00:31::/126"))
	h.startController(controller.Options{})

	mk := func(name string, pol corev1.IPFamilyPolicy, poolName string) {
		ann := groupAnn("infra/g")
		if poolName != "" {
			ann[k8s.PoolAnnotation] = poolName
		}
		s := lbService("demo", name, ann)
		s.Spec.IPFamilyPolicy = &pol
		h.create(s)
	}
	mk("prefer-both", corev1.IPFamilyPolicyPreferDualStack, "both")
	mk("prefer-v4", corev1.IPFamilyPolicyPreferDualStack, "")
	mk("require", corev1.IPFamilyPolicyRequireDualStack, "")
	mk("single", corev1.IPFamilyPolicySingleStack, "both")

	// Services are reconciled in parallel: which address of a pool each
	// gets is not fixed, the families are.
	families := func(name, want string) {
		t.Helper()
		h.waitService("demo", name, "ingress families "+want, func(s *corev1.Service) bool {
			var got []string
			for _, ip := range ingressIPs(s) {
				if strings.Contains(ip, ":") {
					got = append(got, "6")
				} else {
					got = append(got, "4")
				}
			}
			return strings.Join(got, ",") == want
		})
	}
	families("prefer-both", "4,6")
	h.waitCondition("demo", "prefer-both", v1alpha1.ServiceConditionAllocated, metav1.ConditionTrue, controller.ReasonAllocated)

	families("prefer-v4", "4")
	c := h.waitCondition("demo", "prefer-v4", v1alpha1.ServiceConditionAllocated, metav1.ConditionTrue, controller.ReasonAllocated)
	if !strings.Contains(c.Message, "PreferDualStack, best effort") || !strings.Contains(c.Message, "IPv6") {
		t.Errorf("prefer-v4: message %q does not say it went without IPv6", c.Message)
	}

	c = h.waitCondition("demo", "require", v1alpha1.ServiceConditionAllocated, metav1.ConditionFalse, controller.ReasonNoPool)
	if want := "ipFamilyPolicy RequireDualStack needs an address of each of IPv4 and IPv6"; !strings.Contains(c.Message, want) {
		t.Errorf("require: message %q, want it to contain %q", c.Message, want)
	}

	families("single", "4")
}
