package agent_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/agent"
	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/kubetest"
)

type fakeIfs map[netip.Addr]string

func (f fakeIfs) Exists(name string) bool {
	for _, n := range f {
		if n == name {
			return true
		}
	}
	return false
}

func (f fakeIfs) Holding(a netip.Addr) (string, error) {
	if n, ok := f[a]; ok {
		return n, nil
	}
	return "", fmt.Errorf("no interface has %s", a)
}

// TestViews reads a cluster's state through the agent's ServiceAccount
// (deploy/rbac.yaml: read-only but for its own status Lease) and checks what the agent of each node
// would serve: load-balancer addresses and allowed externalIPs of its
// groups, Local Services only where an endpoint is ready.
func TestViews(t *testing.T) {
	env := kubetest.Start(t)
	admin := k8stest.Client(t, env.Config)
	k8stest.InstallCRDs(t, admin)
	if err := k8stest.Apply(t.Context(), admin, k8stest.Objects(t, "rbac.yaml"), false); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	mk := func(o client.Object) {
		t.Helper()
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	status := func(o client.Object) {
		t.Helper()
		if err := admin.Status().Update(ctx, o); err != nil {
			t.Fatalf("status of %T %s: %v", o, o.GetName(), err)
		}
	}
	for _, ns := range []string{"infra", "demo"} {
		mk(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	for i, n := range []string{"n1", "n2", "n3"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}
		mk(node)
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("198.18.0.%d", 11+i)}}
		status(node)
	}
	g := &v1alpha1.VIPGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "workers"}, Spec: v1alpha1.VIPGroupSpec{Unicast: true}}
	mk(g)
	g.Status.Instances = []v1alpha1.GroupInstance{
		{Name: "node/n1", VRID: 1, Node: "n1"}, {Name: "node/n2", VRID: 3, Node: "n2"}, {Name: "node/n3", VRID: 4, Node: "n3"},
		{Name: "service/demo/local", VRID: 5, Service: "demo/local"},
	}
	status(g)
	now := metav1.NewTime(time.Now())
	svc := func(name string, mutate func(*corev1.Service)) {
		t.Helper()
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name, Annotations: map[string]string{k8s.GroupAnnotation: "infra/workers"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
		mutate(s)
		st := s.Status
		mk(s)
		s.Status = st
		status(s)
	}
	allocated := metav1.Condition{Type: v1alpha1.ServiceConditionAllocated, Status: "True", Reason: "Allocated", Message: "m", LastTransitionTime: now}
	svc("web", func(s *corev1.Service) {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.18.10.1"}}
		s.Status.Conditions = []metav1.Condition{allocated}
	})
	svc("local", func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.18.10.2"}}
		s.Status.Conditions = []metav1.Condition{allocated}
	})
	svc("other-lb", func(s *corev1.Service) { // ingress written by someone else: no condition of ours
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.18.10.3"}}
	})
	svc("from-metallb", func(s *corev1.Service) { // names no group; the controller's condition does
		s.Annotations = nil
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.18.10.4"}}
		s.Status.Conditions = []metav1.Condition{allocated, {Type: v1alpha1.ServiceConditionGroup, Status: "True", Reason: "FromPool",
			Message: "infra/workers", LastTransitionTime: now}}
	})
	svc("no-advertisement", func(s *corev1.Service) { // False: no group serves its pool
		s.Annotations = nil
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.18.10.5"}}
		s.Status.Conditions = []metav1.Condition{allocated, {Type: v1alpha1.ServiceConditionGroup, Status: "False", Reason: "NoAdvertisement",
			Message: "infra/workers", LastTransitionTime: now}}
	})
	svc("ext", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeClusterIP
		// 198.18.11.9 was added after the controller looked: not held yet.
		s.Spec.ExternalIPs = []string{"198.18.11.1", "198.18.11.9"}
		s.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ServiceConditionExternalIPs, Status: "True", Reason: "Allowed",
			Message: v1alpha1.ExternalIPsMessage("infra/workers", []string{"198.18.11.1"}), LastTransitionTime: now}}
	})
	svc("ext-refused", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeClusterIP
		s.Spec.ExternalIPs = []string{"198.18.11.2"}
		s.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ServiceConditionExternalIPs, Status: "False", Reason: "IPNotInPool", Message: "m", LastTransitionTime: now}}
	})
	ready, notReady := true, false
	n1, n3 := "n1", "n3"
	mk(&discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "demo", Name: "local-abc", Labels: map[string]string{discoveryv1.LabelServiceName: "local"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.0.0.1"}, NodeName: &n1, Conditions: discoveryv1.EndpointConditions{Ready: &ready}},
			{Addresses: []string{"10.0.0.3"}, NodeName: &n3, Conditions: discoveryv1.EndpointConditions{Ready: &notReady}},
		},
	})

	agentCfg := env.ConfigAs("system:serviceaccount:vipstack-system:vipstack-agent", "system:serviceaccounts", "system:serviceaccounts:vipstack-system")
	reader := k8stest.Client(t, agentCfg)
	ifs := fakeIfs{netip.MustParseAddr("198.18.0.11"): "eth0", netip.MustParseAddr("198.18.0.12"): "eth0", netip.MustParseAddr("198.18.0.13"): "eth0"}
	runs := map[string][]string{}
	for _, node := range []string{"n1", "n2", "n3"} {
		t.Run(node, func(t *testing.T) {
			views, warns, err := agent.Views(ctx, reader, node, ifs, agent.Passwords{})
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) > 0 {
				t.Errorf("warnings: %v", warns)
			}
			if len(views) != 1 || views[0].Interface != "eth0" || !views[0].Unicast {
				t.Fatalf("views %+v", views)
			}
			plan, _ := agent.PlanNode(node, views)
			for _, in := range plan.Instances {
				for _, a := range in.VIPs {
					runs[a.String()] = append(runs[a.String()], node)
				}
			}
		})
	}
	want := map[string][]string{
		"198.18.10.1": {"n1", "n2", "n3"},
		"198.18.10.2": {"n1"}, // Local: the only ready endpoint is on n1
		"198.18.10.4": {"n1", "n2", "n3"},
		"198.18.11.1": {"n1", "n2", "n3"},
	}
	if diff := cmp.Diff(want, runs); diff != "" {
		t.Errorf("who runs which address (-want +got):\n%s", diff)
	}

	// The agent's own cache keeps of each object only what it reads
	// (slimService, k8s.SlimNode, k8s.SlimEndpointSlice): the views read
	// through it are those read from the API.
	t.Run("through the agent's cache", func(t *testing.T) {
		mgr, err := agent.NewManager(agentCfg, agent.ManagerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mctx) }()
		t.Cleanup(func() { cancel(); <-done })
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			t.Fatal("the agent's cache did not start")
		}
		cached := mgr.GetClient()
		for _, node := range []string{"n1", "n2", "n3"} {
			want, _, err := agent.Views(ctx, reader, node, ifs, agent.Passwords{})
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := agent.Views(ctx, cached, node, ifs, agent.Passwords{Reader: reader})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("%s: views through the cache (-from the API +through the cache):\n%s", node, diff)
			}
		}
		var s corev1.Service
		if err := cached.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "web"}, &s); err != nil {
			t.Fatal(err)
		}
		if s.ManagedFields != nil || s.Spec.Ports != nil || s.CreationTimestamp != (metav1.Time{}) {
			t.Errorf("the cache keeps a Service's managed fields, ports or creation time: %+v", s)
		}
		if s.Annotations[k8s.GroupAnnotation] != "infra/workers" || len(s.Status.LoadBalancer.Ingress) != 1 {
			t.Errorf("the cache lost what the agent reads of a Service: %+v", s)
		}
	})

	t.Run("the agent cannot write", func(t *testing.T) {
		s := &corev1.Service{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "web"}, s); err != nil {
			t.Fatal(err)
		}
		s.Status.LoadBalancer.Ingress = nil
		if err := reader.Status().Update(ctx, s); err == nil {
			t.Fatal("the agent's ServiceAccount may write Service status")
		}
	})

	// A group with a VRRP password: left out with a warning while the
	// controller's copy in the release namespace is missing, then served
	// with the copy's password, which the agent reads by name. The agent
	// may not read the Secret the group names, nor list Secrets.
	t.Run("password", func(t *testing.T) {
		sg := &v1alpha1.VIPGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "secured"},
			Spec: v1alpha1.VIPGroupSpec{VRRPVersion: 2, AuthPassSecretRef: &v1alpha1.SecretKeyRef{Name: "vrrp", Key: "pw"}}}
		mk(sg)
		sg.Status.Instances = []v1alpha1.GroupInstance{{Name: "node/n1", VRID: 7, Node: "n1"}}
		status(sg)
		mk(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "vrrp"}, Data: map[string][]byte{"pw": []byte("source")}})
		pw := agent.Passwords{Namespace: "vipstack-system"}
		find := func() (*agent.GroupView, []string) {
			t.Helper()
			views, warns, err := agent.Views(ctx, reader, "n1", ifs, pw)
			if err != nil {
				t.Fatal(err)
			}
			for i := range views {
				if views[i].Key == "infra/secured" {
					return &views[i], warns
				}
			}
			return nil, warns
		}
		const missing = "group infra/secured is not served: VRRP password: Secret vipstack-system/vipstack-vrrp-infra.secured (the controller's copy of Secret infra/vrrp, key pw) does not exist"
		if v, warns := find(); v != nil || len(warns) != 1 || !strings.Contains(warns[0], missing) {
			t.Errorf("without the copy: view %+v, warnings %q; want none and %q", v, warns, missing)
		}
		mk(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "vipstack-system", Name: k8s.PasswordSecretName(k8s.GroupRef{Namespace: "infra", Name: "secured"})},
			Data: map[string][]byte{k8s.PasswordKey: []byte("s3cret")}})
		if v, warns := find(); v == nil || v.AuthPass != "s3cret" || v.Version != 2 || len(warns) != 0 {
			t.Errorf("with the copy: view %+v, warnings %q; want the copy's password s3cret", v, warns)
		}
		var sec corev1.Secret
		if err := reader.Get(ctx, client.ObjectKey{Namespace: "infra", Name: "vrrp"}, &sec); !apierrors.IsForbidden(err) {
			t.Errorf("the agent reads the group's own Secret infra/vrrp: %v; want 403 Forbidden", err)
		}
		var list corev1.SecretList
		if err := reader.List(ctx, &list, client.InNamespace("vipstack-system")); !apierrors.IsForbidden(err) {
			t.Errorf("the agent lists Secrets in its namespace: %v; want 403 Forbidden", err)
		}
	})
}
