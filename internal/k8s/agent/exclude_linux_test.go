package agent_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s/k8slab"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestDefaultGroupAndExclusion: a real API server, the controller run with
// --default-group, and agents in three network namespaces. A LoadBalancer
// Service with no annotation gets an address that answers from a client
// namespace; labelling its holder node.kubernetes.io/exclude-from-external-
// load-balancers moves the address to another node, and the labelled node
// holds nothing from then on.
func TestDefaultGroupAndExclusion(t *testing.T) {
	testnet.RequireRoot(t)
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	l := k8slab.Start(ctx, t, k8slab.Options{Nodes: 3, Prefix: "vsv", Bin: bin, Advert: 200 * time.Millisecond,
		Client: true, ControllerArgs: []string{"--default-group", k8slab.Group}})
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range l.Nodes {
				t.Logf("---- agent %s log (tail):\n%s", n.Name, testutil.Tail(n.Log(), 30))
			}
			t.Logf("---- controller log (tail):\n%s", testutil.Tail(l.ControllerLog(), 30))
		}
	})
	for _, n := range l.Nodes {
		nameServer(t, n.Host, n.Name)
	}
	s := k8slab.NewService("plain", netip.Addr{})
	s.Annotations = nil
	if err := l.Admin.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	var vip netip.Addr
	testutil.Eventually(t, 30*time.Second, func() error {
		var s corev1.Service
		if err := l.Admin.Get(ctx, client.ObjectKey{Namespace: k8slab.ServiceNamespace, Name: "plain"}, &s); err != nil {
			return err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ServiceConditionGroup)
		if len(s.Status.LoadBalancer.Ingress) != 1 || c == nil || c.Message != k8slab.Group {
			return fmt.Errorf("ingress %v, group condition %+v", s.Status.LoadBalancer.Ingress, c)
		}
		vip = netip.MustParseAddr(s.Status.LoadBalancer.Ingress[0].IP)
		return nil
	})
	held := func(exclude string) string {
		t.Helper()
		var holder string
		testutil.Eventually(t, 30*time.Second, func() error {
			hs := holders(t, l.Nodes, vip)
			if len(hs) != 1 || hs[0] == exclude {
				return fmt.Errorf("%s held by %v, want one node other than %q", vip, hs, exclude)
			}
			got, err := fetch(l.Topo.Client, vip)
			if err != nil {
				return err
			}
			if got != hs[0] {
				return fmt.Errorf("answer from %q, the holder is %s", got, hs[0])
			}
			holder = hs[0]
			return nil
		})
		return holder
	}
	first := held("")
	t.Logf("%s (no annotation, default group) held by %s", vip, first)

	var n corev1.Node
	if err := l.Admin.Get(ctx, client.ObjectKey{Name: first}, &n); err != nil {
		t.Fatal(err)
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[corev1.LabelNodeExcludeBalancers] = ""
	if err := l.Admin.Update(ctx, &n); err != nil {
		t.Fatal(err)
	}
	second := held(first)
	t.Logf("%s labelled %s: address moved to %s", first, corev1.LabelNodeExcludeBalancers, second)
	var g v1alpha1.VIPGroup
	testutil.Eventually(t, 10*time.Second, func() error {
		if err := l.Admin.Get(ctx, groupKey(), &g); err != nil {
			return err
		}
		if slices.ContainsFunc(g.Status.Instances, func(in v1alpha1.GroupInstance) bool { return in.Node == first }) {
			return fmt.Errorf("group still has an instance of %s: %+v", first, g.Status.Instances)
		}
		return nil
	})
	// Stays away.
	for range 5 {
		time.Sleep(400 * time.Millisecond)
		if hs := holders(t, l.Nodes, vip); slices.Contains(hs, first) {
			t.Fatalf("excluded node %s holds %s again (holders %v)", first, vip, hs)
		}
	}
}

func groupKey() client.ObjectKey {
	ns, name, _ := strings.Cut(k8slab.Group, "/")
	return client.ObjectKey{Namespace: ns, Name: name}
}
