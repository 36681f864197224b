package controller

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// flakyReader fails every read while fail is set, as an API server that
// answers 500.
type flakyReader struct {
	client.Reader
	fail bool
}

func (r *flakyReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if r.fail {
		return apierrors.NewInternalError(io.ErrUnexpectedEOF)
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// TestReconcilePassword steps one group through the life of its
// password's copy, checking after every step the copy (its password,
// or none), the requeue, the error and the Events.
func TestReconcilePassword(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	const ns = "vipstack-system"
	ref := k8s.GroupRef{Namespace: "infra", Name: "secured"}
	copyKey := types.NamespacedName{Namespace: ns, Name: k8s.PasswordSecretName(ref)}
	g := &v1alpha1.VIPGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "secured"},
		Spec: v1alpha1.VIPGroupSpec{VRRPVersion: 2, AuthPassSecretRef: &v1alpha1.SecretKeyRef{Name: "vrrp", Key: "pw"}}}
	src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "vrrp"}, Data: map[string][]byte{"pw": []byte("one")}}
	cl := fake.NewClientBuilder().WithScheme(s).WithObjects(g, src).Build()
	rec := events.NewFakeRecorder(10)
	reader := &flakyReader{Reader: cl}
	c := &Controller{client: cl, secrets: reader, events: rec, log: slog.New(slog.DiscardHandler),
		opts: Options{Namespace: ns, PasswordRecheck: time.Minute}, pwProblems: map[k8s.GroupRef]string{}}
	ctx := t.Context()

	update := func(o client.Object, f func()) {
		t.Helper()
		if err := cl.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		f()
		if err := cl.Update(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	setPassword := func(v string) func(*testing.T) {
		return func(t *testing.T) {
			update(src, func() {
				src.Data = map[string][]byte{"pw": []byte(v)}
				if v == "" {
					src.Data = map[string][]byte{"other": []byte("x")}
				}
			})
		}
	}
	setRef := func(r *v1alpha1.SecretKeyRef) func(*testing.T) {
		return func(t *testing.T) { update(g, func() { g.Spec.AuthPassSecretRef = r }) }
	}
	for _, step := range []struct {
		name        string
		do          func(t *testing.T)
		fail        bool   // the API fails reads of the source
		wantCopy    string // the copy's password; "": no copy
		wantRequeue bool
		wantErr     bool
		wantEvent   string // a substring of the one Event; "": none
	}{
		{name: "copied", wantCopy: "one", wantRequeue: true},
		{name: "password changed", do: setPassword("two"), wantCopy: "two", wantRequeue: true},
		{name: "copy edited by hand", do: func(t *testing.T) {
			cp := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: copyKey.Name}}
			update(cp, func() { cp.Data[k8s.PasswordKey] = []byte("x") })
		}, wantCopy: "two", wantRequeue: true},
		{name: "the API fails: the copy stays", fail: true, wantCopy: "two", wantErr: true},
		{name: "key gone", do: setPassword(""), wantRequeue: true,
			wantEvent: `Warning PasswordUnavailable spec.authPassSecretRef: Secret infra/vrrp has no key "pw"; no node serves the group`},
		{name: "key still gone: told once", wantRequeue: true},
		{name: "key back", do: setPassword("three"), wantCopy: "three", wantRequeue: true},
		{name: "ref dropped", do: setRef(nil)},
		{name: "ref to a Secret that does not exist", do: setRef(&v1alpha1.SecretKeyRef{Name: "nope", Key: "pw"}), wantRequeue: true,
			wantEvent: "Secret infra/nope does not exist"},
		{name: "ref back", do: setRef(&v1alpha1.SecretKeyRef{Name: "vrrp", Key: "pw"}), wantCopy: "three", wantRequeue: true},
		{name: "group deleted", do: func(t *testing.T) {
			if err := cl.Delete(ctx, g); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a Secret of that name not ours is left alone", do: func(t *testing.T) {
			if err := cl.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: copyKey.Name},
				Data: map[string][]byte{k8s.PasswordKey: []byte("mine")}}); err != nil {
				t.Fatal(err)
			}
		}, wantCopy: "mine"},
	} {
		t.Run(step.name, func(t *testing.T) {
			if step.do != nil {
				step.do(t)
			}
			reader.fail = step.fail
			res, err := c.reconcilePassword(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "infra", Name: "secured"}})
			if (err != nil) != step.wantErr {
				t.Errorf("err %v, want an error: %t", err, step.wantErr)
			}
			if got := res.RequeueAfter > 0; got != step.wantRequeue {
				t.Errorf("requeue after %v, want a requeue: %t", res.RequeueAfter, step.wantRequeue)
			}
			var cp corev1.Secret
			got := ""
			if err := cl.Get(ctx, copyKey, &cp); err == nil {
				got = string(cp.Data[k8s.PasswordKey])
			} else if !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			if got != step.wantCopy {
				t.Errorf("copy holds %q, want %q", got, step.wantCopy)
			}
			if got != "" && got != "mine" {
				want := map[string]string{k8s.MadeForLabel: k8s.PasswordMadeFor}
				if diff := cmp.Diff(want, cp.Labels); diff != "" {
					t.Errorf("copy's labels (-want +got):\n%s", diff)
				}
				if cp.Annotations[k8s.MadeFromAnnotation] != "infra/secured" {
					t.Errorf("copy's annotations %v, want %s infra/secured", cp.Annotations, k8s.MadeFromAnnotation)
				}
			}
			var evs []string
			for len(rec.Events) > 0 {
				evs = append(evs, <-rec.Events)
			}
			switch {
			case step.wantEvent == "" && len(evs) > 0:
				t.Errorf("Events %q, want none", evs)
			case step.wantEvent != "" && (len(evs) != 1 || !strings.Contains(evs[0], step.wantEvent)):
				t.Errorf("Events %q, want one with %q", evs, step.wantEvent)
			}
		})
	}
}
