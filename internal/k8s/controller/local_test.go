package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/testutil"
)

// endpointSlice is the EndpointSlice the EndpointSlice controller would
// write for Service ns/svc (no controller-manager runs in the tests), with
// one endpoint per node: ready[node] says whether it is ready.
func endpointSlice(ns, svc string, ready map[string]bool) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: svc + "-x1", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	i := 1
	for n, r := range ready {
		n, r := n, r
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.0.0.%d", i)}, NodeName: &n,
			Conditions: discoveryv1.EndpointConditions{Ready: &r}})
		i++
	}
	return s
}

func (h *harness) setEndpoints(ns, svc string, ready map[string]bool) {
	h.t.Helper()
	want := endpointSlice(ns, svc, ready)
	var cur discoveryv1.EndpointSlice
	if err := h.c.Get(h.t.Context(), client.ObjectKeyFromObject(want), &cur); err != nil {
		h.create(want)
		return
	}
	cur.Endpoints = want.Endpoints
	if err := h.c.Update(h.t.Context(), &cur); err != nil {
		h.t.Fatalf("update EndpointSlice %s/%s: %v", ns, want.Name, err)
	}
}

// events returns the notes of the Events of the given type and reason
// about a Service, each as many times as it happened.
func (h *harness) events(ns, name, typ, reason string) []string {
	h.t.Helper()
	var list eventsv1.EventList
	if err := h.c.List(h.t.Context(), &list, client.InNamespace(ns)); err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind != "Service" || e.Regarding.Name != name || e.Type != typ || e.Reason != reason {
			continue
		}
		n := 1
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		for range n {
			out = append(out, e.Note)
		}
	}
	return out
}

// TestLocalServiceUnserved runs the controller against a real API server
// and checks that a Service with externalTrafficPolicy Local whose ready
// endpoints are all on nodes outside its group (so that no agent
// announces its address) says so: a False condition naming the group's
// nodes and where the endpoints are, one Warning Event when it becomes
// unserved, one Normal Event when it is served again, nothing for
// Services with policy Cluster.
func TestLocalServiceUnserved(t *testing.T) {
	h := newHarness(t)
	for _, ns := range []string{"infra", "demo"} {
		h.namespace(ns)
	}
	lb := map[string]string{"vipstack.io/lb": "true"}
	h.node("n1", "198.18.0.11", lb)
	h.node("n2", "198.18.0.12", lb)
	h.node("w9", "198.18.0.19", nil)
	h.create(pool("auto", true, nil, "198.18.10.0/29"))
	h.create(group("infra", "workers", lb))
	h.startController(controller.Options{})

	local := lbService("demo", "local", groupAnn("infra/workers"))
	local.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	h.create(local)
	h.waitIngress("demo", "local", "198.18.10.0")
	h.create(lbService("demo", "cluster", groupAnn("infra/workers")))
	h.waitIngress("demo", "cluster", "198.18.10.1")

	typ := v1alpha1.ServiceConditionLocalEndpoints
	steps := []struct {
		name      string
		ready     map[string]bool // nil: no EndpointSlice
		status    metav1.ConditionStatus
		reason    string
		msg       []string // the condition's message holds each
		warnings  int      // Warning Events so far
		recovered int      // Normal Events so far
	}{
		{
			name: "no endpoint at all", status: metav1.ConditionFalse, reason: controller.ReasonNoEndpointInGroup,
			msg:      []string{"198.18.10.0", "no ready endpoint on the nodes of group infra/workers: n1, n2", "there is no ready endpoint"},
			warnings: 1,
		},
		{
			name: "ready only outside the group, not ready inside", ready: map[string]bool{"w9": true, "n1": false},
			status: metav1.ConditionFalse, reason: controller.ReasonNoEndpointInGroup,
			msg: []string{"no ready endpoint on the nodes of group infra/workers: n1, n2", "ready endpoints are on: w9"},
			// Still unserved: the message changes, no new Event.
			warnings: 1,
		},
		{
			name: "ready on a node of the group", ready: map[string]bool{"w9": true, "n2": true},
			status: metav1.ConditionTrue, reason: controller.ReasonEndpointsInGroup,
			msg:      []string{"n2"},
			warnings: 1, recovered: 1,
		},
		{
			name: "gone again", ready: map[string]bool{"n2": false},
			status: metav1.ConditionFalse, reason: controller.ReasonNoEndpointInGroup,
			msg:      []string{"there is no ready endpoint"},
			warnings: 2, recovered: 1,
		},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.ready != nil {
				h.setEndpoints("demo", "local", st.ready)
			}
			var c *metav1.Condition
			h.waitService("demo", "local", fmt.Sprintf("condition %s=%s with %q", typ, st.status, st.msg), func(s *corev1.Service) bool {
				c = meta.FindStatusCondition(s.Status.Conditions, typ)
				if c == nil || c.Status != st.status || c.Reason != st.reason {
					return false
				}
				for _, m := range st.msg {
					if !strings.Contains(c.Message, m) {
						return false
					}
				}
				return true
			})
			testutil.Eventually(t, 10*time.Second, func() error {
				w := h.events("demo", "local", corev1.EventTypeWarning, controller.ReasonNoEndpointInGroup)
				r := h.events("demo", "local", corev1.EventTypeNormal, controller.ReasonEndpointsInGroup)
				if len(w) != st.warnings || len(r) != st.recovered {
					return fmt.Errorf("Warning Events %q (want %d), Normal Events %q (want %d)", w, st.warnings, r, st.recovered)
				}
				return nil
			})
			// Every Warning names the group's nodes: none is sent before
			// the controller has laid the group out.
			for _, w := range h.events("demo", "local", corev1.EventTypeWarning, controller.ReasonNoEndpointInGroup) {
				if !strings.Contains(w, "no ready endpoint on the nodes of group infra/workers: n1, n2;") {
					t.Errorf("Warning Event %q does not say what is missing", w)
				}
			}
		})
	}

	t.Run("no condition on a Service with policy Cluster", func(t *testing.T) {
		h.setEndpoints("demo", "cluster", map[string]bool{"w9": true})
		// The controller looked at it after the EndpointSlice came (its
		// address is there); nothing about endpoints.
		s := h.waitIngress("demo", "cluster", "198.18.10.1")
		if c := meta.FindStatusCondition(s.Status.Conditions, typ); c != nil {
			t.Errorf("Service with policy Cluster has condition %+v", c)
		}
	})

	t.Run("back to Cluster: the condition goes", func(t *testing.T) {
		s := h.service("demo", "local")
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		if err := h.c.Update(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		h.waitService("demo", "local", "no condition "+typ, func(s *corev1.Service) bool {
			return meta.FindStatusCondition(s.Status.Conditions, typ) == nil
		})
	})
}
