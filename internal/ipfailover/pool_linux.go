package ipfailover

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/bgpconfig"
	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/script"
	"github.com/vipstack/vipstack/internal/track"
	"github.com/vipstack/vipstack/internal/vrrp"
)

// Pool runs this node's part of an IP failover pool.
type Pool struct {
	opts Options

	mu      sync.Mutex
	status  Status
	plan    *Plan
	node    Node
	eng     *engine.Engine
	fw      *Firewall
	bgp     BGPSpeaker    // the speaker, when the pool is announced by BGP
	running chan struct{} // closed when the engine (or the speaker) starts
}

// New checks the options; nothing is touched until Prepare or Run.
func New(opts Options) (*Pool, error) {
	opts.defaults()
	if opts.Spec == nil {
		return nil, errors.New("ipfailover: Options.Spec is required")
	}
	if opts.Version != 2 && opts.Version != 3 {
		return nil, fmt.Errorf("ipfailover: VRRP version %d: want 2 or 3", opts.Version)
	}
	if opts.Version == 2 && opts.Spec.Family() == 6 {
		return nil, fmt.Errorf("ipfailover: --vrrp-version 2: the VIPs (%s) are IPv6, which VRRP version 2 cannot carry; want 3, or leave the flag out", EnvVirtualIPs)
	}
	if err := vrrp.CheckAdvertInterval(opts.Version, opts.AdvertInterval); err != nil {
		return nil, fmt.Errorf("ipfailover: %w", err)
	}
	if err := checkNodes(opts.Spec, opts.Nodes); err != nil {
		return nil, err
	}
	if opts.Spec.BGP != nil && opts.BGP == nil {
		return nil, fmt.Errorf("ipfailover: %s is set, but this process runs pools by VRRP only (Options.BGP is nil)", EnvBGPASN)
	}
	mode := "multicast"
	switch {
	case opts.Spec.BGP != nil:
		mode = "bgp"
	case opts.Spec.Unicast():
		mode = "unicast"
	}
	p := &Pool{opts: opts, running: make(chan struct{})}
	p.status = Status{ConfigName: opts.Spec.ConfigName, Phase: "starting", Mode: mode, VIPs: len(opts.Spec.VIPs)}
	if opts.Registry != nil {
		opts.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vipstack_ipfailover_vips_held", Help: "VIPs of the pool this node holds now."},
			func() float64 { return float64(p.Status().Held) }))
		if opts.Spec.BGP != nil {
			opts.Registry.MustRegister(opts.BGP.Collector(func() *bgpconfig.SpeakerStatus { return p.Status().BGP }))
		}
	}
	return p, nil
}

// Prepare resolves the interface and this node's address and rank, runs
// the check once, listens for VRIDs in use, and builds the configuration.
// It returns the configuration as keepalived.conf text.
func (p *Pool) Prepare(ctx context.Context) (string, error) {
	if p.opts.Spec.BGP != nil {
		return "", fmt.Errorf("ipfailover: the pool is announced by BGP (%s is set): no VRRP runs, so there is no keepalived.conf", EnvBGPASN)
	}
	if err := p.prepare(ctx); err != nil {
		return "", err
	}
	p.mu.Lock()
	plan, node := p.plan, p.node
	p.mu.Unlock()
	return plan.Render(p.opts.Spec, node), nil
}

