package clusterstatus

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/k8s/agent"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/node"
)

// lease is node's status Lease, renewed at renewed, its agent running
// the instance node/n2 in state.
func lease(node string, renewed time.Time, state string) *coordinationv1.Lease {
	body, _ := json.Marshal(agent.Published{Node: node, Instances: []engine.InstanceStatus{
		{Name: "g/node/n2/v4", State: state, VRID: 2, VIPs: []string{"198.18.0.200/32"}, BasePriority: 250, Effective: 250}}})
	secs, rt := int32(30), metav1.NewMicroTime(renewed)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "vipstack-system", Name: agent.LeasePrefix + node,
			Labels: map[string]string{agent.LeaseLabel: "true"}, Annotations: map[string]string{agent.StatusAnnotation: string(body)}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &node, LeaseDurationSeconds: &secs, RenewTime: &rt}}
}

func lbService(name, ip string, allocated bool) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "lab", Name: name}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	if allocated {
		s.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ServiceConditionAllocated, Status: metav1.ConditionTrue}}
	}
	return s
}

// TestFromKubernetes reads Leases, Nodes and Services through a fake
// client: the holder, a silent agent, a Lease of a gone Node, a Service
// address no agent carries, and a Service of another load balancer.
func TestFromKubernetes(t *testing.T) {
	now := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3"}},
		lease("n1", now.Add(-5*time.Second), "BACKUP"),
		lease("n2", now.Add(-3*time.Second), "MASTER"),
		lease("n3", now.Add(-95*time.Second), "MASTER"), // silent: its MASTER does not count
		lease("gone", now, "MASTER"),                    // its Node was deleted
		lbService("s00", "198.18.0.200", true),
		lbService("s01", "198.18.0.201", true),   // allocated, carried by nobody
		lbService("other", "198.18.0.99", false), // another load balancer's
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	v, err := FromKubernetes(t.Context(), c, "vipstack-system", now)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Instance, Service, Verdict string
		Holders                    []string
		Members                    []string
	}
	var got []row
	for _, x := range v.VIPs {
		r := row{Instance: x.Instance, Service: x.Service, Verdict: x.Verdict, Holders: x.Holders}
		for _, m := range x.Members {
			r.Members = append(r.Members, m.Node+" "+m.State)
		}
		got = append(got, r)
	}
	want := []row{
		{Instance: "(no instance) 198.18.0.201", Service: "lab/s01", Verdict: "no holder", Holders: []string{}},
		{Instance: "g/node/n2/v4", Service: "lab/s00", Verdict: "ok", Holders: []string{"n2"}, Members: []string{"n1 BACKUP", "n2 MASTER", "n3 unreachable"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("VIPs (-want +got):\n%s", d)
	}
	wantProblems := []string{
		"(no instance) 198.18.0.201 (198.18.0.201): no node holds it",
		"node n3 (lease vipstack-system/vipstack-agent-n3) did not answer: silent: the agent last renewed its status at 2026-11-29T00:58:25Z, 1m35s ago (every 10s expected)",
	}
	if d := cmp.Diff(wantProblems, v.Problems); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
}

// bgpLease is node's status Lease with a speaker that has one peer (up
// or not) and announces 198.18.0.210 or not.
func bgpLease(nodeName string, now time.Time, established, announced bool) *coordinationv1.Lease {
	st := &node.BGPStatus{ASN: 64513, Peers: []node.BGPPeerStatus{{Address: "198.18.0.1", ASN: 64512, Session: "active"}},
		Routes: []node.BGPRouteStatus{{Prefix: "198.18.0.210/32", Role: "service lab/bgp", Announced: announced, Reason: "no ready endpoint on this node (externalTrafficPolicy Local)"}}}
	if established {
		st.Peers[0].Session = "established"
	}
	body, _ := json.Marshal(agent.Published{Node: nodeName, Instances: []engine.InstanceStatus{}, BGP: st})
	l := lease(nodeName, now, "MASTER")
	l.Annotations[agent.StatusAnnotation] = string(body)
	return l
}

// TestFromKubernetesBGP: a Service address the agents announce by BGP is
// a BGP VIP of the view, with each node's route and sessions, not an
// address without an instance.
func TestFromKubernetesBGP(t *testing.T) {
	now := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}},
		bgpLease("n1", now, true, true), bgpLease("n2", now, true, false), lbService("bgp", "198.18.0.210", true),
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	v, err := FromKubernetes(t.Context(), c, "vipstack-system", now)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.VIPs) != 0 || len(v.Problems) != 0 {
		t.Errorf("VRRP VIPs %+v, problems %q; want none", v.VIPs, v.Problems)
	}
	want := []BGPVIP{{Address: "198.18.0.210", Role: "service lab/bgp", Verdict: VerdictOK, Announcers: []string{"n1"}, Members: []BGPMember{
		{Node: "n1", Route: RouteAnnounced, Reason: "no ready endpoint on this node (externalTrafficPolicy Local)", Sessions: "1/1"},
		{Node: "n2", Route: RouteNotAnnounced, Reason: "no ready endpoint on this node (externalTrafficPolicy Local)", Sessions: "1/1"}}}}
	if d := cmp.Diff(want, v.BGP); d != "" {
		t.Errorf("BGP VIPs (-want +got):\n%s", d)
	}
	// Announced over no established session: nobody carries it.
	c = fake.NewClientBuilder().WithScheme(s).WithObjects(objs[0], bgpLease("n1", now, false, true), lbService("bgp", "198.18.0.210", true)).Build()
	if v, err = FromKubernetes(t.Context(), c, "vipstack-system", now); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"198.18.0.210 (service lab/bgp, BGP): no node announces it over an established session"}, v.Problems); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
}

// TestLeaseReportBGPWedged: an agent whose speaker's GoBGP is wedged
// (its /healthz fails until the kubelet restarts it) is reported with a
// warning naming the wedge.
func TestLeaseReportBGPWedged(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		change func(*agent.Published)
		want   []string
	}{
		{"wedged", func(p *agent.Published) {
			p.BGP.Wedged = "GoBGP's server has not answered ListPeer since 2026-12-03T11:59:40Z (20s): it is wedged"
		}, []string{"not live (its liveness probe fails): bgp: GoBGP's server has not answered ListPeer since 2026-12-03T11:59:40Z (20s): it is wedged"}},
		{"stopped, started again by the agent", func(p *agent.Published) {
			p.BGP.Stopped = "bgp: peer 198.18.1.1: AddPeer refused"
			p.BGP.Retry = "at 2026-12-03T12:00:04Z"
		}, []string{"its BGP speaker stopped (bgp: peer 198.18.1.1: AddPeer refused) and announces nothing; the agent starts it again at 2026-12-03T12:00:04Z"}},
		{"stopped for good", func(p *agent.Published) {
			p.BGP.Stopped = "bgp: peer 198.18.1.1: AddPeer refused"
		}, []string{"not live (its liveness probe fails): bgp: the speaker stopped: bgp: peer 198.18.1.1: AddPeer refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := bgpLease("n1", now, true, true)
			var p agent.Published
			if err := json.Unmarshal([]byte(l.Annotations[agent.StatusAnnotation]), &p); err != nil {
				t.Fatal(err)
			}
			tc.change(&p)
			body, _ := json.Marshal(p)
			l.Annotations[agent.StatusAnnotation] = string(body)
			r, ok := leaseReport(*l, now)
			if !ok || !cmp.Equal(tc.want, r.Warnings) {
				t.Errorf("report %v: warnings %q, want %q", ok, r.Warnings, tc.want)
			}
		})
	}
}
