package haproxycfg

import (
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// useService reads `http-request use-service prometheus-exporter [if|unless
// { path P... }]` in a listen section: the exporter of its stats page.
func (p *parser) useService(l line) {
	const kw = "http-request use-service"
	const accepted = "http-request use-service prometheus-exporter [if|unless { path PATH... }] in a stats listen"
	w := l.words
	if len(w) < 3 || w[2] != "prometheus-exporter" {
		svc := ""
		if len(w) > 2 {
			svc = w[2]
		}
		p.errorf(l, kw, kw+": service %q is not supported by vipstack (accepted: %s)", svc, accepted)
		return
	}
	if p.ls.stats.Prometheus != nil {
		p.errorf(l, kw, kw+": a second use-service in %s is not supported by vipstack (accepted: one %s)", p.key, accepted)
		return
	}
	svc := &lbconfig.PrometheusService{}
	if rest := w[3:]; len(rest) > 0 {
		ok := len(rest) >= 5 && (rest[0] == "if" || rest[0] == "unless") && rest[1] == "{" && rest[2] == "path" && rest[len(rest)-1] == "}"
		if ok {
			svc.Unless = rest[0] == "unless"
			svc.Paths = rest[3 : len(rest)-1]
			for _, v := range svc.Paths {
				if strings.HasPrefix(v, "-") || v == "{" || v == "}" {
					ok = false
				}
			}
		}
		if !ok {
			p.errorf(l, kw, kw+": condition %q is not supported by vipstack (accepted: %s)", strings.Join(rest, " "), accepted)
			return
		}
	}
	p.source(lbconfig.ItemKey(p.key, kw), l)
	p.ls.stats.Prometheus = svc
}
