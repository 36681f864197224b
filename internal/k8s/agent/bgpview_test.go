package agent_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/bgp"
	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/agent"
	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/kubetest"
)

// TestBGPView reads a cluster through the agent's ServiceAccount and
// checks each node's BGP plan: the peers that select it (password from
// the release namespace; a second peer for one router, another myASN,
// a missing Secret left out with a warning), the routes of its BGP group
// with their attributes, and the verdicts: Local Services where an
// endpoint is ready, others while the node is Ready.
func TestBGPView(t *testing.T) {
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
	for _, ns := range []string{"infra", "demo", k8s.DefaultNamespace} {
		if ns != k8s.DefaultNamespace {
			mk(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
	}
	for i, n := range []string{"n1", "n2", "n3"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"rack": map[bool]string{true: "a", false: "b"}[i < 2]}}}
		mk(node)
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("198.18.0.%d", 11+i)}}
		if n == "n2" {
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "PLEG is not healthy"}}
		}
		status(node)
	}
	lp := uint32(200)
	g := &v1alpha1.VIPGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "edge"},
		Spec: v1alpha1.VIPGroupSpec{BGP: &v1alpha1.GroupBGP{Communities: []string{"64513:7"}, LocalPref: &lp}}}
	mk(g)
	g.Status.Instances = []v1alpha1.GroupInstance{{Name: "node/n1", VRID: 1, Node: "n1"}, {Name: "node/n2", VRID: 2, Node: "n2"}, {Name: "node/n3", VRID: 3, Node: "n3"}}
	status(g)
	peer := func(name string, f func(*v1alpha1.BGPPeerSpec)) {
		p := &v1alpha1.BGPPeer{ObjectMeta: metav1.ObjectMeta{Namespace: k8s.DefaultNamespace, Name: name},
			Spec: v1alpha1.BGPPeerSpec{PeerAddress: "198.18.0.1", PeerASN: 64512, MyASN: 64513}}
		f(&p.Spec)
		mk(p)
	}
	mk(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: k8s.DefaultNamespace, Name: "tor-md5"}, Data: map[string][]byte{"password": []byte("s3cret")}})
	peer("a-tor", func(s *v1alpha1.BGPPeerSpec) {
		s.NodeSelector = map[string]string{"rack": "a"}
		s.PasswordSecretRef = &v1alpha1.SecretKeyRef{Name: "tor-md5", Key: "password"}
	})
	peer("b-same-router", func(s *v1alpha1.BGPPeerSpec) {})
	peer("c-other-asn", func(s *v1alpha1.BGPPeerSpec) { s.PeerAddress, s.MyASN = "198.18.0.2", 65000 })
	peer("d-no-secret", func(s *v1alpha1.BGPPeerSpec) {
		s.PeerAddress = "198.18.0.3"
		s.PasswordSecretRef = &v1alpha1.SecretKeyRef{Name: "missing", Key: "password"}
	})
	peer("e-rack-b", func(s *v1alpha1.BGPPeerSpec) {
		s.PeerAddress, s.NodeSelector = "198.18.0.4", map[string]string{"rack": "b"}
	})
	now := metav1.NewTime(time.Now())
	allocated := metav1.Condition{Type: v1alpha1.ServiceConditionAllocated, Status: "True", Reason: "Allocated", Message: "m", LastTransitionTime: now}
	svc := func(name, ip string, local bool) {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name, Annotations: map[string]string{k8s.GroupAnnotation: "infra/edge"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
		if local {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}
		mk(s)
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
		s.Status.Conditions = []metav1.Condition{allocated}
		status(s)
	}
	svc("web", "198.18.10.1", false)
	svc("local", "198.18.10.2", true)
	svc("v6", "fd00:10::1", false) // no peer carries IPv6
	ready, n3 := true, "n3"
	mk(&discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "demo", Name: "local-abc", Labels: map[string]string{discoveryv1.LabelServiceName: "local"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.3"}, NodeName: &n3, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	})

	agentCfg := env.ConfigAs("system:serviceaccount:vipstack-system:vipstack-agent", "system:serviceaccounts", "system:serviceaccounts:vipstack-system")
	reader := k8stest.Client(t, agentCfg)
	addr := netip.MustParseAddr
	type verdict struct {
		VIP      string
		Eligible bool
		Reason   string
	}
	tests := []struct {
		node      string
		peers     []bgp.Peer
		verdicts  []verdict
		wantWarns []string
	}{
		{node: "n1", peers: []bgp.Peer{
			{Address: addr("198.18.0.1"), ASN: 64512, LocalAddress: addr("198.18.0.11"), Password: "s3cret"}},
			verdicts: []verdict{{"198.18.10.1", true, "node Ready, externalTrafficPolicy Cluster"},
				{"198.18.10.2", false, "no ready endpoint on this node (externalTrafficPolicy Local)"}},
			wantWarns: []string{
				"BGPPeer vipstack-system/b-same-router is not used on node n1: BGPPeer vipstack-system/a-tor names the same peerAddress 198.18.0.1",
				"BGPPeer vipstack-system/c-other-asn is not used on node n1: myASN 65000 differs from 64513 of BGPPeer vipstack-system/a-tor",
				"BGPPeer vipstack-system/d-no-secret is not used: spec.passwordSecretRef: Secret vipstack-system/missing does not exist",
				"address fd00:10::1 of Service demo/v6 is not announced: no BGPPeer of node n1 carries its family",
			}},
		{node: "n2", peers: []bgp.Peer{{Address: addr("198.18.0.1"), ASN: 64512, LocalAddress: addr("198.18.0.12"), Password: "s3cret"}},
			verdicts: []verdict{{"198.18.10.1", false, "node n2 is not Ready (KubeletNotReady: PLEG is not healthy)"},
				{"198.18.10.2", false, "no ready endpoint on this node (externalTrafficPolicy Local)"}}},
		{node: "n3", peers: []bgp.Peer{
			{Address: addr("198.18.0.1"), ASN: 64512, LocalAddress: addr("198.18.0.13")},
			{Address: addr("198.18.0.4"), ASN: 64512, LocalAddress: addr("198.18.0.13")}},
			verdicts: []verdict{{"198.18.10.1", true, "node Ready, externalTrafficPolicy Cluster"},
				{"198.18.10.2", true, "a ready endpoint on this node (externalTrafficPolicy Local)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.node, func(t *testing.T) {
			plan, warns, err := agent.BGPView(ctx, reader, tt.node, "", agent.Passwords{})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.wantWarns {
				if !slices.ContainsFunc(warns, func(s string) bool { return strings.Contains(s, w) }) {
					t.Errorf("warnings %q lack %q", warns, w)
				}
			}
			if d := cmp.Diff(tt.peers, plan.Config.Peers, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
				t.Errorf("peers (-want +got):\n%s", d)
			}
			var got []verdict
			for _, v := range plan.Verdicts {
				got = append(got, verdict{v.VIP.String(), v.Eligible, v.Reason})
			}
			if d := cmp.Diff(tt.verdicts, got); d != "" {
				t.Errorf("verdicts (-want +got):\n%s", d)
			}
			if len(plan.Config.Routes) != 2 || !slices.Equal(plan.Config.Routes[0].Communities, []string{"64513:7"}) || *plan.Config.Routes[0].LocalPref != 200 {
				t.Errorf("routes %+v, want the two IPv4 addresses with the group's community and local preference", plan.Config.Routes)
			}
			if plan.Config.ASN != 64513 || plan.Config.NextHopIPv4.String() != fmt.Sprintf("198.18.0.%d", 10+int(tt.node[1]-'0')) {
				t.Errorf("ASN %d, next hop %v; want 64513 and the node's InternalIP", plan.Config.ASN, plan.Config.NextHopIPv4)
			}
			if plan.Services[addr("198.18.10.2")] != "demo/local" {
				t.Errorf("services %v, want 198.18.10.2 of demo/local", plan.Services)
			}
		})
	}
}
