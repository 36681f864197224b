//go:build linux

package nodelab_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/vipstack/vipstack/internal/nodelab"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestLabControlPlane checks the lab itself with the control plane and
// kube-proxy on: two registered nodes become Ready; the kubernetes
// Service's ClusterIP reaches the API server from a node; a hostNetwork
// DaemonSet runs on both, rolls to a new template, and runs again on a
// node killed and restarted; a Deployment's pods get addresses from their
// node's pod subnet and become available.
func TestLabControlPlane(t *testing.T) {
	lab := nodelab.Start(t, nodelab.Options{
		Nodes:        []nodelab.NodeSpec{{Name: "node-a", Labels: map[string]string{"vipstack.test/lab": "yes"}}, {Name: "node-b"}},
		ControlPlane: true,
		KubeProxy:    true,
	})
	ctx := t.Context()
	cs := lab.Clientset

	// From a node, the kubernetes Service's ClusterIP reaches the API
	// server (kube-proxy's nftables rules, then the lab's forwarder), as
	// in-cluster clients reach it.
	n := lab.Nodes[0]
	cfg := rest.CopyConfig(lab.Kube.Config)
	cfg.Host = "https://" + netip.AddrPortFrom(nodelab.KubernetesServiceIP, 443).String()
	cfg.Dial = n.DialContext
	inCluster, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = poll(ctx, 30*time.Second, func() (bool, string) {
		v, err := inCluster.Discovery().ServerVersion()
		if err != nil {
			return false, err.Error()
		}
		return true, v.GitVersion
	})
	if err != nil {
		t.Fatalf("the API server through %s from %s: %v", cfg.Host, n.Name, err)
	}
	labels := map[string]string{"app": "pause"}
	podSpec := func(hostNetwork bool) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{
				HostNetwork:                   hostNetwork,
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers: []corev1.Container{{
					Name: "pause", Image: nodelab.PauseRef, ImagePullPolicy: corev1.PullNever,
				}},
			},
		}
	}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "pause", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podSpec(true),
		},
	}
	if _, err := cs.AppsV1().DaemonSets("default").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDaemonSet(t, lab, "pause", 1)

	// Roll it.
	ds, err = cs.AppsV1().DaemonSets("default").Get(ctx, "pause", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds.Spec.Template.Annotations = map[string]string{"vipstack.test/rev": "2"}
	if _, err := cs.AppsV1().DaemonSets("default").Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDaemonSet(t, lab, "pause", 2)

	// A node killed and started again runs its pods again.
	b := lab.Node("node-b")
	if err := lab.KillNode(b.Name); err != nil {
		t.Fatal(err)
	}
	if cs, err := b.Containers(); err == nil {
		t.Fatalf("containerd on the killed %s answers: %v", b.Name, cs)
	}
	if err := b.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WaitContainer(ctx, "pause-", "pause", 60*time.Second); err != nil {
		t.Fatal(err)
	}

	dlabels := map[string]string{"app": "pause-net"}
	tmpl := podSpec(false)
	tmpl.Labels = dlabels
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "pause-net", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: dlabels},
			Template: tmpl,
		},
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = poll(ctx, 90*time.Second, func() (bool, string) {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "pause-net", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas == 2, fmt.Sprintf("%d of 2 available", d.Status.AvailableReplicas)
	})
	if err != nil {
		t.Fatalf("deployment pause-net: %v", err)
	}
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=pause-net"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		n := lab.Node(p.Spec.NodeName)
		addr, err := netip.ParseAddr(p.Status.PodIP)
		if n == nil || err != nil || !n.PodSubnet.Contains(addr) {
			t.Errorf("pod %s on %q has address %q, want one in its node's pod subnet", p.Name, p.Spec.NodeName, p.Status.PodIP)
		}
	}
}

// waitDaemonSet waits until the DaemonSet's generation gen runs, ready, on
// every node.
func waitDaemonSet(t *testing.T, lab *nodelab.Lab, name string, gen int64) {
	t.Helper()
	ctx := t.Context()
	err := poll(ctx, 90*time.Second, func() (bool, string) {
		ds, err := lab.Clientset.AppsV1().DaemonSets("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		s := ds.Status
		n := int32(len(lab.Nodes))
		return s.ObservedGeneration >= gen && s.DesiredNumberScheduled == n && s.UpdatedNumberScheduled == n && s.NumberReady == n && s.NumberUnavailable == 0,
			fmt.Sprintf("generation %d observed %d: desired %d, updated %d, ready %d", gen, s.ObservedGeneration, s.DesiredNumberScheduled, s.UpdatedNumberScheduled, s.NumberReady)
	})
	if err != nil {
		t.Fatalf("daemonset %s: %v", name, err)
	}
}

// poll calls cond every 500 ms until it holds or timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func() (bool, string)) error {
	return testutil.PollEvery(ctx, 500*time.Millisecond, timeout, func() error {
		if ok, why := cond(); !ok {
			return errors.New(why)
		}
		return nil
	})
}
