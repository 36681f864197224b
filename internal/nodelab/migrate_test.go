//go:build linux

package nodelab_test

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/nodelab"
	"github.com/vipstack/vipstack/internal/testnet"
)

// Where the other projects' CRDs and samples are: the keepalived-operator's
// and OpenShift's in the repository (compat's testdata), MetalLB's in the
// shared third-party directory beside it.
const (
	compatTestdata = "../k8s/compat/testdata/"
	thirdParty     = "../../../shared/thirdparty/"
)

// leftService is a Service as the keepalived-operator (with OpenShift's
// externalIP auto-assignment) or MetalLB left it: its status shows addr,
// and the address must answer on port.
type leftService struct {
	name string
	ann  map[string]string
	typ  corev1.ServiceType
	ext  []string // spec.externalIPs
	addr string   // the address it has: status (LoadBalancer) or spec.externalIPs
	port int32
}

// kaGroupAnn names the keepalived-operator's sample group, as its users
// annotate Services.
var kaGroupAnn = map[string]string{"keepalived-operator.redhat-cop.io/keepalivedgroup": "keepalived-operator/keepalivedgroup-workers"}

var leftServices = []leftService{
	// OpenShift auto-assigned the address (autoAssignCIDRs), writing it
	// to both status and spec.externalIPs (seed 004); the operator
	// announced it.
	{name: "ka-lb", ann: kaGroupAnn, typ: corev1.ServiceTypeLoadBalancer, ext: []string{"198.18.0.140"}, addr: "198.18.0.140", port: 80},
	// externalIPs set by hand, within allowedCIDRs.
	{name: "ka-ext", ann: kaGroupAnn, typ: corev1.ServiceTypeClusterIP, ext: []string{"198.18.0.70"}, addr: "198.18.0.70", port: 80},
	// MetalLB (L2) gave these from its sample pool.
	{name: "mlb-plain", typ: corev1.ServiceTypeLoadBalancer, addr: "198.18.0.163", port: 80},
	{name: "mlb-ips", ann: map[string]string{"metallb.io/loadBalancerIPs": "198.18.0.165"}, typ: corev1.ServiceTypeLoadBalancer, addr: "198.18.0.165", port: 80},
	{name: "mlb-legacy", ann: map[string]string{"metallb.universe.tf/loadBalancerIPs": "198.18.0.166", "metallb.universe.tf/address-pool": "example"},
		typ: corev1.ServiceTypeLoadBalancer, addr: "198.18.0.166", port: 80},
	{name: "mlb-shared", ann: map[string]string{"metallb.io/allow-shared-ip": "web"}, typ: corev1.ServiceTypeLoadBalancer, addr: "198.18.0.161", port: 80},
	{name: "mlb-shared-2", ann: map[string]string{"metallb.universe.tf/allow-shared-ip": "web"}, typ: corev1.ServiceTypeLoadBalancer, addr: "198.18.0.161", port: 81},
}

// readThirdParty reads a file of other projects' objects, skipping the
// test when it is missing.
func readThirdParty(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("third-party test data missing: %v", err)
	}
	return k8stest.Parse(t, path, b)
}

