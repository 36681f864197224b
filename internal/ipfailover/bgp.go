package ipfailover

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/bgpconfig"
)

// vipstack's BGP mode (not the image's): with OPENSHIFT_HA_BGP_ASN set,
// every node whose check passes announces every VIP of the pool as a host
// route to its BGP peers, instead of one node holding each VIP by VRRP.
// The pool runs it through Options.BGP (package ipfailover/bgpmode).
const (
	EnvBGPASN             = "OPENSHIFT_HA_BGP_ASN"
	EnvBGPPeers           = "OPENSHIFT_HA_BGP_PEERS"
	EnvBGPPeerASN         = "OPENSHIFT_HA_BGP_PEER_ASN"
	EnvBGPPassword        = "OPENSHIFT_HA_BGP_PASSWORD"
	EnvBGPHoldTime        = "OPENSHIFT_HA_BGP_HOLD_TIME"
	EnvBGPMultihop        = "OPENSHIFT_HA_BGP_MULTIHOP"
	EnvBGPGracefulRestart = "OPENSHIFT_HA_BGP_GRACEFUL_RESTART"
	EnvBGPBFDInterval     = "OPENSHIFT_HA_BGP_BFD_INTERVAL"
	EnvBGPBFDMultiplier   = "OPENSHIFT_HA_BGP_BFD_MULTIPLIER"
	// The pool's path attributes, on every VIP's route.
	EnvBGPCommunities      = "OPENSHIFT_HA_BGP_COMMUNITIES"
	EnvBGPLargeCommunities = "OPENSHIFT_HA_BGP_LARGE_COMMUNITIES"
	EnvBGPLocalPref        = "OPENSHIFT_HA_BGP_LOCAL_PREF"
	EnvBGPMED              = "OPENSHIFT_HA_BGP_MED"
	EnvBGPPrepend          = "OPENSHIFT_HA_BGP_AS_PATH_PREPEND"
)

// bgpVars are the variables of the BGP mode, in the order Vars lists them.
func bgpVars() []Var {
	return []Var{
		{Name: EnvBGPASN, Flag: "bgp-asn", Usage: "vipstack only: this pool's AS number (1..4294967295); when set, the VIPs are announced by BGP from every node whose check passes, and VRRP is not run"},
		{Name: EnvBGPPeers, Flag: "bgp-peers", Usage: "vipstack only: the routers, ADDRESS or ADDRESS:PORT ([ADDRESS]:PORT for IPv6) separated by commas or spaces; a node peers with those on its own subnets (every one when the peers are iBGP or multihop)"},
		{Name: EnvBGPPeerASN, Flag: "bgp-peer-asn", Usage: "vipstack only: the routers' AS number (default: the pool's, iBGP)"},
		{Name: EnvBGPPassword, Flag: "bgp-password", Usage: "vipstack only: TCP MD5 password of the BGP sessions (RFC 2385); empty: none"},
		{Name: EnvBGPHoldTime, Flag: "bgp-hold-time", Usage: "vipstack only: BGP hold time in whole seconds, 0 (90) or 3..65535; keepalives every third of it"},
		{Name: EnvBGPMultihop, Flag: "bgp-multihop", Usage: "vipstack only: TTL of eBGP sessions to routers not on the node's subnet, 1..255; 0 or unset: directly connected"},
		{Name: EnvBGPGracefulRestart, Flag: "bgp-graceful-restart", Usage: "vipstack only: graceful restart time in whole seconds (RFC 4724), 1..4095: a node that crashes keeps its routes this long; 0 or unset: off"},
		{Name: EnvBGPBFDInterval, Flag: "bgp-bfd-interval", Usage: "vipstack only: run BFD with each router at this interval in milliseconds, 10..60000; unset: no BFD"},
		{Name: EnvBGPBFDMultiplier, Flag: "bgp-bfd-multiplier", Usage: "vipstack only: BFD detection multiplier, 1..255 (default 3)"},
		{Name: EnvBGPCommunities, Flag: "bgp-communities", Usage: "vipstack only: standard communities on every VIP's route, ASN:VALUE (each 0..65535) separated by commas or spaces"},
		{Name: EnvBGPLargeCommunities, Flag: "bgp-large-communities", Usage: "vipstack only: large communities on every VIP's route, GLOBAL:LOCAL1:LOCAL2 (each 0..4294967295) separated by commas or spaces"},
		{Name: EnvBGPLocalPref, Flag: "bgp-local-pref", Usage: "vipstack only: LOCAL_PREF of the routes, 0..4294967295, for iBGP peers (eBGP peers do not take it)"},
		{Name: EnvBGPMED, Flag: "bgp-med", Usage: "vipstack only: MED (multi-exit discriminator) of the routes, 0..4294967295: a router prefers the lowest among equal paths"},
		{Name: EnvBGPPrepend, Flag: "bgp-as-path-prepend", Usage: "vipstack only: add the pool's AS number this many more times (0..10) to the routes' AS path, so that eBGP routers prefer another pool's or site's path"},
	}
}

