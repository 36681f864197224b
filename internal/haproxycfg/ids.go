package haproxycfg

import (
	"strconv"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// proxyID reads `id N` in a frontend, backend or listen section: the
// section's number on the stats page (lbconfig.Config.ProxyIDs).
func (p *parser) proxyID(l line) {
	if !p.once(l, "id") {
		return
	}
	args, ok := p.nargs(l, 1, 1, 1, "a number, 1 or more")
	if !ok {
		return
	}
	n, err := strconv.ParseInt(args[0], 10, 32)
	if err != nil || n <= 0 {
		p.errorf(l, "id", "custom id has to be > 0. (got %q; accepted: 1..2147483647)", args[0])
		return
	}
	for key, id := range p.cfg.ProxyIDs {
		if id == int(n) {
			p.errorf(l, "id", "%s reuses same custom id as %s (declared at %s).", p.key, key, p.cfg.Source[lbconfig.ItemKey(key, "id")])
			return
		}
	}
	if p.cfg.ProxyIDs == nil {
		p.cfg.ProxyIDs = map[string]int{}
	}
	p.cfg.ProxyIDs[p.key] = int(n)
}
