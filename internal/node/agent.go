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
	"slices"
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
	"github.com/vipstack/vipstack/internal/lbcli"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/lbkernel"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/redirect"
	"github.com/vipstack/vipstack/internal/track"
)

// Options configure an Agent.
type Options struct {
	ClusterPath string
	Node        string
	Logger      *slog.Logger
	Registry    prometheus.Registerer
	Ledger      netif.Ledger
	// BGPLedger records the VIPs BGP places on lo, for the supervisor to
	// remove after a crash (StartBGPRecorded); zero: not recorded.
	BGPLedger netif.Ledger
	Clock     clock.Clock
	// DNSLog receives CoreDNS's output; nil means the logger's stderr.
	DNSLog io.Writer
	// DNSPort overrides the DNS listen port (53); tests use others.
	DNSPort int
	// Endpoints are the ports of the agent's own endpoints (its metrics
	// and status), named by their flags: the cluster file is refused when
	// one of its services would bind one of them.
	Endpoints []cluster.ServicePort
	// LBSocket, when set on a node that runs the load balancer, is a Unix
	// socket path where its runtime API (haproxy's stats socket commands,
	// internal/lbcli) is served at level admin, mode 0600.
	LBSocket string
	// Version is the agent's version, for the runtime API.
	Version string
	// Live configures live membership (membership.go).
	Live LiveOptions
	// BGPStopKeepsRoutes makes the agent's stop a restart for BGP: the
	// routes are not withdrawn and the VIPs stay on lo, for the routers'
	// graceful restart to keep them until the next agent is up.
	BGPStopKeepsRoutes bool
	// Datapath is --datapath: how the load balancer carries the API
	// VIPs' connections: relay ("" too), kernel or auto (lbkernel.Mode).
	Datapath lbkernel.Mode
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

	vrrp    *engine.Engine
	bgp     *BGPRunner // the speaker, when the node announces VIPs by BGP
	lb      *lb.LB
	lbAPI   *lbcli.Sockets
	kp      *lbkernel.Path // the kernel data path; nil with --datapath relay
	kplan   *lbkernel.Plan // kp's plan in force (guarded by redirMu)
	dnsSrv  dnsServer
	nodes   *discovery.Registry
	dnsConf string // the Corefile being served
	started time.Time
	// lastLoad is when the cluster file in force was loaded; rejectedAt and
	// loadErr say when and why a later version was refused (zero and ""
	// once one is accepted again).
	lastLoad   time.Time
	rejectedAt time.Time
	loadErr    string

	reloads *prometheus.CounterVec // by result; see metrics.go

	// ready is closed once Run has started the services: a reload waits
	// for it, so that it never races their start with a new file.
	ready chan struct{}

	redirMu   sync.Mutex
	followers map[netip.AddrPort]*follower // by the VIP and port they capture
	healthy   bool                         // the LB monitor's last verdict
	// redirStopped is set when the LB stops: a reload still running
	// then starts no redirect to it.
	redirStopped bool

	memb membership // live nodes (membership.go)
}

// dnsServer is what the agent uses of the cluster DNS (a *dns.Server).
type dnsServer interface {
	Check(dns.Corefile) error
	Start(dns.Corefile) error
	Stop() error
	Addrs() []net.Addr
}