// BGPSettings are the pool's BGP variables, validated. What depends on
// the node (which peers it reaches, its source addresses, its router ID)
// is filled in by bgpmode.NodeBGP.
type BGPSettings struct {
	ASN, PeerASN uint32
	Peers        []netip.AddrPort // port 0: 179
	Password     string
	HoldTime     time.Duration
	Multihop     int
	// GracefulRestart is the restart time; 0 is off.
	GracefulRestart time.Duration
	BFD             *bgpconfig.BFD // nil: no BFD
	// Attributes go on every VIP's route.
	Attributes bgpconfig.Attributes
}

// VRRPOnly are the variables that configure only VRRP: with BGP they have
// no effect, and a warning says so. OPENSHIFT_HA_REPLICA_COUNT is not
// among them: it stays the pool's number of nodes (the Deployment's
// replicas in `vipstack manifest ipfailover`).
func VRRPOnly() []string {
	return []string{EnvVIPGroups, EnvVRIDOffset, EnvUseUnicast, EnvUnicastPeers,
		EnvIptablesChain, EnvNftablesRule, EnvPreemption, EnvExcludedVRIDs, EnvExcludedVRIDsImage}
}

// parseBGP reads the BGP variables into s.BGP. Without OPENSHIFT_HA_BGP_ASN
// any other BGP variable is an error: it would be ignored.
func (p *parser) parseBGP(s *Spec) {
	asnVal, asnSrc := p.get(EnvBGPASN)
	if asnVal == "" {
		for _, v := range bgpVars()[1:] {
			if p.given(v.Name) {
				val, src := p.get(v.Name)
				p.errs = append(p.errs, fmt.Errorf("%s=%q: set without %s; BGP is off unless %s gives the pool's AS number", src, val, p.source(EnvBGPASN), p.source(EnvBGPASN)))
			}
		}
		return
	}
	b := &BGPSettings{}
	b.ASN = p.asn(asnVal, asnSrc)
	b.PeerASN = b.ASN
	if val, src := p.get(EnvBGPPeerASN); val != "" {
		b.PeerASN = p.asn(val, src)
	}
	if val, src := p.get(EnvBGPPeers); val == "" {
		p.errs = append(p.errs, fmt.Errorf("%s is required with %s: the routers' addresses, e.g. 10.0.0.1,10.0.1.1", p.source(EnvBGPPeers), p.source(EnvBGPASN)))
	} else {
		b.Peers = p.bgpPeers(val, src, s)
	}
	b.Password, _ = p.get(EnvBGPPassword)
	b.HoldTime = time.Duration(p.intIn(EnvBGPHoldTime, 0, 65535, "whole seconds, 0 (90) or 3..65535")) * time.Second
	b.Multihop = p.intIn(EnvBGPMultihop, 0, 255, "a TTL from 1 to 255, or 0 (directly connected)")
	b.GracefulRestart = time.Duration(p.intIn(EnvBGPGracefulRestart, 0, 4095, "whole seconds from 1 to 4095, or 0 (off)")) * time.Second
	if val, _ := p.get(EnvBGPBFDInterval); val != "" {
		b.BFD = &bgpconfig.BFD{Interval: time.Duration(p.intIn(EnvBGPBFDInterval, 10, 60000, "milliseconds from 10 to 60000")) * time.Millisecond, Multiplier: 3}
		if m, _ := p.get(EnvBGPBFDMultiplier); m != "" {
			b.BFD.Multiplier = uint8(p.intIn(EnvBGPBFDMultiplier, 1, 255, "a multiplier from 1 to 255"))
		}
		b.BFD.Multihop = b.Multihop > 0
	} else if p.given(EnvBGPBFDMultiplier) {
		val, src := p.get(EnvBGPBFDMultiplier)
		p.errs = append(p.errs, fmt.Errorf("%s=%q: set without %s; BFD runs only with an interval", src, val, p.source(EnvBGPBFDInterval)))
	}
	b.Attributes = p.bgpAttributes()
	if b.Attributes.LocalPref != nil && b.PeerASN != b.ASN {
		val, src := p.get(EnvBGPLocalPref)
		p.errs = append(p.errs, fmt.Errorf("%s=%q: the routers are eBGP peers (%s %d, %s %d), which do not take LOCAL_PREF; unset it, or use %s or %s to rank the paths",
			src, val, p.source(EnvBGPPeerASN), b.PeerASN, p.source(EnvBGPASN), b.ASN, p.source(EnvBGPMED), p.source(EnvBGPPrepend)))
	}
	if b.BFD != nil && b.GracefulRestart > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s and %s are both set: a router acting as graceful-restart helper (FRR does) keeps the routes of a session BFD took down as stale for %v, so BFD does not remove a crashed node's routes; set one of the two",
			p.source(EnvBGPBFDInterval), p.source(EnvBGPGracefulRestart), b.GracefulRestart))
	}
	if val, src := p.get(EnvNotifyScript); val != "" {
		p.errs = append(p.errs, fmt.Errorf("%s=%q: not supported with %s: BGP has no VRRP states to notify; unset it, or unset %s to run VRRP", src, val, p.source(EnvBGPASN), p.source(EnvBGPASN)))
	}
	for _, name := range VRRPOnly() {
		if p.given(name) {
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s has no effect with %s: the VIPs are announced by BGP, no VRRP runs", p.source(name), p.source(EnvBGPASN)))
		}
	}
	s.BGP = b
	if len(p.errs) == 0 {
		p.validateBGP(s)
	}
}

