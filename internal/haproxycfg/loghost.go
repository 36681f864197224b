package haproxycfg

import (
	"net/netip"
	"strings"
)

// logHost resolves a log target given as a host name ("rsyslog",
// "udp@logs.example:514"), as haproxy does once at start: the name's
// first address (of the family an ipv4@/udp4@ or ipv6@/udp6@ prefix
// asks for) takes its place. Other targets come back as written; a name
// that does not resolve is haproxy's error.
func (p *parser) logHost(l line, target string) (string, bool) {
	family, rest := "", target
	if f, r, ok := strings.Cut(target, "@"); ok && !strings.Contains(f, "/") {
		family, rest = f, r
	}
	switch family {
	case "", "udp", "udp4", "udp6", "ipv4", "ipv6":
	default:
		return target, true
	}
	host, port := rest, ""
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		host, port = rest[:i], rest[i:]
	}
	if !hostName(host) {
		return target, true
	}
	var ips []netip.Addr
	var err error
	if host == "localhost" {
		ips = []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1})}
	} else if p.opts.LookupHost != nil {
		ips, err = p.opts.LookupHost(host)
	}
	for _, ip := range ips {
		ip = ip.Unmap()
		if (family == "ipv4" || family == "udp4") && !ip.Is4() || (family == "ipv6" || family == "udp6") && !ip.Is6() {
			continue
		}
		a := ip.String()
		if ip.Is6() {
			a = "[" + a + "]"
		}
		if family != "" {
			a = family + "@" + a
		}
		return a + port, true
	}
	msg := "the name does not resolve here"
	if err != nil {
		msg = err.Error()
	}
	p.errorf(l, "log", "log : invalid address: '%s' in '%s' (%s; accepted: a host name this system resolves at start, an IP address, an absolute path, stdout or stderr)", host, target, msg)
	return "", false
}

// hostName reports whether s is a DNS host name rather than an address,
// a path or a stream: letters, digits, '-' and '.', with a letter.
func hostName(s string) bool {
	if s == "" || s == "stdout" || s == "stderr" || strings.HasPrefix(s, "[") {
		return false
	}
	letter := false
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letter = true
		case c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_':
		default:
			return false
		}
	}
	return letter
}