// TestMigrateOnNodes: a cluster of three real nodes (kubelet, containerd,
// kube-proxy) that ran the keepalived-operator on OpenShift and MetalLB
// (L2) has their CRDs, objects and Services with the status they wrote
// (applied here as a running operator leaves them: neither can run
// here). vipstack is installed from deploy/ with the shipped image, and
// every Service keeps exactly its address, which one node holds and
// which answers from a client namespace through kube-proxy to a backend
// pod. One test: the lab's start-up is the expensive part.
func TestMigrateOnNodes(t *testing.T) {
	testnet.RequireRoot(t)
	nodelab.Require(t)
	crds := slices.Concat(readThirdParty(t, compatTestdata+"keepalived-operator/redhatcop.redhat.io_keepalivedgroups.yaml"),
		readThirdParty(t, compatTestdata+"openshift-api/0000_10_config-operator_01_networks-Default.crd.yaml"),
		readThirdParty(t, thirdParty+"metallb/metallb.io_ipaddresspools.yaml"),
		readThirdParty(t, thirdParty+"metallb/metallb.io_l2advertisements.yaml"))
	kaSample := readThirdParty(t, compatTestdata+"keepalived-operator/redhatcop_v1alpha1_keepalivedgroup.yaml")
	mlbSample := readThirdParty(t, thirdParty+"metallb/simple_pool_adv_l2.yaml")

	dir := t.TempDir()
	vipstack, ref, err := nodelab.BuildVipstackImage(dir, "lab")
	if err != nil {
		t.Fatal(err)
	}
	echo, err := nodelab.BuildEchoImage(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The label the keepalived-operator's sample selects (seed 004).
	lbRole := map[string]string{"node-role.kubernetes.io/loadbalancer": ""}
	lab := nodelab.Start(t, nodelab.Options{
		Nodes:        []nodelab.NodeSpec{{Name: "worker-0", Labels: lbRole}, {Name: "worker-1", Labels: lbRole}, {Name: "worker-2", Labels: lbRole}},
		Client:       true,
		ControlPlane: true,
		KubeProxy:    true,
		Images:       []string{vipstack, echo},
		Prefix:       "vk8n",
	})
	removeLedgers(t, lab)
	ctx := t.Context()
	c := k8stest.Client(t, lab.Kube.Config)

	// What the operators left.
	k8stest.ApplyCRDs(t, c, crds)
	network := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "config.openshift.io/v1", "kind": "Network",
		"metadata": map[string]any{"name": "cluster"},
		"spec": map[string]any{"externalIP": map[string]any{
			"autoAssignCIDRs": []any{"198.18.0.128/27"},
			"policy":          map[string]any{"allowedCIDRs": []any{"198.18.0.64/26"}},
		}},
	}}
	objs := []*unstructured.Unstructured{network}
	for _, o := range kaSample {
		o.SetNamespace("keepalived-operator")
		if err := unstructured.SetNestedField(o.Object, "eth0", "spec", "interface"); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	for _, o := range mlbSample {
		if o.GetKind() == "IPAddressPool" {
			// The sample's addresses, moved into the lab's subnet.
			if err := unstructured.SetNestedStringSlice(o.Object, []string{"198.18.0.160/28"}, "spec", "addresses"); err != nil {
				t.Fatal(err)
			}
		}
		objs = append(objs, o)
	}
	for _, ns := range []string{"keepalived-operator", "metallb-system"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := poll(ctx, 30*time.Second, func() (bool, string) {
		if err := k8stest.Apply(ctx, c, objs, false); err != nil {
			return false, err.Error()
		}
		return true, ""
	}); err != nil {
		t.Fatalf("apply the operators' objects: %v", err)
	}
	labels := map[string]string{"app": "echo"}
	backends := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{
						Name: "echo", Image: nodelab.EchoRef, ImagePullPolicy: corev1.PullNever,
						Env: []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
						Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
					}},
				},
			},
		},
	}
	if err := c.Create(ctx, backends); err != nil {
		t.Fatal(err)
	}
	for _, m := range leftServices {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: m.name, Annotations: m.ann},
			Spec: corev1.ServiceSpec{Type: m.typ, Selector: labels, ExternalIPs: m.ext,
				Ports: []corev1.ServicePort{{Name: "http", Port: m.port, TargetPort: intstr.FromInt32(8080)}}}}
		if m.typ == corev1.ServiceTypeLoadBalancer {
			s.Spec.AllocateLoadBalancerNodePorts = ptr.To(false)
		}
		if err := c.Create(ctx, s); err != nil {
			t.Fatalf("create Service %s: %v", m.name, err)
		}
		if m.typ == corev1.ServiceTypeLoadBalancer {
			// What the other controller wrote: the address, no condition of ours.
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: m.addr}}
			if err := c.Status().Update(ctx, s); err != nil {
				t.Fatalf("write status of Service %s: %v", m.name, err)
			}
		}
	}

	// vipstack, as a user installs it.
	began := time.Now()
	applyDeploy(t, lab, c, ref)

	for _, m := range leftServices {
		t.Run(m.name, func(t *testing.T) {
			ap := netip.AddrPortFrom(netip.MustParseAddr(m.addr), uint16(m.port))
			holder := waitAnswersOn(t, lab, ap, nil)
			t.Logf("%s answers from the client, held by %s, %v after vipstack was applied", ap, holder.Name, time.Since(began).Round(time.Second))
			checkKept(t, c, m)
		})
	}
	// Once all answer, no Service's address changed meanwhile.
	for _, m := range leftServices {
		checkKept(t, c, m)
	}
}

// checkKept checks that the Service still has exactly the address the
// other load balancer gave, and that vipstack serves it: its allocation
// condition (load balancers) or its externalIPs condition is True.
func checkKept(t *testing.T, c client.Client, m leftService) {
	t.Helper()
	err := poll(t.Context(), 60*time.Second, func() (bool, string) {
		var s corev1.Service
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: m.name}, &s); err != nil {
			return false, err.Error()
		}
		var ingress []string
		for _, i := range s.Status.LoadBalancer.Ingress {
			ingress = append(ingress, i.IP)
		}
		typ := v1alpha1.ServiceConditionExternalIPs
		if m.typ == corev1.ServiceTypeLoadBalancer {
			if !slices.Equal(ingress, []string{m.addr}) {
				t.Fatalf("Service %s: status shows %v, want exactly %s (the address the other load balancer gave)", m.name, ingress, m.addr)
			}
			typ = v1alpha1.ServiceConditionAllocated
		}
		if !slices.Equal(s.Spec.ExternalIPs, m.ext) {
			t.Fatalf("Service %s: spec.externalIPs %v, want %v unchanged", m.name, s.Spec.ExternalIPs, m.ext)
		}
		if cond := meta.FindStatusCondition(s.Status.Conditions, typ); cond == nil || cond.Status != metav1.ConditionTrue {
			return false, fmt.Sprintf("Service %s: condition %s %+v, want True", m.name, typ, cond)
		}
		return true, ""
	})
	if err != nil {
		t.Fatal(err)
	}
}
