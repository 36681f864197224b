package cluster

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/bgp"
)

// BGPFile is the bgp section as written: the nodes' AS, their peers, and
// which VIPs are announced by BGP instead of held by VRRP.
type BGPFile struct {
	ASN uint32 `yaml:"asn"`
	// Announce lists what BGP announces: the roles api, ingress and dns
	// (every VIP of the role) or single VIP addresses. Everything else
	// stays with VRRP.
	Announce []string      `yaml:"announce"`
	Peers    []BGPPeerFile `yaml:"peers"`
	// OnCheckFailure is what a failing check of a VIP does to its route,
	// the checks VRRP counts as weights (every check of the file's): demote
	// (the default: the route stays announced with worse attributes, so
	// routers prefer nodes whose checks pass and the last node keeps the
	// VIP, as VRRP's lowered priority does) or withdraw.
	OnCheckFailure string `yaml:"onCheckFailure,omitempty"`
	// Demote is how a demoted route is made worse; unset: prepend 3 on a
	// node whose peers are all eBGP, localPref 50 and med 100 on one with
	// an iBGP peer.
	Demote *BGPDemoteFile `yaml:"demote,omitempty"`
}

// BGPDemoteFile is bgp.demote as written.
type BGPDemoteFile struct {
	Prepend   int     `yaml:"prepend,omitempty"`
	LocalPref *uint32 `yaml:"localPref,omitempty"`
	MED       *uint32 `yaml:"med,omitempty"`
}

// BGPPeerFile is one peer as written.
type BGPPeerFile struct {
	Address string `yaml:"address"`
	ASN     uint32 `yaml:"asn"`
	Port    int    `yaml:"port,omitempty"`
	// Nodes are the nodes that peer with it (nodes on different subnets
	// have different routers); empty: every node that announces.
	Nodes []string `yaml:"nodes,omitempty"`
	// Source is the session's local address; empty: the node's address
	// of the peer's family. Only with a single entry in nodes.
	Source          string   `yaml:"source,omitempty"`
	Multihop        int      `yaml:"multihop,omitempty"`
	Password        string   `yaml:"password,omitempty"`
	HoldTime        string   `yaml:"holdTime,omitempty"`
	Keepalive       string   `yaml:"keepalive,omitempty"`
	ConnectRetry    string   `yaml:"connectRetry,omitempty"`
	Families        []string `yaml:"families,omitempty"`
	GracefulRestart string   `yaml:"gracefulRestart,omitempty"`
	BFD             *struct {
		Interval   string `yaml:"interval,omitempty"`
		Multiplier int    `yaml:"multiplier,omitempty"`
		Multihop   bool   `yaml:"multihop,omitempty"`
		Password   string `yaml:"password,omitempty"`
		KeyID      int    `yaml:"keyID,omitempty"`
	} `yaml:"bfd,omitempty"`
}

// BGP is the validated bgp section; its zero value (ASN 0) is no BGP.
type BGP struct {
	ASN uint32
	// Announced are the VIPs BGP announces.
	Announced map[netip.Addr]bool
	Peers     []BGPPeer
	// Withdraw is onCheckFailure: withdraw, a failing check withdrawing
	// the route instead of demoting it.
	Withdraw bool
	// Demote is bgp.demote; nil is the default of each node (DemoteFor).
	Demote *bgp.Demotion
}

// The demotion of a node that sets none (bgp.demote unset).
const (
	DefaultDemotePrepend   = 3
	DefaultDemoteLocalPref = 50
	DefaultDemoteMED       = 100
)

// DemoteFor is the demotion of a node whose speaker has cfg's peers: nil
// with onCheckFailure withdraw, bgp.demote when set, else prepend 3 when
// every peer is eBGP and LOCAL_PREF 50 with MED 100 when one is iBGP (iBGP
// peers drop a path holding their own ASN).
func (b BGP) DemoteFor(cfg bgp.Config) *bgp.Demotion {
	switch {
	case b.Withdraw:
		return nil
	case b.Demote != nil:
		d := *b.Demote
		return &d
	}
	for _, p := range cfg.Peers {
		if cfg.IBGP(p) {
			lp, med := uint32(DefaultDemoteLocalPref), uint32(DefaultDemoteMED)
			return &bgp.Demotion{LocalPref: &lp, MED: &med}
		}
	}
	return &bgp.Demotion{Prepend: DefaultDemotePrepend}
}

