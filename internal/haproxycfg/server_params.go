package haproxycfg

import (
	"fmt"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// moreServerParam reads the server parameters beyond the first set
// (serverParams lists them all): handled is false for a parameter it
// does not know; ok is false after it reported an error through fail.
// value takes the parameter's value.
func (p *parser) moreServerParam(param string, value func(want string) (string, bool), s *lbconfig.Server,
	fail func(kw, format string, a ...any)) (handled, ok bool) {
	duration := func(dst *time.Duration, zeroOK bool) bool {
		v, ok := value("a time such as 5s")
		if !ok {
			return false
		}
		d, msg, warn := parseTime(v, msUnit)
		switch {
		case msg != "":
			fail(param, "%s %q %s", param, v, msg)
			return false
		case d == 0 && !zeroOK:
			fail(param, "%s %s is out of range (accepted: 1ms or more)", param, v)
			return false
		}
		if warn != "" {
			p.warnf(p.cur, "%s", warn)
		}
		*dst = d
		return true
	}
	number := func(dst *int, lo, hi int, want string) bool {
		v, ok := value(want)
		if !ok {
			return false
		}
		n, msg := intValue(param, v, lo, want)
		if msg == "" && hi > 0 && n > hi {
			msg = fmt.Sprintf("%s %d is out of range (accepted: %s)", param, n, want)
		}
		if msg != "" {
			fail(param, "%s", msg)
			return false
		}
		*dst = n
		return true
	}
	switch param {
	case "fastinter":
		return true, duration(&s.FastInter, false)
	case "downinter":
		return true, duration(&s.DownInter, false)
	case "slowstart":
		return true, duration(&s.SlowStart, true)
	case "port":
		return true, number(&s.CheckPort, 1, 65535, "1..65535")
	case "maxconn":
		return true, number(&s.MaxConn, 0, 0, "0..2147483647; 0 means no limit")
	case "maxqueue":
		return true, number(&s.MaxQueue, 0, 0, "0..2147483647; 0 means no limit")
	case "id":
		return true, number(&s.ID, 1, 0, "1 or more")
	case "backup":
		s.Backup = true
		return true, true
	case "disabled", "enabled":
		s.Disabled = param == "disabled"
		return true, true
	case "resolvers":
		v, ok := value("the name of a resolvers section")
		s.Resolvers = v
		return true, ok
	case "resolve-prefer":
		v, ok := value("ipv4 or ipv6")
		if ok && v != "ipv4" && v != "ipv6" {
			fail(param, "resolve-prefer %q is not a family (accepted: ipv4, ipv6)", v)
			return true, false
		}
		s.ResolvePrefer = v
		return true, ok
	case "init-addr":
		v, ok := value("last, libc, none or an IP address, comma separated")
		if !ok {
			return true, false
		}
		for _, m := range strings.Split(v, ",") {
			if m != "last" && m != "libc" && m != "none" && !isIPText(m) {
				fail(param, "init-addr method %q is not one haproxy knows (accepted: last, libc, none, an IP address)", m)
				return true, false
			}
		}
		s.InitAddr = v
		return true, true
	case "on-marked-down":
		v, ok := value("shutdown-sessions")
		if !ok {
			return true, false
		}
		if v != "shutdown-sessions" {
			fail(param, "on-marked-down %q is not an action haproxy knows (accepted: shutdown-sessions)", v)
			return true, false
		}
		s.ShutdownOnDown = true
		return true, true
	}
	return false, false
}

// serverIDs checks that the servers' ids (`id`) are unique in their
// backend, as haproxy requires.
func (p *parser) serverIDs(l line, s *lbconfig.Server) bool {
	if s.ID == 0 {
		return true
	}
	for _, o := range p.be.Servers {
		if o.ID == s.ID {
			p.errorf(l, "server", "%s, server %s: id %d is already the id of server %s (accepted: unique ids in a backend)", p.key, s.Name, s.ID, o.Name)
			return false
		}
	}
	return true
}

// withoutPort reports whether a server address has no port (an IPv4
// address or a host name without ':'), and returns it with a stand-in
// port for parseAddr, which the caller sets back to 0.
func withoutPort(text string) (string, bool) {
	if text == "" || strings.ContainsAny(text, ":/@[") {
		return text, false
	}
	return text + ":1", true
}
