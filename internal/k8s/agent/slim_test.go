package agent

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// fullService is a Service as the API server sends it, with what the
// agent reads and what it does not.
func fullService(rv string, conds ...metav1.Condition) *corev1.Service {
	del := metav1.Unix(1700000000, 0)
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", UID: "u1", ResourceVersion: rv, DeletionTimestamp: &del,
			Labels: map[string]string{"app": "web"}, CreationTimestamp: del, Finalizers: []string{"service.kubernetes.io/load-balancer-cleanup"},
			Annotations: map[string]string{k8s.GroupAnnotation: "infra/workers", k8s.KeepalivedGroupAnnotation: "infra/workers",
				corev1.LastAppliedConfigAnnotation: `{"kind":"Service"}`, k8s.PoolAnnotation: "p"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			ExternalIPs: []string{"198.18.11.1"}, Ports: []corev1.ServicePort{{Port: 80}}, Selector: map[string]string{"app": "web"},
			ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"}, LoadBalancerClass: new(string)},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "198.18.10.1"}}},
			Conditions: conds},
	}
}

func TestSlimService(t *testing.T) {
	at := metav1.Unix(1700000100, 0)
	allowed := v1alpha1.ExternalIPsMessage("infra/workers", []string{"198.18.11.1"})
	conds := []metav1.Condition{
		{Type: v1alpha1.ServiceConditionAllocated, Status: "True", Reason: "Allocated", Message: "198.18.10.1 from pool p", LastTransitionTime: at, ObservedGeneration: 2},
		{Type: v1alpha1.ServiceConditionGroup, Status: "True", Reason: "FromPool", Message: "infra/workers", LastTransitionTime: at},
		{Type: v1alpha1.ServiceConditionExternalIPs, Status: "True", Reason: "Allowed", Message: allowed, LastTransitionTime: at},
		{Type: v1alpha1.ServiceConditionAnnounced, Status: "True", Reason: "Announced", Message: "by n1", LastTransitionTime: at},
		{Type: v1alpha1.ServiceConditionLocalEndpoints, Status: "True", Reason: "InGroup", Message: "n1", LastTransitionTime: at},
	}
	got, err := slimService(fullService("5", conds...))
	if err != nil {
		t.Fatal(err)
	}
	del := metav1.Unix(1700000000, 0)
	want := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", UID: "u1", ResourceVersion: "5", DeletionTimestamp: &del,
			Annotations: map[string]string{k8s.GroupAnnotation: "infra/workers", k8s.KeepalivedGroupAnnotation: "infra/workers"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			ExternalIPs: []string{"198.18.11.1"}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "198.18.10.1"}}},
			Conditions: []metav1.Condition{
				{Type: v1alpha1.ServiceConditionAllocated, Status: "True", Reason: "Allocated", Message: "198.18.10.1 from pool p"},
				{Type: v1alpha1.ServiceConditionGroup, Status: "True", Reason: "FromPool", Message: "infra/workers"},
				{Type: v1alpha1.ServiceConditionExternalIPs, Status: "True", Reason: "Allowed", Message: allowed},
			}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// What the agent reads of the slim copy is what it reads of the
	// Service.
	full := fullService("5", conds...)
	full.DeletionTimestamp = nil
	slim, _ := slimService(fullService("5", conds...))
	slim.(*corev1.Service).DeletionTimestamp = nil
	if a, b := vipsOf(full, nil), vipsOf(slim.(*corev1.Service), nil); len(a) != 2 || !reflect.DeepEqual(a, b) {
		t.Errorf("vipsOf: of the Service %+v, of its slim copy %+v; want the same two", a, b)
	}
}

// TestKeptChanged: an update of what the agent does not keep (the
// AnnouncedBy condition the controller writes after the agents announce,
// a condition's time) makes no new plan; one of an address does.
func TestKeptChanged(t *testing.T) {
	at, later := metav1.Unix(1700000100, 0), metav1.Unix(1700000200, 0)
	alloc := metav1.Condition{Type: v1alpha1.ServiceConditionAllocated, Status: "True", Reason: "Allocated", Message: "m", LastTransitionTime: at}
	announced := metav1.Condition{Type: v1alpha1.ServiceConditionAnnounced, Status: "True", Reason: "Announced", Message: "by n1", LastTransitionTime: later}
	moved := alloc
	moved.LastTransitionTime = later
	readdressed := fullService("3", alloc)
	readdressed.Status.LoadBalancer.Ingress[0].IP = "198.18.10.2"
	tests := []struct {
		name string
		new  *corev1.Service
		want bool
	}{
		{name: "AnnouncedBy written", new: fullService("2", alloc, announced), want: false},
		{name: "a condition's time only", new: fullService("2", moved), want: false},
		{name: "another address", new: readdressed, want: true},
		{name: "the group's condition", new: fullService("2", alloc, metav1.Condition{Type: v1alpha1.ServiceConditionGroup, Status: "True", Message: "infra/edge"}), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, _ := slimService(fullService("1", alloc))
			n, _ := slimService(tt.new)
			if got := !k8s.Unchanged(o, n); got != tt.want {
				t.Errorf("changed = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSlim: the agent's one transform slims each kind its own way and
// strips the managed fields of any other.
func TestSlim(t *testing.T) {
	mf := []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ManagedFields: mf}, Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{SizeBytes: 1}}}}
	if o, _ := slim(node); o.(*corev1.Node).Status.Images != nil || o.(*corev1.Node).ManagedFields != nil {
		t.Errorf("a Node keeps its images or managed fields: %+v", o)
	}
	if o, _ := slim(fullService("1")); o.(*corev1.Service).Spec.Ports != nil || o.(*corev1.Service).ManagedFields != nil {
		t.Errorf("a Service keeps its ports or managed fields: %+v", o)
	}
	g := &v1alpha1.VIPGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", ManagedFields: mf}, Spec: v1alpha1.VIPGroupSpec{Interface: "eth0"}}
	if o, _ := slim(g); o.(*v1alpha1.VIPGroup).ManagedFields != nil || o.(*v1alpha1.VIPGroup).Spec.Interface != "eth0" {
		t.Errorf("a VIPGroup keeps its managed fields or loses its spec: %+v", o)
	}
}
