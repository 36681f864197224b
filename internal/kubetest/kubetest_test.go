package kubetest

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// wantVersion is the kube-apiserver version tools/kube builds. vipstack's
// client-go and controller-runtime are pinned to match it; bump them together.
const wantVersion = "v1.36.3"

func clientset(t *testing.T, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("kubernetes.NewForConfig: %v", err)
	}
	return cs
}

func TestEnv(t *testing.T) {
	env := Start(t)
	ctx := t.Context()
	cs := clientset(t, env.Config)

	t.Run("server version", func(t *testing.T) {
		v, err := cs.Discovery().ServerVersion()
		if err != nil {
			t.Fatalf("ServerVersion: %v", err)
		}
		got := [3]string{v.GitVersion, v.Major, v.Minor}
		want := [3]string{wantVersion, "1", "36"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("server GitVersion, Major, Minor (-want +got):\n%s", diff)
		}
	})

	const ns = "kubetest"
	want := map[string]string{"vip": "198.18.0.10", "group": "edge"}
	t.Run("client-go round trip", func(t *testing.T) {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create namespace %s: %v", ns, err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}, Data: want}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create configmap: %v", err)
		}
		got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get configmap: %v", err)
		}
		if diff := cmp.Diff(want, got.Data); diff != "" {
			t.Errorf("configmap data (-want +got):\n%s", diff)
		}
	})

	t.Run("controller-runtime client", func(t *testing.T) {
		c, err := client.New(env.Config, client.Options{})
		if err != nil {
			t.Fatalf("client.New: %v", err)
		}
		var got corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, &got); err != nil {
			t.Fatalf("get configmap: %v", err)
		}
		if diff := cmp.Diff(want, got.Data); diff != "" {
			t.Errorf("configmap data (-want +got):\n%s", diff)
		}
	})

	t.Run("kubeconfig", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
		if err != nil {
			t.Fatalf("load %s: %v", env.Kubeconfig, err)
		}
		got, err := clientset(t, cfg).CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get configmap with %s: %v", env.Kubeconfig, err)
		}
		if diff := cmp.Diff(want, got.Data); diff != "" {
			t.Errorf("configmap data (-want +got):\n%s", diff)
		}
	})

	t.Run("no endpoints off the machine", func(t *testing.T) {
		svc, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return // nothing advertised at all
		}
		if err != nil {
			t.Fatalf("get service default/kubernetes: %v", err)
		}
		_, cidr, _ := net.ParseCIDR(ServiceCIDR)
		if ip := net.ParseIP(svc.Spec.ClusterIP); !cidr.Contains(ip) {
			t.Errorf("service default/kubernetes has ClusterIP %s, want one in %s", svc.Spec.ClusterIP, ServiceCIDR)
		}
		eps, err := cs.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list endpointslices: %v", err)
		}
		for _, s := range eps.Items {
			for _, e := range s.Endpoints {
				for _, a := range e.Addresses {
					if !net.ParseIP(a).IsLoopback() {
						t.Errorf("endpointslice %s has address %s, want none or loopback", s.Name, a)
					}
				}
			}
		}
	})

	// RBAC is enforced: an impersonated user can do exactly what a Role
	// binds it to, checked after every step.
	t.Run("rbac", func(t *testing.T) {
		as := clientset(t, env.ConfigAs("alice"))
		steps := []struct {
			name      string
			do        func() error
			wantGet   bool // alice may get configmap kubetest/settings
			wantWrite bool // alice may create configmaps in kubetest
		}{
			{
				name: "no bindings",
				do:   func() error { return nil },
			},
			{
				name: "bind a reader role",
				do: func() error {
					role := &rbacv1.Role{
						ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-reader"},
						Rules: []rbacv1.PolicyRule{{
							APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"},
						}},
					}
					if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
						return err
					}
					rb := &rbacv1.RoleBinding{
						ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice-cm-reader"},
						RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm-reader"},
						Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
					}
					_, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{})
					return err
				},
				wantGet: true,
			},
			{
				name: "unbind it",
				do: func() error {
					return cs.RbacV1().RoleBindings(ns).Delete(ctx, "alice-cm-reader", metav1.DeleteOptions{})
				},
			},
		}
		may := func() [2]bool {
			_, getErr := as.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "by-alice"}}
			_, writeErr := as.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return [2]bool{allowed(t, getErr), allowed(t, writeErr)}
		}
		for _, step := range steps {
			if err := step.do(); err != nil {
				t.Fatalf("step %q: %v", step.name, err)
			}
			// The RBAC authorizer reads roles through an informer, so a
			// change takes effect a moment after the write returns.
			want := [2]bool{step.wantGet, step.wantWrite}
			got := eventually(want, may)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("after step %q, alice may [get, create] configmaps (-want +got):\n%s", step.name, diff)
			}
		}
	})
}

