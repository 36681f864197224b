package compat_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/compat"
	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/k8slab"
	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
	"github.com/vipstack/vipstack/internal/vrrp"
)

// The keepalived-operator's group of seed 004, and the nodes it selects.
const (
	kaNamespace = "keepalived-operator"
	kaName      = "keepalivedgroup-workers"
	kaLabel     = "node-role.kubernetes.io/loadbalancer"
)

// kaBlacklist are the sample's blacklistRouterIDs (1, 2) and the next
// VRIDs the controller would otherwise give (the lab's own group takes
// the first three), so that honouring the list shows.
var kaBlacklist = []int64{1, 2, 4, 5, 6}

// kaPassword is the VRRP password in the Secret of passwordAuth.
const kaPassword = "s3cret-vrrp"

func testdataObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile("testdata/" + path)
	if err != nil {
		t.Fatal(err)
	}
	return k8stest.Parse(t, path, b)
}

// leaveKeepalived applies what a keepalived-operator cluster on OpenShift
// 4 has (seed 004): the operator's CRD and OpenShift's Network CRD (their
// own files), the Network "cluster" with autoAssignCIDRs and
// allowedCIDRs written as the seed writes them (host bits set), the
// operator's sample KeepalivedGroup (its interface and blacklist changed
// for the lab, a verbatimConfig key vipstack lacks), nodes labelled as
// the seed labels them, and the Services as OpenShift and the operator
// left them.
func leaveKeepalived(t *testing.T) func(ctx context.Context, admin client.Client) error {
	crds := append(testdataObjects(t, "keepalived-operator/redhatcop.redhat.io_keepalivedgroups.yaml"),
		testdataObjects(t, "openshift-api/0000_10_config-operator_01_networks-Default.crd.yaml")...)
	sample := testdataObjects(t, "keepalived-operator/redhatcop_v1alpha1_keepalivedgroup.yaml")
	return func(ctx context.Context, admin client.Client) error {
		k8stest.ApplyCRDs(t, admin, crds)
		for _, n := range []string{"n1", "n2"} {
			var nd corev1.Node
			if err := admin.Get(ctx, client.ObjectKey{Name: n}, &nd); err != nil {
				return err
			}
			nd.Labels[kaLabel] = ""
			if err := admin.Update(ctx, &nd); err != nil {
				return err
			}
		}
		network := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "config.openshift.io/v1", "kind": "Network",
			"metadata": map[string]any{"name": "cluster"},
			"spec": map[string]any{"externalIP": map[string]any{
				"autoAssignCIDRs": []any{"198.18.0.129/27"},
				"policy":          map[string]any{"allowedCIDRs": []any{"198.18.0.65/26"}},
			}},
		}}
		if err := admin.Create(ctx, network); err != nil {
			return fmt.Errorf("create Network: %w", err)
		}
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kaNamespace}}); err != nil {
			return err
		}
		if err := admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: kaNamespace, Name: "vrrp-auth"},
			Data: map[string][]byte{"password": []byte(kaPassword)}}); err != nil {
			return err
		}
		for _, o := range sample {
			o.SetNamespace(kaNamespace)
			if err := unstructured.SetNestedField(o.Object, "eth0", "spec", "interface"); err != nil {
				return err
			}
			if err := unstructured.SetNestedSlice(o.Object, toAny(kaBlacklist), "spec", "blacklistRouterIDs"); err != nil {
				return err
			}
			if err := unstructured.SetNestedStringMap(o.Object, map[string]string{"vrrp_garp_master_delay": "10"}, "spec", "verbatimConfig"); err != nil {
				return err
			}
			// The operator's default secretKey, "password".
			if err := unstructured.SetNestedField(o.Object, "vrrp-auth", "spec", "passwordAuth", "secretRef", "name"); err != nil {
				return err
			}
		}
		if err := k8stest.Apply(ctx, admin, sample, false); err != nil {
			return err
		}
		f := false
		ann := map[string]string{"keepalived-operator.redhat-cop.io/keepalivedgroup": kaNamespace + "/" + kaName}
		mk := func(name string, typ corev1.ServiceType, ext []string, ingress string) error {
			s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: k8slab.ServiceNamespace, Name: name, Annotations: ann},
				Spec: corev1.ServiceSpec{Type: typ, Ports: []corev1.ServicePort{{Port: 8080}}, ExternalIPs: ext}}
			if typ == corev1.ServiceTypeLoadBalancer {
				s.Spec.AllocateLoadBalancerNodePorts = &f
			}
			if err := admin.Create(ctx, s); err != nil {
				return fmt.Errorf("create Service %s: %w", name, err)
			}
			if ingress != "" {
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ingress}}
				if err := admin.Status().Update(ctx, s); err != nil {
					return fmt.Errorf("write status of Service %s: %w", name, err)
				}
			}
			return nil
		}
		// The seed's Service, as OpenShift left it: the address it
		// auto-assigned written to both status and spec.externalIPs.
		if err := mk("demo", corev1.ServiceTypeLoadBalancer, []string{"198.18.0.140"}, "198.18.0.140"); err != nil {
			return err
		}
		// A Service of no group that OpenShift gave an address of
		// autoAssignCIDRs: not vipstack's, and its address is given to
		// no other Service.
		own := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: k8slab.ServiceNamespace, Name: "openshift-own"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: &f,
				Ports: []corev1.ServicePort{{Port: 8080}}, ExternalIPs: []string{"198.18.0.130"}}}
		if err := admin.Create(ctx, own); err != nil {
			return err
		}
		own.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.18.0.130"}}
		if err := admin.Status().Update(ctx, own); err != nil {
			return err
		}
		// externalIPs set by hand (within allowedCIDRs): the operator
		// announces them too.
		return mk("ext", corev1.ServiceTypeClusterIP, []string{"198.18.0.70"}, "")
	}
}

