package ipfailover

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/track"
)

// Node is what the configuration of one node needs beyond the plan.
type Node struct {
	Interface string
	// Address is the node's address on Interface: the port check's target
	// (as in the image) and, in unicast mode, the source of adverts.
	Address        netip.Addr
	Rank           int
	Version        int           // VRRP version, 2 (the image's) or 3
	AdvertInterval time.Duration // 1 s in the image
	// CheckPassed says the check (port or script) passed once at start:
	// the groups this node prefers then start as MASTER, as the image's
	// `state MASTER`. Otherwise the check starts as failing (init_fail),
	// so a node whose port does not answer never holds VIPs.
	CheckPassed bool
}

// CheckName returns the name of the pool's vrrp_script.
func CheckName(s *Spec) string { return "chk_" + scrub(s.ConfigName) }

// Checks reports whether the pool has a check: the check script, or the
// monitor port unless it is 0.
func Checks(s *Spec) bool { return s.CheckScript != "" || s.MonitorPort != 0 }

// MonitorTarget is the address and port the port check connects to.
func MonitorTarget(s *Spec, n Node) netip.AddrPort {
	a := n.Address
	if !a.IsLinkLocalUnicast() {
		a = a.WithZone("")
	}
	return netip.AddrPortFrom(a, uint16(s.MonitorPort))
}

// Config returns this node's configuration as the typed keepalived model:
// what vipstack runs (see Keepalived) and, written by Render, what
// keepalived itself would run for the same plan. The port check is the
// image's `bash -c '</dev/tcp/ADDR/PORT'`, which vipstack replaces by a
// native connect.
func (p *Plan) Config(s *Spec, n Node) *keepalived.Config {
	mode := "multicast"
	if s.Unicast() {
		mode = "unicast"
	}
	cfg := keepalived.NewConfig()
	cfg.Comment = fmt.Sprintf("vipstack ipfailover %s: %d VIPs in %d groups, %s, node %s rank %d of %d",
		s.ConfigName, len(s.VIPs), len(p.Groups), mode, n.Address, n.Rank, p.Ranks)
	cfg.Global.RouterID, cfg.Global.VRRPVersion = scrub(s.ConfigName), n.Version
	if Checks(s) {
		command := s.CheckScript
		if command == "" {
			t := MonitorTarget(s, n)
			command = fmt.Sprintf("/bin/bash -c '</dev/tcp/%s/%d'", t.Addr(), t.Port())
		}
		sc := keepalived.NewScript(CheckName(s), command)
		sc.Interval, sc.Timeout, sc.InitFail = s.CheckInterval, s.CheckInterval, !n.CheckPassed
		cfg.Scripts[sc.Name] = sc
	}
	var peers []netip.Addr
	for _, a := range s.Peers {
		if a != n.Address.WithZone("") {
			peers = append(peers, a)
		}
	}
	vips := func(as []netip.Addr) []keepalived.VIP {
		if len(as) == 0 {
			return nil
		}
		// At their size: append's room to grow is a quarter more at
		// thousands of VIPs, kept for the engine's whole life.
		out := make([]keepalived.VIP, 0, len(as))
		opts := keepalived.VIPOptions{Dev: n.Interface}
		for _, a := range as {
			out = append(out, keepalived.MakeVIP(netip.PrefixFrom(a, a.BitLen()), opts))
		}
		return out
	}
	for i := range p.Groups {
		g := &p.Groups[i]
		in := cfg.NewInstance(g.Name)
		master := g.Order[0] == n.Rank && s.Preempt && n.CheckPassed
		if master {
			in.InitialState = "MASTER"
		}
		in.Interface, in.VRID, in.Priority = n.Interface, g.VRID, g.Priority(n.Rank)
		in.AdvertInterval, in.Version = n.AdvertInterval, n.Version
		switch {
		case !s.Preempt:
			in.Preempt = false
		case s.PreemptDelay > 0 && !master:
			// keepalived clears preempt_delay with state MASTER ("will
			// not work with initial state MASTER"); leave it out so both
			// runners of this configuration behave alike.
			in.PreemptDelay = s.PreemptDelay
		}
		if n.Version == 2 {
			in.AuthType, in.AuthPass = "PASS", s.ConfigName
		}
		if Checks(s) {
			in.TrackScripts = []keepalived.TrackScript{{Name: CheckName(s)}}
		}
		if s.NotifyScript != "" {
			in.Notify = &keepalived.Notify{Any: s.NotifyScript}
		}
		if len(peers) > 0 {
			in.UnicastSrcIP, in.UnicastPeers = n.Address.WithZone(""), slices.Clone(peers)
		}
		adv := g.Advertised()
		in.VIPs, in.ExcludedVIPs = vips(adv), vips(g.VIPs[len(adv):])
		cfg.Instances = append(cfg.Instances, in)
	}
	return cfg
}

// Render returns this node's configuration (Config) as keepalived.conf
// text, for keepalived and for the status page.
func (p *Plan) Render(s *Spec, n Node) string {
	return string(keepalived.Format(p.Config(s, n)))
}

// Keepalived returns this node's configuration as the engine runs it:
// Config checked by the keepalived.conf reader's rules (Validate), with
// probe, when not nil, running the pool's check: the port check natively
// instead of its bash command, the check script with the pool's variables
// in its environment. name labels the configuration in errors.
func (p *Plan) Keepalived(s *Spec, n Node, probe track.Check, name string) (*keepalived.Config, error) {
	cfg := p.Config(s, n)
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%s: generated configuration rejected (a bug): %w", name, err)
	}
	if sc := cfg.Scripts[CheckName(s)]; sc != nil && probe != nil {
		sc.Probe = probe
	}
	return cfg, nil
}

// seconds formats d the way keepalived.conf writes durations.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}