// BGPPeer is one peer and the nodes that peer with it.
type BGPPeer struct {
	bgp.Peer // LocalAddress unset: the node's address of Address's family
	Nodes    []string
}

// Enabled reports whether the file has a bgp section.
func (b BGP) Enabled() bool { return b.ASN != 0 }

// MaxBGPPeers bounds bgp.peers.
const MaxBGPPeers = 64

// validateBGP checks f.BGP against c (VIPs and nodes already validated)
// and fills c.BGP. Every error names the field as written.
func validateBGP(f *File, c *Cluster, nodeIdx map[string]int, bad func(string, ...any)) {
	b := f.BGP
	if b == nil {
		return
	}
	if b.ASN == 0 {
		bad("bgp.asn: 0 (or unset) is reserved (RFC 7607); accepted: 1..4294967295")
	}
	c.BGP = BGP{ASN: b.ASN, Announced: map[netip.Addr]bool{}}
	if f.Membership != nil && (f.Membership.Kubernetes || f.Membership.MDNS) {
		bad("bgp: not supported with live membership (membership.kubernetes or membership.mdns): a node learnt live has no peers of its own; list the nodes in nodes instead")
	}
	if len(b.Announce) == 0 {
		bad("bgp.announce: empty; accepted: the roles api, ingress and dns, or VIP addresses of apiVIPs, ingressVIPs and dnsVIP")
	}
	for i, s := range b.Announce {
		var vips []netip.Addr
		switch s {
		case "api":
			vips = c.APIVIPs
		case "ingress":
			vips = c.IngressVIPs
		case "dns":
			if !c.DNSVIP.IsValid() {
				bad("bgp.announce[%d]: dns, but the file has no dnsVIP", i)
				continue
			}
			vips = []netip.Addr{c.DNSVIP}
		default:
			a, err := netip.ParseAddr(s)
			if err != nil || !(slices.Contains(c.APIVIPs, a) || slices.Contains(c.IngressVIPs, a) || a == c.DNSVIP) {
				bad("bgp.announce[%d]: %q is neither a role nor a VIP of the file; accepted: api, ingress, dns, or an address of apiVIPs, ingressVIPs or dnsVIP", i, s)
				continue
			}
			vips = []netip.Addr{a}
		}
		for _, v := range vips {
			if c.BGP.Announced[v] {
				bad("bgp.announce[%d]: %s is already announced by an earlier entry; want each role or VIP once", i, v)
			}
			c.BGP.Announced[v] = true
		}
	}
	switch b.OnCheckFailure {
	case "", "demote":
		if d := b.Demote; d != nil {
			c.BGP.Demote = &bgp.Demotion{Prepend: d.Prepend, LocalPref: d.LocalPref, MED: d.MED}
		}
	case "withdraw":
		c.BGP.Withdraw = true
		if b.Demote != nil {
			bad("bgp.demote: set, but bgp.onCheckFailure is withdraw, which announces no demoted route; accepted: onCheckFailure demote (or unset) with demote, or withdraw without it")
		}
	default:
		bad("bgp.onCheckFailure: %q; accepted: demote (the default: a failing check keeps the route announced with worse attributes, as VRRP lowers the priority) or withdraw (a failing check withdraws the route)", b.OnCheckFailure)
	}
	if len(b.Peers) > MaxBGPPeers {
		bad("bgp.peers: %d entries, more than the %d accepted", len(b.Peers), MaxBGPPeers)
		return
	}
	if len(b.Peers) == 0 {
		bad("bgp.peers: none; want at least one router to announce to")
	}
	dur := func(field, s string) time.Duration {
		if s == "" {
			return 0
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			bad("%s: %q is not a duration; accepted: e.g. 90s, 300ms", field, s)
		}
		return d
	}
	for i, pf := range b.Peers {
		f := fmt.Sprintf("bgp.peers[%d]", i)
		var p BGPPeer
		a, err := netip.ParseAddr(pf.Address)
		if err != nil || a.Zone() != "" {
			bad("%s.address: %q is not an IP address", f, pf.Address)
		}
		p.Address = a
		p.ASN, p.Port, p.Multihop, p.Password = pf.ASN, pf.Port, pf.Multihop, pf.Password
		for j, n := range pf.Nodes {
			if _, ok := nodeIdx[n]; !ok {
				bad("%s.nodes[%d]: %q is not a node of the file (nodes[].name)", f, j, n)
			}
		}
		p.Nodes = slices.Clone(pf.Nodes)
		if pf.Source != "" {
			s, err := netip.ParseAddr(pf.Source)
			switch {
			case err != nil || s.Zone() != "":
				bad("%s.source: %q is not an IP address", f, pf.Source)
			case len(pf.Nodes) != 1:
				bad("%s.source: %s is one node's address, but the peer has %d nodes; accepted: source with exactly one entry in nodes (or no source: each node's address of the peer's family)", f, s, len(pf.Nodes))
			default:
				if ni, ok := nodeIdx[pf.Nodes[0]]; ok && !slices.Contains(c.Nodes[ni].IPs, s) {
					bad("%s.source: %s is not an address of node %s (%v)", f, s, pf.Nodes[0], c.Nodes[ni].IPs)
				}
				p.LocalAddress = s
			}
		}
		p.HoldTime = dur(f+".holdTime", pf.HoldTime)
		p.Keepalive = dur(f+".keepalive", pf.Keepalive)
		p.ConnectRetry = dur(f+".connectRetry", pf.ConnectRetry)
		p.GracefulRestart = dur(f+".gracefulRestart", pf.GracefulRestart)
		for j, fam := range pf.Families {
			switch fam {
			case "ipv4":
				p.IPv4 = true
			case "ipv6":
				p.IPv6 = true
			default:
				bad("%s.families[%d]: %q; accepted: ipv4, ipv6", f, j, fam)
			}
		}
		if bf := pf.BFD; bf != nil {
			p.BFD = &bgp.BFD{Interval: 300 * time.Millisecond, Multiplier: 3, Multihop: bf.Multihop, Password: bf.Password}
			if bf.Interval != "" {
				p.BFD.Interval = dur(f+".bfd.interval", bf.Interval)
			}
			if bf.Multiplier != 0 {
				if bf.Multiplier < 1 || bf.Multiplier > 255 {
					bad("%s.bfd.multiplier: %d; accepted: 1..255", f, bf.Multiplier)
				}
				p.BFD.Multiplier = uint8(bf.Multiplier)
			}
			if bf.KeyID < 0 || bf.KeyID > 255 {
				bad("%s.bfd.keyID: %d; accepted: 0..255", f, bf.KeyID)
			}
			p.BFD.KeyID = uint8(bf.KeyID)
		}
		c.BGP.Peers = append(c.BGP.Peers, p)
	}
	// The rest is the speaker's own validation, run on what each node
	// would run, its field names mapped back to the file's.
	seen := map[string]bool{}
	ids := map[netip.Addr]string{}
	for _, n := range c.Nodes {
		cfg, ok := c.bgpConfigFor(n)
		if !ok {
			continue
		}
		if len(cfg.Peers) == 0 {
			bad("bgp.peers: node %s announces %s but no peer lists it in nodes; want a peer for every node that announces", n.Name, cfg.Routes[0].VIP)
			continue
		}
		if o, dup := ids[cfg.RouterID]; dup && cfg.RouterID.IsValid() {
			bad("nodes[%d].routerID: %s is also the router ID of node %s; BGP router IDs are unique in the AS", nodeIdx[n.Name], cfg.RouterID, o)
		}
		ids[cfg.RouterID] = n.Name
		err := cfg.Validate()
		if err == nil {
			continue
		}
		for _, fe := range bgp.FieldErrors(err) {
			field := fileField(fe.Field, c, cfg, n, nodeIdx)
			if field == "nodes[].routerID" {
				field = fmt.Sprintf("nodes[%d].routerID", nodeIdx[n.Name])
			}
			msg := field + ": " + fe.Msg
			if !seen[msg] {
				seen[msg] = true
				bad("%s", msg)
			}
		}
	}
}

