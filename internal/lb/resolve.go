package lb

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Servers that name a resolvers section are re-resolved while the LB
// runs, as haproxy does: a good answer stands for `hold valid`, then the
// name is asked again; a changed address becomes the server's (a new
// configuration with that address is applied: the server's counters and
// check start over, its connections stay); after failures (NXDOMAIN,
// timeout, refused, other) the last good address is kept for the hold
// of that failure, then the server goes into maintenance until a good
// answer. A server without an address (init-addr none) is in
// maintenance until its first good answer.

// dnsLoops are the running resolutions, by dnsKey.
type dnsLoops map[string]context.CancelFunc

func (d dnsLoops) stopAll() {
	for k, cancel := range d {
		cancel()
		delete(d, k)
	}
}

// dnsKey identifies a resolution across configurations: the server, its
// name and how it is resolved, not its address (which the resolution
// changes).
func dnsKey(backend string, s lbconfig.Server, r *lbconfig.Resolvers) string {
	return fmt.Sprintf("%s/%s %s %s %v", backend, s.Name, s.Host, s.ResolvePrefer, *r)
}

// applyResolvers starts the resolutions cfg needs and stops the others;
// l.mu is held.
func (l *LB) applyResolvers(cfg *lbconfig.Config) {
	if l.dns == nil {
		l.dns = dnsLoops{}
	}
	want := map[string]bool{}
	for _, b := range cfg.Backends {
		for _, s := range b.Servers {
			r := cfg.ResolversByName(s.Resolvers)
			if r == nil || s.Host == "" {
				continue
			}
			key := dnsKey(b.Name, s, r)
			want[key] = true
			if l.dns[key] != nil {
				continue
			}
			ctx, cancel := context.WithCancel(context.Background())
			l.dns[key] = cancel
			go l.resolveLoop(ctx, b.Name, s.Name, s.Host, s.ResolvePrefer, *r)
		}
	}
	for k, cancel := range l.dns {
		if !want[k] {
			cancel()
			delete(l.dns, k)
		}
	}
}

// errNX, errRefused are DNS answers that say the name has no address.
var (
	errNX      = errors.New("DNS NX status")
	errRefused = errors.New("DNS refused status")
	errTimeout = errors.New("DNS timeout status")
)

