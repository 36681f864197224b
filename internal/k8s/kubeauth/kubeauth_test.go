package kubeauth

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/kubetest"
)

// get requests path from srv with token ("" none) and returns the code
// and body.
func get(t *testing.T, srv *httptest.Server, path, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var served = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "vipstack_build_info 1\n") })

// TestGuardWithAPIServer: against a real kube-apiserver (RBAC, service
// account tokens), the guarded endpoint refuses a request without a
// token or with a forged one (401) and a token whose service account has
// no right to GET /metrics (403), and serves one whose account a
// ClusterRole allows; that account is refused another path.
func TestGuardWithAPIServer(t *testing.T) {
	env := kubetest.Start(t)
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "default"
	token := func(name string) string {
		t.Helper()
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		exp := int64(600)
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	allowed, stranger := token("prometheus"), token("stranger")
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "vipstack-metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-vipstack"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "vipstack-metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g := &Guard{Reviewer: ForClientset(cs)}
	srv := httptest.NewServer(g.Wrap(served))
	defer srv.Close()
	for _, tc := range []struct {
		name, path, token string
		code              int
		body              string
	}{
		{name: "no token", path: "/metrics", code: 401, body: "bearer token is required"},
		{name: "forged token", path: "/metrics", token: "eyJhbGciOiJSUzI1NiJ9.e30.c2ln", code: 401, body: "not valid"},
		{name: "account without the right", path: "/metrics", token: stranger, code: 403, body: `user "system:serviceaccount:default:stranger" may not get /metrics`},
		{name: "allowed account", path: "/metrics", token: allowed, code: 200, body: "vipstack_build_info 1"},
		{name: "allowed account, other path", path: "/status", token: allowed, code: 403, body: "may not get /status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, srv, tc.path, tc.token)
			if code != tc.code || !strings.Contains(body, tc.body) {
				t.Errorf("GET %s: %d %q, want %d and %q", tc.path, code, body, tc.code, tc.body)
			}
		})
	}
}

// countingReviewer allows everything and counts the reviews.
type countingReviewer struct{ tokens, sars int }

func (c *countingReviewer) TokenReview(_ context.Context, r *authnv1.TokenReview) (*authnv1.TokenReview, error) {
	c.tokens++
	r.Status.Authenticated = r.Spec.Token == "good"
	r.Status.User.Username = "u"
	return r, nil
}

func (c *countingReviewer) SubjectAccessReview(_ context.Context, r *authzv1.SubjectAccessReview) (*authzv1.SubjectAccessReview, error) {
	c.sars++
	r.Status.Allowed = true
	return r, nil
}

// TestGuardCache: a verdict is reused for TTL, then asked again.
func TestGuardCache(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	rv := &countingReviewer{}
	g := &Guard{Reviewer: rv, TTL: 10 * time.Second, Clock: clk}
	srv := httptest.NewServer(g.Wrap(served))
	defer srv.Close()
	type step struct {
		advance      time.Duration
		token        string
		code         int
		tokens, sars int
	}
	for i, st := range []step{
		{token: "good", code: 200, tokens: 1, sars: 1},
		{advance: 9 * time.Second, token: "good", code: 200, tokens: 1, sars: 1},
		{token: "bad", code: 401, tokens: 2, sars: 1},
		{token: "bad", code: 401, tokens: 2, sars: 1},
		{advance: 2 * time.Second, token: "good", code: 200, tokens: 3, sars: 2},
	} {
		clk.Advance(st.advance)
		code, _ := get(t, srv, "/metrics", st.token)
		if code != st.code || rv.tokens != st.tokens || rv.sars != st.sars {
			t.Errorf("step %d: code %d, reviews %d/%d; want %d, %d/%d", i, code, rv.tokens, rv.sars, st.code, st.tokens, st.sars)
		}
	}
}
