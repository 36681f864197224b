package lbkernel

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Mode is `vipstack lb --datapath`: which frontends the kernel serves.
type Mode string

const (
	// Relay relays every connection in user space (the default).
	Relay Mode = "relay"
	// Kernel serves every mode tcp frontend with nftables DNAT and
	// refuses the start (or a reload) when one needs user space.
	Kernel Mode = "kernel"
	// Auto serves with nftables the mode tcp frontends that can be, and
	// relays the others, saying which and why.
	Auto Mode = "auto"
)

// Modes are the accepted values of --datapath.
var Modes = []Mode{Relay, Kernel, Auto}

// ParseMode reads a --datapath value.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("datapath %q: accepted: relay, kernel or auto", s)
}

// Frontend is one mode tcp frontend the kernel serves.
type Frontend struct {
	Name    string
	Backend string
	Balance lbconfig.Balance // RoundRobin or Source
	Binds   []Bind
	// MaxConn is the frontend's maxconn, which the kernel path does not
	// enforce (see notes).
	MaxConn int
}

// Bind is one address a Frontend captures: an IP (unspecified: every
// local address of its family) and a port, for IPv4, IPv6 or both.
type Bind struct {
	Addr     netip.AddrPort
	IPv4     bool
	IPv6     bool
	Wildcard bool // Addr's IP is unspecified: any local address
}

// Decision says where a mode tcp frontend runs and why (one log line
// per proxy in Auto).
type Decision struct {
	Proxy  string // "frontend main"
	Kernel bool
	Why    string
}

// Plan is what the kernel serves for one configuration.
type Plan struct {
	Frontends []Frontend
	// Backends are the backends of Frontends, each once, in
	// configuration order: each has its own map in the table.
	Backends []string
	// Family is, by backend, the address family of its servers (4 or
	// 6; 0 for a backend without servers).
	Family map[string]int
	// Remote is, by backend, whether a server is not a loopback
	// address: the output chain then leaves clients with a loopback
	// source to the relay (DNAT from 127.0.0.1 to another host needs
	// route_localnet, which vipstack does not set).
	Remote    map[string]bool
	Decisions []Decision
	// Notes are settings the kernel path accepts but applies otherwise
	// than the relay (timeouts, retries): logged at start, never silent.
	Notes []string
	// SuspectFor is how long a server whose port refused a connection
	// (a TCP reset before the handshake completed) stays out of the
	// kernel's maps unless its check decides first: (fall+1) x inter of
	// the slowest checked server, MinSuspect..MaxSuspect.
	SuspectFor time.Duration
	// DNATTimeouts, when set, are the conntrack timeouts (seconds, by
	// TCPStates) that the frontends' chains give the connections they
	// DNAT, through the table's ct timeout object; nil leaves them the
	// host's. Path.Build sets them with DNATTimeouts.
	DNATTimeouts []uint32
}

// The bounds of Plan.SuspectFor.
const (
	MinSuspect = time.Second
	MaxSuspect = 30 * time.Second
)

// haproxy's check defaults: inter 2s, fall 3.
const (
	defaultInter = 2 * time.Second
	defaultFall  = 3
)

// suspectFor is Plan.SuspectFor for backend b's servers and d so far.
func suspectFor(b *lbconfig.Backend, d time.Duration) time.Duration {
	for _, s := range b.Servers {
		if !s.Check {
			continue // nothing decides for it: the timeout alone
		}
		inter, fall := s.Inter, s.Fall
		if inter <= 0 {
			inter = defaultInter
		}
		if fall <= 0 {
			fall = defaultFall
		}
		d = max(d, time.Duration(fall+1)*inter)
	}
	return min(max(d, MinSuspect), MaxSuspect)
}

// Build decides, for mode, which of cfg's mode tcp frontends the kernel
// serves. With Kernel, a frontend that needs user space is an error that
// names its file and line, the proxy and the directive; with Auto it stays
// with the relay and its Decision says why. Relay gives an empty plan.
func Build(cfg *lbconfig.Config, mode Mode) (*Plan, error) {
	p := &Plan{Family: map[string]int{}, Remote: map[string]bool{}}
	if mode == Relay || mode == "" {
		return p, nil
	}
	backends := map[string]*lbconfig.Backend{}
	for i := range cfg.Backends {
		backends[cfg.Backends[i].Name] = &cfg.Backends[i]
	}
	taken := map[string]bool{}
	for i := range cfg.Frontends {
		f := &cfg.Frontends[i]
		if f.HTTP != nil {
			p.Decisions = append(p.Decisions, Decision{Proxy: proxyName(cfg, f.Name), Why: "mode http: the HTTP proxy runs in user space"})
			continue
		}
		b := backends[f.Backend]
		if r := refusal(cfg, f, b); r != nil {
			if mode == Kernel {
				return nil, r
			}
			p.Decisions = append(p.Decisions, Decision{Proxy: r.Proxy, Why: r.Error()})
			continue
		}
		kf := Frontend{Name: f.Name, Backend: b.Name, Balance: balanceOf(b), MaxConn: frontendMaxConn(cfg, f)}
		fam := family(b)
		for _, bd := range f.Binds {
			kf.Binds = append(kf.Binds, bindOf(bd))
		}
		p.Frontends = append(p.Frontends, kf)
		p.Family[b.Name] = fam
		for _, sv := range b.Servers {
			p.Remote[b.Name] = p.Remote[b.Name] || !sv.Addr.Addr().IsLoopback()
		}
		p.SuspectFor = suspectFor(b, p.SuspectFor)
		if !taken[b.Name] {
			taken[b.Name] = true
			p.Backends = append(p.Backends, b.Name)
		}
		p.Decisions = append(p.Decisions, Decision{Proxy: proxyName(cfg, f.Name), Kernel: true, Why: kernelWhy(kf, fam)})
		p.Notes = append(p.Notes, notes(cfg, f, b)...)
	}
	return p, nil
}

