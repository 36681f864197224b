package discovery

import (
	"context"
	"fmt"
	"net/netip"
	"reflect"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/vipstack/vipstack/internal/k8s/rewatch"
)

// KubeNodes is the Kubernetes Node list as a Source: a watch on Nodes,
// each reported by its short name (up to the first dot), its role (Master
// for the node-role.kubernetes.io/control-plane or .../master labels,
// Worker otherwise), its InternalIP addresses, and NotReady when its Ready
// condition is False or Unknown (a Node without the condition, as one
// created before its kubelet reports, counts as ready).
type KubeNodes struct {
	Client kubernetes.Interface
	// Selector limits the nodes by label, in kubectl's syntax
	// ("node-role.kubernetes.io/control-plane", "zone in (a,b)"); empty
	// means every node.
	Selector string
}

// Run reports the node list once the first list is in, then after every
// change that alters what it reports, until ctx is done.
func (k KubeNodes) Run(ctx context.Context, update func([]Node)) error {
	if k.Client == nil {
		return fmt.Errorf("kubernetes nodes: no client")
	}
	if _, err := labels.Parse(k.Selector); err != nil {
		return fmt.Errorf("kubernetes nodes: selector %q: %w", k.Selector, err)
	}
	lw := cache.NewFilteredListWatchFromClient(k.Client.CoreV1().RESTClient(), "nodes", metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.LabelSelector = k.Selector })
	// Watch again within a second of an API-server restart, not after
	// client-go's backoff of up to a minute.
	inf := rewatch.NewInformer(rewatch.Options{})(lw, &corev1.Node{}, 0, cache.Indexers{})
	changed := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    poke,
		UpdateFunc: func(_, n any) { poke(n) },
		DeleteFunc: poke,
	}); err != nil {
		return fmt.Errorf("kubernetes nodes: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.Run(ctx.Done())
	}()
	defer func() { <-done }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil // ctx ended first
	}
	var last []Node
	first := true
	for {
		nodes := nodesOf(inf.GetStore().List())
		if first || !reflect.DeepEqual(nodes, last) {
			update(nodes)
			last, first = nodes, false
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// nodesOf converts Node objects, sorted by name.
func nodesOf(objs []any) []Node {
	out := make([]Node, 0, len(objs))
	for _, o := range objs {
		n, ok := o.(*corev1.Node)
		if !ok {
			continue
		}
		out = append(out, NodeOf(n))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// NodeOf converts one Node object.
func NodeOf(n *corev1.Node) Node {
	name, _, _ := strings.Cut(n.Name, ".")
	role := Worker
	for _, l := range []string{"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"} {
		if _, ok := n.Labels[l]; ok {
			role = Master
		}
	}
	out := Node{Name: name, Role: role}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			out.NotReady = true
		}
	}
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && !containsAddr(out.Addrs, ip) {
			out.Addrs = append(out.Addrs, ip)
		}
	}
	sort.Slice(out.Addrs, func(i, j int) bool { return out.Addrs[i].Less(out.Addrs[j]) })
	return out
}

// KubeNode reads one Node object, by its full name or, when no Node has
// that name, by its short name (the first label of a Node named by FQDN).
func KubeNode(ctx context.Context, cs kubernetes.Interface, name string) (Node, error) {
	n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return NodeOf(n), nil
	}
	list, lerr := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if lerr != nil {
		return Node{}, fmt.Errorf("kubernetes node %s: %w", name, err)
	}
	for i := range list.Items {
		if short, _, _ := strings.Cut(list.Items[i].Name, "."); strings.EqualFold(short, name) {
			return NodeOf(&list.Items[i]), nil
		}
	}
	return Node{}, fmt.Errorf("kubernetes node %s: no Node object has that name", name)
}
