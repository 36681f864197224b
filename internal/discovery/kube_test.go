package discovery

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/vipstack/vipstack/internal/kubetest"
)

// TestKubeNodes runs the Node-list source against a real API server and
// checks each report after a sequence of changes.
func TestKubeNodes(t *testing.T) {
	env := kubetest.Start(t)
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	a := netip.MustParseAddr
	node := func(name string, labels map[string]string, addrs ...corev1.NodeAddress) {
		t.Helper()
		n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.Addresses = addrs
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	internal := func(ip string) corev1.NodeAddress {
		return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip}
	}
	node("master-0.example.com", map[string]string{"node-role.kubernetes.io/control-plane": ""}, internal("198.18.0.11"), internal("fd00::11"),
		corev1.NodeAddress{Type: corev1.NodeHostName, Address: "master-0"})
	node("worker-0", nil, internal("198.18.0.21"), corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "198.18.1.21"})

	reports := make(chan []Node, 16)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- (KubeNodes{Client: cs}).Run(runCtx, func(n []Node) { reports <- n }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	next := func() []Node {
		t.Helper()
		select {
		case n := <-reports:
			return n
		case <-time.After(30 * time.Second):
			t.Fatal("no report within 30s")
			return nil
		}
	}
	addrCmp := cmp.Comparer(func(x, y netip.Addr) bool { return x == y })
	tests := []struct {
		name   string
		change func()
		want   []Node
	}{
		{name: "first list", change: func() {}, want: []Node{
			{Name: "master-0", Role: Master, Addrs: []netip.Addr{a("198.18.0.11"), a("fd00::11")}},
			{Name: "worker-0", Role: Worker, Addrs: []netip.Addr{a("198.18.0.21")}},
		}},
		{name: "a node joins", change: func() { node("worker-1", nil, internal("198.18.0.22")) }, want: []Node{
			{Name: "master-0", Role: Master, Addrs: []netip.Addr{a("198.18.0.11"), a("fd00::11")}},
			{Name: "worker-0", Role: Worker, Addrs: []netip.Addr{a("198.18.0.21")}},
			{Name: "worker-1", Role: Worker, Addrs: []netip.Addr{a("198.18.0.22")}},
		}},
		{name: "a node's kubelet stops: not ready", change: func() {
			n, err := cs.CoreV1().Nodes().Get(ctx, "worker-1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}
			if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, want: []Node{
			{Name: "master-0", Role: Master, Addrs: []netip.Addr{a("198.18.0.11"), a("fd00::11")}},
			{Name: "worker-0", Role: Worker, Addrs: []netip.Addr{a("198.18.0.21")}},
			{Name: "worker-1", Role: Worker, Addrs: []netip.Addr{a("198.18.0.22")}, NotReady: true},
		}},
		{name: "a node leaves", change: func() {
			if err := cs.CoreV1().Nodes().Delete(ctx, "worker-0", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}, want: []Node{
			{Name: "master-0", Role: Master, Addrs: []netip.Addr{a("198.18.0.11"), a("fd00::11")}},
			{Name: "worker-1", Role: Worker, Addrs: []netip.Addr{a("198.18.0.22")}, NotReady: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.change()
			got := next()
			// A node object is created before its addresses are written:
			// a report in between is fine, the last one must match.
			for cmp.Diff(tt.want, got, addrCmp) != "" {
				select {
				case got = <-reports:
					continue
				case <-time.After(10 * time.Second):
				}
				break
			}
			if diff := cmp.Diff(tt.want, got, addrCmp); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("KubeNode", func(t *testing.T) {
		for _, name := range []string{"master-0.example.com", "master-0", "MASTER-0"} {
			got, err := KubeNode(ctx, cs, name)
			want := Node{Name: "master-0", Role: Master, Addrs: []netip.Addr{a("198.18.0.11"), a("fd00::11")}}
			if err != nil || cmp.Diff(want, got, addrCmp) != "" {
				t.Errorf("KubeNode(%q) = %+v, %v; want %+v", name, got, err, want)
			}
		}
		if _, err := KubeNode(ctx, cs, "nobody"); err == nil || err.Error() != "kubernetes node nobody: no Node object has that name" {
			t.Errorf("KubeNode(nobody): %v", err)
		}
	})
	t.Run("selector", func(t *testing.T) {
		sel := make(chan []Node, 4)
		c2, cancel2 := context.WithCancel(ctx)
		defer cancel2()
		go (KubeNodes{Client: cs, Selector: "node-role.kubernetes.io/control-plane"}).Run(c2, func(n []Node) { sel <- n })
		select {
		case got := <-sel:
			want := []Node{{Name: "master-0", Role: Master, Addrs: []netip.Addr{a("198.18.0.11"), a("fd00::11")}}}
			if diff := cmp.Diff(want, got, addrCmp); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no report")
		}
		if err := (KubeNodes{Client: cs, Selector: "a in (("}).Run(ctx, func([]Node) {}); err == nil {
			t.Error("a bad selector is accepted")
		}
	})
}
