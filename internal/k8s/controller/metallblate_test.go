package controller_test

import (
	"net/netip"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/testutil"
)

// thirdParty is where the other projects' CRDs are kept.
const thirdParty = "../../../../shared/thirdparty/"

func readThirdParty(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(thirdParty + path)
	if err != nil {
		t.Skipf("third-party test data missing: %v", err)
	}
	return k8stest.Parse(t, path, b)
}

// TestMetalLBInstalledLate: MetalLB's CRDs and objects appear after the
// controller started (no restart): the Service whose status shows the
// address MetalLB gave keeps it, served by the group made for the
// L2Advertisement, and a new Service gets another of MetalLB's pool.
func TestMetalLBInstalledLate(t *testing.T) {
	crds := append(readThirdParty(t, "metallb/metallb.io_ipaddresspools.yaml"), readThirdParty(t, "metallb/metallb.io_l2advertisements.yaml")...)
	h := newHarness(t)
	ctx := t.Context()
	h.namespace("demo")
	h.node("n1", "198.18.0.11", nil)
	h.startController(controller.Options{ForeignCRDRecheck: 200 * time.Millisecond})

	// A Service as MetalLB left it (the status its address).
	old := lbService("demo", "old", nil)
	h.create(old)
	old.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.18.0.163"}}
	if err := h.c.Status().Update(ctx, old); err != nil {
		t.Fatal(err)
	}
	// Then MetalLB's CRDs, pool and advertisement.
	k8stest.ApplyCRDs(t, h.c, crds)
	h.namespace("metallb-system")
	objs := []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "metallb.io/v1beta1", "kind": "IPAddressPool",
			"metadata": map[string]any{"namespace": "metallb-system", "name": "lab"},
			"spec":     map[string]any{"addresses": []any{"198.18.0.160/29"}}}},
		{Object: map[string]any{"apiVersion": "metallb.io/v1beta1", "kind": "L2Advertisement",
			"metadata": map[string]any{"namespace": "metallb-system", "name": "empty"}}},
	}
	testutil.Eventually(t, 30*time.Second, func() error { return k8stest.Apply(ctx, h.c, objs, false) })

	testutil.Eventually(t, 30*time.Second, func() error {
		var g v1alpha1.VIPGroup
		return h.c.Get(ctx, client.ObjectKey{Namespace: "metallb-system", Name: "metallb-empty"}, &g)
	})
	c := h.waitCondition("demo", "old", v1alpha1.ServiceConditionGroup, metav1.ConditionTrue, controller.ReasonFromPool)
	if c.Message != "metallb-system/metallb-empty" {
		t.Errorf("old: served by %q, want metallb-system/metallb-empty", c.Message)
	}
	h.waitIngress("demo", "old", "198.18.0.163")

	// A new Service takes a free address of MetalLB's pool, not old's.
	h.create(lbService("demo", "fresh", nil))
	s := h.waitService("demo", "fresh", "an address", func(s *corev1.Service) bool { return len(s.Status.LoadBalancer.Ingress) == 1 })
	got := netip.MustParseAddr(s.Status.LoadBalancer.Ingress[0].IP)
	if !netip.MustParsePrefix("198.18.0.160/29").Contains(got) || got == netip.MustParseAddr("198.18.0.163") {
		t.Errorf("fresh: %s, want another of MetalLB's 198.18.0.160/29 than old's", got)
	}
	h.waitIngress("demo", "old", "198.18.0.163")
	t.Logf("old keeps 198.18.0.163; fresh got %s", got)
}
