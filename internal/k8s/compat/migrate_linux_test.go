package compat_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/k8slab"
	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// thirdParty is where the other projects' CRDs and samples are kept.
const thirdParty = "../../../../shared/thirdparty/"

func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(thirdParty + path)
	if err != nil {
		t.Skipf("third-party test data missing: %v", err)
	}
	return k8stest.Parse(t, path, b)
}

// migrated is a Service as MetalLB or kube-vip left it.
type migrated struct {
	name  string
	ann   map[string]string
	lbIP  string // spec.loadBalancerIP (older kube-vip-cloud-provider)
	addr  string // what status.loadBalancer.ingress shows
	group string // the VIPGroup that must serve it
	port  int32  // default 8080
}

const (
	metallbGroup = "metallb-system/metallb-empty" // made for MetalLB's sample L2Advertisement "empty"
	kubevipGroup = "kube-system/kube-vip"         // compat.KubeVIPGroup()
)

var services = []migrated{
	{name: "mlb-plain", addr: "198.18.0.163", group: metallbGroup},
	{name: "mlb-ips", ann: map[string]string{"metallb.io/loadBalancerIPs": "198.18.0.165"}, addr: "198.18.0.165", group: metallbGroup},
	{name: "mlb-legacy", ann: map[string]string{"metallb.universe.tf/loadBalancerIPs": "198.18.0.166", "metallb.universe.tf/address-pool": "example"},
		addr: "198.18.0.166", group: metallbGroup},
	{name: "mlb-pool", ann: map[string]string{"metallb.io/address-pool": "example"}, addr: "198.18.0.170", group: metallbGroup},
	{name: "mlb-shared", ann: map[string]string{"metallb.io/allow-shared-ip": "web"}, addr: "198.18.0.161", group: metallbGroup},
	// MetalLB let it share mlb-shared's address: same key, another port.
	{name: "mlb-shared-2", ann: map[string]string{"metallb.universe.tf/allow-shared-ip": "web"}, addr: "198.18.0.161", group: metallbGroup, port: 8081},
	{name: "kv-ips", ann: map[string]string{"kube-vip.io/loadbalancerIPs": "198.18.0.181"}, addr: "198.18.0.181", group: kubevipGroup},
	{name: "kv-spec", lbIP: "198.18.0.183", addr: "198.18.0.183", group: kubevipGroup},
	{name: "kv-plain", addr: "198.18.0.180", group: kubevipGroup},
}

// leaveBehind applies MetalLB's CRDs and sample pool and advertisement,
// kube-vip's ConfigMap (their own files, with the lab's addresses), and
// Services with the status those load balancers wrote.
func leaveBehind(t *testing.T) func(ctx context.Context, admin client.Client) error {
	crds := append(readObjects(t, "metallb/metallb.io_ipaddresspools.yaml"), readObjects(t, "metallb/metallb.io_l2advertisements.yaml")...)
	sample := readObjects(t, "metallb/simple_pool_adv_l2.yaml")
	kubevip := readObjects(t, "kube-vip/kubevip-range-global.yaml")
	return func(ctx context.Context, admin client.Client) error {
		k8stest.ApplyCRDs(t, admin, crds)
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "metallb-system"}}); err != nil {
			return err
		}
		for _, o := range sample {
			if o.GetKind() == "IPAddressPool" {
				// The sample's addresses, moved into the lab's subnet.
				if err := unstructured.SetNestedStringSlice(o.Object, []string{"198.18.0.160/28", "fd00:bb::160/124"}, "spec", "addresses"); err != nil {
					return err
				}
			}
		}
		testutil.Eventually(t, 30*time.Second, func() error { return k8stest.Apply(ctx, admin, sample, false) })
		for _, o := range kubevip {
			if err := unstructured.SetNestedField(o.Object, "198.18.0.180-198.18.0.185", "data", "range-global"); err != nil {
				return err
			}
		}
		if err := k8stest.Apply(ctx, admin, kubevip, false); err != nil {
			return err
		}
		f := false
		// A Service made while no load balancer ran: it must get a free
		// address, never one the status of another shows (its name sorts
		// first, so it is likely looked at first).
		pending := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: k8slab.ServiceNamespace, Name: "a-pending"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: &f, Ports: []corev1.ServicePort{{Port: 8080}}}}
		if err := admin.Create(ctx, pending); err != nil {
			return err
		}
		for _, m := range services {
			s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: k8slab.ServiceNamespace, Name: m.name, Annotations: m.ann},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: &f,
					Ports: []corev1.ServicePort{{Port: m.portOr()}}, LoadBalancerIP: m.lbIP}}
			if err := admin.Create(ctx, s); err != nil {
				return fmt.Errorf("create Service %s: %w", m.name, err)
			}
			// What the other controller wrote: the address, no condition of ours.
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: m.addr}}
			if err := admin.Status().Update(ctx, s); err != nil {
				return fmt.Errorf("write status of Service %s: %w", m.name, err)
			}
		}
		return nil
	}
}

