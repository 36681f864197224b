package discovery

import (
	"context"
	"net/netip"
	"sort"
	"strings"
	"sync"
)

// Role is a node's role in the cluster.
type Role string

const (
	Bootstrap Role = "bootstrap"
	Master    Role = "master"
	Worker    Role = "worker"
)

// Node is one cluster node as a source sees it.
type Node struct {
	Name  string // short host name, e.g. "master-0"
	Role  Role
	Addrs []netip.Addr // node addresses (never VIPs), IPv4 and/or IPv6
	// NotReady is set by a source that knows the node is not running
	// (KubeNodes: a Node whose Ready condition is False or Unknown). The
	// DNS keeps its name but leaves it out of etcd-N and the etcd SRV
	// record; the VRRP peers and load balancer backends keep it (its
	// VRRP may run without its kubelet, and the checks judge backends).
	NotReady bool
}

// Source discovers nodes. Run reports the complete current set through
// update every time it changes, until ctx is done.
type Source interface {
	Run(ctx context.Context, update func([]Node)) error
}

// Registry merges what the sources report. It is safe for concurrent use;
// readers get an immutable snapshot.
type Registry struct {
	mu      sync.RWMutex
	bySrc   map[string][]Node
	merged  []Node
	version uint64
	subs    []chan struct{}
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{bySrc: map[string][]Node{}} }

// Set replaces what source name reports.
func (r *Registry) Set(source string, nodes []Node) {
	r.mu.Lock()
	r.bySrc[source] = append([]Node(nil), nodes...)
	r.merged = merge(r.bySrc)
	r.version++
	subs := r.subs
	r.mu.Unlock()
	for _, c := range subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// Nodes returns the merged node list, sorted by name. Callers must not
// modify it.
func (r *Registry) Nodes() []Node {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.merged
}

// Version increases with every change.
func (r *Registry) Version() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.version
}

// Changed returns a channel that receives (coalesced) after each change.
func (r *Registry) Changed() <-chan struct{} {
	c := make(chan struct{}, 1)
	r.mu.Lock()
	r.subs = append(r.subs, c)
	r.mu.Unlock()
	return c
}

// Feed runs src and stores what it reports under name until ctx is done.
func (r *Registry) Feed(ctx context.Context, name string, src Source) error {
	return src.Run(ctx, func(nodes []Node) { r.Set(name, nodes) })
}

// merge unions the sources in source name order (see Merge).
func merge(bySrc map[string][]Node) []Node {
	srcs := make([]string, 0, len(bySrc))
	for s := range bySrc {
		srcs = append(srcs, s)
	}
	sort.Strings(srcs)
	lists := make([][]Node, len(srcs))
	for i, s := range srcs {
		lists[i] = bySrc[s]
	}
	return Merge(lists...)
}

// Merge unions node lists: a node named in several lists gets the union of
// their addresses, and the first non-empty role; it is NotReady only if
// every list naming it says so. Names are host names, so
// they match case-insensitively; the first spelling wins. The result is
// sorted by name, each node's addresses sorted; the inputs are not
// modified.
func Merge(lists ...[]Node) []Node {
	byName := map[string]*Node{}
	for _, list := range lists {
		for _, n := range list {
			key := strings.ToLower(n.Name)
			m := byName[key]
			if m == nil {
				m = &Node{Name: n.Name, Role: n.Role, NotReady: n.NotReady}
				byName[key] = m
			}
			m.NotReady = m.NotReady && n.NotReady
			if m.Role == "" {
				m.Role = n.Role
			}
			for _, a := range n.Addrs {
				if !containsAddr(m.Addrs, a) {
					m.Addrs = append(m.Addrs, a)
				}
			}
		}
	}
	out := make([]Node, 0, len(byName))
	for _, m := range byName {
		sort.Slice(m.Addrs, func(i, j int) bool { return m.Addrs[i].Less(m.Addrs[j]) })
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func containsAddr(list []netip.Addr, a netip.Addr) bool {
	for _, x := range list {
		if x == a {
			return true
		}
	}
	return false
}

// Static is a fixed node list.
type Static []Node

// Run reports the list once and waits for ctx.
func (s Static) Run(ctx context.Context, update func([]Node)) error {
	update(s)
	<-ctx.Done()
	return nil
}
