package bgpmode

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/bgpconfig"
	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/ipfailover"
	"github.com/vipstack/vipstack/internal/node"
	"github.com/vipstack/vipstack/internal/track"
)

// Mode is ipfailover.BGPMode with the speaker `vipstack node` runs
// (node.StartBGP).
type Mode struct{}

// Start announces s's VIPs from the node n (NodeBGP), each while n's
// check passes. A node that cannot peer as s asks fails with an
// *ipfailover.ConfigError: restarting would not help.
func (Mode) Start(s *ipfailover.Spec, n ipfailover.BGPNode) (ipfailover.BGPSpeaker, error) {
	spec, err := NodeBGP(s, n.Subnets)
	if err != nil {
		return nil, &ipfailover.ConfigError{Err: err}
	}
	check := n.Check
	r, err := node.StartBGP(n.Logger.With("part", "bgp"), n.Clock, spec, BGPCheck(s), func(cluster.CheckSpec) track.Check { return check })
	if err != nil {
		return nil, err
	}
	var peers []netip.Addr
	for _, pr := range spec.Config.Peers {
		peers = append(peers, pr.Address)
	}
	n.Logger.Info("ipfailover announces the pool by BGP", "vips", len(s.VIPs), "asn", spec.Config.ASN, "router_id", spec.Config.RouterID,
		"peers", peers, "check", n.CheckText, "interface", n.Interface)
	return r, nil
}

// Collector is node's BGP collector (node.NewBGPCollector).
func (Mode) Collector(status func() *bgpconfig.SpeakerStatus) prometheus.Collector {
	return node.NewBGPCollector(status)
}

// NodeBGP is what this node announces: the speaker's configuration for a
// node whose addresses are subnets, with the pool's check (named
// ipfailover.CheckName) deciding every VIP. A peer on one of the node's
// subnets is peered with from the node's address there; a peer elsewhere
// only when the peers are iBGP or multihop, from the node's address of its
// family. The router ID is the node's first IPv4 address.
func NodeBGP(s *ipfailover.Spec, subnets []netip.Prefix) (*cluster.BGPSpec, error) {
	b := s.BGP
	cfg := bgpconfig.Config{ASN: b.ASN}
	var own netip.Addr // the node's first address of the VIPs' family
	for _, sn := range subnets {
		a := sn.Addr()
		if a.Is4() && !cfg.RouterID.IsValid() {
			cfg.RouterID = a
		}
		if a.Is4() == (s.Family() == 4) && !own.IsValid() {
			own = a
		}
	}
	if !cfg.RouterID.IsValid() {
		return nil, fmt.Errorf("%s: this node has no IPv4 address for its BGP router ID (addresses %v); BGP router IDs are IPv4 addresses (RFC 6286)", ipfailover.EnvBGPASN, subnets)
	}
	remote := b.PeerASN == b.ASN || b.Multihop > 0
	for _, ap := range b.Peers {
		local := netip.Addr{}
		for _, sn := range subnets {
			if sn.Contains(ap.Addr()) && sn.Addr() != ap.Addr() {
				local = sn.Addr()
				break
			}
		}
		onLink := local.IsValid()
		if !onLink {
			if !remote {
				continue
			}
			local = own
		}
		p := b.Peer(ap, local)
		if p.BFD != nil && !onLink {
			p.BFD.Multihop = true // RFC 5883
		}
		cfg.Peers = append(cfg.Peers, p)
	}
	if len(cfg.Peers) == 0 {
		var list []string
		for _, ap := range b.Peers {
			if ap.Port() == 0 {
				list = append(list, ap.Addr().String())
			} else {
				list = append(list, ap.String())
			}
		}
		return nil, fmt.Errorf("%s=%q: no peer is on this node's subnets (%v); list the routers of every node's subnet, or set %s for eBGP peers further away",
			ipfailover.EnvBGPPeers, strings.Join(list, ","), subnets, ipfailover.EnvBGPMultihop)
	}
	spec := &cluster.BGPSpec{Config: cfg, Checks: map[netip.Addr][]string{}, Role: map[netip.Addr]string{}}
	for _, v := range s.VIPs {
		cfg.Routes = append(cfg.Routes, b.Route(v))
		spec.Role[v] = s.ConfigName
		if ipfailover.Checks(s) {
			spec.Checks[v] = []string{ipfailover.CheckName(s)}
		}
	}
	spec.Config = cfg
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", ipfailover.EnvBGPASN, err)
	}
	return spec, nil
}

// BGPCheck is the pool's check as the BGP speaker's trackers run it: once
// every check interval, each result deciding at once (rise and fall 1, as
// the image's vrrp_script), starting failed until it passes.
func BGPCheck(s *ipfailover.Spec) []cluster.CheckSpec {
	if !ipfailover.Checks(s) {
		return nil
	}
	return []cluster.CheckSpec{{Name: ipfailover.CheckName(s), Interval: s.CheckInterval, Timeout: s.CheckInterval, Rise: 1, Fall: 1}}
}