// fileField maps a field of bgp.Config ("peers[0].hold-time") to the
// cluster file's ("bgp.peers[0].holdTime"). A node's Config holds only
// its own peers, so peers[i] is found again by address.
func fileField(field string, c *Cluster, cfg bgp.Config, n Node, nodeIdx map[string]int) string {
	switch {
	case field == "router-id":
		return "nodes[].routerID"
	case field == "routes" || strings.HasPrefix(field, "routes["):
		return "bgp.announce"
	case field == "":
		return "bgp"
	}
	var k int
	if _, err := fmt.Sscanf(field, "peers[%d]", &k); err == nil && k < len(cfg.Peers) {
		for i, p := range c.BGP.Peers {
			if p.Address == cfg.Peers[k].Address {
				field = fmt.Sprintf("peers[%d]", i) + field[strings.Index(field, "]")+1:]
				if strings.HasSuffix(field, ".local-address") && !p.LocalAddress.IsValid() {
					return fmt.Sprintf("nodes[%d].ips (the source of bgp.peers[%d] for node %s)", nodeIdx[n.Name], i, n.Name)
				}
				break
			}
		}
	}
	r := strings.NewReplacer("hold-time", "holdTime", "connect-retry", "connectRetry", "graceful-restart", "gracefulRestart", "local-pref", "localPref",
		"local-address", "source", ".ipv4", ".families", ".ipv6", ".families", "key-id", "keyID")
	return "bgp." + r.Replace(field)
}