func toAny(xs []int64) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// TestMigrateFromKeepalivedOperator: a cluster that ran the
// keepalived-operator on OpenShift (seed 004) installs vipstack, with no
// object rewritten. The KeepalivedGroup gets a VIPGroup of its name on
// the nodes its nodeSelector picks, avoiding its blacklisted VRIDs, with
// what vipstack does not implement said on it; the Services keep their
// addresses, a new LoadBalancer Service gets one from OpenShift's
// autoAssignCIDRs, and each address is held by exactly one selected node
// and answers.
func TestMigrateFromKeepalivedOperator(t *testing.T) {
	testnet.RequireRoot(t)
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	l := k8slab.Start(ctx, t, k8slab.Options{Nodes: 3, Prefix: "vko", Bin: bin, Advert: 200 * time.Millisecond,
		Client: true, Before: leaveKeepalived(t)})
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range l.Nodes {
				t.Logf("---- agent %s log (tail):\n%s", n.Name, testutil.Tail(n.Log(), 20))
			}
			t.Logf("---- controller log (tail):\n%s", testutil.Tail(l.ControllerLog(), 40))
		}
	})
	admin := l.Admin
	for _, n := range l.Nodes {
		n.Host.Greet(t, ":8080", []byte(n.Name))
	}
	selected := map[string]bool{"n1": true, "n2": true}

	// The VIPGroup made for the KeepalivedGroup: its name, its nodes,
	// none of its blacklisted VRIDs.
	var group v1alpha1.VIPGroup
	testutil.Eventually(t, 30*time.Second, func() error {
		if err := admin.Get(ctx, client.ObjectKey{Namespace: kaNamespace, Name: kaName}, &group); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(group.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || group.Status.Nodes != 2 {
			return fmt.Errorf("group: %d nodes, Ready %+v; want 2 nodes and Ready", group.Status.Nodes, c)
		}
		return nil
	})
	if got := group.Labels[controller.MadeByLabel]; got != compat.MadeForKeepalived {
		t.Errorf("label %s = %q, want %q", controller.MadeByLabel, got, compat.MadeForKeepalived)
	}
	if group.Spec.Interface != "eth0" || group.Spec.NodeSelector[kaLabel] != "" || len(group.Spec.NodeSelector) != 1 ||
		group.Spec.VRRPVersion != 2 || group.Spec.AuthPassSecretRef == nil || *group.Spec.AuthPassSecretRef != (v1alpha1.SecretKeyRef{Name: "vrrp-auth", Key: "password"}) {
		t.Errorf("group spec %+v: want interface eth0, the nodeSelector %s, VRRPv2 and the password of Secret vrrp-auth, key password", group.Spec, kaLabel)
	}
	for _, in := range group.Status.Instances {
		if slices.Contains(kaBlacklist, int64(in.VRID)) {
			t.Errorf("instance %s has VRID %d, which the KeepalivedGroup blacklists (%v)", in.Name, in.VRID, kaBlacklist)
		}
		if in.Node != "" && !selected[in.Node] {
			t.Errorf("instance %s is on node %s, which the nodeSelector does not pick", in.Name, in.Node)
		}
	}
	t.Logf("group instances: %+v", group.Status.Instances)

	// The agents run the group with the controller's copy of the password,
	// in the release namespace; the operator's Secret is not theirs to read.
	var cp corev1.Secret
	cpKey := client.ObjectKey{Namespace: "vipstack-system", Name: k8s.PasswordSecretName(k8s.GroupRef{Namespace: kaNamespace, Name: kaName})}
	if err := admin.Get(ctx, cpKey, &cp); err != nil || string(cp.Data[k8s.PasswordKey]) != kaPassword {
		t.Errorf("copy %s of the password: %v, holds %q; want %q", cpKey, err, cp.Data[k8s.PasswordKey], kaPassword)
	}
	agentSA := k8stest.Client(t, l.Env.ConfigAs("system:serviceaccount:vipstack-system:vipstack-agent", "system:serviceaccounts", "system:serviceaccounts:vipstack-system"))
	if err := agentSA.Get(ctx, client.ObjectKey{Namespace: kaNamespace, Name: "vrrp-auth"}, &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Errorf("the agent's ServiceAccount reads Secret %s/vrrp-auth: %v; want 403 Forbidden", kaNamespace, err)
	}

	// What has no effect is said on the KeepalivedGroup: a condition and
	// Warning Events naming the field.
	testutil.Eventually(t, 30*time.Second, func() error {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("redhatcop.redhat.io/v1alpha1")
		u.SetKind("KeepalivedGroup")
		if err := admin.Get(ctx, client.ObjectKey{Namespace: kaNamespace, Name: kaName}, u); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == controller.KeepalivedConditionType {
				msg, _ := m["message"].(string)
				if m["status"] != "True" || m["reason"] != controller.ReasonKeepalivedNotes ||
					!strings.Contains(msg, "served by VIPGroup "+kaNamespace+"/"+kaName) ||
					!strings.Contains(msg, "spec.verbatimConfig.vrrp_garp_master_delay") || !strings.Contains(msg, "spec.image") {
					return fmt.Errorf("condition %v", m)
				}
				return nil
			}
		}
		return fmt.Errorf("no %s condition among %v", controller.KeepalivedConditionType, conds)
	})
	testutil.Eventually(t, 30*time.Second, func() error {
		var evs eventsv1.EventList
		if err := admin.List(ctx, &evs, client.InNamespace(kaNamespace)); err != nil {
			return err
		}
		var image, verbatim bool
		for _, e := range evs.Items {
			if e.Regarding.Kind != "KeepalivedGroup" || e.Regarding.Name != kaName || e.Type != corev1.EventTypeWarning {
				continue
			}
			image = image || strings.Contains(e.Note, "spec.image") && strings.Contains(e.Note, "not applicable")
			verbatim = verbatim || strings.Contains(e.Note, "spec.verbatimConfig.vrrp_garp_master_delay") && strings.Contains(e.Note, "not implemented")
		}
		if !image || !verbatim {
			return fmt.Errorf("Warning Events on KeepalivedGroup %s: image %v, verbatimConfig %v, among %d events", kaName, image, verbatim, len(evs.Items))
		}
		return nil
	})

	// The Services: the seed's keeps the address OpenShift gave it,
	// without a warning; the externalIPs are held; a new LoadBalancer
	// Service gets the first address of autoAssignCIDRs (the block's
	// network address left out, as OpenShift does).
	f := false
	fresh := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: k8slab.ServiceNamespace, Name: "fresh",
		Annotations: map[string]string{"keepalived-operator.redhat-cop.io/keepalivedgroup": kaNamespace + "/" + kaName,
			compat.SpreadVIPsAnnotation: "true"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: &f, Ports: []corev1.ServicePort{{Port: 8080}}}}
	if err := admin.Create(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, ingress, ext string
	}{
		{name: "demo", ingress: "198.18.0.140", ext: "198.18.0.140"},
		{name: "ext", ext: "198.18.0.70"},
		{name: "fresh", ingress: "198.18.0.129"},
	} {
		testutil.Eventually(t, 30*time.Second, func() error {
			var s corev1.Service
			if err := admin.Get(ctx, client.ObjectKey{Namespace: k8slab.ServiceNamespace, Name: tc.name}, &s); err != nil {
				return err
			}
			got := ingressIPs(&s)
			if tc.ingress != "" {
				a := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ServiceConditionAllocated)
				if a == nil || a.Status != metav1.ConditionTrue {
					return fmt.Errorf("Service %s: allocated %+v", tc.name, a)
				}
				if !slices.Equal(got, []string{tc.ingress}) {
					t.Fatalf("Service %s: status shows %v, want exactly %s", tc.name, got, tc.ingress)
				}
			}
			if tc.ext != "" {
				e := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ServiceConditionExternalIPs)
				if e == nil || e.Status != metav1.ConditionTrue {
					return fmt.Errorf("Service %s: externalIPs condition %+v, want True", tc.name, e)
				}
			}
			return nil
		})
	}
	// spreadvips is not implemented: said on the Service, which is
	// served all the same.
	testutil.Eventually(t, 30*time.Second, func() error {
		var s corev1.Service
		if err := admin.Get(ctx, client.ObjectKeyFromObject(fresh), &s); err != nil {
			return err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ServiceConditionKeepalivedAnnotations)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != controller.ReasonNotImplemented || !strings.Contains(c.Message, compat.SpreadVIPsAnnotation) {
			return fmt.Errorf("Service fresh: condition %s %+v", v1alpha1.ServiceConditionKeepalivedAnnotations, c)
		}
		return nil
	})
	// No Warning from vipstack on the seed's Service. Others' are logged
	// only: the API server's ClusterIP repair loop may warn of an address
	// it has not seen allocated yet (seen in a full run), which is no
	// concern of the migration.
	var evs eventsv1.EventList
	if err := admin.List(ctx, &evs, client.InNamespace(k8slab.ServiceNamespace)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Regarding.Name != "demo" || e.Type != corev1.EventTypeWarning {
			continue
		}
		if e.ReportingController != k8s.FieldManager {
			t.Logf("Warning on Service demo from %q (not vipstack): %s: %s", e.ReportingController, e.Reason, e.Note)
			continue
		}
		t.Errorf("Warning on Service demo: %s: %s", e.Reason, e.Note)
	}

	// Each address is held by exactly one selected node, steadily, and
	// answers from the client.
	addrs := []netip.Addr{netip.MustParseAddr("198.18.0.140"), netip.MustParseAddr("198.18.0.70"), netip.MustParseAddr("198.18.0.129")}
	s, err := l.NewSampler()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stableSince := time.Time{}
	testutil.Eventually(t, 60*time.Second, func() error {
		snaps, err := s.Sample()
		if err != nil {
			return err
		}
		for _, v := range addrs {
			var hs []string
			for i, sn := range snaps {
				if slices.Contains(sn.Addrs, v) {
					hs = append(hs, l.Nodes[i].Name)
				}
			}
			if len(hs) != 1 || !selected[hs[0]] {
				stableSince = time.Time{}
				return fmt.Errorf("%s is held by %v, want one of n1, n2", v, hs)
			}
		}
		if stableSince.IsZero() {
			stableSince = time.Now()
		}
		if time.Since(stableSince) < 2*time.Second {
			return fmt.Errorf("settled for %v only", time.Since(stableSince))
		}
		return nil
	})
	// A restart of the controller moves nothing; the next Service gets
	// the next free address of autoAssignCIDRs (.130 is openshift-own's).
	if err := l.KillController(); err != nil {
		t.Fatal(err)
	}
	if err := l.StartController(); err != nil {
		t.Fatal(err)
	}
	next := fresh.DeepCopy()
	next.ObjectMeta = metav1.ObjectMeta{Namespace: k8slab.ServiceNamespace, Name: "after-restart", Annotations: map[string]string{
		"keepalived-operator.redhat-cop.io/keepalivedgroup": kaNamespace + "/" + kaName}}
	next.Spec.ClusterIP, next.Spec.ClusterIPs = "", nil
	if err := admin.Create(ctx, next); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(next), next); err != nil {
			return err
		}
		if got := ingressIPs(next); !slices.Equal(got, []string{"198.18.0.131"}) {
			return fmt.Errorf("after-restart: status %v, want [198.18.0.131]", got)
		}
		return nil
	})
	for name, want := range map[string]string{"demo": "198.18.0.140", "fresh": "198.18.0.129", "openshift-own": "198.18.0.130"} {
		var s corev1.Service
		if err := admin.Get(ctx, client.ObjectKey{Namespace: k8slab.ServiceNamespace, Name: name}, &s); err != nil {
			t.Fatal(err)
		}
		if got := ingressIPs(&s); !slices.Equal(got, []string{want}) {
			t.Errorf("Service %s after the controller's restart: %v, want [%s]", name, got, want)
		}
	}
	var ownSvc corev1.Service
	if err := admin.Get(ctx, client.ObjectKey{Namespace: k8slab.ServiceNamespace, Name: "openshift-own"}, &ownSvc); err != nil {
		t.Fatal(err)
	}
	for _, c := range ownSvc.Status.Conditions {
		if strings.HasPrefix(c.Type, "vipstack.io/") {
			t.Errorf("Service openshift-own, of no group, has the condition %+v", c)
		}
	}
	addrs = append(addrs, netip.MustParseAddr("198.18.0.131"))

	vrids := map[uint8]bool{}
	for _, in := range group.Status.Instances {
		vrids[uint8(in.VRID)] = true
	}
	checkWire(t, l.Topo.Client, vrids)
	for _, v := range addrs {
		testutil.Eventually(t, 30*time.Second, func() error {
			got, err := k8slab.Fetch(l.Topo.Client, v, 8080)
			if err != nil {
				return fmt.Errorf("%s from the client: %v", v, err)
			}
			if !selected[got] {
				return fmt.Errorf("%s answered %q, want n1 or n2", v, got)
			}
			return nil
		})
	}
}