// bgpAttributes reads the pool's path attributes. Their syntax is checked
// by the speaker's validation (validateBGP), which names the variable.
func (p *parser) bgpAttributes() bgpconfig.Attributes {
	var a bgpconfig.Attributes
	if val, _ := p.get(EnvBGPCommunities); val != "" {
		a.Communities = strings.FieldsFunc(val, listSep)
	}
	if val, _ := p.get(EnvBGPLargeCommunities); val != "" {
		a.LargeCommunities = strings.FieldsFunc(val, listSep)
	}
	a.LocalPref = p.uint32Var(EnvBGPLocalPref)
	a.MED = p.uint32Var(EnvBGPMED)
	a.Prepend = p.intIn(EnvBGPPrepend, 0, 10, "a count from 0 to 10")
	return a
}

// uint32Var reads name as 0..4294967295; nil when unset.
func (p *parser) uint32Var(name string) *uint32 {
	val, src := p.get(name)
	if val == "" {
		return nil
	}
	n, err := strconv.ParseUint(strings.TrimSpace(val), 10, 32)
	if err != nil {
		p.bad(src, val, "a whole number from 0 to 4294967295")
		return nil
	}
	v := uint32(n)
	return &v
}

func (p *parser) asn(val, src string) uint32 {
	n, err := strconv.ParseUint(strings.TrimSpace(val), 10, 32)
	if err != nil || n == 0 {
		p.bad(src, val, "an AS number from 1 to 4294967295")
		return 0
	}
	return uint32(n)
}

// bgpPeers parses the peer list; every peer is of the VIPs' family.
func (p *parser) bgpPeers(val, src string, s *Spec) []netip.AddrPort {
	var out []netip.AddrPort
	for _, f := range strings.FieldsFunc(val, listSep) {
		ap, err := netip.ParseAddrPort(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				p.errs = append(p.errs, fmt.Errorf("%s=%q: %q is not ADDRESS or ADDRESS:PORT ([ADDRESS]:PORT for IPv6)", src, val, f))
				continue
			}
			ap = netip.AddrPortFrom(a, 0)
		}
		a := ap.Addr()
		switch {
		case a.Zone() != "" || a.Is4In6() || !a.IsGlobalUnicast():
			p.errs = append(p.errs, fmt.Errorf("%s=%q: %s is not a unicast IPv4 or IPv6 address", src, val, a))
			continue
		case len(s.VIPs) > 0 && a.Is4() != (s.Family() == 4):
			p.errs = append(p.errs, fmt.Errorf("%s=%q: %s is not of the VIPs' family (IPv%d); the routes go over sessions of their own family", src, val, a, s.Family()))
			continue
		case slices.ContainsFunc(out, func(o netip.AddrPort) bool { return o.Addr() == a }):
			p.errs = append(p.errs, fmt.Errorf("%s=%q: %s is listed twice", src, val, a))
			continue
		}
		out = append(out, ap)
	}
	return out
}

