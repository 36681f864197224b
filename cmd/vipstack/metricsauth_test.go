package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/kubetest"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestAgentMetricsAuth runs `vipstack agent --metrics-auth kubernetes`
// against a real API server (no VIPGroups: its engine runs no instance)
// and scrapes its metrics: without a token and with the token of a
// ServiceAccount that no role lets get /metrics it is refused (401, 403);
// with one that a ClusterRole allows it gets the metrics.
func TestAgentMetricsAuth(t *testing.T) {
	testnet.RequireRoot(t) // the agent opens netlink and its ledger
	env := kubetest.Start(t)
	k8stest.InstallCRDs(t, k8stest.Client(t, env.Config))
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	token := func(name string) string {
		t.Helper()
		if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	prom, stranger := token("prometheus"), token("stranger")
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-metrics"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: "default"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	runCtx, cancel := context.WithCancel(ctx)
	var out, errb syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- runAgent(runCtx, []string{"--kubeconfig", env.Kubeconfig, "--node-name", "n1", "--no-supervisor",
			"--metrics-addr", addr, "--metrics-auth", "kubernetes", "--status-addr", "", "--health-addr", "",
			"--handoff-socket", "", "--state-dir", t.TempDir()}, &out, &errb)
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("runAgent did not stop within 30s of its context ending")
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", errb.String())
		}
	}()
	scrape := func(token string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	// Wait for the endpoint; the first answer is then the anonymous one.
	testutil.Eventually(t, 30*time.Second, func() error { _, _, err := scrape(""); return err })
	for _, tc := range []struct {
		name, token string
		code        int
		has         string
	}{
		{name: "no token", code: 401, has: "bearer token is required"},
		{name: "unauthorised ServiceAccount", token: stranger, code: 403, has: "system:serviceaccount:default:stranger"},
		{name: "authorised ServiceAccount", token: prom, code: 200, has: "vipstack_build_info{"},
	} {
		code, body, err := scrape(tc.token)
		if err != nil || code != tc.code || !strings.Contains(body, tc.has) {
			t.Errorf("%s: %d %v, want %d with %q:\n%s", tc.name, code, err, tc.code, tc.has, body)
		}
	}
}
