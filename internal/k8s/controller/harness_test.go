package controller_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/kubetest"
	"github.com/vipstack/vipstack/internal/testutil"
)

// The controller's ServiceAccount, as deploy/rbac.yaml defines it: the
// tests run the controller with exactly the rights that file gives it.
const (
	controllerSA = "system:serviceaccount:vipstack-system:vipstack-controller"
	systemNS     = "vipstack-system"
)

type harness struct {
	t   *testing.T
	env *kubetest.Env
	c   client.Client // admin
}

// newHarness starts an API server, installs the CRDs and applies
// deploy/rbac.yaml for real (the workloads with a server-side dry run).
func newHarness(t *testing.T) *harness { return newHarnessWith(t, kubetest.Options{}) }

// newHarnessWith is newHarness with the API server's options.
func newHarnessWith(t *testing.T, o kubetest.Options) *harness {
	env := kubetest.StartWith(t, o)
	c := k8stest.Client(t, env.Config)
	k8stest.InstallCRDs(t, c)
	if err := k8stest.Apply(t.Context(), c, k8stest.Objects(t, "rbac.yaml"), false); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, env: env, c: c}
}

// controllerConfig impersonates the controller's ServiceAccount.
func (h *harness) controllerConfig() *rest.Config {
	cfg := h.env.ConfigAs(controllerSA, "system:serviceaccounts", "system:serviceaccounts:"+systemNS)
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg
}

type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// running is a started controller.
type running struct {
	cancel context.CancelFunc
	done   chan error
	ctl    *controller.Controller
}

// startController runs a controller as the ServiceAccount, with leader
// election, until stop (or the end of the test).
func (h *harness) startController(o controller.Options) *running {
	t := h.t
	t.Helper()
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	mgr, err := controller.NewManager(h.controllerConfig(), controller.ManagerOptions{
		Logger: log, LeaderElection: true, LeaderElectionNamespace: systemNS,
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	o.Logger = log
	ctl, err := controller.Setup(mgr, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1), ctl: ctl}
	go func() { r.done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		r.stop(t)
		if t.Failed() {
			t.Logf("controller log:\n%s", tail(logs.String(), 60))
		}
	})
	return r
}

func (r *running) stop(t *testing.T) {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("controller manager: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("controller manager did not stop within 30s")
	}
}

func tail(s string, n int) string {
	lines := bytes.Split([]byte(s), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

func (h *harness) create(obj client.Object) {
	h.t.Helper()
	if err := h.c.Create(h.t.Context(), obj); err != nil {
		h.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

func (h *harness) namespace(name string) {
	h.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// node creates a Node (there is no kubelet: it is an API object) with an
// InternalIP.
func (h *harness) node(name, ip string, labels map[string]string) {
	h.t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	h.create(n)
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	if err := h.c.Status().Update(h.t.Context(), n); err != nil {
		h.t.Fatalf("node %s status: %v", name, err)
	}
}

func lbService(ns, name string, ann map[string]string) *corev1.Service {
	f := false
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann},
		Spec: corev1.ServiceSpec{
			Type:                          corev1.ServiceTypeLoadBalancer,
			Ports:                         []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
			Selector:                      map[string]string{"app": name},
			AllocateLoadBalancerNodePorts: &f,
		},
	}
}

func (h *harness) service(ns, name string) *corev1.Service {
	h.t.Helper()
	var s corev1.Service
	if err := h.c.Get(h.t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
		h.t.Fatalf("get Service %s/%s: %v", ns, name, err)
	}
	return &s
}

func ingressIPs(s *corev1.Service) []string {
	var out []string
	for _, i := range s.Status.LoadBalancer.Ingress {
		out = append(out, i.IP)
	}
	return out
}

// waitService polls a Service until ok accepts it.
func (h *harness) waitService(ns, name string, what string, ok func(*corev1.Service) bool) *corev1.Service {
	h.t.Helper()
	var last *corev1.Service
	err := testutil.Poll(30*time.Second, func() error {
		var s corev1.Service
		if err := h.c.Get(h.t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
			return err
		}
		last = &s
		if !ok(&s) {
			return fmt.Errorf("Service %s/%s: %s not reached; ingress %v, conditions %+v", ns, name, what, ingressIPs(&s), s.Status.Conditions)
		}
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return last
}

// waitIngress waits until the Service shows exactly want.
func (h *harness) waitIngress(ns, name string, want ...string) *corev1.Service {
	h.t.Helper()
	return h.waitService(ns, name, fmt.Sprintf("ingress %v", want), func(s *corev1.Service) bool {
		got := ingressIPs(s)
		return slices.Equal(got, want) || (len(want) == 0 && len(got) == 0)
	})
}

// waitCondition waits for a condition with the given status and reason.
func (h *harness) waitCondition(ns, name, typ string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	h.t.Helper()
	s := h.waitService(ns, name, fmt.Sprintf("condition %s=%s (%s)", typ, status, reason), func(s *corev1.Service) bool {
		c := meta.FindStatusCondition(s.Status.Conditions, typ)
		return c != nil && c.Status == status && c.Reason == reason
	})
	return meta.FindStatusCondition(s.Status.Conditions, typ)
}

// waitEvent waits for an Event about the object with the given type and
// reason, and returns its note.
func (h *harness) waitEvent(ns, kind, name, typ, reason string) string {
	h.t.Helper()
	var note string
	testutil.Eventually(h.t, 30*time.Second, func() error {
		var list eventsv1.EventList
		if err := h.c.List(h.t.Context(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Kind == kind && e.Regarding.Name == name {
				if e.Type == typ && e.Reason == reason {
					note = e.Note
					return nil
				}
				seen = append(seen, e.Type+"/"+e.Reason)
			}
		}
		return fmt.Errorf("no %s %s Event for %s %s/%s (seen %v)", typ, reason, kind, ns, name, seen)
	})
	return note
}
