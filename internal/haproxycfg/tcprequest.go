package haproxycfg

import (
	"slices"
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// tcpRequestAccepted is what vipstack takes of tcp-request, for messages.
const tcpRequestAccepted = "tcp-request inspect-delay TIME; tcp-request connection " + lbconfig.TCPConnectionActions +
	"; tcp-request content " + lbconfig.TCPContentActions + "; each rule maybe with if|unless CONDITION over " +
	"always_false, always_true, dst, dst_port, src, src_port"

// tcpRequest reads a tcp-request line of a frontend or listen section:
// `tcp-request inspect-delay TIME`, or a connection or content rule
// (tcpRule). haproxy waits for content only to evaluate content rules
// that need it; vipstack's content rules look at layer 4 only, which is
// known at once, so nothing waits, as in haproxy for such rules.
func (p *parser) tcpRequest(l line) {
	if len(l.words) >= 2 && (l.words[1] == "connection" || l.words[1] == "content") {
		p.tcpRule(l, l.words[1])
		return
	}
	if len(l.words) < 2 || l.words[1] != "inspect-delay" {
		what := "tcp-request"
		if len(l.words) > 1 {
			what += " " + l.words[1]
		}
		p.errorf(l, "tcp-request", "%q is not supported by vipstack (accepted: %s)", what, tcpRequestAccepted)
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

// tcpRequestBackend reads a backend's tcp-request line: inspect-delay as
// in a frontend (no effect without content rules); connection rules are
// haproxy's error, content rules vipstack's.
func (p *parser) tcpRequestBackend(l line) {
	if len(l.words) >= 2 {
		switch l.words[1] {
		case "connection":
			p.errorf(l, "tcp-request", "tcp-request connection is not allowed because %s is not a frontend (accepted: tcp-request connection rules in a frontend or listen)", p.key)
			return
		case "content":
			p.errorf(l, "tcp-request", "tcp-request content rules in %s are not supported by vipstack (accepted: tcp-request content rules in a frontend or listen; tcp-request inspect-delay TIME in a backend)", p.key)
			return
		}
	}
	p.tcpRequest(l)
}

// tcpRule reads `tcp-request connection|content ACTION [EXPR] [if|unless
// CONDITION]` into the section's rules.
func (p *parser) tcpRule(l line, kind string) {
	kw := "tcp-request " + kind
	accepted := lbconfig.TCPConnectionActions
	if kind == "content" {
		accepted = lbconfig.TCPContentActions
	}
	if len(l.words) < 3 {
		p.errorf(l, kw, "'%s' expects an action (accepted by vipstack: %s)", kw, accepted)
		return
	}
	action := l.words[2]
	args, condWords := splitCond(l.words[3:])
	r := lbconfig.TCPRule{Action: action, At: p.at(l)}
	switch {
	case !lbconfig.TCPActionAllowed(kind, action):
		p.errorf(l, kw, "'%s %s' is not supported by vipstack in %s (accepted: %s)", kw, action, p.proxyName(), accepted)
		return
	case action == "set-src" || action == "set-dst":
		if len(args) != 1 {
			p.errorf(l, kw, "'%s %s' expects one sample expression, got %q (accepted: %s)", kw, action, strings.Join(args, " "), lbconfig.AddrExprs)
			return
		}
		e, err := lbconfig.ParseAddrExpr(args[0])
		if err != nil {
			p.errorf(l, kw, "%s %s: %v", kw, action, err)
			return
		}
		r.Expr = &e
	case len(args) > 0:
		p.errorf(l, kw, "'%s %s' expects either 'if' or 'unless' followed by a condition but found '%s' (accepted: %s %s [if|unless CONDITION])", kw, action, args[0], kw, action)
		return
	}
	cond, ok := p.cond(l, kw+" "+action, condWords, true)
	if !ok {
		return
	}
	r.Cond = cond
	tr := &p.hs.tcp
	if kind == "connection" {
		if len(tr.Content) > 0 {
			p.warnf(l, "a 'tcp-request' rule placed after a 'tcp-request content' rule will still be processed before.")
		}
		tr.Connection = append(tr.Connection, r)
	} else {
		tr.Content = append(tr.Content, r)
	}
	p.source(lbconfig.ItemKey(p.key, kw), l)
	if p.hs.tcpLine == 0 {
		p.hs.tcpLine = l.num
	}
}

// tcpRulesEnd gives a mode tcp frontend (or forwarding listen) its
// tcp-request rules with the section's acls, checking that each
// condition can be known on layer 4: a connection rule's acl that
// cannot never matches (haproxy's warning); a content rule's is an
// error, as haproxy would wait for the data vipstack does not inspect.
func (p *parser) tcpRulesEnd(fe *lbconfig.Frontend) {
	tr := p.hs.tcp
	if len(tr.Connection)+len(tr.Content) == 0 {
		return
	}
	if fe.HTTP != nil {
		p.errorf(line{num: p.hs.tcpLine}, "tcp-request", "tcp-request rules in %s (mode http) are not supported by vipstack (accepted: tcp-request connection and content rules in mode tcp sections)", p.proxyName())
		return
	}
	acls := p.hs.fe.ACLs
	for kind, rules := range map[string][]lbconfig.TCPRule{"connection": tr.Connection, "content": tr.Content} {
		for _, r := range rules {
			p.l4Cond(kind, r, acls)
		}
	}
	fe.TCPRequest = &lbconfig.TCPRequest{ACLs: acls, Connection: tr.Connection, Content: tr.Content}
}

// l4Cond checks that the acls of r's condition use layer 4 fetches.
func (p *parser) l4Cond(kind string, r lbconfig.TCPRule, acls map[string][]lbconfig.ACLTest) {
	if r.Cond == nil {
		return
	}
	l := line{num: atoiLine(r.At)}
	kw := "tcp-request " + kind
	l4 := func(t *lbconfig.ACLTest) bool { return slices.Contains(lbconfig.L4Fetches, t.Fetch) }
	for _, and := range r.Cond.Or {
		for _, t := range and {
			var bad *lbconfig.ACLTest
			switch {
			case t.Anon != nil:
				if !l4(t.Anon) {
					bad = t.Anon
				}
			default:
				tests, ok := acls[t.Name]
				if !ok {
					continue // Validate names the missing acl
				}
				if i := slices.IndexFunc(tests, func(t lbconfig.ACLTest) bool { return l4(&t) }); i < 0 {
					bad = &tests[0]
				}
			}
			switch {
			case bad == nil:
			case kind == "content":
				p.errorf(l, kw, "%s %s: acl criterion %q needs the connection's data, which vipstack does not inspect in mode tcp (accepted: %s)", kw, r.Action, bad.Keyword, strings.Join(lbconfig.L4Fetches, ", "))
			case t.Anon != nil:
				p.warnf(l, "anonymous acl will never match in '%s' because it uses keyword '%s' which is incompatible with 'frontend %s rule'", kw, bad.Keyword, kw)
			default:
				p.warnf(l, "acl '%s' will never match in '%s' because it only involves keywords that are incompatible with 'frontend %s rule'", t.Name, kw, kw)
			}
		}
	}
}

// tcpModeHTTP settles a mode tcp section's HTTP keywords: haproxy warns
// and ignores its http-request and http-response rules (vipstack in the
// same words); any other HTTP keyword is an error.
func (p *parser) tcpModeHTTP() {
	hs := p.hs
	if hs.strictFirst != 0 {
		p.errorf(line{num: hs.strictFirst}, hs.strictFirstKw, "%s in %s (mode tcp) is not supported by vipstack: its use_backend, redirect, cookie, monitor-uri, stats and other HTTP keywords work in mode http only (accepted: mode http in %s)", hs.strictFirstKw, p.key, p.key)
	}
	for _, w := range []struct {
		kw string
		at int
	}{{"http-request", hs.reqLine}, {"http-response", hs.respLine}} {
		if w.at != 0 {
			p.warnf(line{num: w.at}, "'%s' rules ignored for %s as they require HTTP mode.", w.kw, p.proxyName())
		}
	}
}