// kernelWhy is the Decision text of a frontend the kernel serves.
func kernelWhy(f Frontend, fam int) string {
	why := fmt.Sprintf("nftables DNAT to backend %s, balance %s", f.Backend, f.Balance)
	for _, b := range f.Binds {
		if fam == 4 && b.IPv6 || fam == 6 && b.IPv4 {
			why += fmt.Sprintf("; clients of the other address family than the servers' (IPv%d) stay with the relay", fam)
			break
		}
	}
	return why
}

func balanceOf(b *lbconfig.Backend) lbconfig.Balance {
	if b.Balance == "" {
		return lbconfig.RoundRobin
	}
	return b.Balance
}

// family is the address family of b's servers (refusal has checked
// they share one).
func family(b *lbconfig.Backend) int {
	switch {
	case len(b.Servers) == 0:
		return 0
	case b.Servers[0].Addr.Addr().Is4():
		return 4
	}
	return 6
}

func bindOf(b lbconfig.Bind) Bind {
	a := b.Addr.Addr()
	out := Bind{Addr: b.Addr, Wildcard: a.IsUnspecified()}
	switch {
	case a.Is4():
		out.IPv4 = true
	case a.IsUnspecified():
		// `:::PORT`: IPv6, and IPv4 too unless v6only (the system's
		// default, bindv6only 0, is dual stack as the relay's socket).
		out.IPv6, out.IPv4 = true, !b.V6Only
	default:
		out.IPv6 = true
	}
	return out
}

func frontendMaxConn(cfg *lbconfig.Config, f *lbconfig.Frontend) int {
	if f.MaxConn > 0 {
		return f.MaxConn
	}
	return cfg.MaxConn
}

// proxyName names a frontend as the configuration does: "listen NAME"
// when it came from a listen section.
func proxyName(cfg *lbconfig.Config, name string) string {
	if _, ok := cfg.Source[lbconfig.ListenKey(name)]; ok {
		return lbconfig.ListenKey(name)
	}
	return lbconfig.FrontendKey(name)
}

// Refusal is a mode tcp frontend the kernel cannot serve as haproxy
// would: Directive, at Pos, needs the user-space relay.
type Refusal struct {
	Pos       string // "file:line", "" when unknown
	Proxy     string // "frontend main"
	Directive string // as haproxy names it
	Why       string
}

func (r *Refusal) Error() string {
	var b strings.Builder
	if r.Pos != "" {
		b.WriteString(r.Pos + ": ")
	}
	fmt.Fprintf(&b, "%s: %q needs the user-space relay: %s (accepted with --datapath kernel: mode tcp, plain binds, balance roundrobin or source (map-based), servers by IP address and port, checks of any kind, weights, backup; use --datapath auto or relay for this proxy)", r.Proxy, r.Directive, r.Why)
	return b.String()
}

// pos is the file and line of the first of keys the reader recorded.
func pos(cfg *lbconfig.Config, keys ...string) string {
	for _, k := range keys {
		if p, ok := cfg.Source[k]; ok {
			return p
		}
	}
	return ""
}

// Demote hands the frontends of backend to the relay, for why: Auto's
// answer to a condition found outside the configuration (forwarding off
// for a backend with servers on other hosts).
func (p *Plan) Demote(backend, why string) {
	var keep []Frontend
	for _, f := range p.Frontends {
		if f.Backend != backend {
			keep = append(keep, f)
			continue
		}
		for i := range p.Decisions {
			d := p.Decisions[i]
			if d.Kernel && (d.Proxy == lbconfig.FrontendKey(f.Name) || d.Proxy == lbconfig.ListenKey(f.Name)) {
				p.Decisions[i] = Decision{Proxy: p.Decisions[i].Proxy, Why: why}
			}
		}
	}
	p.Frontends = keep
	p.Backends = slices.DeleteFunc(p.Backends, func(b string) bool { return b == backend })
	delete(p.Family, backend)
	delete(p.Remote, backend)
}
