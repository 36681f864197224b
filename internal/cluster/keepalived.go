package cluster

import (
	"cmp"
	"net/netip"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/track"
)

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
		for _, name := range in.Checks {
			ic.TrackScripts = append(ic.TrackScripts, keepalived.TrackScript{Name: name})
		}
		cfg.Instances = append(cfg.Instances, ic)
	}
	return cfg
}
