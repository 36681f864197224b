package controller_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// TestExcludedNodes: a node labelled node.kubernetes.io/exclude-from-
// external-load-balancers gets no instance in any group (so its agent
// holds nothing), the group's Ready condition names it, and removing the
// label brings its instance back.
func TestExcludedNodes(t *testing.T) {
	h := newHarness(t)
	h.namespace("infra")
	h.node("n1", "198.18.0.11", nil)
	h.node("n2", "198.18.0.12", map[string]string{corev1.LabelNodeExcludeBalancers: ""})
	h.create(group("infra", "g", nil))
	h.startController(controller.Options{ExcludedVRIDs: []int{7, 8}})

	nodesOf := func(g *v1alpha1.VIPGroup) []string {
		var out []string
		for _, in := range g.Status.Instances {
			out = append(out, in.Node)
		}
		return out
	}
	g := h.groupStatus("infra", "g", func(g *v1alpha1.VIPGroup) error {
		if got := nodesOf(g); len(got) != 1 || got[0] != "n1" || g.Status.Nodes != 1 {
			return fmt.Errorf("instances on %v, status.nodes %d; want n1 alone", got, g.Status.Nodes)
		}
		// The budget: 255 less the 2 excluded and its own.
		if g.Status.VRIDsAvailable != 252 {
			return fmt.Errorf("vridsAvailable %d, want 252", g.Status.VRIDsAvailable)
		}
		return nil
	})
	for _, c := range g.Status.Conditions {
		if c.Type == v1alpha1.ConditionReady && !strings.Contains(c.Message, corev1.LabelNodeExcludeBalancers+" left out: n2") {
			t.Errorf("Ready message %q does not name n2 as left out", c.Message)
		}
	}

	var n corev1.Node
	if err := h.c.Get(t.Context(), client.ObjectKey{Name: "n2"}, &n); err != nil {
		t.Fatal(err)
	}
	delete(n.Labels, corev1.LabelNodeExcludeBalancers)
	if err := h.c.Update(t.Context(), &n); err != nil {
		t.Fatal(err)
	}
	h.groupStatus("infra", "g", func(g *v1alpha1.VIPGroup) error {
		if got := nodesOf(g); len(got) != 2 || g.Status.VRIDsAvailable != 251 {
			return fmt.Errorf("instances on %v, vridsAvailable %d; want n1 and n2 once the label is gone, and 251", got, g.Status.VRIDsAvailable)
		}
		return nil
	})
}
