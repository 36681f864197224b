package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestKubeVIPWithoutMetalLB: MetalLB's CRDs are not installed (the
// controller must not need them) and kube-vip's ConfigMap is: Services
// that name no group are served from its ranges (namespace range first),
// an address kube-vip gave is kept, and allow-shared-ip is honoured or
// refused by MetalLB's rules.
func TestKubeVIPWithoutMetalLB(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	h.namespace("demo")
	h.node("n1", "198.18.0.11", nil)
	h.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kubevip"},
		Data: map[string]string{"range-global": "198.18.0.180-198.18.0.183", "cidr-demo": "198.18.1.0/30"}})
	// As kube-vip left it: the status shows 198.18.1.2 (of demo's range).
	old := lbService("demo", "old", nil)
	h.create(old)
	old.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.18.1.2"}}
	if err := h.c.Status().Update(ctx, old); err != nil {
		t.Fatal(err)
	}
	// Another namespace's Service, of the global range.
	h.namespace("other")
	h.create(lbService("other", "web", nil))

	h.startController(controller.Options{})
	h.waitCondition("demo", "old", v1alpha1.ServiceConditionGroup, metav1.ConditionTrue, controller.ReasonFromPool)
	h.waitIngress("demo", "old", "198.18.1.2")
	h.waitIngress("other", "web", "198.18.0.180")
	// The group is made by another controller than the Services' one.
	testutil.Eventually(t, 30*time.Second, func() error {
		var g v1alpha1.VIPGroup
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "kube-vip"}, &g); err != nil {
			return fmt.Errorf("the group for kube-vip's ranges: %w", err)
		}
		return nil
	})

	// A new Service of demo: demo's range first, the lowest free address.
	h.create(lbService("demo", "new", map[string]string{"metallb.io/allow-shared-ip": "k"}))
	h.waitIngress("demo", "new", "198.18.1.0")

	// Same key, another port: shares it. Same key, same port: refused.
	sh := lbService("demo", "udp", map[string]string{"metallb.io/allow-shared-ip": "k"})
	sh.Spec.Ports = []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}
	h.create(sh)
	h.waitIngress("demo", "udp", "198.18.1.0")
	c := h.waitCondition("demo", "udp", v1alpha1.ServiceConditionAllocated, metav1.ConditionTrue, v1alpha1.ServiceReasonShared)
	if !strings.Contains(c.Message, "shared with demo/new") {
		t.Errorf("udp: %q, want it to name demo/new", c.Message)
	}
	clash := lbService("demo", "clash", map[string]string{"metallb.io/allow-shared-ip": "k", "kube-vip.io/loadbalancerIPs": "198.18.1.0"})
	h.create(clash)
	c = h.waitCondition("demo", "clash", v1alpha1.ServiceConditionAllocated, metav1.ConditionFalse, controller.ReasonIPInUse)
	if !strings.Contains(c.Message, "uses port 80/TCP too") {
		t.Errorf("clash: %q, want it to name the port in common", c.Message)
	}
	h.waitEvent("demo", "Service", "clash", corev1.EventTypeWarning, controller.ReasonIPInUse)

	// The holder goes (and the refused one, which would otherwise take the
	// address): the sharer takes the address over.
	if err := h.c.Delete(ctx, clash); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "new"}}); err != nil {
		t.Fatal(err)
	}
	h.waitCondition("demo", "udp", v1alpha1.ServiceConditionAllocated, metav1.ConditionTrue, controller.ReasonAllocated)
	h.waitIngress("demo", "udp", "198.18.1.0")

	// kube-vip's sharing key in the ConfigMap is refused with an Event.
	var cm corev1.ConfigMap
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "kubevip"}, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["allow-share-demo"] = "true"
	if err := h.c.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	if note := h.waitEvent("kube-system", "ConfigMap", "kubevip", corev1.EventTypeWarning, "NotImplemented"); !strings.Contains(note, "allow-share-demo") {
		t.Errorf("Event %q, want it to name allow-share-demo", note)
	}
}
