package cluster

import (
	"cmp"
	"net/netip"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/track"
)

// Keepalived turns a plan into the configuration the VRRP engine runs, on
// interface iface, with every check run natively by probe (no fork per
// check).
func (p *Plan) Keepalived(c *Cluster, iface string, probe func(CheckSpec) track.Check) *keepalived.Config {
	cfg := &keepalived.Config{
		Global: keepalived.GlobalDefs{
			RouterID:         p.Node.Name,
			VRRPVersion:      c.VRRP.Version,
			GARPMasterDelay:  5e9,
			GARPMasterRepeat: 5,
			MaxAutoPriority:  -1,
		},
		Scripts: map[string]*keepalived.Script{},
	}
	for _, ch := range p.Checks {
		cfg.Scripts[ch.Name] = &keepalived.Script{
			Name: ch.Name, Command: "native " + ch.Name, Interval: ch.Interval, Timeout: ch.Timeout,
			Weight: ch.Weight, Rise: ch.Rise, Fall: ch.Fall, Probe: probe(ch),
		}
	}
	for _, in := range p.Instances {
		ic := &keepalived.Instance{
			Name: in.Name, InitialState: "BACKUP", Interface: iface, VRID: in.VRID, Priority: in.Priority,
			AdvertInterval: c.VRRP.AdvertInterval, Version: cmp.Or(in.Version, c.VRRP.Version), Preempt: true,
			GARPMasterDelay: 5e9, GARPMasterRepeat: 5, GARPMasterRefreshRepeat: 1, Accept: true,
		}
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
