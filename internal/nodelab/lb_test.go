//go:build linux

package nodelab_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// TestLoadBalancerOnNodes installs deploy/ (CRDs, RBAC, the controller
// Deployment, the agent DaemonSet) with the shipped image on three real
// nodes running kube-proxy, and gives a LoadBalancer Service an address
// from an IPPool: the address answers from a client namespace (VIP on a
// node, kube-proxy to a backend pod); the agents' containers run with
// exactly the capabilities the manifest declares; when the holder's
// kubelet, runtime and containers are killed (and its cable pulled), the
// address moves to another node and answers again.
func TestLoadBalancerOnNodes(t *testing.T) {
	lab, c, svc := installLB(t, applyDeploy)
	ctx := t.Context()

	checkAgentCaps(ctx, t, lab)

	addr := waitLBAddress(t, c, svc)
	holder := waitAnswers(t, lab, addr, nil)
	t.Logf("%s answers from the client; held by %s", addr, holder.Name)

	if err := lab.KillNode(holder.Name); err != nil {
		t.Fatal(err)
	}
	if err := holder.Host.Cut(true); err != nil {
		t.Fatal(err)
	}
	next := waitAnswers(t, lab, addr, holder)
	t.Logf("after %s was killed, %s answers again, held by %s", holder.Name, addr, next.Name)
}

// waitLBAddress waits for the Service's LoadBalancer address.
func waitLBAddress(t *testing.T, c client.Client, svc *corev1.Service) netip.Addr {
	t.Helper()
	ctx := t.Context()
	var addr netip.Addr
	err := poll(ctx, 90*time.Second, func() (bool, string) {
		var s corev1.Service
		if err := c.Get(ctx, client.ObjectKeyFromObject(svc), &s); err != nil {
			return false, err.Error()
		}
		if len(s.Status.LoadBalancer.Ingress) == 0 {
			return false, "no address yet"
		}
		a, err := netip.ParseAddr(s.Status.LoadBalancer.Ingress[0].IP)
		addr = a
		return err == nil, fmt.Sprintf("address %q", s.Status.LoadBalancer.Ingress[0].IP)
	})
	if err != nil {
		t.Fatalf("service web: %v", err)
	}
	return addr
}

// installer installs vipstack (CRDs, RBAC, the controller, the agent
// DaemonSet) with the image ref on the lab.
type installer func(t *testing.T, lab *nodelab.Lab, c client.Client, ref string)

// applyDeploy applies deploy/'s plain manifests, as kubectl apply -f would.
func applyDeploy(t *testing.T, lab *nodelab.Lab, c client.Client, ref string) {
	t.Helper()
	k8stest.InstallCRDs(t, c)
	var objs []*unstructured.Unstructured
	for _, f := range []string{"rbac.yaml", "controller.yaml", "agent.yaml"} {
		for _, u := range k8stest.Objects(t, f) {
			setImage(t, u, ref)
			objs = append(objs, u)
		}
	}
	if err := k8stest.Apply(t.Context(), c, objs, false); err != nil {
		t.Fatal(err)
	}
}

// installLB starts three nodes with kube-proxy, installs vipstack with
// install and the shipped image, an IPPool, a VIPGroup of the three nodes
// (VRRPv3, 100 ms adverts), an echo DaemonSet and a LoadBalancer Service
// "web" in front of it.
func installLB(t *testing.T, install installer) (*nodelab.Lab, client.Client, *corev1.Service) {
	testnet.RequireRoot(t)
	nodelab.Require(t)
	dir := t.TempDir()
	vipstack, ref, err := nodelab.BuildVipstackImage(dir, "lab")
	if err != nil {
		t.Fatal(err)
	}
	echo, err := nodelab.BuildEchoImage(dir)
	if err != nil {
		t.Fatal(err)
	}
	lbRole := map[string]string{"node-role.kubernetes.io/loadbalancer": ""}
	lab := nodelab.Start(t, nodelab.Options{
		Nodes:        []nodelab.NodeSpec{{Name: "worker-0", Labels: lbRole}, {Name: "worker-1", Labels: lbRole}, {Name: "worker-2", Labels: lbRole}},
		Client:       true,
		ControlPlane: true,
		KubeProxy:    true,
		Images:       []string{vipstack, echo},
	})
	removeLedgers(t, lab)
	ctx := t.Context()
	c := k8stest.Client(t, lab.Kube.Config)
	install(t, lab, c, ref)

	pool := &v1alpha1.IPPool{ObjectMeta: metav1.ObjectMeta{Name: "lab"},
		Spec: v1alpha1.IPPoolSpec{Addresses: []string{"198.18.0.200-198.18.0.209"}}}
	group := &v1alpha1.VIPGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "lb"},
		Spec: v1alpha1.VIPGroupSpec{NodeSelector: lbRole, VRRPVersion: 3, AdvertIntervalMilliseconds: 100}}
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
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web",
			Annotations: map[string]string{"vipstack.io/group": "default/lb"}},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: labels,
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	for _, o := range []client.Object{pool, group, backends, svc} {
		// Retried: CRDs installed by helm may not be served yet.
		err := poll(ctx, 30*time.Second, func() (bool, string) {
			err := c.Create(ctx, o)
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return false, err.Error()
			}
			return true, ""
		})
		if err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	return lab, c, svc
}