// bgpConfigFor is the speaker configuration of node n: its peers, with
// their source addresses filled in, and the VIPs its role may announce.
// ok is false when n announces nothing.
func (c *Cluster) bgpConfigFor(n Node) (cfg bgp.Config, ok bool) {
	if !c.BGP.Enabled() {
		return cfg, false
	}
	var vips []netip.Addr
	switch n.Role {
	case Bootstrap:
		vips = slices.Concat(c.APIVIPs, dnsVIPs(c))
	case Master:
		vips = slices.Concat(c.APIVIPs, c.IngressVIPs, dnsVIPs(c))
	case Worker:
		vips = c.IngressVIPs
	}
	for _, v := range vips {
		if c.BGP.Announced[v] {
			cfg.Routes = append(cfg.Routes, bgp.Route{VIP: v})
		}
	}
	if len(cfg.Routes) == 0 {
		return cfg, false
	}
	cfg.ASN = c.BGP.ASN
	cfg.RouterID = n.RouterID
	if !cfg.RouterID.IsValid() {
		for _, a := range n.IPs {
			if a.Is4() {
				cfg.RouterID = a
				break
			}
		}
	}
	for _, p := range c.BGP.Peers {
		if len(p.Nodes) > 0 && !slices.Contains(p.Nodes, n.Name) {
			continue
		}
		bp := p.Peer
		if !bp.LocalAddress.IsValid() {
			if a, ok := addrOfFamily(n.IPs, bp.Address); ok {
				bp.LocalAddress = a
			}
		}
		cfg.Peers = append(cfg.Peers, bp)
	}
	cfg.Demote = c.BGP.DemoteFor(cfg)
	return cfg, true
}

func dnsVIPs(c *Cluster) []netip.Addr {
	if c.DNSVIP.IsValid() {
		return []netip.Addr{c.DNSVIP}
	}
	return nil
}