// prepare is Prepare without the text: Run needs the plan only, and the
// text of 10,000 VIPs (about 0.5 MiB, and a second configuration built
// to render it) would be garbage at once, or kept for nothing.
func (p *Pool) prepare(ctx context.Context) error {
	s, o, log := p.opts.Spec, p.opts, p.opts.Logger
	iface := s.Interface
	if iface == "" {
		var err error
		if iface, err = RouteInterface(s.VIPs); err != nil {
			return p.fail(err)
		}
		log.Info("interface chosen by route lookup towards the VIPs", "interface", iface, "first_vip", s.VIPs[0])
	}
	addr, err := NodeAddress(iface, s.Family(), s.VIPs)
	if err != nil {
		if s.Interface != "" {
			err = fmt.Errorf("%s=%q: %w", EnvInterface, s.Interface, err)
		}
		return p.fail(err)
	}
	if s.Unicast() && !slices.Contains(s.Peers, addr.WithZone("")) {
		if a, ok := PeerAddress(iface, s.Peers); ok {
			addr = a
		} else {
			log.Warn("this node's address is not in the unicast peer list: its rank is computed with it added, and may differ from what the other nodes compute",
				"address", addr, EnvUnicastPeers, s.Peers)
		}
	}
	ranks, err := RankOf(addr, s, o.Nodes)
	if err != nil {
		return p.fail(err)
	}
	if s.Unicast() && ranks.Count != s.ReplicaCount {
		log.Warn("the unicast peer list and the replica count disagree; ranks follow the peer list",
			"peers", ranks.Count, EnvReplicaCount, s.ReplicaCount)
	}
	plan := NewPlan(s, ranks.Count)
	node := Node{Interface: iface, Address: addr, Rank: ranks.Self, Version: o.Version, AdvertInterval: o.AdvertInterval}

	check, checkText := p.check(node)
	node.CheckPassed = true
	if check != nil {
		cctx, cancel := context.WithTimeout(ctx, min(s.CheckInterval, 5*time.Second))
		err := check.Probe(cctx)
		cancel()
		node.CheckPassed = err == nil
		if err != nil {
			log.Warn("check fails at start: this node holds no VIPs until it passes", "check", checkText, "err", err)
		}
	}

	p.update(func(st *Status) {
		st.Interface, st.Address, st.Ranks = iface, addr.String(), ranks
		st.Check, st.CheckPassedAtStart = checkText, node.CheckPassed
		st.Share = plan.Share()
		st.Phase = "listening for VRIDs"
	})
	var heard []Heard
	if o.VRIDProbe > 0 {
		ifi, err := net.InterfaceByName(iface)
		if err != nil {
			return p.fail(fmt.Errorf("interface %s: %w", iface, err))
		}
		log.Info("listening for VRIDs in use on the link", "interface", iface, "for", o.VRIDProbe)
		if heard, err = ListenVRIDs(ctx, o.Clock, s.Family(), ifi.Index, o.VRIDProbe); err != nil {
			return p.fail(err)
		}
	}
	findings, err := AssignVRIDs(plan, s, heard, ranks.Members)
	if err != nil {
		return p.fail(err)
	}
	for _, f := range findings {
		if f.Action == "unused" && len(f.VIPs) == 0 {
			log.Info(f.String())
		} else {
			log.Warn(f.String(), "vrid", f.VRID, "action", f.Action)
		}
	}
	p.mu.Lock()
	p.plan, p.node = plan, node
	p.status.Heard, p.status.Findings = heard, findings
	p.status.Groups = p.groupStatus(nil)
	p.mu.Unlock()
	log.Info("ipfailover plan", "vips", len(s.VIPs), "groups", len(plan.Groups), "rank", ranks.Self, "ranks", ranks.Count,
		"rank_basis", ranks.Basis, "share", plan.Share(), "interface", iface, "address", addr)
	return nil
}

// check returns the check the pool runs (nil: none) and a description.
func (p *Pool) check(n Node) (track.Check, string) {
	s := p.opts.Spec
	switch {
	case s.CheckScript != "":
		return track.ScriptCheck{Runner: script.Runner{}, Argv: s.Check, Timeout: s.CheckInterval, Env: s.ScriptEnv}, "script " + s.CheckScript
	case s.MonitorPort != 0:
		t := MonitorTarget(s, n)
		return PortCheck{Target: t}, "TCP connect to " + t.String()
	}
	return nil, "none (monitor port 0)"
}

