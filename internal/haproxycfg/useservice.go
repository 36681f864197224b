package haproxycfg

import (
	"slices"
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// useServiceArgs reads the service of `http-request use-service SERVICE
// [if|unless COND]` into r, with haproxy 2.6's errors for a missing or
// unknown service and for words after it that are not a condition.
func (p *parser) useServiceArgs(l line, r *lbconfig.HTTPRule, args []string) bool {
	const kw = "http-request use-service"
	accepted := "accepted: " + kw + " " + strings.Join(lbconfig.HTTPServices, ", ") + " [if|unless CONDITION]"
	switch {
	case len(args) == 0:
		p.errorf(l, kw, "error detected in %s while parsing 'http-request use-service' rule : 'use-service' expects a service name. (%s)", p.proxyName(), accepted)
		return false
	case !slices.Contains(lbconfig.HTTPServices, args[0]):
		p.errorf(l, kw, "error detected in %s while parsing 'http-request use-service' rule : '%s' unknown service name. (vipstack %s)", p.proxyName(), args[0], accepted)
		return false
	case len(args) > 1:
		p.errorf(l, kw, "'http-request use-service' expects either 'if' or 'unless' followed by a condition but found '%s'. (%s)", args[1], accepted)
		return false
	}
	r.Name = args[0]
	return true
}

// useService reads `http-request use-service prometheus-exporter [if|unless
// { path P... }]` in a stats listen: the exporter of its stats page.
// (In other mode http sections the line is an http-request rule, read by
// httpRequest.)
func (p *parser) useService(l line) {
	const kw = "http-request use-service"
	const accepted = "http-request use-service prometheus-exporter [if|unless { path PATH... }] in a stats listen; any condition in a listen with servers or none, a frontend or a backend"
	w := l.words
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
			p.errorf(l, kw, kw+": condition %q in a stats listen is not supported by vipstack (accepted: %s)", strings.Join(rest, " "), accepted)
			return
		}
	}
	p.source(lbconfig.ItemKey(p.key, kw), l)
	p.ls.stats.Prometheus = svc
}

// listenForwards makes the listen section forward from line l on: it is
// a frontend and a backend of its name.
func (p *parser) listenForwards(l line) {
	p.ls.forwardLine = l.num
	p.be = &lbconfig.Backend{Name: p.ls.name, DontLogNull: p.dontLogNull, RedispatchOnRetry: p.redispatch, Balance: p.defBalance, HashType: p.defHashType, FullConn: p.defFullConn, LogHealthChecks: p.logHealthChecks}
	p.inheritHTTPCheck()
}

// serviceListen settles a listen section's use-service lines at its end:
// in a stats listen they are its page's exporter (useService); in any
// other the section is a frontend whose http-request rules they are, and
// a backend of its name, with no server when it has none (as haproxy
// runs it: a request no rule answers gets 503). It reports whether
// endListen goes on.
func (p *parser) serviceListen(monitor, stats bool) bool {
	ls := p.ls
	if stats {
		for _, l := range ls.serviceLines {
			p.useService(l)
		}
		return true
	}
	first := ls.serviceLines[0]
	if ls.mode != "http" {
		// haproxy warns and ignores http-request rules in mode tcp
		// (tcpModeHTTP, at the end of a forwarding listen).
		return true
	}
	if ls.forwardLine != 0 {
		return true
	}
	if monitor {
		p.errorf(line{num: ls.monitorLine}, "monitor-uri", "%s serves both monitor-uri and http-request use-service (line %d): not supported by vipstack "+
			"(accepted: use-service in a stats listen, in a listen without monitor-uri, or in a frontend with monitor-uri)", p.key, first.num)
		return false
	}
	p.listenForwards(first)
	return true
}

// proxyName is the frontend, backend or listen section being read as
// haproxy's messages name it: "frontend 'NAME'", "backend 'NAME'",
// "proxy 'NAME'" for a listen.
func (p *parser) proxyName() string {
	kind, name, _ := strings.Cut(p.key, " ")
	if kind == "listen" {
		kind = "proxy"
	}
	return kind + " '" + name + "'"
}
