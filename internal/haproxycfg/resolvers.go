package haproxycfg

import (
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// resolversKeywords are what a resolvers section accepts.
const resolversKeywords = "nameserver, resolve_retries, timeout resolve, timeout retry, hold valid, hold nx, hold timeout, hold refused, hold other, hold obsolete, accepted_payload_size, parse-resolv-conf"

// openResolvers starts `resolvers NAME`.
func (p *parser) openResolvers(l line) {
	args, ok := p.nargs(l, 1, 1, 1, "its name")
	if !ok {
		return
	}
	name := args[0]
	if p.cfg.ResolversByName(name) != nil {
		p.errorf(l, "resolvers", "resolvers %s is defined twice (accepted: unique names)", name)
		return
	}
	p.key = "resolvers " + name
	p.source(p.key, l)
	p.kind = secResolvers
	p.cfg.Resolvers = append(p.cfg.Resolvers, lbconfig.Resolvers{Name: name, Retries: lbconfig.DefaultResolveRetries,
		Resolve: lbconfig.DefaultResolveTimeout, Retry: lbconfig.DefaultResolveTimeout, Valid: lbconfig.DefaultHoldValid,
		NX: lbconfig.DefaultHoldFailure, Timeout: lbconfig.DefaultHoldFailure, Refused: lbconfig.DefaultHoldFailure,
		Other: lbconfig.DefaultHoldFailure, PayloadSize: 512})
}

func (p *parser) resolversLine(l line) {
	r := &p.cfg.Resolvers[len(p.cfg.Resolvers)-1]
	kw := l.kw()
	if len(l.words) > 1 && (kw == "timeout" || kw == "hold") {
		kw += " " + l.words[1]
	}
	duration := func(dst *time.Duration) {
		if args, ok := p.nargs(l, 2, 1, 1, "a time such as 10s"); ok {
			if d, ok := p.timeArg(l, kw, args[0], msUnit); ok {
				*dst = d
			}
		}
	}
	switch kw {
	case "nameserver":
		args, ok := p.nargs(l, 1, 2, 2, "NAME ADDRESS:PORT")
		if !ok {
			return
		}
		ap, err := netip.ParseAddrPort(strings.TrimPrefix(args[1], "udp@"))
		if err != nil {
			p.errorf(l, kw, "nameserver %s: address %q is not IP:PORT (accepted: nameserver NAME IP:PORT, for UDP)", args[0], args[1])
			return
		}
		r.Nameservers = append(r.Nameservers, ap)
	case "parse-resolv-conf":
		if _, ok := p.nargs(l, 1, 0, 0, ""); ok {
			r.Nameservers = append(r.Nameservers, resolvConfServers()...)
		}
	case "resolve_retries":
		if args, ok := p.nargs(l, 1, 1, 1, "a number"); ok {
			if n, ok := p.intArg(l, kw, args[0], 1, "1 or more"); ok {
				r.Retries = n
			}
		}
	case "accepted_payload_size":
		if args, ok := p.nargs(l, 1, 1, 1, "a size, 512..65535"); ok {
			n, ok := p.intArg(l, kw, args[0], 512, "512..65535")
			if ok && n > 65535 {
				p.errorf(l, kw, "accepted_payload_size %d is out of range (accepted: 512..65535)", n)
				return
			}
			r.PayloadSize = n
		}
	case "timeout resolve":
		duration(&r.Resolve)
	case "timeout retry":
		duration(&r.Retry)
	case "hold valid":
		duration(&r.Valid)
	case "hold nx":
		duration(&r.NX)
	case "hold timeout":
		duration(&r.Timeout)
	case "hold refused":
		duration(&r.Refused)
	case "hold other":
		duration(&r.Other)
	case "hold obsolete":
		duration(&r.Obsolete)
	default:
		p.errorf(l, l.kw(), "keyword %q in %s is not supported by vipstack (supported: %s)", kw, p.key, resolversKeywords)
	}
}

// endResolvers checks the section.
func (p *parser) endResolvers() {
	r := &p.cfg.Resolvers[len(p.cfg.Resolvers)-1]
	if len(r.Nameservers) == 0 && !p.broken {
		p.errorf(line{num: p.secLine}, "resolvers", "%s has no nameserver (accepted: nameserver NAME IP:PORT, or parse-resolv-conf)", p.key)
	}
}

// resolvConfServers are /etc/resolv.conf's nameservers, on port 53.
func resolvConfServers() []netip.AddrPort {
	var out []netip.AddrPort
	b, err := readResolvConf()
	if err != nil {
		return nil
	}
	for _, ln := range strings.Split(string(b), "\n") {
		f := strings.Fields(ln)
		if len(f) >= 2 && f[0] == "nameserver" {
			if ip, err := netip.ParseAddr(f[1]); err == nil {
				out = append(out, netip.AddrPortFrom(ip, 53))
			}
		}
	}
	return out
}

// initAddr finds the first address of server s, named host, as
// `init-addr` says (default "last,libc"): last (the server-state file,
// which vipstack does not load: skipped), libc (the system's resolver),
// none (no address: the server waits in maintenance for its resolvers),
// or an IP address. It reports false after an error, in haproxy's words
// when nothing resolved.
func (p *parser) initAddr(l line, s *lbconfig.Server, host string, fail func(kw, format string, a ...any)) bool {
	s.Host = host
	methods := s.InitAddr
	if methods == "" {
		methods = "last,libc"
	}
	port := s.Addr.Port()
	failed := false // libc found nothing
	why := ""
	for _, m := range strings.Split(methods, ",") {
		switch m {
		case "last":
		case "libc":
			// haproxy asks libc only for names of letters, digits, '-',
			// '_' and '.' (measured with haproxy 2.6 -c and an /etc/hosts
			// naming them): a placeholder such as <node1-ip> does not
			// resolve even where the system resolver would answer it.
			if !hostName(host) {
				failed, why = true, "it is not a host name: haproxy resolves names of letters, digits, '-', '_' and '.' only; "
				continue
			}
			if ips, err := p.opts.LookupHost(host); err == nil && len(ips) > 0 {
				s.Addr = netip.AddrPortFrom(pickFamily(ips, s.ResolvePrefer), port)
				return true
			}
			failed = true
		case "none":
			// Without resolvers it stays in maintenance for good, as
			// in haproxy (whose runtime API could set its address).
			// haproxy warns when libc was asked first and failed.
			if failed {
				p.warnf(l, "'server %s/%s' : could not resolve address '%s', disabling server.", p.be.Name, s.Name, host)
			}
			s.Unresolved = true
			s.Addr = netip.AddrPortFrom(netip.IPv4Unspecified(), port)
			return true
		default:
			ip, _ := netip.ParseAddr(m)
			s.Addr = netip.AddrPortFrom(ip.Unmap(), port)
			return true
		}
	}
	fail("server", "could not resolve address '%s' (%saccepted: a host name the system resolves at start, an IP address, or init-addr ...,none with resolvers)", host, why)
	return false
}

// pickFamily is the first address of the family prefer names ("ipv4",
// or "ipv6", haproxy's default), or the first address when none is of
// it.
func pickFamily(ips []netip.Addr, prefer string) netip.Addr {
	if prefer == "" {
		return ips[0].Unmap() // getaddrinfo's first, as haproxy takes it
	}
	for _, ip := range ips {
		ip = ip.Unmap()
		if (prefer == "ipv4") == ip.Is4() {
			return ip
		}
	}
	return ips[0].Unmap()
}

// readResolvConf reads the system's resolver configuration.
func readResolvConf() ([]byte, error) { return os.ReadFile("/etc/resolv.conf") }

// checkResolvers checks that the resolvers servers name exist, in
// haproxy's words ("can't find resolvers section 'x' for server 'y'").
func (p *parser) checkResolvers() {
	for _, b := range p.cfg.Backends {
		for _, s := range b.Servers {
			if s.Resolvers != "" && p.cfg.ResolversByName(s.Resolvers) == nil {
				pos := p.cfg.Source[lbconfig.ServerKey(b.Name, s.Name)]
				p.errorf(line{num: atoiLine(pos)}, "resolvers", "backend %s, server %s: can't find resolvers section '%s' (accepted: the name of a resolvers section)", b.Name, s.Name, s.Resolvers)
			}
		}
	}
}
