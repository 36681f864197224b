package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/discovery"
	"github.com/vipstack/vipstack/internal/dns"
	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/healthcheck"
	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/lb"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/redirect"
	"github.com/vipstack/vipstack/internal/track"
)

// Options configure an Agent.
type Options struct {
	ClusterPath string
	Node        string
	Logger      *slog.Logger
	Registry    *prometheus.Registry
	Ledger      netif.Ledger
	Clock       clock.Clock
	// DNSLog receives CoreDNS's output; nil means the logger's stderr.
	DNSLog io.Writer
	// DNSPort overrides the DNS listen port (53); tests use others.
	DNSPort int
}

// Agent is everything one node runs.
type Agent struct {
	opts  Options
	log   *slog.Logger
	clk   clock.Clock
	iface string

	mu      sync.Mutex
	cluster *cluster.Cluster
	plan    *cluster.Plan

	vrrp      *engine.Engine
	lb        *lb.LB
	followers []*redirect.Follower
	dnsSrv    *dns.Server
	nodes     *discovery.Registry
	dnsConf   string // the Corefile being served
	started   time.Time
	lastLoad  time.Time
	loadErr   string
}

// New loads and validates the cluster file for node; it changes nothing on
// the system.
func New(opts Options) (*Agent, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c, err := cluster.Load(opts.ClusterPath)
	if err != nil {
		return nil, err
	}
	p, err := c.PlanFor(opts.Node)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.ClusterPath, err)
	}
	return &Agent{opts: opts, log: opts.Logger, clk: opts.Clock, cluster: c, plan: p, nodes: discovery.NewRegistry()}, nil
}

// Run starts the node's services and serves until ctx is done, then stops
// them in order: the VRRP engine first (VIPs leave), then the LB drains,
// then DNS.
func (a *Agent) Run(ctx context.Context) error {
	a.started = a.clk.Now()
	a.lastLoad = a.started
	iface, err := resolveInterface(a.cluster)
	if err != nil {
		return err
	}
	a.iface = iface
	a.log.Info("node agent starting", "node", a.plan.Node.Name, "role", a.plan.Node.Role, "interface", iface,
		"instances", len(a.plan.Instances), "lb", a.plan.RunLB, "dns", a.plan.RunDNS)

	if a.plan.RunDNS {
		if err := a.startDNS(); err != nil {
			return err
		}
		defer a.stopDNS()
	}
	if a.plan.RunLB {
		if err := a.startLB(); err != nil {
			return err
		}
		defer a.stopLB()
	}
	e, _, err := engine.New(engine.Options{
		Load:     a.vrrpConfig,
		Clock:    a.clk,
		Logger:   a.log.With("part", "vrrp"),
		Registry: a.opts.Registry,
		Ledger:   a.opts.Ledger,
	})
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.vrrp = e
	a.mu.Unlock()
	return e.Run(ctx)
}

// vrrpConfig is the engine's loader: the current plan as an engine
// configuration with native checks.
func (a *Agent) vrrpConfig() (*keepalived.Config, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.plan.Keepalived(a.cluster, a.iface, probeFor), nil
}

// probeFor turns a check's URLs into a native probe: it succeeds when any
// URL answers 2xx or 3xx (https without certificate verification, as the
// seeds' curl -k).
func probeFor(spec cluster.CheckSpec) track.Check {
	var probes []healthcheck.HTTP
	for _, raw := range spec.URLs {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		host := u.Hostname()
		if host == "localhost" {
			host = "127.0.0.1"
		}
		addr, err := netip.ParseAddr(host)
		if err != nil {
			continue
		}
		port, _ := strconv.Atoi(u.Port())
		if port == 0 {
			port = map[string]int{"http": 80, "https": 443}[u.Scheme]
		}
		p := healthcheck.HTTP{Addr: netip.AddrPortFrom(addr, uint16(port)), Method: "GET", URI: u.RequestURI(), Version: "HTTP/1.1"}
		if u.Scheme == "https" {
			p.TLS = healthcheck.TLSConfig(false, p.Addr)
		}
		probes = append(probes, p)
	}
	return anyProbe(probes)
}

type anyProbe []healthcheck.HTTP

func (ps anyProbe) Probe(ctx context.Context) error {
	var why []string
	for _, p := range ps {
		r := p.Probe(ctx)
		if r.OK {
			return nil
		}
		why = append(why, fmt.Sprintf("%s%s: %s %s", p.Addr, p.URI, r.Status, r.Info))
	}
	if len(why) == 0 {
		return errors.New("no usable URL")
	}
	return errors.New(strings.Join(why, "; "))
}

func (a *Agent) startLB() error {
	cfg, err := a.cluster.LBConfig()
	if err != nil {
		return err
	}
	var vips []netip.AddrPort
	for _, v := range a.cluster.APIVIPs {
		vips = append(vips, netip.AddrPortFrom(v, uint16(a.cluster.Ports.API)))
	}
	for _, v := range vips {
		// The real clock, whatever a.clk is: the lease it renews runs
		// on the kernel's.
		f := redirect.NewFollower(redirect.New(v, uint16(a.cluster.Ports.LB)), a.log.With("part", "redirect", "vip", v.String()), nil)
		go f.Run()
		a.followers = append(a.followers, f)
	}
	l, err := lb.New(lb.Options{
		Logger:   a.log.With("part", "lb"),
		Registry: a.opts.Registry,
		Clock:    a.clk,
		OnHealthy: func(up bool) {
			for _, f := range a.followers {
				f.Set(up)
			}
		},
	})
	if err != nil {
		return err
	}
	if err := l.Apply(cfg); err != nil {
		return err
	}
	a.mu.Lock()
	a.lb = l
	a.mu.Unlock()
	return nil
}

