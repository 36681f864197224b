package lb

import "net/netip"

// UsableServer is a server that takes new connections, with its weight
// in force.
type UsableServer struct {
	Name   string
	Addr   netip.AddrPort
	Weight int
}

// Usable returns the servers of backend that take new connections now,
// in configuration order, as the relay's pick sees them: UP, ready, of a
// weight above 0, below their maxconn, and of the tier in force (backup
// servers only while no other server is usable: the first, or all with
// option allbackups). The kernel data path writes them to its map.
func (l *LB) Usable(backend string) []UsableServer {
	var out []UsableServer
	for _, p := range l.view.Load().pools {
		if p.name != backend {
			continue
		}
		skip := p.tierSkip(0)
		for i, s := range p.servers {
			if w := p.pickWeight(i, skip); w > 0 {
				out = append(out, UsableServer{Name: s.name, Addr: s.addr, Weight: w})
			}
		}
	}
	return out
}
