package haproxycfg

import (
	"strconv"
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// bindOpts are the bind parameters beyond v4v6.
type bindOpts struct {
	v6only bool
	name   string
	sock   lbconfig.BindSock
}

// maxBindPorts caps the ports one port range may open.
const maxBindPorts = 8192

// moreBindParam reads the bind parameter at params[0]: v6only (an IPv6
// wildcard takes IPv6 only) and name NAME (the listener's name, which
// haproxy shows only with option socket-stats, which vipstack does not
// have: no effect). It returns how many words it took.
func (p *parser) moreBindParam(l line, params []string, o *bindOpts) (int, bool) {
	switch params[0] {
	case "v6only":
		o.v6only = true
		return 1, true
	case "name":
		if len(params) < 2 {
			p.errorf(l, "bind", "bind parameter name needs a value")
			return 0, false
		}
		o.name = params[1]
		return 2, true
	}
	if n, ok, known := p.bindSockParam(l, params, &o.sock); known {
		return n, ok
	}
	p.errorf(l, "bind", "bind parameter %q is not supported by vipstack (supported: v4v6, v6only, name, "+bindSockParams+", ssl, crt, crt-list, alpn, ciphers, ciphersuites, ssl-min-ver, ssl-max-ver, no-sslv3, no-tlsv1x, force-tlsv1x, no-tls-tickets)", params[0])
	return 0, false
}

// expandPorts turns ADDRESS:LOW-HIGH into one address per port, as
// haproxy opens one listener per port of a range (at most maxBindPorts);
// other addresses come back as they are.
func (p *parser) expandPorts(l line, a string) []string {
	i := strings.LastIndexByte(a, ':')
	if i < 0 {
		return []string{a}
	}
	lo, hi, ok := strings.Cut(a[i+1:], "-")
	if !ok {
		return []string{a}
	}
	from, err1 := strconv.Atoi(lo)
	to, err2 := strconv.Atoi(hi)
	switch {
	case err1 != nil || err2 != nil || from < 1 || to > 65535 || from > to:
		p.errorf(l, "bind", "bind address %q: port range %q is not LOW-HIGH within 1..65535", a, a[i+1:])
		return nil
	case to-from+1 > maxBindPorts:
		p.errorf(l, "bind", "bind address %q: %d ports is more than vipstack opens for one range (accepted: at most %d)", a, to-from+1, maxBindPorts)
		return nil
	}
	out := make([]string, 0, to-from+1)
	for port := from; port <= to; port++ {
		out = append(out, a[:i+1]+strconv.Itoa(port))
	}
	return out
}

// bindSockParams are the bind parameters that set socket options.
const bindSockParams = "defer-accept, tfo, interface, transparent, backlog"

// bindSockParam reads a bind parameter that sets an option of the
// listening socket (lbconfig.BindSock). known is false when params[0]
// is none of them.
func (p *parser) bindSockParam(l line, params []string, s *lbconfig.BindSock) (n int, ok, known bool) {
	switch params[0] {
	case "defer-accept":
		s.DeferAccept = true
	case "tfo":
		s.TFO = true
	case "transparent":
		s.Transparent = true
	case "interface":
		if len(params) < 2 || params[1] == "" {
			p.errorf(l, "bind", "bind parameter interface needs a value (accepted: interface NAME, a network interface name)")
			return 0, false, true
		}
		if len(params[1]) > 15 || strings.ContainsAny(params[1], "/ ") {
			p.errorf(l, "bind", "bind parameter interface %q is not an interface name (accepted: at most 15 characters, no '/' or space)", params[1])
			return 0, false, true
		}
		s.Interface = params[1]
		return 2, true, true
	case "backlog":
		if len(params) < 2 {
			p.errorf(l, "bind", "bind parameter backlog needs a value (accepted: backlog N, a queue length of 1 or more)")
			return 0, false, true
		}
		v, ok := p.intArg(l, "bind backlog", params[1], 1, "a queue length of 1 or more")
		if !ok {
			return 0, false, true
		}
		s.Backlog = v
		return 2, true, true
	default:
		return 0, false, false
	}
	return 1, true, true
}

// proxyBacklog reads a proxy's `backlog N`: the listen queue of its binds
// that set none. A backend has no binds: haproxy warns and ignores it.
func (p *parser) proxyBacklog(l line, o *proxyOpts, fe bool) {
	if !fe {
		p.warnf(l, "'backlog' ignored because %s has no frontend capability.", quoteProxy(p.key))
		return
	}
	if !p.once(l, "backlog") {
		return
	}
	if args, ok := p.nargs(l, 1, 1, 1, "a queue length"); ok {
		o.backlog, _ = p.intArg(l, "backlog", args[0], 0, "0..2147483647; 0 means the system's")
	}
}

// randomDraws refuses `balance random(N)` with N other than haproxy's
// default of 2 draws, the one vipstack makes, and returns the algorithm
// (random(2) as random) and whether the line may go on.
func (p *parser) randomDraws(l line, alg string) (lbconfig.Balance, bool) {
	switch {
	case alg == "random(2)":
		return lbconfig.Random, true
	case strings.HasPrefix(alg, "random("):
		p.errorf(l, "balance", "balance %s: vipstack draws 2 servers (accepted: random, random(2))", alg)
		return "", false
	}
	return lbconfig.Balance(alg), true
}