func (m migrated) portOr() int32 {
	if m.port == 0 {
		return 8080
	}
	return m.port
}

func fetch(h *testnet.Host, vip netip.Addr) (string, error) { return k8slab.Fetch(h, vip, 8080) }

func ingressIPs(s *corev1.Service) []string {
	var out []string
	for _, i := range s.Status.LoadBalancer.Ingress {
		out = append(out, i.IP)
	}
	return out
}

// TestMigrateFromMetalLBAndKubeVIP: a cluster that ran MetalLB (L2) and
// kube-vip has their CRDs, objects and Services with the addresses they
// gave; vipstack is installed (controller and three agents): every
// Service keeps exactly its address, the address answers from a client
// namespace, a new Service gets a free address, and MetalLB's
// allow-shared-ip is refused with a condition.
func TestMigrateFromMetalLBAndKubeVIP(t *testing.T) {
	testnet.RequireRoot(t)
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	l := k8slab.Start(ctx, t, k8slab.Options{Nodes: 3, Prefix: "vsmb", Bin: bin, Advert: 200 * time.Millisecond,
		Client: true, Before: leaveBehind(t)})
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range l.Nodes {
				t.Logf("---- agent %s log (tail):\n%s", n.Name, testutil.Tail(n.Log(), 20))
			}
			t.Logf("---- controller log (tail):\n%s", testutil.Tail(l.ControllerLog(), 40))
		}
	})
	admin := l.Admin
	nodes := map[string]bool{}
	for _, n := range l.Nodes {
		n.Host.Greet(t, ":8080", []byte(n.Name))
		n.Host.Greet(t, ":8081", []byte(n.Name))
		nodes[n.Name] = true
	}

	// The VIPGroups made for MetalLB's advertisement and kube-vip.
	for _, ref := range []string{metallbGroup, kubevipGroup} {
		ns, name, _ := strings.Cut(ref, "/")
		testutil.Eventually(t, 30*time.Second, func() error {
			var g v1alpha1.VIPGroup
			if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &g); err != nil {
				return err
			}
			if g.Labels[controller.MadeByLabel] == "" {
				return fmt.Errorf("group %s has no %s label", ref, controller.MadeByLabel)
			}
			if c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || g.Status.Nodes != 3 {
				return fmt.Errorf("group %s: %d nodes, Ready %+v", ref, g.Status.Nodes, c)
			}
			return nil
		})
	}

	// Every Service keeps its address, served by the right group.
	want := slices.Clone(services)
	check := func() {
		t.Helper()
		for _, m := range want {
			testutil.Eventually(t, 30*time.Second, func() error {
				var s corev1.Service
				if err := admin.Get(ctx, client.ObjectKey{Namespace: k8slab.ServiceNamespace, Name: m.name}, &s); err != nil {
					return err
				}
				if got := ingressIPs(&s); !slices.Equal(got, []string{m.addr}) {
					t.Fatalf("Service %s: status shows %v, want exactly %s (the address the other load balancer gave)", m.name, got, m.addr)
				}
				a := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ServiceConditionAllocated)
				g := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ServiceConditionGroup)
				if a == nil || a.Status != metav1.ConditionTrue || g == nil || g.Status != metav1.ConditionTrue || g.Message != m.group {
					return fmt.Errorf("Service %s: allocated %+v, group %+v; want True and group %s", m.name, a, g, m.group)
				}
				return nil
			})
		}
	}
	check()
	for _, m := range services {
		vip := netip.MustParseAddr(m.addr)
		testutil.Eventually(t, 30*time.Second, func() error {
			got, err := k8slab.Fetch(l.Topo.Client, vip, uint16(m.portOr()))
			if err != nil {
				return fmt.Errorf("%s (%s) from the client: %v", m.name, vip, err)
			}
			if !nodes[got] {
				return fmt.Errorf("%s (%s) answered %q, want a node's name", m.name, vip, got)
			}
			return nil
		})
	}

	// allow-shared-ip: mlb-shared-2 shares mlb-shared's address (the
	// older one holds it) and says so.
	sharedCond := func(name string) (*metav1.Condition, *metav1.Condition) {
		t.Helper()
		var s corev1.Service
		if err := admin.Get(ctx, client.ObjectKey{Namespace: k8slab.ServiceNamespace, Name: name}, &s); err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ServiceConditionAllocated),
			meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ServiceConditionSharing)
	}
	if a, sh := sharedCond("mlb-shared-2"); a.Reason != v1alpha1.ServiceReasonShared || sh == nil || sh.Status != metav1.ConditionTrue ||
		!strings.Contains(sh.Message, "shared with lab/mlb-shared") {
		t.Errorf("mlb-shared-2: allocated %+v, sharing %+v; want both Shared with lab/mlb-shared", a, sh)
	}
	if a, sh := sharedCond("mlb-shared"); a.Reason != controller.ReasonAllocated || sh == nil || sh.Status != metav1.ConditionFalse {
		t.Errorf("mlb-shared: allocated %+v, sharing %+v; want Allocated and holding its own", a, sh)
	}
	// The holder goes: the other takes the address over, unchanged, and
	// it still answers on its port.
	if err := admin.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: k8slab.ServiceNamespace, Name: "mlb-shared"}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if a, _ := sharedCond("mlb-shared-2"); a == nil || a.Reason != controller.ReasonAllocated || !strings.Contains(a.Message, "holds 198.18.0.161 ") {
			return fmt.Errorf("mlb-shared-2 after its holder left: %+v", a)
		}
		return nil
	})
	testutil.Eventually(t, 30*time.Second, func() error {
		got, err := k8slab.Fetch(l.Topo.Client, netip.MustParseAddr("198.18.0.161"), 8081)
		if err != nil || !nodes[got] {
			return fmt.Errorf("mlb-shared-2 (198.18.0.161:8081) after its holder left: %q, %v", got, err)
		}
		return nil
	})
	want = slices.DeleteFunc(want, func(m migrated) bool { return m.name == "mlb-shared" })

	// kube-vip's sample sets search-order: desc, which vipstack does not
	// implement: a Warning Event on the ConfigMap says so.
	testutil.Eventually(t, 30*time.Second, func() error {
		var evs eventsv1.EventList
		if err := admin.List(ctx, &evs, client.InNamespace("kube-system")); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Regarding.Kind == "ConfigMap" && e.Regarding.Name == "kubevip" && e.Type == corev1.EventTypeWarning &&
				e.Reason == "NotImplemented" && strings.Contains(e.Note, "search-order") {
				return nil
			}
		}
		return fmt.Errorf("no Warning Event on ConfigMap kube-system/kubevip about search-order among %d events", len(evs.Items))
	})

	// New Services naming nothing get the first free address of
	// kube-vip's range (tried before MetalLB's pools), none of those held:
	// the one made before vipstack ran, and one made now.
	f := false
	waitNew := func(name, want string, create bool) {
		t.Helper()
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: k8slab.ServiceNamespace, Name: name},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: &f, Ports: []corev1.ServicePort{{Port: 8080}}}}
		if create {
			if err := admin.Create(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		testutil.Eventually(t, 30*time.Second, func() error {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
				return err
			}
			if got := ingressIPs(s); !slices.Equal(got, []string{want}) {
				return fmt.Errorf("%s: status %v, want [%s]", name, got, want)
			}
			return nil
		})
		testutil.Eventually(t, 30*time.Second, func() error {
			got, err := fetch(l.Topo.Client, netip.MustParseAddr(want))
			if err != nil || !nodes[got] {
				return fmt.Errorf("%s (%s): %q, %v", name, want, got, err)
			}
			return nil
		})
	}
	waitNew("a-pending", "198.18.0.182", false)
	waitNew("fresh", "198.18.0.184", true)

	// A restart of the controller moves nothing.
	if err := l.KillController(); err != nil {
		t.Fatal(err)
	}
	if err := l.StartController(); err != nil {
		t.Fatal(err)
	}
	waitNew("fresh-after-restart", "198.18.0.185", true)
	check()

	// The L2Advertisement goes: its VIPGroup goes with it, MetalLB's
	// Services keep their addresses but say no group announces them.
	adv := &unstructured.Unstructured{}
	adv.SetAPIVersion("metallb.io/v1beta1")
	adv.SetKind("L2Advertisement")
	adv.SetNamespace("metallb-system")
	adv.SetName("empty")
	if err := admin.Delete(ctx, adv); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		var g v1alpha1.VIPGroup
		err := admin.Get(ctx, client.ObjectKey{Namespace: "metallb-system", Name: "metallb-empty"}, &g)
		if err == nil {
			return fmt.Errorf("VIPGroup metallb-system/metallb-empty still exists")
		}
		return client.IgnoreNotFound(err)
	})
	testutil.Eventually(t, 30*time.Second, func() error {
		var s corev1.Service
		if err := admin.Get(ctx, client.ObjectKey{Namespace: k8slab.ServiceNamespace, Name: "mlb-plain"}, &s); err != nil {
			return err
		}
		if got := ingressIPs(&s); !slices.Equal(got, []string{"198.18.0.163"}) {
			t.Fatalf("mlb-plain lost its address with the advertisement: %v", got)
		}
		g := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ServiceConditionGroup)
		if g == nil || g.Status != metav1.ConditionFalse || g.Reason != controller.ReasonNoAdvertisement {
			return fmt.Errorf("mlb-plain: group condition %+v, want False NoAdvertisement", g)
		}
		return nil
	})
}
