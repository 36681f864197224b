package k8s

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var managed = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
	FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:ports":{}}}`)}}

func TestStripManagedFields(t *testing.T) {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", ManagedFields: managed, Annotations: map[string]string{"a": "b"}}}
	got, err := StripManagedFields(s)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"a": "b"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "pool",
		"managedFields": []any{map[string]any{"manager": "kubectl"}}}}}
	if _, err := StripManagedFields(u); err != nil {
		t.Fatal(err)
	}
	if u.GetManagedFields() != nil {
		t.Errorf("an unstructured object keeps its managed fields: %v", u.Object)
	}
	if o, err := StripManagedFields("not an object"); o != "not an object" || err != nil {
		t.Errorf("a non-object: %v, %v; want it back unchanged", o, err)
	}
}

func TestSlimNode(t *testing.T) {
	del := metav1.Now()
	beat := metav1.Now()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u1", ResourceVersion: "7", DeletionTimestamp: &del, ManagedFields: managed,
			Labels: map[string]string{"zone": "a"}, Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0"}},
		Spec: corev1.NodeSpec{PodCIDR: "10.0.0.0/24"},
		Status: corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "198.18.0.11"}, {Type: corev1.NodeHostName, Address: "n1"}},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: beat},
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "PLEG is not healthy", LastHeartbeatTime: beat, LastTransitionTime: beat},
			},
			Images:          []corev1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}, SizeBytes: 320000}},
			Capacity:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: "v1.36.0"},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
		},
	}
	got, err := SlimNode(n)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u1", ResourceVersion: "7", DeletionTimestamp: &del, Labels: map[string]string{"zone": "a"}},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "198.18.0.11"}, {Type: corev1.NodeHostName, Address: "n1"}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "PLEG is not healthy"}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSlimEndpointSlice(t *testing.T) {
	node, ready := "n1", false
	port := int32(80)
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-abc", ResourceVersion: "3", ManagedFields: managed,
			Labels: map[string]string{discoveryv1.LabelServiceName: "web"}, Annotations: map[string]string{"a": "b"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, NodeName: &node, Hostname: &node,
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &ready}}},
		Ports: []discoveryv1.EndpointPort{{Port: &port}},
	}
	got, err := SlimEndpointSlice(sl)
	if err != nil {
		t.Fatal(err)
	}
	want := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "demo", Name: "web-abc", ResourceVersion: "3", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{NodeName: &node, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestUnchanged(t *testing.T) {
	svc := func(rv, ip string) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", ResourceVersion: rv}}
		if ip != "" {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
		}
		return s
	}
	node := func(rv, label string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: rv, Labels: map[string]string{"l": label}}}
	}
	slice := func(rv, n string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "s", ResourceVersion: rv}, Endpoints: []discoveryv1.Endpoint{{NodeName: &n}}}
	}
	tests := []struct {
		name     string
		old, new any
		want     bool
	}{
		{name: "Service, only the version", old: svc("1", "198.18.0.1"), new: svc("2", "198.18.0.1"), want: true},
		{name: "Service, an address", old: svc("1", ""), new: svc("2", "198.18.0.1")},
		{name: "Node, only the version", old: node("1", "a"), new: node("2", "a"), want: true},
		{name: "Node, a label", old: node("1", "a"), new: node("2", "b")},
		{name: "EndpointSlice, only the version", old: slice("1", "n1"), new: slice("2", "n1"), want: true},
		{name: "EndpointSlice, a node", old: slice("1", "n1"), new: slice("2", "n2")},
		{name: "two kinds", old: svc("1", ""), new: node("1", "a")},
		{name: "a kind not compared", old: &corev1.ConfigMap{}, new: &corev1.ConfigMap{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldRV, newRV := rvOf(tt.old), rvOf(tt.new)
			if got := Unchanged(tt.old, tt.new); got != tt.want {
				t.Errorf("Unchanged = %v, want %v", got, tt.want)
			}
			if rvOf(tt.old) != oldRV || rvOf(tt.new) != newRV {
				t.Error("Unchanged changed an object's resourceVersion")
			}
		})
	}
}

func rvOf(o any) string {
	if m, ok := o.(metav1.Object); ok {
		return m.GetResourceVersion()
	}
	return ""
}