// resolveLoop resolves host for server name of backend until ctx ends.
func (l *LB) resolveLoop(ctx context.Context, backend, name, host, prefer string, r lbconfig.Resolvers) {
	lastGood := l.clk.Now()
	maint := false // this loop put the server into maintenance
	for {
		ip, err := resolveOnce(ctx, host, prefer, r)
		if ctx.Err() != nil {
			return
		}
		now := l.clk.Now()
		wait := r.Valid
		if err == nil {
			lastGood = now
			if maint {
				maint = false
				if e := l.SetServerAdmin(backend, name, stats.AdminReady); e == nil {
					l.log.Info("server leaves maintenance: its name resolves again", "backend", backend, "server", name, "host", host, "addr", ip.String())
				}
			}
			l.setServerIP(backend, name, ip)
		} else {
			wait = r.Resolve
			hold := r.Other
			switch {
			case errors.Is(err, errNX):
				hold = r.NX
			case errors.Is(err, errTimeout):
				hold = r.Timeout
			case errors.Is(err, errRefused):
				hold = r.Refused
			}
			l.log.Debug("server name resolution failed", "backend", backend, "server", name, "host", host, "err", err)
			if !maint && now.Sub(lastGood) >= hold && l.serverIP(backend, name).IsValid() {
				if e := l.SetServerAdmin(backend, name, stats.AdminMaint); e == nil {
					maint = true
					l.log.Warn(fmt.Sprintf("Server %s/%s is going DOWN for maintenance (%v).", backend, name, err), "host", host)
				}
			}
		}
		if wait <= 0 {
			wait = lbconfig.DefaultResolveTimeout
		}
		t := l.clk.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// serverIP is the address server name of backend has in the
// configuration in force; invalid when it has none (init-addr none).
func (l *LB) serverIP(backend, name string) netip.Addr {
	v := l.view.Load()
	if v == nil || v.cfg == nil {
		return netip.Addr{}
	}
	for _, b := range v.cfg.Backends {
		if b.Name != backend {
			continue
		}
		for _, s := range b.Servers {
			if s.Name == name && !s.Unresolved {
				return s.Addr.Addr()
			}
		}
	}
	return netip.Addr{}
}

// setServerIP makes ip the address of server name of backend, applying
// a copy of the configuration in force with it, when it changed.
func (l *LB) setServerIP(backend, name string, ip netip.Addr) {
	v := l.view.Load()
	if v == nil || v.cfg == nil {
		return
	}
	cfg := *v.cfg
	cfg.Backends = slices.Clone(cfg.Backends)
	for i := range cfg.Backends {
		b := &cfg.Backends[i]
		if b.Name != backend {
			continue
		}
		for j := range b.Servers {
			s := b.Servers[j]
			if s.Name != name || (!s.Unresolved && s.Addr.Addr() == ip) {
				continue
			}
			old := "none"
			if !s.Unresolved {
				old = s.Addr.Addr().String()
			}
			b.Servers = slices.Clone(b.Servers)
			s.Addr, s.Unresolved = netip.AddrPortFrom(ip, s.Addr.Port()), false
			b.Servers[j] = s
			if err := l.Apply(&cfg); err != nil {
				l.log.Warn("could not apply a server's new address", "backend", backend, "server", name, "addr", ip.String(), "err", err)
				return
			}
			l.log.Info(fmt.Sprintf("%s/%s changed its IP from %s to %s by DNS cache.", backend, name, old, ip), "host", s.Host)
			return
		}
	}
}

// resolveOnce asks r's nameservers for host's address of the family
// prefer ("ipv4", or "ipv6" first by default, as haproxy), then of the
// other family; resolve_retries queries at most, each waiting `timeout
// retry` for its answer.
func resolveOnce(ctx context.Context, host, prefer string, r lbconfig.Resolvers) (netip.Addr, error) {
	types := []uint16{dns.TypeAAAA, dns.TypeA}
	if prefer == "ipv4" {
		types = []uint16{dns.TypeA, dns.TypeAAAA}
	}
	var last error = errTimeout
	for _, qt := range types {
		ip, err := query(ctx, host, qt, r)
		if err == nil {
			return ip, nil
		}
		last = err
		if errors.Is(err, errTimeout) {
			break
		}
	}
	return netip.Addr{}, last
}

// errNoAddr is a good answer without an address of the type asked.
var errNoAddr = errors.New("no address of that family")

func query(ctx context.Context, host string, qt uint16, r lbconfig.Resolvers) (netip.Addr, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(host), qt)
	m.SetEdns0(uint16(max(r.PayloadSize, 512)), false)
	timeout := r.Retry
	if timeout <= 0 {
		timeout = lbconfig.DefaultResolveTimeout
	}
	c := &dns.Client{Net: "udp", Timeout: timeout}
	tries := max(r.Retries, 1)
	for i := 0; i < tries && ctx.Err() == nil; i++ {
		ns := r.Nameservers[i%len(r.Nameservers)]
		in, _, err := c.ExchangeContext(ctx, m, ns.String())
		if err != nil {
			continue
		}
		switch in.Rcode {
		case dns.RcodeSuccess:
		case dns.RcodeNameError:
			return netip.Addr{}, errNX
		case dns.RcodeRefused:
			return netip.Addr{}, errRefused
		default:
			return netip.Addr{}, fmt.Errorf("DNS %s status", dns.RcodeToString[in.Rcode])
		}
		for _, rr := range in.Answer {
			switch a := rr.(type) {
			case *dns.A:
				if ip, ok := netip.AddrFromSlice(a.A.To4()); ok && qt == dns.TypeA {
					return ip, nil
				}
			case *dns.AAAA:
				if ip, ok := netip.AddrFromSlice(a.AAAA); ok && qt == dns.TypeAAAA {
					return ip.Unmap(), nil
				}
			}
		}
		return netip.Addr{}, errNoAddr
	}
	return netip.Addr{}, errTimeout
}
