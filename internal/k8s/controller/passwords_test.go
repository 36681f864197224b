package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/testutil"
)

// agentSA is the agent's ServiceAccount, as deploy/rbac.yaml binds it.
const agentSA = "system:serviceaccount:vipstack-system:vipstack-agent"

func securedGroup(ns, name, secret, key string) *v1alpha1.VIPGroup {
	g := group(ns, name, nil)
	g.Spec.VRRPVersion = 2
	g.Spec.AuthPassSecretRef = &v1alpha1.SecretKeyRef{Name: secret, Key: key}
	return g
}

// copyOf returns the copy of group ns/name's password, or nil.
func (h *harness) copyOf(ns, name string) (*corev1.Secret, error) {
	var s corev1.Secret
	key := client.ObjectKey{Namespace: systemNS, Name: k8s.PasswordSecretName(k8s.GroupRef{Namespace: ns, Name: name})}
	if err := h.c.Get(h.t.Context(), key, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return &s, nil
}

// waitCopy waits until the copy of group ns/name's password holds want
// ("": until there is no copy).
func (h *harness) waitCopy(ns, name, want string) {
	h.t.Helper()
	testutil.Eventually(h.t, 30*time.Second, func() error {
		s, err := h.copyOf(ns, name)
		switch {
		case err != nil:
			return err
		case s == nil && want == "":
			return nil
		case s == nil:
			return fmt.Errorf("no copy of %s/%s's password yet", ns, name)
		case want == "":
			return fmt.Errorf("the copy %s of %s/%s's password still exists", s.Name, ns, name)
		case string(s.Data[k8s.PasswordKey]) != want:
			return fmt.Errorf("the copy of %s/%s's password holds %q, want %q", ns, name, s.Data[k8s.PasswordKey], want)
		}
		return nil
	})
}

// TestPasswordCopies runs the controller as its ServiceAccount with the
// chart's RBAC: it copies a VIPGroup's VRRP password into the release
// namespace, follows a changed password, puts back a copy deleted or
// edited by hand, and deletes the copy when the group drops its ref, when
// the source goes, when the group goes, and (at start) when the group
// went while no controller ran. A group whose Secret is missing gets a
// Warning and no copy. The agent's ServiceAccount reads the copy but is
// refused (403) the group's Secret; the controller may not list Secrets
// outside its namespace.
func TestPasswordCopies(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	h.namespace("infra")
	h.node("n1", "198.18.0.11", nil)
	src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "vrrp"}, Data: map[string][]byte{"pw": []byte("one")}}
	h.create(src)
	h.create(securedGroup("infra", "secured", "vrrp", "pw"))
	h.create(securedGroup("infra", "waiting", "later", "pw"))
	h.create(group("infra", "plain", nil))
	// Left by a group deleted while no controller ran.
	orphan := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: systemNS, Name: k8s.PasswordSecretName(k8s.GroupRef{Namespace: "infra", Name: "gone"}),
		Labels:      map[string]string{k8s.MadeForLabel: k8s.PasswordMadeFor},
		Annotations: map[string]string{k8s.MadeFromAnnotation: "infra/gone"}}, Data: map[string][]byte{k8s.PasswordKey: []byte("old")}}
	h.create(orphan)

	h.startController(controller.Options{PasswordRecheck: 200 * time.Millisecond})
	h.waitCopy("infra", "secured", "one")
	h.waitCopy("infra", "gone", "")
	s, err := h.copyOf("infra", "secured")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{k8s.MadeFromAnnotation: "infra/secured", k8s.PasswordSourceAnnotation: "Secret infra/vrrp, key pw"}
	if diff := cmp.Diff(want, s.Annotations); diff != "" {
		t.Errorf("annotations of the copy (-want +got):\n%s", diff)
	}
	if s.Labels[k8s.MadeForLabel] != k8s.PasswordMadeFor || len(s.OwnerReferences) != 0 {
		t.Errorf("copy: labels %v, owners %v; want %s=%s and no owner (the group is in another namespace)", s.Labels, s.OwnerReferences, k8s.MadeForLabel, k8s.PasswordMadeFor)
	}
	if note := h.waitEvent("infra", "VIPGroup", "waiting", corev1.EventTypeWarning, controller.ReasonPasswordUnavailable); !strings.Contains(note, "Secret infra/later does not exist") {
		t.Errorf("Event on infra/waiting: %q", note)
	}
	for _, g := range []string{"waiting", "plain"} {
		if c, err := h.copyOf("infra", g); c != nil || err != nil {
			t.Errorf("group infra/%s: copy %v, %v; want none", g, c, err)
		}
	}

	t.Run("who reads what", func(t *testing.T) {
		ag := k8stest.Client(t, h.env.ConfigAs(agentSA, "system:serviceaccounts", "system:serviceaccounts:"+systemNS))
		var sec corev1.Secret
		if err := ag.Get(ctx, client.ObjectKeyFromObject(s), &sec); err != nil || string(sec.Data[k8s.PasswordKey]) != "one" {
			t.Errorf("the agent reads its copy: %v, password %q; want one", err, sec.Data[k8s.PasswordKey])
		}
		if err := ag.Get(ctx, client.ObjectKeyFromObject(src), &sec); !apierrors.IsForbidden(err) {
			t.Errorf("the agent reads Secret infra/vrrp: %v; want 403 Forbidden", err)
		}
		var list corev1.SecretList
		if err := ag.List(ctx, &list, client.InNamespace(systemNS)); !apierrors.IsForbidden(err) {
			t.Errorf("the agent lists Secrets in %s: %v; want 403 Forbidden", systemNS, err)
		}
		ctl := k8stest.Client(t, h.controllerConfig())
		if err := ctl.List(ctx, &list); !apierrors.IsForbidden(err) {
			t.Errorf("the controller lists every Secret: %v; want 403 Forbidden", err)
		}
		if err := ctl.List(ctx, &list, client.InNamespace("infra")); !apierrors.IsForbidden(err) {
			t.Errorf("the controller lists Secrets in infra: %v; want 403 Forbidden", err)
		}
	})

	// A changed password is followed.
	src.Data["pw"] = []byte("two")
	if err := h.c.Update(ctx, src); err != nil {
		t.Fatal(err)
	}
	h.waitCopy("infra", "secured", "two")

	// A copy deleted or edited by hand is put back.
	if err := h.c.Delete(ctx, s); err != nil {
		t.Fatal(err)
	}
	h.waitCopy("infra", "secured", "two")
	if s, err = h.copyOf("infra", "secured"); err != nil || s == nil {
		t.Fatalf("copy: %v, %v", s, err)
	}
	s.Data[k8s.PasswordKey] = []byte("edited")
	if err := h.c.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	h.waitCopy("infra", "secured", "two")

	// The Secret a waiting group names appears: copied.
	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "later"}, Data: map[string][]byte{"pw": []byte("three")}})
	h.waitCopy("infra", "waiting", "three")

	// The source loses its key: no copy (the agents leave the group out).
	delete(src.Data, "pw")
	src.Data["other"] = []byte("x")
	if err := h.c.Update(ctx, src); err != nil {
		t.Fatal(err)
	}
	h.waitCopy("infra", "secured", "")
	if note := h.waitEvent("infra", "VIPGroup", "secured", corev1.EventTypeWarning, controller.ReasonPasswordUnavailable); !strings.Contains(note, `Secret infra/vrrp has no key "pw"`) {
		t.Errorf("Event on infra/secured: %q", note)
	}
	src.Data["pw"] = []byte("four")
	if err := h.c.Update(ctx, src); err != nil {
		t.Fatal(err)
	}
	h.waitCopy("infra", "secured", "four")

	// The group drops its ref: the copy goes.
	var g v1alpha1.VIPGroup
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: "infra", Name: "secured"}, &g); err != nil {
		t.Fatal(err)
	}
	g.Spec.AuthPassSecretRef = nil
	if err := h.c.Update(ctx, &g); err != nil {
		t.Fatal(err)
	}
	h.waitCopy("infra", "secured", "")

	// The group is deleted: the copy goes.
	if err := h.c.Delete(ctx, &v1alpha1.VIPGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "waiting"}}); err != nil {
		t.Fatal(err)
	}
	h.waitCopy("infra", "waiting", "")
}