// validateBGP runs the speaker's own validation (bgpconfig.Config.Validate) on
// what a node of the pool would run, with placeholders for what depends on
// the node, and names each rejection by its variable.
func (p *parser) validateBGP(s *Spec) {
	cfg := provisional(s)
	err := cfg.Validate()
	if err == nil {
		return
	}
	seen := map[string]bool{}
	for _, fe := range bgpconfig.FieldErrors(err) {
		name := bgpVarOf(fe.Field)
		if name == "" {
			continue // filled in per node
		}
		val, src := p.get(name)
		msg := fmt.Sprintf("%s=%q: %s", strings.TrimSuffix(src, " (default)"), val, fe.Msg)
		if !seen[msg] {
			seen[msg] = true
			p.errs = append(p.errs, errors.New(msg))
		}
	}
}

// provisional is the speaker's configuration with placeholders for the
// node's router ID and source addresses.
func provisional(s *Spec) bgpconfig.Config {
	local := netip.MustParseAddr("192.0.2.1")
	if s.Family() == 6 {
		local = netip.MustParseAddr("2001:db8::1")
	}
	cfg := bgpconfig.Config{ASN: s.BGP.ASN, RouterID: netip.MustParseAddr("192.0.2.1")}
	for _, ap := range s.BGP.Peers {
		cfg.Peers = append(cfg.Peers, s.BGP.Peer(ap, local))
	}
	for _, v := range s.VIPs {
		cfg.Routes = append(cfg.Routes, s.BGP.Route(v))
	}
	return cfg
}

// Route is v's route with the pool's attributes (its own copy).
func (b *BGPSettings) Route(v netip.Addr) bgpconfig.Route {
	a := b.Attributes
	a.Communities, a.LargeCommunities = slices.Clone(a.Communities), slices.Clone(a.LargeCommunities)
	return bgpconfig.Route{VIP: v, Attributes: a}
}

// Peer is the session to the router at ap from local, with the pool's
// session settings (its own copy of BFD's).
func (b *BGPSettings) Peer(ap netip.AddrPort, local netip.Addr) bgpconfig.Peer {
	p := bgpconfig.Peer{Address: ap.Addr(), ASN: b.PeerASN, Port: int(ap.Port()), LocalAddress: local, Password: b.Password,
		HoldTime: b.HoldTime, GracefulRestart: b.GracefulRestart}
	p.Multihop = b.Multihop
	if b.BFD != nil {
		bfd := *b.BFD
		p.BFD = &bfd
	}
	return p
}

// bgpVarOf names the variable behind a field of bgpconfig.Config, "" for what
// the node fills in (router ID, source addresses).
func bgpVarOf(field string) string {
	_, rest, _ := strings.Cut(field, "].")
	switch {
	case field == "asn":
		return EnvBGPASN
	case field == "peers":
		return EnvBGPPeers
	case strings.HasPrefix(field, "routes"):
		switch {
		case strings.Contains(field, ".communities"):
			return EnvBGPCommunities
		case strings.Contains(field, ".large-communities"):
			return EnvBGPLargeCommunities
		case strings.HasSuffix(field, ".prepend"):
			return EnvBGPPrepend
		case strings.HasSuffix(field, ".local-pref"):
			return EnvBGPLocalPref
		case strings.HasSuffix(field, ".med"):
			return EnvBGPMED
		}
		return EnvVirtualIPs
	case !strings.HasPrefix(field, "peers["):
		return ""
	}
	switch rest {
	case "address", "port", "ipv4", "ipv6":
		return EnvBGPPeers
	case "asn":
		return EnvBGPPeerASN
	case "password":
		return EnvBGPPassword
	case "hold-time", "keepalive":
		return EnvBGPHoldTime
	case "multihop", "bfd.multihop":
		return EnvBGPMultihop
	case "graceful-restart":
		return EnvBGPGracefulRestart
	case "bfd.interval":
		return EnvBGPBFDInterval
	case "bfd.multiplier":
		return EnvBGPBFDMultiplier
	}
	return ""
}