// Run prepares the pool (unless Prepare ran), installs the firewall rule
// in multicast mode, and runs the VRRP engine until ctx is done; then the
// engine releases the VIPs and the rule is removed.
func (p *Pool) Run(ctx context.Context) error {
	if p.opts.Spec.BGP != nil {
		return p.runBGP(ctx)
	}
	p.mu.Lock()
	prepared := p.plan != nil
	p.mu.Unlock()
	if !prepared {
		if err := p.prepare(ctx); err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				// Stopped while preparing (SIGTERM during the VRID
				// probe): nothing was touched yet, a clean stop.
				p.update(func(st *Status) { st.Phase, st.Error = "stopped", "" })
				return nil
			}
			return err
		}
	}
	s, o, log := p.opts.Spec, p.opts, p.opts.Logger
	p.mu.Lock()
	plan, node := p.plan, p.node
	p.mu.Unlock()
	removed, err := RemoveLeftovers(node.Interface, s.VIPs)
	for _, v := range removed {
		log.Info("removed a VIP of this pool found on the interface at start (left by an earlier run)", "vip", v, "dev", node.Interface)
	}
	if err != nil {
		return p.fail(err)
	}
	probe, _ := p.check(node)
	cfg, err := plan.Keepalived(s, node, probe, "ipfailover:"+s.ConfigName)
	if err != nil {
		return p.fail(err)
	}
	if stop, err := p.guard(ctx, plan, node, cfg); err != nil {
		return p.fail(err)
	} else {
		defer stop()
	}
	if !s.Unicast() {
		fw := NewFirewall(s)
		where, err := fw.Install()
		p.mu.Lock()
		if err != nil {
			p.status.FirewallError = err.Error()
			log.Warn("VRRP multicast not admitted by a firewall rule", "err", err)
		} else {
			p.fw, p.status.Firewall = &fw, where
			log.Info("firewall rule admits VRRP multicast", "rule", fw.Rule(), "in", where)
		}
		p.mu.Unlock()
		defer func() {
			if err := fw.Remove(); err != nil {
				log.Error("removing the firewall rule failed", "err", err)
			} else if len(where) > 0 {
				log.Info("firewall rule removed", "from", where)
			}
		}()
	}
	e, _, err := engine.New(engine.Options{
		Load:         func() (*keepalived.Config, error) { return cfg, nil },
		Clock:        o.Clock,
		Logger:       log,
		Registry:     o.Registry,
		Ledger:       o.Ledger,
		AnnounceRate: o.AnnounceRate,
		Announced:    o.Announced,
	})
	if err != nil {
		return p.fail(err)
	}
	p.mu.Lock()
	p.eng = e
	// The engine's configuration holds the VIPs from here on; the status
	// needs the groups' counts only (a layout guard keeps the plan it
	// was given), and nothing reads the settings' list again.
	p.plan = plan.WithoutVIPs()
	p.opts.Spec = s.withoutVIPs()
	p.status.Phase = "running"
	p.mu.Unlock()
	close(p.running)
	err = e.Run(ctx)
	p.update(func(st *Status) { st.Phase = "stopped" })
	if err != nil {
		return p.fail(err)
	}
	return nil
}

// Running is closed once Run has prepared the node and started the
// engine.
func (p *Pool) Running() <-chan struct{} { return p.running }