// setImage points a Deployment's or DaemonSet's containers at the lab's
// image (never pulled: there is no registry).
func setImage(t *testing.T, u *unstructured.Unstructured, ref string) {
	t.Helper()
	if k := u.GetKind(); k != "Deployment" && k != "DaemonSet" {
		return
	}
	cs, _, err := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		m := c.(map[string]any)
		m["image"], m["imagePullPolicy"] = ref, "Never"
	}
	if err := unstructured.SetNestedSlice(u.Object, cs, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
}

// waitAnswers waits until exactly one live node other than gone holds addr
// and five connections in a row from the client to addr:80 are answered
// by a backend, and returns the holder.
func waitAnswers(t *testing.T, lab *nodelab.Lab, addr netip.Addr, gone *nodelab.Node) *nodelab.Node {
	t.Helper()
	return waitAnswersOn(t, lab, netip.AddrPortFrom(addr, 80), gone)
}

// waitAnswersOn is waitAnswers on another port.
func waitAnswersOn(t *testing.T, lab *nodelab.Lab, ap netip.AddrPort, gone *nodelab.Node) *nodelab.Node {
	t.Helper()
	addr := ap.Addr()
	var holder *nodelab.Node
	err := poll(t.Context(), 90*time.Second, func() (bool, string) {
		holder = nil
		var holders []string
		for _, n := range lab.Nodes {
			if n == gone {
				continue
			}
			if ok, err := n.Host.HasAddr(addr); err == nil && ok {
				holder = n
				holders = append(holders, n.Name)
			}
		}
		if len(holders) != 1 {
			return false, fmt.Sprintf("held by %v", holders)
		}
		for i := range 5 {
			got, err := fetchFrom(lab.Client, ap)
			if err != nil || !strings.HasPrefix(got, "worker-") {
				return false, fmt.Sprintf("held by %s; connection %d: %q, %v", holder.Name, i+1, got, err)
			}
		}
		return true, ""
	})
	if err != nil {
		t.Fatalf("%s from the client: %v", ap, err)
	}
	return holder
}

// fetchFrom connects from h to addr and returns what the server sends.
func fetchFrom(h *testnet.Host, addr netip.AddrPort) (string, error) {
	var conn net.Conn
	if err := h.Do(func() (err error) {
		conn, err = net.DialTimeout("tcp", addr.String(), time.Second)
		return err
	}); err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	b, err := io.ReadAll(conn)
	return strings.TrimSpace(string(b)), err
}

// checkAgentCaps waits for every node's agent container and checks that
// it runs with exactly NET_ADMIN and NET_RAW (permitted, effective and
// bounding), as the manifests declare, read from /proc.
func checkAgentCaps(ctx context.Context, t *testing.T, lab *nodelab.Lab) {
	t.Helper()
	for _, n := range lab.Nodes {
		ctr, err := n.WaitContainer(ctx, "vipstack-agent", "agent", 90*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, prm, eff, bnd, _, err := testnet.Caps(ctr.PID)
		if err != nil {
			t.Fatal(err)
		}
		if want := testnet.CapMask(testnet.CapNetAdmin, testnet.CapNetRaw); prm != want || eff != want || bnd != want {
			t.Errorf("%s: agent container (pid %d): permitted %s, effective %s, bounding %s; want %s each", n.Name, ctr.PID, prm, eff, bnd, want)
		}
	}
}