// follower is the redirect of one API VIP and where it sends traffic.
type follower struct {
	f      *redirect.Follower
	toPort uint16
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
	file, err := cluster.Load(opts.ClusterPath)
	if err != nil {
		return nil, err
	}
	self, err := selfNode(file, opts.Node, opts.Live)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.ClusterPath, err)
	}
	a := &Agent{opts: opts, log: opts.Logger, clk: opts.Clock, nodes: discovery.NewRegistry(), ready: make(chan struct{})}
	a.memb.self = self
	c := a.effective(file)
	p, err := c.PlanFor(opts.Node)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.ClusterPath, err)
	}
	if err := c.CheckEndpoints(opts.Endpoints); err != nil {
		return nil, fmt.Errorf("%s: %w", opts.ClusterPath, err)
	}
	a.cluster, a.plan = c, p
	if p.RunLB && a.kernelMode() {
		// Refused here, so that --check and the start say so before
		// anything runs.
		cfg, err := a.lbConfig(c)
		if err == nil {
			_, err = kernelPlan(lbkernel.NewPath(opts.Datapath, a.log), c, cfg)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", opts.ClusterPath, err)
		}
	}
	a.reloads = newReloads()
	if opts.Registry != nil {
		if err := opts.Registry.Register(a.reloads); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
		if err := opts.Registry.Register(healthCollector{a}); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
		if err := opts.Registry.Register(bgpCollector{a.bgpStatus}); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	return a, nil
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
	a.log.Info("node agent starting", "role", a.plan.Node.Role, "interface", iface,
		"instances", len(a.plan.Instances), "lb", a.plan.RunLB, "dns", a.plan.RunDNS)

	if a.plan.RunDNS {
		if err := a.startDNS(); err != nil {
			return err
		}
		defer a.stopDNS()
	}
	if a.opts.LBSocket != "" && !a.plan.RunLB {
		a.log.Warn("--lb-socket is not used: this node runs no load balancer (only masters do)", "socket", a.opts.LBSocket)
	}
	if a.plan.RunLB {
		if err := a.startLB(); err != nil {
			return err
		}
		defer a.stopLB()
	}
	// The speaker starts after the LB, whose port its API checks probe,
	// and stops before it: the routes are withdrawn (and the router
	// sends new flows elsewhere) before the LB drains.
	if a.plan.BGP != nil {
		r, err := StartBGPRecorded(a.log.With("part", "bgp"), a.clk, a.plan.BGP, bgpChecks(a.plan.BGP, a.plan.Checks), probeFor, a.opts.BGPLedger)
		if err != nil {
			return err
		}
		a.mu.Lock()
		a.bgp = r
		a.mu.Unlock()
		defer func() {
			stop := r.Stop
			if a.opts.BGPStopKeepsRoutes {
				stop = r.Leave
			}
			if err := stop(); err != nil {
				a.log.Error("bgp: stop", "err", err)
			}
		}()
	}
	// The live sources' first lists come before VRRP starts, so that its
	// instances start with their peers (membership.go).
	a.startMembership(ctx)
	a.memb.applyMu.Lock() // no live change between the engine's first load and its seam
	e, _, err := engine.New(engine.Options{
		Load:     a.vrrpConfig,
		Clock:    a.clk,
		Logger:   a.log.With("part", "vrrp"),
		Registry: a.opts.Registry,
		Ledger:   a.opts.Ledger,
	})
	if err != nil {
		a.memb.applyMu.Unlock()
		return err
	}
	a.mu.Lock()
	a.vrrp = e
	a.memb.reloadVRRP = e.Reload
	a.mu.Unlock()
	a.memb.applyMu.Unlock()
	close(a.ready)
	return e.Run(ctx)
}

// Ready is closed once Run has started the node's services.
func (a *Agent) Ready() <-chan struct{} { return a.ready }

