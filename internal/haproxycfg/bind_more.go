package haproxycfg

import (
	"strconv"
	"strings"
)

// bindOpts are the bind parameters beyond v4v6.
type bindOpts struct {
	v6only bool
	name   string
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
	p.errorf(l, "bind", "bind parameter %q is not supported by vipstack (supported: v4v6, v6only, name, ssl, crt, crt-list, alpn, ciphers, ciphersuites, ssl-min-ver, ssl-max-ver, no-sslv3, no-tlsv1x, force-tlsv1x, no-tls-tickets)", params[0])
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
