package mdnsplugin

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"

	"github.com/vipstack/vipstack/internal/discovery"
	"github.com/vipstack/vipstack/internal/dns/clusterdns"
)

// Name is the directive's name.
const Name = "mdns"

// DefaultMinSRV is MIN_SRV when the line leaves it out (coredns-mdns's
// default).
const DefaultMinSRV = 3

// TTL is the TTL of every answer (coredns-mdns's address TTL).
const TTL = 60

// Config is one parsed mdns line.
type Config struct {
	Domain string     // lower-case FQDN the .local names are answered under
	MinSRV int        // fewest masters before the etcd SRV is answered
	Filter string     // cluster name; "" = every cluster
	Bind   netip.Addr // the browse interface is the one holding it; invalid = every interface
}

// NewSetup returns the setup function for the mdns directive, sharing
// browsers through p. CoreDNS keeps its plugin table per process, so the
// embedder registers the result once, e.g.
// plugin.Register(Name, NewSetup(NewBrowsers())).
func NewSetup(p *Browsers) caddy.SetupFunc {
	return func(c *caddy.Controller) error { return p.setup(c) }
}

// Browsers holds one process's browsers, one per distinct mdns line, and
// counts the running instances that use each. A reload that keeps a line
// (the same DOMAIN, MIN_SRV, FILTER and BIND_ADDRESS) hands the new
// instance the running browser and the nodes it knows: the new instance
// starts (its use counted) before the old one shuts down (its use
// released), so the browser never stops and the node names and etcd SRV
// are answered throughout. A new browser would know no node until mDNS
// answered it, and meanwhile the names would go to the next plugin
// (upstream, whose answer cache then holds). A browser stops when its
// last instance shuts down. It is safe for concurrent use.
type Browsers struct {
	// run browses for cfg on ifname, reporting every change of the node
	// set, until ctx is done; nil runs a browse-only discovery.MDNS. Tests
	// set a fake so that no socket opens.
	run func(ctx context.Context, cfg Config, ifname string, update func([]discovery.Node)) error

	mu sync.Mutex
	by map[Config]*browser
}

// NewBrowsers returns an empty set of browsers that browse mDNS.
func NewBrowsers() *Browsers { return &Browsers{by: map[Config]*browser{}} }

// get returns the browser for cfg, created (not started) if there is none.
// A line that never runs (a -check, a failed reload) leaves an idle entry
// with an empty registry: there are as many as distinct lines tried.
func (p *Browsers) get(cfg Config) *browser {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.by[cfg]
	if b == nil {
		b = &browser{cfg: cfg, reg: discovery.NewRegistry(), run: p.run}
		p.by[cfg] = b
	}
	return b
}

// acquire counts one more running instance using b, starting it for the
// first.
func (p *Browsers) acquire(b *browser) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b.users == 0 {
		if err := b.start(); err != nil {
			return err
		}
	}
	b.users++
	return nil
}

// release counts one running instance less using b, stopping it after the
// last; its registry is emptied so that a later start serves nothing stale.
func (p *Browsers) release(b *browser) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b.users == 0 {
		return nil
	}
	b.users--
	if b.users > 0 {
		return nil
	}
	err := b.stop()
	b.reg.Set(Name, nil)
	return err
}

func (p *Browsers) setup(c *caddy.Controller) error {
	cfg, err := parse(c)
	if err != nil {
		return plugin.Error(Name, err)
	}
	// One use per server block: setup runs once per key of the block.
	b, _ := c.ServerBlockStorage.(*browser)
	if b == nil {
		b = p.get(cfg)
		c.ServerBlockStorage = b
		c.OnStartup(func() error { return p.acquire(b) })
		c.OnShutdown(func() error { return p.release(b) })
	}
	h := clusterdns.New(clusterdns.Config{Zone: cfg.Domain, TTL: TTL, NodesOnly: true, MinSRV: cfg.MinSRV, Plugin: Name}, b.reg)
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		h.Next = next
		return h
	})
	return nil
}

