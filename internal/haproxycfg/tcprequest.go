package haproxycfg

import "github.com/vipstack/vipstack/internal/lbconfig"

// tcpRequestAccepted is what vipstack takes of tcp-request, for messages.
const tcpRequestAccepted = "tcp-request inspect-delay TIME, which has no effect without tcp-request content rules, as in haproxy"

// tcpRequest reads a tcp-request line of a frontend or listen section.
// vipstack has no tcp-request content or connection rules, so the only
// form it takes is `tcp-request inspect-delay TIME`: haproxy waits for
// content only to evaluate content rules, and a section without them
// (the kubeadm-style API frontends that set the delay by habit)
// forwards at once, which is what vipstack does. Any rule is an error.
func (p *parser) tcpRequest(l line) {
	if len(l.words) < 2 || l.words[1] != "inspect-delay" {
		what := "tcp-request"
		if len(l.words) > 1 {
			what += " " + l.words[1]
		}
		p.errorf(l, "tcp-request", "%q is not supported by vipstack, which has no tcp-request rules (accepted: %s)", what, tcpRequestAccepted)
		return
	}
	const kw = "tcp-request inspect-delay"
	if len(l.words) != 3 {
		p.errorf(l, "tcp-request", "'%s' expects a positive delay in milliseconds, in %s (accepted: %s)", kw, quoteProxy(p.key), tcpRequestAccepted)
		return
	}
	if _, ok := p.timeArg(l, kw, l.words[2], msUnit); !ok {
		return
	}
	if _, ok := p.seen[kw]; ok {
		p.warnf(l, "ignoring %s (was already defined) in %s", kw, quoteProxy(p.key))
		return
	}
	p.seen[kw] = l.num
	p.source(lbconfig.ItemKey(p.key, kw), l)
}