// vrrpConfig is the engine's loader: the current plan as an engine
// configuration with native checks, checked by the rules the
// keepalived.conf reader applies.
func (a *Agent) vrrpConfig() (*keepalived.Config, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	cfg := a.plan.Keepalived(a.cluster, a.iface, probeFor)
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("node %s: VRRP configuration: %w", a.plan.Node.Name, err)
	}
	return cfg, nil
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
	cfg, err := a.lbConfig(a.cluster)
	if err != nil {
		return err
	}
	if a.kernelMode() {
		if err := a.prepareKernel(a.cluster, cfg); err != nil {
			return err
		}
	}
	opts := lb.Options{
		Logger:   a.log.With("part", "lb"),
		Registry: a.opts.Registry,
		Clock:    a.clk,
		OnHealthy: func(up bool) {
			a.redirMu.Lock()
			defer a.redirMu.Unlock()
			a.healthy = up
			for _, f := range a.followers {
				f.f.Set(up)
			}
		},
	}
	if a.kp != nil {
		opts.OnServers = a.kp.Notify
		opts.KernelSessions = a.kp.Sessions
	}
	l, err := lb.New(opts)
	if err != nil {
		return err
	}
	var api *lbcli.Sockets
	var change *lbcli.Change
	if a.opts.LBSocket != "" {
		api = lbcli.NewSockets(l, a.opts.Version, a.clk.Now(), a.log.With("part", "lb-runtime-api"))
		spec := lbconfig.StatsSocket{Network: "unix", Address: a.opts.LBSocket, Mode: 0o600, Level: "admin"}
		if change, err = api.Prepare([]lbconfig.StatsSocket{spec}); err != nil {
			return fmt.Errorf("--lb-socket: %w", err)
		}
	}
	if err := l.Apply(cfg); err != nil {
		if change != nil {
			change.Abort()
		}
		return err
	}
	if change != nil {
		change.Commit()
	}
	a.mu.Lock()
	a.lb, a.lbAPI = l, api
	a.mu.Unlock()
	if a.kp != nil {
		if err := a.startKernel(); err != nil {
			return err
		}
	}
	// The redirects start with the monitor's verdict so far (OnHealthy
	// records it even before they exist); none for the VIPs the kernel
	// path captures.
	a.syncRedirects(a.cluster)
	return nil
}

// syncRedirects makes the redirects match c: one per API VIP, capturing
// VIP:ports.api and sending it to ports.lb. A redirect whose target port
// changed is retargeted in place, and syncRedirects returns a channel
// for each that is closed once it moved (see redirect.Move); one for a VIP
// or API port that is gone is removed; a new one starts with the
// monitor's last verdict.
func (a *Agent) syncRedirects(c *cluster.Cluster) (moved []<-chan struct{}) {
	want := c.Redirects()
	a.redirMu.Lock()
	defer a.redirMu.Unlock()
	if a.redirStopped {
		return nil
	}
	for vip := range a.kernelVIPs() {
		delete(want, vip)
	}
	if a.followers == nil {
		a.followers = map[netip.AddrPort]*follower{}
	}
	for vip, f := range a.followers {
		if _, ok := want[vip]; !ok {
			f.f.Stop()
			delete(a.followers, vip)
		}
	}
	for vip, to := range want {
		if f, ok := a.followers[vip]; ok {
			if f.toPort != to {
				a.log.Info("redirect follows the load balancer to its new port", "vip", vip.String(), "from", f.toPort, "to", to)
				moved = append(moved, f.f.Retarget(redirect.New(vip, to)))
				f.toPort = to
			}
			continue
		}
		// The real clock, whatever a.clk is: the lease it renews runs
		// on the kernel's.
		f := redirect.NewFollower(redirect.New(vip, to), a.log.With("part", "redirect", "vip", vip.String()), nil)
		go f.Run()
		if a.healthy {
			f.Set(true)
		}
		a.followers[vip] = &follower{f: f, toPort: to}
	}
	return moved
}