// parse reads the server block's mdns line. Errors come from c.Errf, so
// they name the Corefile and line.
func parse(c *caddy.Controller) (Config, error) {
	cfg := Config{MinSRV: DefaultMinSRV}
	lines := 0
	for c.Next() {
		if lines > 0 {
			return Config{}, c.Errf("a second %s line in one server block; want one (a server block has one browser and one domain)", Name)
		}
		lines++
		args := c.RemainingArgs()
		if len(args) < 1 || len(args) > 4 {
			return Config{}, c.Errf("want %s DOMAIN [MIN_SRV [FILTER [BIND_ADDRESS]]] (e.g. %q), got %d arguments %q", Name, "mdns example.com 0 ostest 198.18.0.11", len(args), args)
		}
		if c.NextBlock() {
			return Config{}, c.Errf("%s takes no block; want one line %s DOMAIN [MIN_SRV [FILTER [BIND_ADDRESS]]]", Name, Name)
		}
		zone, err := clusterdns.ParseZone(args[0])
		if err != nil {
			return Config{}, c.Errf("DOMAIN: %v", err)
		}
		if err := clusterdns.InServerBlock(zone, c.ServerBlockKeys, Name); err != nil {
			return Config{}, c.Errf("DOMAIN: %v", err)
		}
		cfg.Domain = zone
		if len(args) > 1 {
			n, err := strconv.Atoi(args[1])
			if err != nil || n < 0 {
				return Config{}, c.Errf("MIN_SRV %q is not a number; want the fewest etcd SRV records to answer with, 0 or more (OpenShift sets 0)", args[1])
			}
			cfg.MinSRV = n
		}
		if len(args) > 2 {
			// The same rule as a cluster name for vipstack's own mDNS.
			if err := (&discovery.MDNS{Cluster: args[2], OpenShift: true}).Validate(); err != nil {
				return Config{}, c.Errf("FILTER %q: want the cluster name mdns-publisher puts in its instance names (letters, digits and inner hyphens, e.g. ostest): %v", args[2], err)
			}
			cfg.Filter = args[2]
		}
		if len(args) > 3 {
			a, err := netip.ParseAddr(args[3])
			if err != nil || a.Zone() != "" || a.IsUnspecified() || a.IsMulticast() {
				return Config{}, c.Errf("BIND_ADDRESS %q is not an IP address; want this node's unicast address (IPv4 or IPv6, no zone), whose interface is browsed", args[3])
			}
			cfg.Bind = a.Unmap()
		}
	}
	if lines == 0 {
		return Config{}, c.ArgErr()
	}
	return cfg, nil
}

// browser runs a browse-only discovery.MDNS for one mdns line while an
// instance using it runs, feeding reg.
type browser struct {
	cfg   Config
	reg   *discovery.Registry
	run   func(ctx context.Context, cfg Config, ifname string, update func([]discovery.Node)) error // nil: discovery.MDNS
	users int                                                                                       // running instances using it; guarded by Browsers.mu

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// start begins browsing. A bad interface fails the start; socket errors are
// logged (the plugin then answers nothing and passes every query on).
func (b *browser) start() error {
	ifname, err := interfaceOf(b.cfg.Bind)
	if err != nil {
		return plugin.Error(Name, err)
	}
	// CoreDNS logs through the standard log package (clog); so do we.
	logger := slog.New(slog.NewTextHandler(log.Writer(), nil)).With("plugin", Name, "domain", b.cfg.Domain)
	run := b.run
	if run == nil {
		m := &discovery.MDNS{Cluster: b.cfg.Filter, OpenShift: true, Interface: ifname, Logger: logger}
		if err := m.Validate(); err != nil {
			return plugin.Error(Name, err)
		}
		run = func(ctx context.Context, _ Config, _ string, update func([]discovery.Node)) error {
			return m.Run(ctx, update)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	b.mu.Lock()
	b.cancel, b.done = cancel, done
	b.mu.Unlock()
	go func() {
		defer close(done)
		if err := run(ctx, b.cfg, ifname, func(nodes []discovery.Node) { b.reg.Set(Name, nodes) }); err != nil {
			logger.Error("mdns: browsing stopped", "err", err)
		}
	}()
	return nil
}

// stop ends browsing and waits for the sockets to close. It may run more
// than once, and before start.
func (b *browser) stop() error {
	b.mu.Lock()
	cancel, done := b.cancel, b.done
	b.cancel, b.done = nil, nil
	b.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	<-done
	return nil
}

// interfaceOf names the interface holding addr; "" for the zero address
// (every interface).
func interfaceOf(addr netip.Addr) (string, error) {
	if !addr.IsValid() {
		return "", nil
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("BIND_ADDRESS %v: list interfaces: %w", addr, err)
	}
	for _, ifi := range ifaces {
		as, err := ifi.Addrs()
		if err != nil {
			continue
		}
		for _, a := range as {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Unmap() == addr {
				return ifi.Name, nil
			}
		}
	}
	return "", fmt.Errorf("BIND_ADDRESS %v is on no interface of this host; want an address of the interface to browse mDNS on", addr)
}