// eventually calls check until it returns want or 10 seconds pass, and
// returns its last result. It polls on real time because it waits for the API
// server, another process.
func eventually[T comparable](want T, check func() T) T {
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		got := check()
		if got == want {
			return got
		}
		select {
		case <-deadline.C:
			return got
		case <-tick.C:
		}
	}
}

// allowed reports whether err is not a Forbidden error, failing the test on
// any other error.
func allowed(t *testing.T, err error) bool {
	t.Helper()
	if err == nil {
		return true
	}
	if !apierrors.IsForbidden(err) {
		t.Fatalf("want success or Forbidden, got %v", err)
	}
	return false
}

func TestStop(t *testing.T) {
	env := Start(t)
	procs := []*proc{env.apiserver, env.etcd}
	env.Stop()
	env.Stop() // a second Stop, and the one t.Cleanup makes, do nothing

	for _, p := range procs {
		select {
		case <-p.done:
		default:
			t.Errorf("%s (pid %d) still running after Stop", p.name, p.cmd.Process.Pid)
		}
	}
	if _, err := os.Stat(env.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data directory %s after Stop: stat error %v, want it removed", env.dir, err)
	}
	if env.stopErr != nil {
		t.Errorf("Stop: %v", env.stopErr)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, err := clientset(t, env.Config).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("list namespaces after Stop: %v, want connection refused", err)
	}
}

func TestSkip(t *testing.T) {
	t.Setenv("VIPSTACK_SKIP_KUBE", "1")
	t.Setenv("VIPSTACK_KUBE_BIN", "/nonexistent")
	var skipped bool
	t.Run("start", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Start(t)
		t.Error("Start returned with VIPSTACK_SKIP_KUBE=1")
	})
	if !skipped {
		t.Error("Start did not skip the test with VIPSTACK_SKIP_KUBE=1")
	}
}

// TestKillRestart kills kube-apiserver and etcd and starts them again: the
// same kubeconfig reaches the API server again, and what was stored before
// is still there.
func TestKillRestart(t *testing.T) {
	env := Start(t)
	ctx := t.Context()
	cs := clientset(t, env.Config)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "before"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.KillAPIServer(); err != nil {
		t.Fatal(err)
	}
	if env.APIServerRunning() {
		t.Error("APIServerRunning after KillAPIServer")
	}
	if err := env.KillAPIServer(); err == nil {
		t.Error("a second KillAPIServer succeeded, want an error (nothing runs)")
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "before", metav1.GetOptions{}); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("get namespace with the API server killed: %v, want connection refused", err)
	}
	if err := env.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if err := env.RestartAPIServer(ctx); err == nil {
		t.Error("RestartAPIServer of a running API server succeeded, want an error")
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "before", metav1.GetOptions{}); err != nil {
		t.Errorf("get namespace after the API server's restart: %v", err)
	}

	if err := env.KillEtcd(); err != nil {
		t.Fatal(err)
	}
	if env.EtcdRunning() {
		t.Error("EtcdRunning after KillEtcd")
	}
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, err := cs.CoreV1().Namespaces().Create(short, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "during"}}, metav1.CreateOptions{})
	cancel()
	if err == nil {
		t.Error("created a namespace with etcd killed, want an error")
	}
	if err := env.RestartEtcd(ctx); err != nil {
		t.Fatal(err)
	}
	if ok := eventually(true, func() bool {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "before", metav1.GetOptions{})
		return err == nil
	}); !ok {
		t.Error("the namespace made before etcd's kill is not readable after its restart")
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("create a namespace after etcd's restart: %v", err)
	}
}