func (a *Agent) stopLB() {
	for _, f := range a.followers {
		f.Stop()
	}
	if a.lb != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.lb.Shutdown(ctx)
	}
}

// corefile renders the node's DNS configuration: the clusterdns plugin for
// the cluster's zone in front of the upstream resolvers.
func (a *Agent) corefile() string {
	c := a.cluster
	port := a.opts.DNSPort
	if port == 0 {
		port = 53
	}
	var b strings.Builder
	fmt.Fprintf(&b, ".:%d {\n    errors\n    bufsize 512\n    health :%d\n", port, cluster.DNSHealthPort)
	fmt.Fprintf(&b, "    clusterdns %s {\n", c.Domain())
	b.WriteString("        api")
	for _, v := range c.APIVIPs {
		b.WriteString(" " + v.String())
	}
	b.WriteString("\n        ingress")
	for _, v := range c.IngressVIPs {
		b.WriteString(" " + v.String())
	}
	b.WriteString("\n        fallthrough\n    }\n")
	if len(c.UpstreamDNS) > 0 {
		b.WriteString("    forward .")
		for _, u := range c.UpstreamDNS {
			b.WriteString(" " + u.String())
		}
		b.WriteString(" {\n        policy sequential\n    }\n")
	}
	b.WriteString("    cache 30\n}\n")
	return b.String()
}

func (a *Agent) clusterNodes() []discovery.Node {
	var out []discovery.Node
	for _, n := range a.cluster.Nodes {
		out = append(out, discovery.Node{Name: n.Name, Role: discovery.Role(n.Role), Addrs: n.IPs})
	}
	return out
}

func (a *Agent) startDNS() error {
	w := a.opts.DNSLog
	if w == nil {
		w = os.Stderr
	}
	srv, err := dns.NewServer(dns.Options{Registry: func(string) *discovery.Registry { return a.nodes }, Log: w})
	if err != nil {
		return err
	}
	a.nodes.Set("cluster", a.clusterNodes())
	conf := a.corefile()
	if err := srv.Start(dns.Corefile{Path: "cluster DNS (" + a.opts.ClusterPath + ")", Contents: []byte(conf)}); err != nil {
		return fmt.Errorf("cluster DNS: %w", err)
	}
	a.dnsSrv, a.dnsConf = srv, conf
	return nil
}

func (a *Agent) stopDNS() {
	if a.dnsSrv != nil {
		_ = a.dnsSrv.Stop()
	}
}

// Reload re-reads the cluster file and applies it: VRRP instances whose
// settings only gained or lost peers keep their state, the LB swaps its
// backends without dropping connections, DNS answers change with the next
// query. A file that does not load changes nothing.
func (a *Agent) Reload() error {
	c, err := cluster.Load(a.opts.ClusterPath)
	if err == nil {
		var p *cluster.Plan
		if p, err = c.PlanFor(a.opts.Node); err == nil {
			if p.RunLB != a.plan.RunLB || p.Node.Role != a.plan.Node.Role {
				err = fmt.Errorf("node %s changed role (%s to %s); restart the node agent to apply that", a.opts.Node, a.plan.Node.Role, p.Node.Role)
			} else {
				a.mu.Lock()
				a.cluster, a.plan = c, p
				a.mu.Unlock()
			}
		}
	}
	a.mu.Lock()
	a.lastLoad = a.clk.Now()
	a.loadErr = ""
	if err != nil {
		a.loadErr = err.Error()
	}
	a.mu.Unlock()
	if err != nil {
		a.log.Error("cluster file rejected; keeping the running configuration", "err", err)
		return err
	}
	var errs []error
	if a.vrrp != nil {
		errs = append(errs, a.vrrp.Reload())
	}
	if a.lb != nil {
		if cfg, err := c.LBConfig(); err != nil {
			errs = append(errs, err)
		} else {
			errs = append(errs, a.lb.Apply(cfg))
		}
	}
	if a.dnsSrv != nil {
		a.nodes.Set("cluster", a.clusterNodes())
		if conf := a.corefile(); conf != a.dnsConf {
			_ = a.dnsSrv.Stop()
			if err := a.dnsSrv.Start(dns.Corefile{Path: "cluster DNS", Contents: []byte(conf)}); err != nil {
				errs = append(errs, err)
			} else {
				a.dnsConf = conf
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		a.log.Error("applying the cluster file failed in part", "err", err)
		return err
	}
	a.log.Info("cluster file applied", "file", a.opts.ClusterPath, "nodes", len(c.Nodes))
	return nil
}

// resolveInterface returns the VRRP interface: the configured one, or the
// one holding an address inside a machine network.
func resolveInterface(c *cluster.Cluster) (string, error) {
	if c.VRRP.Interface != "" {
		if _, err := net.InterfaceByName(c.VRRP.Interface); err != nil {
			return "", fmt.Errorf("vrrp.interface %q: %w", c.VRRP.Interface, err)
		}
		return c.VRRP.Interface, nil
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, ifi := range ifs {
		addrs, err := ifi.Addrs()
		if err != nil {
			continue
		}
		for _, ad := range addrs {
			ipn, ok := ad.(*net.IPNet)
			if !ok {
				continue
			}
			a, ok := netip.AddrFromSlice(ipn.IP)
			if !ok {
				continue
			}
			for _, p := range c.MachineNetworks {
				if p.Contains(a.Unmap()) {
					return ifi.Name, nil
				}
			}
		}
	}
	var nets []string
	for _, p := range c.MachineNetworks {
		nets = append(nets, p.String())
	}
	return "", fmt.Errorf("no interface has an address in the machine networks (%s); set vrrp.interface", strings.Join(nets, ", "))
}