// checkWire listens for VRRP adverts on the client's link and checks
// that the group's (by VRID) carry the Secret's password, as the
// operator's keepalived sent them: VRRPv2, simple password.
func checkWire(t *testing.T, client *testnet.Host, vrids map[uint8]bool) {
	t.Helper()
	var conn net.PacketConn
	if err := client.Do(func() error {
		c, err := net.ListenPacket("ip4:112", "0.0.0.0")
		if err != nil {
			return err
		}
		ifi, err := net.InterfaceByName(client.Link)
		if err != nil {
			c.Close()
			return err
		}
		if err := ipv4.NewPacketConn(c).JoinGroup(ifi, &net.IPAddr{IP: net.IPv4(224, 0, 0, 18)}); err != nil {
			c.Close()
			return err
		}
		conn = c
		return nil
	}); err != nil {
		t.Fatalf("listen for VRRP on the client: %v", err)
	}
	defer conn.Close()
	if err := conn.SetReadDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1500)
	seen := 0
	for seen < 3 {
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			t.Fatalf("after %d adverts of the group: %v", seen, err)
		}
		src, _ := netip.AddrFromSlice(from.(*net.IPAddr).IP)
		a, err := vrrp.Unmarshal(buf[:n], src.Unmap(), netip.MustParseAddr("224.0.0.18"))
		if err != nil || !vrids[a.VRID] {
			continue // another group's (VRRPv3, no password)
		}
		if a.Version != 2 || a.AuthType != vrrp.AuthSimple || a.AuthData != vrrp.Password(kaPassword) {
			t.Fatalf("advert of the group from %s: %v, auth data %q; want VRRPv2 with the simple password %q", src, a, a.AuthData, kaPassword)
		}
		seen++
	}
	t.Logf("%d adverts of the group on the wire carry its password", seen)
}
