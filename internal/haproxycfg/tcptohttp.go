package haproxycfg

import "github.com/vipstack/vipstack/internal/lbconfig"

// tcpFrontendsToHTTP makes a mode tcp frontend whose default backend is
// mode http an HTTP frontend without rules of its own, as haproxy 2.6
// runs it (measured: its requests are proxied as HTTP, each logged
// "Connect from ... (fe/TCP)" without a log format, a request that does
// not parse answered 400, and the stats show the frontend as tcp).
func (p *parser) tcpFrontendsToHTTP() {
	httpBackend := map[string]bool{}
	for _, b := range p.cfg.Backends {
		httpBackend[b.Name] = b.HTTP != nil
	}
	for i := range p.cfg.Frontends {
		f := &p.cfg.Frontends[i]
		if f.HTTP == nil && httpBackend[f.Backend] {
			f.HTTP = &lbconfig.HTTPFrontend{TCPMode: true}
		}
	}
}
