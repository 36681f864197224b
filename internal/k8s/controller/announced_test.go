package controller_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/k8s/agent"
	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// TestAnnouncedBy: the controller reads the agents' status Leases (written
// here as an agent writes them) and says in the Service's condition
// vipstack.io/AnnouncedBy which node announces its address, with a Normal
// Event (reason Moved) when another node takes it over.
func TestAnnouncedBy(t *testing.T) {
	h := newHarness(t)
	h.namespace("infra")
	h.namespace("demo")
	if err := h.c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNS}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	h.node("n1", "198.18.0.11", nil)
	h.node("n2", "198.18.0.12", nil)
	h.create(pool("auto", true, nil, "198.18.40.0/30"))
	h.create(group("infra", "g", nil))
	h.startController(controller.Options{})
	h.create(lbService("demo", "web", groupAnn("infra/g")))
	s := h.waitService("demo", "web", "an address", func(s *corev1.Service) bool { return len(s.Status.LoadBalancer.Ingress) == 1 })
	vip := s.Status.LoadBalancer.Ingress[0].IP
	c := h.waitCondition("demo", "web", v1alpha1.ServiceConditionAnnounced, metav1.ConditionFalse, controller.ReasonNotAnnounced)
	if want := "no agent reports announcing " + vip; c.Message != want {
		t.Errorf("message %q, want %q", c.Message, want)
	}

	publish := func(node, state string) { h.publishLease(node, vip, state, 30) }
	wantBy := func(by string) { h.waitAnnounced("demo", "web", fmt.Sprintf("%s by %s", vip, by)) }
	publish("n1", "MASTER")
	publish("n2", "BACKUP")
	wantBy("n1")
	// n1 fails over to n2.
	publish("n1", "BACKUP")
	publish("n2", "MASTER")
	wantBy("n2")
	note := h.waitEvent("demo", "Service", "web", corev1.EventTypeNormal, controller.ReasonMoved)
	if want := fmt.Sprintf("%s moved from n1 to n2", vip); note != want {
		t.Errorf("Event note %q, want %q", note, want)
	}
}

// TestAnnouncedByAgentSilent: the only agent that announces an address
// stops renewing its status Lease (killed, or cut off from the API
// server) and no other takes the address over: once the Lease expires the
// condition turns False, and it names the node again when the agent
// renews.
func TestAnnouncedByAgentSilent(t *testing.T) {
	h := newHarness(t)
	h.namespace("infra")
	h.namespace("demo")
	if err := h.c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNS}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	h.node("n1", "198.18.0.11", nil)
	h.create(pool("auto", true, nil, "198.18.40.0/30"))
	h.create(group("infra", "g", nil))
	h.startController(controller.Options{})
	h.create(lbService("demo", "web", groupAnn("infra/g")))
	s := h.waitService("demo", "web", "an address", func(s *corev1.Service) bool { return len(s.Status.LoadBalancer.Ingress) == 1 })
	vip := s.Status.LoadBalancer.Ingress[0].IP

	// A Lease of 2 s, renewed once: the agent then goes silent.
	h.publishLease("n1", vip, "MASTER", 2)
	h.waitAnnounced("demo", "web", vip+" by n1")
	c := h.waitCondition("demo", "web", v1alpha1.ServiceConditionAnnounced, metav1.ConditionFalse, controller.ReasonNotAnnounced)
	if want := "no agent reports announcing " + vip; c.Message != want {
		t.Errorf("message %q, want %q", c.Message, want)
	}
	// Nothing else changed meanwhile: the Lease's expiry alone did it.
	var l coordinationv1.Lease
	if err := h.c.Get(t.Context(), client.ObjectKey{Namespace: systemNS, Name: agent.LeasePrefix + "n1"}, &l); err != nil {
		t.Fatal(err)
	}
	if age := time.Since(l.Spec.RenewTime.Time); age < 2*time.Second {
		t.Errorf("condition False %v after the last renewal, before the Lease's 2 s ran out", age)
	}
	// The agent is back and renews: the node announces it again.
	h.publishLease("n1", vip, "MASTER", 30)
	h.waitAnnounced("demo", "web", vip+" by n1")
}

// publishLease writes node's status Lease as its agent does, saying it
// holds vip in the given state, renewed now for secs seconds.
func (h *harness) publishLease(node, vip, state string, secs int32) {
	h.t.Helper()
	body, err := json.Marshal(agent.Published{Node: node, Instances: []engine.InstanceStatus{
		{Name: "infra/g/node/n1/v4", State: state, VIPs: []string{vip + "/32"}}}})
	if err != nil {
		h.t.Fatal(err)
	}
	now := metav1.NewMicroTime(time.Now())
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: systemNS, Name: agent.LeasePrefix + node,
		Labels: map[string]string{agent.LeaseLabel: "true"}, Annotations: map[string]string{agent.StatusAnnotation: string(body)}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &node, LeaseDurationSeconds: &secs, RenewTime: &now}}
	var cur coordinationv1.Lease
	err = h.c.Get(h.t.Context(), client.ObjectKeyFromObject(l), &cur)
	switch {
	case apierrors.IsNotFound(err):
		err = h.c.Create(h.t.Context(), l)
	case err == nil:
		l.ResourceVersion = cur.ResourceVersion
		err = h.c.Update(h.t.Context(), l)
	}
	if err != nil {
		h.t.Fatal(err)
	}
}

// waitAnnounced waits for the Service's AnnouncedBy condition to be True
// with the message want.
func (h *harness) waitAnnounced(ns, name, want string) {
	h.t.Helper()
	h.waitService(ns, name, "announced: "+want, func(s *corev1.Service) bool {
		for _, c := range s.Status.Conditions {
			if c.Type == v1alpha1.ServiceConditionAnnounced && c.Status == metav1.ConditionTrue && c.Message == want {
				return true
			}
		}
		return false
	})
}
