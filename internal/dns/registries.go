package dns

import (
	"context"
	"sync"

	"github.com/vipstack/vipstack/internal/discovery"
)

// Registries gives every clusterdns zone a registry of its own and copies
// what the live sources report into all of them, including zones that
// appear later (a reload adding a block). A block's node lines never enter
// its registry (clusterdns keeps them in the block). Its For method is a
// clusterdns.RegistryFunc. It is safe for concurrent use.
type Registries struct {
	mu     sync.Mutex
	byZone map[string]*discovery.Registry
	live   map[string][]discovery.Node // last report of each live source
}

// NewRegistries returns an empty set.
func NewRegistries() *Registries {
	return &Registries{byZone: map[string]*discovery.Registry{}, live: map[string][]discovery.Node{}}
}

// For returns zone's registry, creating it with the live sources' current
// reports. The same zone always gets the same registry.
func (r *Registries) For(zone string) *discovery.Registry {
	r.mu.Lock()
	defer r.mu.Unlock()
	reg := r.byZone[zone]
	if reg == nil {
		reg = discovery.NewRegistry()
		for src, nodes := range r.live {
			reg.Set(src, nodes)
		}
		r.byZone[zone] = reg
	}
	return reg
}

// Set stores what source reports in every zone's registry, now and later.
func (r *Registries) Set(source string, nodes []discovery.Node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	nodes = append([]discovery.Node(nil), nodes...)
	r.live[source] = nodes
	for _, reg := range r.byZone {
		reg.Set(source, nodes)
	}
}

// Feed runs src and stores what it reports under name until ctx is done.
func (r *Registries) Feed(ctx context.Context, name string, src discovery.Source) error {
	return src.Run(ctx, func(nodes []discovery.Node) { r.Set(name, nodes) })
}
