package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// The VRRP passwords (docs/design/keepalived-operator.md, "Who reads the
// password"). The agents run on every node and must not read Secrets
// across the cluster, so the controller, one Deployment, reads the Secret
// a VIPGroup's authPassSecretRef names (by name, straight from the API:
// it may get Secrets, never list or watch them outside its namespace)
// and keeps a copy in its own namespace, named
// k8s.PasswordSecretName(group), which is all the agents may read.
//
// Following changes: a watch cannot be narrowed to the Secrets in use
// (RBAC's watch verb covers every name), so the controller reads each
// source again every PasswordRecheck. Its copies it does cache and watch
// (its namespace, label vipstack.io/made-for=vrrp-password), so a copy
// deleted or edited by hand is put back at once, and copies left by a
// group deleted while no controller ran are removed when it starts.

// PasswordRecheck is how often, by default, the controller reads a
// password's source Secret again (the agents read their copy as often).
const PasswordRecheck = time.Minute

// ReasonPasswordUnavailable is the Warning on a VIPGroup whose password
// cannot be read: no copy exists, so the agents leave the group out.
const ReasonPasswordUnavailable = "PasswordUnavailable"

// groupOfCopy maps a copy to its group.
func groupOfCopy(_ context.Context, o client.Object) []reconcile.Request {
	v, ok := o.GetAnnotations()[k8s.MadeFromAnnotation]
	if !ok || !strings.Contains(v, "/") {
		return nil
	}
	ref, err := k8s.ParseGroupRef("", v)
	if err != nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}}}
}

// reconcilePassword keeps the copy of one group's password: made or
// updated from the source Secret while the group names one and it can be
// read, deleted otherwise.
func (c *Controller) reconcilePassword(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ref := k8s.GroupRef{Namespace: req.Namespace, Name: req.Name}
	key := types.NamespacedName{Namespace: c.opts.Namespace, Name: k8s.PasswordSecretName(ref)}
	var g v1alpha1.VIPGroup
	err := c.client.Get(ctx, req.NamespacedName, &g)
	switch {
	case apierrors.IsNotFound(err):
		c.forgetPasswordProblem(ref)
		return reconcile.Result{}, c.deleteCopy(ctx, key, ref, "the VIPGroup is gone")
	case err != nil:
		return reconcile.Result{}, err
	case g.Spec.AuthPassSecretRef == nil:
		c.forgetPasswordProblem(ref)
		return reconcile.Result{}, c.deleteCopy(ctx, key, ref, "the VIPGroup names no password")
	}
	src := *g.Spec.AuthPassSecretRef
	pass, err := readPassword(ctx, c.secrets, g.Namespace, src)
	if err != nil {
		var unusable *passwordError
		if !errors.As(err, &unusable) {
			// The API failed: keep the copy as it is, and try again.
			return reconcile.Result{}, err
		}
		// The agents leave the group out rather than run it without its
		// password (which would split it: two masters).
		if derr := c.deleteCopy(ctx, key, ref, "its source cannot be read"); derr != nil {
			return reconcile.Result{}, derr
		}
		if c.notePasswordProblem(ref, err.Error()) {
			c.log.Warn("VIPGroup not served: its VRRP password cannot be read", "group", ref.String(), "err", err)
			c.events.Eventf(&g, nil, corev1.EventTypeWarning, ReasonPasswordUnavailable, "ReadPassword",
				"%v; no node serves the group until it can be read", err)
		}
		return reconcile.Result{RequeueAfter: c.opts.PasswordRecheck}, nil
	}
	c.forgetPasswordProblem(ref)
	want := passwordCopy(key, ref, src, g.Namespace, pass)
	var have corev1.Secret
	err = c.client.Get(ctx, key, &have)
	switch {
	case apierrors.IsNotFound(err):
		if err := c.client.Create(ctx, want); err != nil {
			if !apierrors.IsAlreadyExists(err) {
				return reconcile.Result{}, fmt.Errorf("copy the VRRP password of VIPGroup %s to Secret %s: %w", ref, key, err)
			}
			// There, but not in the cache: its label was taken off.
			if err := c.secrets.Get(ctx, key, &have); err != nil {
				return reconcile.Result{}, fmt.Errorf("read Secret %s: %w", key, err)
			}
			return reconcile.Result{}, c.updateCopy(ctx, &have, want, ref)
		}
		c.log.Info("VRRP password copied for the agents", "group", ref.String(), "secret", key.String())
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("read Secret %s: %w", key, err)
	default:
		if err := c.updateCopy(ctx, &have, want, ref); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{RequeueAfter: c.opts.PasswordRecheck}, nil
}

// passwordCopy is the copy, in key, of the password of group ref.
func passwordCopy(key types.NamespacedName, ref k8s.GroupRef, src v1alpha1.SecretKeyRef, ns, pass string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{k8s.MadeForLabel: k8s.PasswordMadeFor},
			Annotations: map[string]string{k8s.MadeFromAnnotation: ref.String(),
				k8s.PasswordSourceAnnotation: fmt.Sprintf("Secret %s/%s, key %s", ns, src.Name, src.Key)}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{k8s.PasswordKey: []byte(pass)},
	}
}

