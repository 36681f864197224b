package controller_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/testutil"
)

func keepalivedGroup(ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion("redhatcop.redhat.io/v1alpha1")
	u.SetKind("KeepalivedGroup")
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// kaCondition returns the vipstack.io/Served condition of a
// KeepalivedGroup once it has the status and reason wanted.
func (h *harness) kaCondition(ns, name, status, reason string) map[string]any {
	h.t.Helper()
	var got map[string]any
	testutil.Eventually(h.t, 30*time.Second, func() error {
		u := keepalivedGroup(ns, name, nil)
		if err := h.c.Get(h.t.Context(), client.ObjectKeyFromObject(u), u); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == controller.KeepalivedConditionType && m["status"] == status && m["reason"] == reason {
				got = m
				return nil
			}
		}
		return fmt.Errorf("KeepalivedGroup %s/%s: conditions %v, want %s %s %s", ns, name, conds, controller.KeepalivedConditionType, status, reason)
	})
	return got
}

// TestKeepalivedGroups: with the operator's CRD (and OpenShift's Network
// CRD, but no Network object), a KeepalivedGroup gets a VIPGroup that
// follows its edits and goes with it; one vipstack cannot serve gets none,
// a False condition and a Warning Event; an annotated LoadBalancer Service
// with no pool to take an address from says why and what to do.
func TestKeepalivedGroups(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	var crds []*unstructured.Unstructured
	for _, path := range []string{"keepalived-operator/redhatcop.redhat.io_keepalivedgroups.yaml", "openshift-api/0000_10_config-operator_01_networks-Default.crd.yaml"} {
		b, err := os.ReadFile("../compat/testdata/" + path)
		if err != nil {
			t.Fatal(err)
		}
		crds = append(crds, k8stest.Parse(t, path, b)...)
	}
	k8stest.ApplyCRDs(t, h.c, crds)
	h.namespace("ka")
	h.namespace("demo")
	h.node("n1", "198.18.0.11", map[string]string{"lb": ""})
	h.node("n2", "198.18.0.12", nil)
	good := keepalivedGroup("ka", "good", map[string]any{"image": "x", "interface": "eth1", "nodeSelector": map[string]any{"lb": ""},
		"unicastEnabled": true, "blacklistRouterIDs": []any{int64(1)}})
	h.create(good)
	h.create(keepalivedGroup("ka", "bad", map[string]any{"image": "x", "interface": "eth1", "blacklistRouterIDs": []any{int64(300)}}))
	h.create(lbService("demo", "web", map[string]string{"keepalived-operator.redhat-cop.io/keepalivedgroup": "ka/good"}))

	h.startController(controller.Options{})
	var g v1alpha1.VIPGroup
	testutil.Eventually(t, 30*time.Second, func() error {
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: "ka", Name: "good"}, &g); err != nil {
			return err
		}
		if g.Spec.Interface != "eth1" || !g.Spec.Unicast || len(g.Spec.ExcludedVRIDs) != 1 || g.Labels[controller.MadeByLabel] != "keepalived-operator" {
			return fmt.Errorf("VIPGroup ka/good: labels %v spec %+v", g.Labels, g.Spec)
		}
		for _, in := range g.Status.Instances {
			if in.VRID == 1 {
				return fmt.Errorf("instance %s has the blacklisted VRID 1", in.Name)
			}
		}
		if len(g.Status.Instances) != 1 || g.Status.Instances[0].Node != "n1" {
			return fmt.Errorf("instances %+v, want one on n1", g.Status.Instances)
		}
		return nil
	})
	h.kaCondition("ka", "good", "True", controller.ReasonKeepalivedNotes)
	c := h.kaCondition("ka", "bad", "False", controller.ReasonKeepalivedRefused)
	if msg, _ := c["message"].(string); !strings.Contains(msg, "spec.blacklistRouterIDs[0]: 300: want a VRID from 1 to 255") {
		t.Errorf("bad: condition message %q", msg)
	}
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: "ka", Name: "bad"}, &v1alpha1.VIPGroup{}); !apierrors.IsNotFound(err) {
		t.Errorf("VIPGroup ka/bad: %v, want none", err)
	}
	if note := h.waitEvent("ka", "KeepalivedGroup", "bad", corev1.EventTypeWarning, controller.ReasonKeepalivedRefused); !strings.Contains(note, "blacklistRouterIDs") {
		t.Errorf("Event on bad: %q", note)
	}
	// No pool: the Service says where keepalived-operator Services get
	// their addresses and what to do.
	ac := h.waitCondition("demo", "web", v1alpha1.ServiceConditionAllocated, metav1.ConditionFalse, controller.ReasonNoPool)
	if !strings.Contains(ac.Message, "Network cluster has no valid spec.externalIP.autoAssignCIDRs") || !strings.Contains(ac.Message, "create an IPPool") {
		t.Errorf("web: %q", ac.Message)
	}

	// An edit is followed; a deletion takes the VIPGroup along.
	if err := h.c.Get(ctx, client.ObjectKeyFromObject(good), good); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(good.Object, "eth2", "spec", "interface"); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Update(ctx, good); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: "ka", Name: "good"}, &g); err != nil {
			return err
		}
		if g.Spec.Interface != "eth2" {
			return fmt.Errorf("interface %q, want eth2", g.Spec.Interface)
		}
		return nil
	})
	if err := h.c.Delete(ctx, good); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		err := h.c.Get(ctx, client.ObjectKey{Namespace: "ka", Name: "good"}, &g)
		if err == nil {
			return fmt.Errorf("VIPGroup ka/good still exists")
		}
		return client.IgnoreNotFound(err)
	})
}