// guard arms the LayoutGuard when the VRID probe heard the pool's VIPs in
// another layout: every group then tracks a native check that holds it in
// FAULT while that layout is still heard, fed by a watcher of the link's
// advertisements that runs until stop is called or ctx is done.
func (p *Pool) guard(ctx context.Context, plan *Plan, node Node, cfg *keepalived.Config) (stop func(), err error) {
	s, o, log := p.opts.Spec, p.opts, p.opts.Logger
	p.mu.Lock()
	heard, findings := p.status.Heard, p.status.Findings
	p.mu.Unlock()
	armed := false
	for _, f := range findings {
		armed = armed || len(f.VIPs) > 0
	}
	if !armed {
		return func() {}, nil
	}
	g := NewLayoutGuard(o.Clock, plan)
	for _, h := range heard {
		g.Observe(h.VRID, h.From, 1, h.Interval, h.Addresses)
	}
	if cfg.Scripts == nil {
		cfg.Scripts = map[string]*keepalived.Script{}
	}
	var held []string
	for i, gr := range plan.Groups {
		name := g.ScriptName(i)
		by := g.Blocking(i)
		if by != "" {
			held = append(held, gr.Name)
		}
		cfg.Scripts[name] = &keepalived.Script{Name: name, Command: "(native) layout guard of " + gr.Name,
			Interval: o.AdvertInterval, InitFail: by != "", Probe: g.Check(i)}
		for _, in := range cfg.Instances {
			if in.Name == gr.Name {
				in.TrackScripts = append(in.TrackScripts, keepalived.TrackScript{Name: name})
			}
		}
	}
	ifi, err := net.InterfaceByName(node.Interface)
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", node.Interface, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := WatchAdverts(wctx, s.Family(), ifi.Index, func(from netip.Addr, adv *vrrp.Advertisement) {
			g.Observe(adv.VRID, from, adv.Priority, adv.Interval, adv.Addresses)
		})
		if err != nil {
			log.Error("the layout guard no longer hears the link; the groups it holds back are released when its last advertisements age out", "err", err)
		}
	}()
	log.Warn("the pool's VIPs are advertised in another layout (nodes running other settings): holding back the groups that carry them until that layout is gone",
		"held_back", held, "groups", len(plan.Groups))
	return func() { cancel(); <-done }, nil
}

// Status returns the pool's state; safe for concurrent use.
func (p *Pool) Status() Status {
	p.mu.Lock()
	st := p.status
	eng, fw, sp := p.eng, p.fw, p.bgp
	p.mu.Unlock()
	if sp != nil {
		st.BGP, st.Held = sp.Status(), 0
		for _, r := range st.BGP.Routes {
			if r.Announced {
				st.Held++
			}
		}
		return st
	}
	if eng == nil {
		return st
	}
	inst := eng.Status()
	st.Stalled = eng.Stalled()
	p.mu.Lock()
	st.Groups = p.groupStatus(inst)
	p.mu.Unlock()
	st.Held = 0
	for _, g := range st.Groups {
		if g.State == "MASTER" {
			st.Held += g.VIPs
		}
	}
	if fw != nil {
		if n, err := fw.Packets(); err == nil {
			st.FirewallPackets = n
		}
	}
	st.Warnings = RankWarnings(st)
	return st
}

// groupStatus merges the plan with the engine's instances (nil: none yet).
// p.mu must be held.
func (p *Pool) groupStatus(inst []engine.InstanceStatus) []GroupStatus {
	if p.plan == nil {
		return nil
	}
	byName := map[string]engine.InstanceStatus{}
	for _, is := range inst {
		byName[is.Name] = is
	}
	out := make([]GroupStatus, len(p.plan.Groups))
	for i, g := range p.plan.Groups {
		gs := GroupStatus{Name: g.Name, VRID: g.VRID, VIPs: g.NumVIPs(), Order: g.Order,
			Priority: int(g.Priority(p.node.Rank)), Preferred: g.Order[0] == p.node.Rank}
		if is, ok := byName[g.Name]; ok {
			gs.State, gs.Master, gs.MasterPriority, gs.Effective, gs.Fault, gs.Conflicts = is.State, is.Master, is.MasterPriority, is.Effective, is.Fault, is.Conflicts
		}
		out[i] = gs
	}
	return out
}

func (p *Pool) update(f func(*Status)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(&p.status)
}

func (p *Pool) fail(err error) error {
	p.update(func(st *Status) { st.Error = err.Error() })
	return err
}
