package haproxycfg

import (
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Which side of a proxy each timeout belongs to: a frontend has the
// client side, a backend the server side, defaults and listen both.
const (
	clientTimeouts = "client client-fin"
	serverTimeouts = "server server-fin connect queue tunnel check"
	bothTimeouts   = "http-request http-keep-alive"
)

// timeoutInto reads `timeout NAME TIME` into t. what is "frontend",
// "backend" or "listen" for a proxy section, "" for defaults. In a proxy
// section, as haproxy 2.6 does (measured with haproxy -c): a timeout of
// the side the section lacks is ignored with haproxy's warning ("'timeout
// server' will be ignored because frontend 'fe' has no backend
// capability"), and a repeated one overrides the earlier with haproxy's
// warning ("overwriting 'timeout server' which was already specified");
// defaults take the last silently.
func (p *parser) timeoutInto(l line, t *lbconfig.Timeouts, what string) {
	kw := keyword(l.words)
	if len(l.words) < 2 {
		// One word that starts "timeout " (quotes joined it): no kind.
		p.errorf(l, kw, "timeout takes a name and a time (accepted timeouts: %s)", timeoutNames)
		return
	}
	name := l.words[1]
	dst := map[string]*time.Duration{
		"connect": &t.Connect, "client": &t.Client, "server": &t.Server, "tunnel": &t.Tunnel,
		"queue": &t.Queue, "http-request": &t.HTTPRequest, "http-keep-alive": &t.HTTPKeepAlive,
		"check": &t.Check, "client-fin": &t.ClientFin, "server-fin": &t.ServerFin,
	}[name]
	if dst == nil {
		p.errorf(l, l.kw(), "keyword %q in %s is not supported by vipstack (supported timeouts: %s)", kw, p.key, timeoutNames)
		return
	}
	args, ok := p.nargs(l, 2, 1, 1, "a time such as 10s")
	if !ok {
		return
	}
	d, ok := p.timeArg(l, kw, args[0], msUnit)
	if !ok {
		return
	}
	if what != "" {
		name := p.key[len(what)+1:]
		switch {
		case what == "frontend" && inList(serverTimeouts, l.words[1]):
			p.warnf(l, "'%s' will be ignored because frontend '%s' has no backend capability", kw, name)
			return
		case what == "backend" && inList(clientTimeouts, l.words[1]):
			p.warnf(l, "'%s' will be ignored because backend '%s' has no frontend capability", kw, name)
			return
		}
		if _, again := p.seen[kw]; again {
			p.warnf(l, "overwriting '%s' which was already specified", kw)
		}
	}
	p.seen[kw] = l.num
	p.source(lbconfig.ItemKey(p.key, kw), l)
	*dst = d
}
