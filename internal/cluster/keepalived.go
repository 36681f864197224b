package cluster

import (
	"cmp"
	"net/netip"
	"time"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/track"
	"github.com/vipstack/vipstack/internal/vrrp/fsm"
)

// TieBreakStep is how much longer than an equal rival with a higher address
// a node waits before it takes over from a master that sent priority 0: a
// quarter of the advertisement interval and at least 100 ms, long enough
// for the rival's first advertisement to arrive and be read on a busy host
// (25 ms, a quarter of 100 ms adverts, was not: under a load average of 25
// on 2 cores a lower master took over beside the rival in 1 of 6 rounds of
// TestStoryReleaseMovesOnce), short against Skew_Time plus the rest of the
// outage. It only costs time when that rival does not take over either (it
// is down too).
func TieBreakStep(advert time.Duration) time.Duration { return max(advert/4, 100*time.Millisecond) }

// Keepalived turns a plan into the configuration the VRRP engine runs, on
// interface iface, with every check run natively by probe (no fork per
// check). It is built from keepalived's defaults (keepalived.NewConfig);
// the caller checks it with Validate.
func (p *Plan) Keepalived(c *Cluster, iface string, probe func(CheckSpec) track.Check) *keepalived.Config {
	cfg := keepalived.NewConfig()
	cfg.Global.RouterID = p.Node.Name
	cfg.Global.VRRPVersion = c.VRRP.Version
	for _, ch := range p.Checks {
		sc := keepalived.NewScript(ch.Name, "native "+ch.Name)
		sc.Interval, sc.Timeout = ch.Interval, ch.Timeout
		sc.Weight, sc.Rise, sc.Fall, sc.Probe = ch.Weight, ch.Rise, ch.Fall, probe(ch)
		cfg.Scripts[ch.Name] = sc
	}
	for _, in := range p.Instances {
		ic := cfg.NewInstance(in.Name)
		ic.Interface, ic.VRID, ic.Priority = iface, in.VRID, in.Priority
		ic.AdvertInterval, ic.Version = c.VRRP.AdvertInterval, cmp.Or(in.Version, c.VRRP.Version)
		if in.AuthPass != "" {
			ic.AuthType, ic.AuthPass = "PASS", in.AuthPass
		}
		for _, v := range in.VIPs {
			ic.VIPs = append(ic.VIPs, keepalived.VIP{Prefix: netip.PrefixFrom(v, v.BitLen())})
		}
		if len(in.Peers) > 0 {
			ic.UnicastSrcIP = in.Source
			ic.UnicastPeers = append([]netip.Addr(nil), in.Peers...)
		}
		if len(in.Rivals) > 0 {
			ic.TieBreak = fsm.TieBreak{Rivals: append([]netip.Addr(nil), in.Rivals...), Top: in.Top, Step: TieBreakStep(c.VRRP.AdvertInterval)}
		}
		for _, name := range in.Checks {
			ic.TrackScripts = append(ic.TrackScripts, keepalived.TrackScript{Name: name})
		}
		cfg.Instances = append(cfg.Instances, ic)
	}
	return cfg
}