// updateCopy makes have what want says, if it is not already.
func (c *Controller) updateCopy(ctx context.Context, have, want *corev1.Secret, ref k8s.GroupRef) error {
	same := len(have.Data) == 1 && bytes.Equal(have.Data[k8s.PasswordKey], want.Data[k8s.PasswordKey]) &&
		maps.Equal(have.Labels, want.Labels) && maps.Equal(have.Annotations, want.Annotations)
	if same {
		return nil
	}
	up := have.DeepCopy()
	up.Labels, up.Annotations, up.Data, up.StringData = want.Labels, want.Annotations, want.Data, nil
	if err := c.client.Update(ctx, up); err != nil {
		return fmt.Errorf("update Secret %s/%s, the copy of VIPGroup %s's VRRP password: %w", up.Namespace, up.Name, ref, err)
	}
	c.log.Info("VRRP password copy updated for the agents", "group", ref.String(), "secret", up.Namespace+"/"+up.Name)
	return nil
}

// deleteCopy removes the copy of group ref's password, if there is one.
func (c *Controller) deleteCopy(ctx context.Context, key types.NamespacedName, ref k8s.GroupRef, why string) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	var have corev1.Secret
	switch err := c.client.Get(ctx, key, &have); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("read Secret %s: %w", key, err)
	}
	// Only a copy of ours: the name could have been taken by hand.
	if have.Labels[k8s.MadeForLabel] != k8s.PasswordMadeFor {
		return nil
	}
	pre := client.Preconditions{UID: &have.UID}
	if err := c.client.Delete(ctx, s, pre); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Secret %s, the copy of VIPGroup %s's VRRP password (%s): %w", key, ref, why, err)
	}
	c.log.Info("VRRP password copy deleted", "group", ref.String(), "secret", key.String(), "why", why)
	return nil
}

// notePasswordProblem records msg as group ref's password problem; it
// reports whether that is news (so that a problem is told once).
func (c *Controller) notePasswordProblem(ref k8s.GroupRef, msg string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pwProblems[ref] == msg {
		return false
	}
	c.pwProblems[ref] = msg
	return true
}

func (c *Controller) forgetPasswordProblem(ref k8s.GroupRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pwProblems, ref)
}

// passwordError says why a password cannot be used: the Secret or its
// key is missing or empty, or the controller may not read it. Anything
// else is the API failing, and is tried again.
type passwordError struct{ msg string }

func (e *passwordError) Error() string { return e.msg }

// readPassword reads the password src names in namespace ns.
func readPassword(ctx context.Context, r client.Reader, ns string, src v1alpha1.SecretKeyRef) (string, error) {
	var sec corev1.Secret
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: src.Name}, &sec); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return "", &passwordError{fmt.Sprintf("spec.authPassSecretRef: Secret %s/%s does not exist", ns, src.Name)}
		case apierrors.IsForbidden(err):
			return "", &passwordError{fmt.Sprintf("spec.authPassSecretRef: the controller may not read Secret %s/%s (its ClusterRole needs get on secrets): %v", ns, src.Name, err)}
		}
		return "", fmt.Errorf("spec.authPassSecretRef: read Secret %s/%s: %w", ns, src.Name, err)
	}
	b, ok := sec.Data[src.Key]
	if !ok {
		return "", &passwordError{fmt.Sprintf("spec.authPassSecretRef: Secret %s/%s has no key %q", ns, src.Name, src.Key)}
	}
	if len(b) == 0 {
		return "", &passwordError{fmt.Sprintf("spec.authPassSecretRef: key %q of Secret %s/%s is empty; want the password", src.Key, ns, src.Name)}
	}
	return string(b), nil
}