func (a *Agent) stopLB() {
	if a.lbAPI != nil {
		a.lbAPI.Close()
	}
	if a.kp != nil {
		// First, as vipstack lb does: new connections to the API VIPs
		// then reach the local API server; NATed ones run on in
		// conntrack.
		a.kp.Close(true)
	}
	a.redirMu.Lock()
	a.redirStopped = true
	for vip, f := range a.followers {
		f.f.Stop()
		delete(a.followers, vip)
	}
	a.redirMu.Unlock()
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
	for _, n := range a.cluster.Listed {
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
// query. A file that does not load, or asks for what only a restart can
// do, changes nothing.
//
// The LB goes first: the VRRP checks probe its ports, and a check that
// probed a port the LB did not listen on yet would drop the node's
// priority and move the API VIP for nothing. The redirects follow the LB
// to its new port before VRRP changes. A new ports.lb is applied in two
// steps: the LB listens on both ports, the redirects move to the new one,
// then the LB closes the old one; otherwise the redirects would point at
// a closed port until they moved (measured: connections to VIP:6443
// refused, TestStoryReloadLBPortNoRefused).
func (a *Agent) Reload() error {
	<-a.ready
	a.memb.applyMu.Lock()
	defer a.memb.applyMu.Unlock()
	a.mu.Lock()
	running, oldPlan := a.cluster, a.plan
	a.mu.Unlock()
	c, p, lbCfg, err := a.prepareReload()
	var move *redirect.Move
	if err == nil && a.lb != nil {
		move, err = a.openLB(running, c, lbCfg)
	}
	if err == nil && a.kp != nil {
		err = a.reloadKernel(c, lbCfg)
	}
	now := a.clk.Now()
	a.mu.Lock()
	if err != nil {
		a.rejectedAt, a.loadErr = now, err.Error()
	} else {
		a.lastLoad, a.rejectedAt, a.loadErr = now, time.Time{}, ""
		a.cluster, a.plan = c, p
	}
	a.mu.Unlock()
	if err != nil {
		a.reloads.WithLabelValues("refused").Inc()
		a.log.Error("cluster file rejected; keeping the running configuration", "file", a.opts.ClusterPath, "err", err)
		return err
	}
	a.reloads.WithLabelValues("applied").Inc()
	var errs []error
	if move != nil {
		if err := move.Finish(a.syncRedirects(c)...); err != nil {
			errs = append(errs, fmt.Errorf("load balancer: %w", err))
		}
	}
	if a.vrrp != nil {
		errs = append(errs, a.vrrp.Reload())
	}
	if a.bgp != nil {
		// Peers and announced VIPs change in place (prepareReload
		// refuses what needs a restart); the checks follow the file.
		if err := a.bgp.update(a.clk, p.BGP, bgpChecks(oldPlan.BGP, oldPlan.Checks), bgpChecks(p.BGP, p.Checks), probeFor); err != nil {
			errs = append(errs, err)
		}
	}
	if a.dnsSrv != nil {
		a.nodes.Set("cluster", a.clusterNodes())
		if err := a.reloadDNS(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		a.log.Error("applying the cluster file failed in part", "file", a.opts.ClusterPath, "err", err)
		a.mu.Lock()
		a.rejectedAt, a.loadErr = now, "applied in part (the load balancer and the redirects took it): "+err.Error()
		a.mu.Unlock()
		return err
	}
	a.log.Info("cluster file applied", "file", a.opts.ClusterPath, "nodes", len(c.Nodes))
	return nil
}

// openLB applies lbCfg, the LB configuration of c, to the running LB; a
// new ports.lb keeps the old one open too until the redirects moved
// (redirect.Mover).
func (a *Agent) openLB(running, c *cluster.Cluster, lbCfg *lbconfig.Config) (*redirect.Move, error) {
	old, err := a.lbConfig(running)
	if err != nil {
		return nil, fmt.Errorf("load balancer: the running configuration: %w", err)
	}
	m := &redirect.Mover{LB: a.lb, Clock: a.clk, Log: a.log}
	move, err := m.Open(old, lbCfg, uint16(running.Ports.LB), uint16(c.Ports.LB))
	if err != nil {
		return nil, fmt.Errorf("load balancer: %w", err)
	}
	return move, nil
}

// prepareReload loads the cluster file and checks everything that can be
// checked before anything changes.
func (a *Agent) prepareReload() (*cluster.Cluster, *cluster.Plan, *lbconfig.Config, error) {
	path := a.opts.ClusterPath
	file, err := cluster.Load(path)
	if err != nil {
		return nil, nil, nil, err
	}
	c := a.effective(file)
	p, err := c.PlanFor(a.opts.Node)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.CheckEndpoints(a.opts.Endpoints); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	a.mu.Lock()
	old, oldPlan := a.cluster, a.plan
	a.mu.Unlock()
	if p.RunLB != oldPlan.RunLB || p.Node.Role != oldPlan.Node.Role {
		return nil, nil, nil, fmt.Errorf("%s: node %s changed role (%s to %s); restart the node agent to apply that", path, a.opts.Node, oldPlan.Node.Role, p.Node.Role)
	}
	if c.Ports.Status != old.Ports.Status {
		return nil, nil, nil, fmt.Errorf("%s: ports.status: %d to %d: the node serves its status to the cluster on the port it started with; restart the node agent to apply that", path, old.Ports.Status, c.Ports.Status)
	}
	if c.Name != old.Name {
		o, n := cluster.DeriveVRIDs(old.Name), cluster.DeriveVRIDs(c.Name)
		return nil, nil, nil, fmt.Errorf("%s: name: %q to %q changes every VRRP instance's name and virtual router ID "+
			"(API %d to %d, DNS %d to %d, Ingress %d to %d); nodes that reloaded at different times would hold the same VIPs "+
			"under both IDs at once; keep the name, or stop every node agent and start them with the new file",
			path, old.Name, c.Name, o.API, n.API, o.DNS, n.DNS, o.Ingress, n.Ingress)
	}
	if why := speakerRestart(oldPlan.BGP, p.BGP); why != "" {
		return nil, nil, nil, fmt.Errorf("%s: bgp: %s on node %s; a running node applies that only at a restart: "+
			"restart the node agent (with gracefulRestart on the peers, its routes stay in place meanwhile)", path, why, a.opts.Node)
	}
	if err := membershipReload(old, c); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if o, n := old.VRIDs(), c.VRIDs(); o != n {
		return nil, nil, nil, fmt.Errorf("%s: vrrp: the virtual router IDs change (%v to %v); nodes that reloaded at different times "+
			"would hold the same VIPs under both IDs at once; stop every node agent and start them with the new file", path, o, n)
	}
	// The engine runs every instance on the interface resolved at start
	// (vrrpConfig): a file that would resolve another one cannot be
	// applied in place, and accepting it would report as applied what
	// still runs on the old interface.
	if c.VRRP.Interface != old.VRRP.Interface || !slices.Equal(c.MachineNetworks, old.MachineNetworks) {
		iface, err := resolveInterface(c)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		if iface != a.iface {
			return nil, nil, nil, fmt.Errorf("%s: vrrp.interface: %s to %s: the VRRP instances run on %s; "+
				"restart the node agent to move them to %s", path, a.iface, iface, a.iface, iface)
		}
	}
	var lbCfg *lbconfig.Config
	if p.RunLB {
		if lbCfg, err = a.lbConfig(c); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		if a.kp != nil {
			if _, err := kernelPlan(a.kp, c, lbCfg); err != nil {
				return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
			}
		}
	}
	return c, p, lbCfg, nil
}

// reloadDNS serves the Corefile of the cluster in force if it changed. A
// Corefile that does not check is refused before the running one stops;
// one that then fails to start gives way to the running one again.
func (a *Agent) reloadDNS() error {
	conf := a.corefile()
	if conf == a.dnsConf {
		return nil
	}
	next := dns.Corefile{Path: "cluster DNS (" + a.opts.ClusterPath + ")", Contents: []byte(conf)}
	if err := a.dnsSrv.Check(next); err != nil {
		return fmt.Errorf("cluster DNS: %w", err)
	}
	_ = a.dnsSrv.Stop()
	err := a.dnsSrv.Start(next)
	if err == nil {
		a.dnsConf = conf
		return nil
	}
	prev := dns.Corefile{Path: next.Path, Contents: []byte(a.dnsConf)}
	if rerr := a.dnsSrv.Start(prev); rerr != nil {
		a.dnsConf = "" // nothing serves: the next reload starts its Corefile, even this one
		return fmt.Errorf("cluster DNS: the new configuration did not start (%w), nor did the previous one again: %v", err, rerr)
	}
	return fmt.Errorf("cluster DNS: the new configuration did not start, the previous one serves again: %w", err)
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
