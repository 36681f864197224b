package controller_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/testutil"
)

func pool(name string, auto bool, ns []string, addrs ...string) *v1alpha1.IPPool {
	return &v1alpha1.IPPool{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.IPPoolSpec{Addresses: addrs, AutoAssign: &auto, Namespaces: ns}}
}

func group(ns, name string, sel map[string]string, excluded ...int32) *v1alpha1.VIPGroup {
	return &v1alpha1.VIPGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.VIPGroupSpec{NodeSelector: sel, Interface: "eth0", ExcludedVRIDs: excluded}}
}

func (h *harness) groupStatus(ns, name string, ok func(*v1alpha1.VIPGroup) error) *v1alpha1.VIPGroup {
	h.t.Helper()
	var g v1alpha1.VIPGroup
	testutil.Eventually(h.t, 30*time.Second, func() error {
		if err := h.c.Get(h.t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &g); err != nil {
			return err
		}
		return ok(&g)
	})
	return &g
}

func vrids(g *v1alpha1.VIPGroup) map[string]int32 {
	m := map[string]int32{}
	for _, in := range g.Status.Instances {
		m[in.Name] = in.VRID
	}
	return m
}

func groupAnn(g string) map[string]string { return map[string]string{k8s.GroupAnnotation: g} }

// TestController runs the controller, as the ServiceAccount deploy/rbac.yaml
// defines and with leader election, against a real API server, through the
// life of a set of Services: each step checks the API's state afterwards.
func TestController(t *testing.T) {
	h := newHarness(t)
	for _, ns := range []string{"infra", "demo", "team", "keepalived-operator"} {
		h.namespace(ns)
	}
	lb := map[string]string{"vipstack.io/lb": "true"}
	h.node("n1", "198.18.0.11", lb)
	h.node("n2", "198.18.0.12", lb)
	h.node("n3", "198.18.0.13", lb)
	h.node("w9", "198.18.0.19", nil)
	h.create(pool("auto", true, nil, "198.18.10.0/30"))
	h.create(pool("manual", false, nil, "198.18.11.0-198.18.11.3"))
	h.create(pool("team", true, []string{"team"}, "198.18.12.0/30"))
	h.create(group("infra", "workers", lb))
	// The keepalived-operator's group, recreated as a VIPGroup of the same
	// namespace and name (seed 004).
	h.create(group("keepalived-operator", "keepalivedgroup-workers", lb))
	ctl := h.startController(controller.Options{ExcludedVRIDs: []int{2}})

	t.Run("group gets one instance per node, VRIDs unique and not excluded", func(t *testing.T) {
		w := h.groupStatus("infra", "workers", func(g *v1alpha1.VIPGroup) error {
			if len(g.Status.Instances) != 3 {
				return fmt.Errorf("instances %+v", g.Status.Instances)
			}
			return nil
		})
		k := h.groupStatus("keepalived-operator", "keepalivedgroup-workers", func(g *v1alpha1.VIPGroup) error {
			if len(g.Status.Instances) != 3 {
				return fmt.Errorf("instances %+v", g.Status.Instances)
			}
			return nil
		})
		seen := map[int32]string{}
		for _, g := range []*v1alpha1.VIPGroup{w, k} {
			if g.Status.Nodes != 3 {
				t.Errorf("%s: status.nodes = %d, want 3", g.Name, g.Status.Nodes)
			}
			for _, in := range g.Status.Instances {
				if in.VRID == 2 {
					t.Errorf("%s %s has the excluded VRID 2", g.Name, in.Name)
				}
				if other, dup := seen[in.VRID]; dup {
					t.Errorf("VRID %d given to %s and %s/%s", in.VRID, other, g.Name, in.Name)
				}
				seen[in.VRID] = g.Name + "/" + in.Name
			}
		}
		h.waitEvent("infra", "VIPGroup", "workers", corev1.EventTypeNormal, controller.ReasonInstancesAssigned)
	})

	t.Run("allocate", func(t *testing.T) {
		h.create(lbService("demo", "web", groupAnn("infra/workers")))
		h.waitIngress("demo", "web", "198.18.10.0")
		c := h.waitCondition("demo", "web", v1alpha1.ServiceConditionAllocated, metav1.ConditionTrue, controller.ReasonAllocated)
		if want := "holds 198.18.10.0 from group infra/workers"; c.Message != want {
			t.Errorf("condition message %q, want %q", c.Message, want)
		}
		note := h.waitEvent("demo", "Service", "web", corev1.EventTypeNormal, controller.ReasonAllocated)
		if want := "assigned 198.18.10.0 from pool auto (group infra/workers)"; note != want {
			t.Errorf("Event note %q, want %q", note, want)
		}
		s := h.service("demo", "web")
		if m := s.Status.LoadBalancer.Ingress[0].IPMode; m == nil || *m != corev1.LoadBalancerIPModeVIP {
			t.Errorf("ipMode = %v, want VIP", m)
		}
	})

	t.Run("honour a request", func(t *testing.T) {
		s := lbService("demo", "dns", groupAnn("infra/workers"))
		s.Spec.LoadBalancerIP = "198.18.10.3"
		h.create(s)
		h.waitIngress("demo", "dns", "198.18.10.3")
		// An address of a pool that does not auto-assign, by annotation.
		h.create(lbService("demo", "manual", map[string]string{k8s.GroupAnnotation: "infra/workers", k8s.IPsAnnotation: "198.18.11.2"}))
		h.waitIngress("demo", "manual", "198.18.11.2")
		// A pool by name.
		h.create(lbService("demo", "bypool", map[string]string{k8s.GroupAnnotation: "infra/workers", k8s.PoolAnnotation: "manual"}))
		h.waitIngress("demo", "bypool", "198.18.11.0")
	})

	t.Run("keepalived-operator annotation accepted", func(t *testing.T) {
		h.create(lbService("demo", "legacy", map[string]string{k8s.KeepalivedGroupAnnotation: "keepalived-operator/keepalivedgroup-workers"}))
		h.waitIngress("demo", "legacy", "198.18.10.1")
		c := h.waitCondition("demo", "legacy", v1alpha1.ServiceConditionAllocated, metav1.ConditionTrue, controller.ReasonAllocated)
		if !strings.Contains(c.Message, "group keepalived-operator/keepalivedgroup-workers") {
			t.Errorf("condition message %q does not name the group", c.Message)
		}
	})

	t.Run("refuse a foreign pool", func(t *testing.T) {
		h.create(lbService("demo", "foreign", map[string]string{k8s.GroupAnnotation: "infra/workers", k8s.PoolAnnotation: "team"}))
		c := h.waitCondition("demo", "foreign", v1alpha1.ServiceConditionAllocated, metav1.ConditionFalse, controller.ReasonPoolForbidden)
		if !strings.Contains(c.Message, `pool team admits namespaces team, not "demo"`) {
			t.Errorf("condition message %q does not say why", c.Message)
		}
		note := h.waitEvent("demo", "Service", "foreign", corev1.EventTypeWarning, controller.ReasonPoolForbidden)
		if note != c.Message {
			t.Errorf("Event note %q, want the condition's message %q", note, c.Message)
		}
		if got := ingressIPs(h.service("demo", "foreign")); len(got) != 0 {
			t.Errorf("a refused Service shows %v", got)
		}
		// The same pool from its own namespace is fine.
		h.create(lbService("team", "api", map[string]string{k8s.GroupAnnotation: "infra/workers", k8s.PoolAnnotation: "team"}))
		h.waitIngress("team", "api", "198.18.12.0")
		// An address another Service holds.
		s := lbService("demo", "steal", groupAnn("infra/workers"))
		s.Spec.LoadBalancerIP = "198.18.10.3"
		h.create(s)
		c = h.waitCondition("demo", "steal", v1alpha1.ServiceConditionAllocated, metav1.ConditionFalse, controller.ReasonIPInUse)
		if !strings.Contains(c.Message, "held by demo/dns") {
			t.Errorf("condition message %q does not name the holder", c.Message)
		}
		h.waitEvent("demo", "Service", "steal", corev1.EventTypeWarning, controller.ReasonIPInUse)
	})

	t.Run("refuse when exhausted", func(t *testing.T) {
		h.create(lbService("demo", "fill", groupAnn("infra/workers")))
		h.waitIngress("demo", "fill", "198.18.10.2")
		h.create(lbService("demo", "late", groupAnn("infra/workers")))
		c := h.waitCondition("demo", "late", v1alpha1.ServiceConditionAllocated, metav1.ConditionFalse, controller.ReasonPoolExhausted)
		if !strings.Contains(c.Message, "every IPv4 address of pool auto is assigned") {
			t.Errorf("condition message %q", c.Message)
		}
		h.waitEvent("demo", "Service", "late", corev1.EventTypeWarning, controller.ReasonPoolExhausted)
		h.waitEvent("", "IPPool", "auto", corev1.EventTypeWarning, "PoolExhausted")
		var p v1alpha1.IPPool
		testutil.Eventually(t, 30*time.Second, func() error {
			if err := h.c.Get(t.Context(), client.ObjectKey{Name: "auto"}, &p); err != nil {
				return err
			}
			for _, c := range p.Status.Conditions {
				if c.Type == v1alpha1.ConditionExhausted && c.Status == metav1.ConditionTrue && p.Status.Assigned == 4 && p.Status.Size == 4 {
					return nil
				}
			}
			return fmt.Errorf("pool status %+v", p.Status)
		})
	})

	t.Run("release on delete: the waiting Service gets the address", func(t *testing.T) {
		if err := h.c.Delete(t.Context(), h.service("demo", "web")); err != nil {
			t.Fatal(err)
		}
		h.waitIngress("demo", "late", "198.18.10.0")
		h.waitCondition("demo", "late", v1alpha1.ServiceConditionAllocated, metav1.ConditionTrue, controller.ReasonAllocated)
	})

	t.Run("release on type change", func(t *testing.T) {
		s := h.service("demo", "fill")
		s.Spec.Type = corev1.ServiceTypeClusterIP
		s.Spec.AllocateLoadBalancerNodePorts = nil
		if err := h.c.Update(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		// The API server clears status.loadBalancer itself when the type
		// changes; the controller releases the address and drops its
		// condition.
		h.waitService("demo", "fill", "no ingress and no IPAllocated condition", func(s *corev1.Service) bool {
			return len(s.Status.LoadBalancer.Ingress) == 0 && meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ServiceConditionAllocated) == nil
		})
		note := h.waitEvent("demo", "Service", "fill", corev1.EventTypeNormal, controller.ReasonReleased)
		if note != "released 198.18.10.2" {
			t.Errorf("Event note %q", note)
		}
		// The address is free again.
		h.create(lbService("demo", "next", groupAnn("infra/workers")))
		h.waitIngress("demo", "next", "198.18.10.2")
	})

	t.Run("externalIPs in a group", func(t *testing.T) {
		s := lbService("demo", "ext", groupAnn("infra/workers"))
		s.Spec.Type = corev1.ServiceTypeClusterIP
		s.Spec.AllocateLoadBalancerNodePorts = nil
		s.Spec.ExternalIPs = []string{"198.18.11.3"}
		h.create(s)
		h.waitCondition("demo", "ext", v1alpha1.ServiceConditionExternalIPs, metav1.ConditionTrue, controller.ReasonAllowed)
		s = lbService("demo", "ext-bad", groupAnn("infra/workers"))
		s.Spec.Type = corev1.ServiceTypeClusterIP
		s.Spec.AllocateLoadBalancerNodePorts = nil
		s.Spec.ExternalIPs = []string{"198.18.11.3"}
		h.create(s)
		c := h.waitCondition("demo", "ext-bad", v1alpha1.ServiceConditionExternalIPs, metav1.ConditionFalse, controller.ReasonIPNotInPool)
		if !strings.Contains(c.Message, "held by demo/ext (externalIPs)") {
			t.Errorf("condition message %q", c.Message)
		}
	})

	t.Run("Local Service gets an instance of its own", func(t *testing.T) {
		s := lbService("team", "local", map[string]string{k8s.GroupAnnotation: "infra/workers", k8s.PoolAnnotation: "team"})
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		h.create(s)
		h.waitIngress("team", "local", "198.18.12.1")
		h.groupStatus("infra", "workers", func(g *v1alpha1.VIPGroup) error {
			if _, ok := vrids(g)["service/team/local"]; !ok {
				return fmt.Errorf("no instance for team/local: %+v", g.Status.Instances)
			}
			return nil
		})
	})

	var before map[string][]string
	var beforeVRIDs map[string]int32
	t.Run("restart without reassigning", func(t *testing.T) {
		before = allIngress(t, h)
		beforeVRIDs = vrids(h.groupStatus("infra", "workers", func(*v1alpha1.VIPGroup) error { return nil }))
		ctl.stop(t)
		// Nothing changes while no controller runs; then a new one starts
		// (it must win the Lease) and a new Service arrives.
		h.create(pool("spare", true, nil, "198.18.13.0/30"))
		h.create(lbService("demo", "after", groupAnn("infra/workers")))
		h.startController(controller.Options{ExcludedVRIDs: []int{2}})
		h.waitService("demo", "after", "an address", func(s *corev1.Service) bool { return len(s.Status.LoadBalancer.Ingress) == 1 })
		after := allIngress(t, h)
		for k, v := range before {
			if !slices.Equal(after[k], v) {
				t.Errorf("%s: %v before the restart, %v after", k, v, after[k])
			}
		}
		assertUnique(t, after)
		if got := after["demo/after"]; !slices.Equal(got, []string{"198.18.13.0"}) {
			t.Errorf("demo/after got %v, want the first address of the new pool (auto is full)", got)
		}
		g := h.groupStatus("infra", "workers", func(*v1alpha1.VIPGroup) error { return nil })
		if diff := cmp.Diff(beforeVRIDs, vrids(g)); diff != "" {
			t.Errorf("VRIDs changed across the restart (-before +after):\n%s", diff)
		}
	})
}

func allIngress(t *testing.T, h *harness) map[string][]string {
	t.Helper()
	var list corev1.ServiceList
	if err := h.c.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, s := range list.Items {
		if ips := ingressIPs(&s); len(ips) > 0 {
			out[s.Namespace+"/"+s.Name] = ips
		}
	}
	return out
}

func assertUnique(t *testing.T, m map[string][]string) {
	t.Helper()
	seen := map[string]string{}
	for k, ips := range m {
		for _, ip := range ips {
			if other, dup := seen[ip]; dup {
				t.Errorf("%s is shown by %s and %s", ip, other, k)
			}
			seen[ip] = k
		}
	}
}
