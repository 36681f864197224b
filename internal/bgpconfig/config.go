package bgpconfig

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is one node's speaker: who it is and whom it talks to. Routes
// lists every VIP the node may announce; whether it announces one now is
// decided by Eligibility at run time.
type Config struct {
	ASN      uint32
	RouterID netip.Addr // an IPv4 address, unique in the AS
	// ListenPort is the TCP port the speaker accepts sessions on; 0 does
	// not listen (the speaker connects out to each peer, which is enough
	// for routers that accept connections).
	ListenPort int
	// NextHopIPv4 and NextHopIPv6 are the next hops of IPv4 and IPv6
	// routes. Unset, a route's next hop is the local address of the
	// session it is sent over, which must then be of the route's family.
	NextHopIPv4, NextHopIPv6 netip.Addr
	Peers                    []Peer
	Routes                   []Route
	// Demote is what a demoted verdict (Verdict.Demoted: a check that
	// VRRP would count as a weight fails) does to a route: it stays
	// announced with these attributes made worse, so that routers prefer
	// any node whose checks pass and still use this one when it is the
	// only one left. nil withdraws the route instead, as a verdict that is
	// not eligible does.
	Demote *Demotion
}

// Demotion is how much worse a demoted route's path is than its
// configured one. Prepending works with every router over eBGP; iBGP
// peers compare LOCAL_PREF first, and MED between paths from the same
// neighbouring AS (the nodes share one ASN), in either kind of session.
type Demotion struct {
	// Prepend adds the node's ASN this many more times to the AS path
	// (1..10, on top of the route's own Prepend); eBGP peers only, as
	// for Attributes.Prepend.
	Prepend int
	// LocalPref replaces the route's local preference (iBGP only); it
	// must be below the route's (100 when unset).
	LocalPref *uint32
	// MED replaces the route's MED; it must be above the route's (0 when
	// unset, as routers treat a missing MED).
	MED *uint32
}

// Apply returns a with the demotion's attributes.
func (d Demotion) Apply(a Attributes) Attributes {
	a.Prepend += d.Prepend
	if d.LocalPref != nil {
		lp := *d.LocalPref
		a.LocalPref = &lp
	}
	if d.MED != nil {
		med := *d.MED
		a.MED = &med
	}
	return a
}

// DefaultConnectRetry is a peer's connect retry when none is set: a node
// that announces VIPs wants its session back as soon as the router takes
// it (FRR's and BIRD's own default is 120 s, GoBGP's 120 s), and one
// connection attempt a second or two to each of a few routers costs
// nothing.
const DefaultConnectRetry = time.Second

// Peer is one BGP neighbour.
type Peer struct {
	Address netip.Addr
	ASN     uint32 // equal to Config.ASN for iBGP
	Port    int    // 0 is 179
	// LocalAddress is the session's source address; unset, the kernel
	// picks it. A peer with BFD needs it (the BFD session's source).
	LocalAddress netip.Addr
	// Multihop is the TTL of an eBGP session to a peer that is not
	// directly connected (1..255); 0 is a directly connected peer.
	Multihop int
	Password string // TCP MD5 signature (RFC 2385); "" is none
	// HoldTime and Keepalive: 0 is 90 s and a third of the hold time.
	// A hold time is 0 (no keepalives) or 3..65535 s.
	HoldTime, Keepalive time.Duration
	// ConnectRetry is the wait between two attempts to open the session
	// while it is down, whole seconds 1..65535; 0 is DefaultConnectRetry.
	// The speaker also waits 5 s after a session ends before its first
	// attempt (GoBGP's idle hold).
	ConnectRetry time.Duration
	// IPv4 and IPv6 enable the address families; when both are false the
	// family of Address is enabled.
	IPv4, IPv6 bool
	// GracefulRestart advertises the capability (RFC 4724) with this
	// restart time (1..4095 s): a session lost without a NOTIFICATION
	// (a crash, kill -9) leaves the peer forwarding to this node's routes
	// until the time passes or the speaker comes back. 0 is off.
	GracefulRestart time.Duration
	// BFD, when set, runs a BFD session to Address; the BGP session is
	// taken down the moment it goes Down.
	BFD *BFD
}

// BFD is a peer's BFD session (package bfd).
type BFD struct {
	Interval   time.Duration // desired TX and required RX interval
	Multiplier uint8
	Multihop   bool // RFC 5883 on port 4784
	Password   string
	KeyID      uint8
}

// Route is one VIP this node may announce, with its path attributes.
type Route struct {
	VIP netip.Addr
	Attributes
}

// Attributes are the path attributes of an announcement.
type Attributes struct {
	Communities      []string // "ASN:value" (RFC 1997), each half 0..65535
	LargeCommunities []string // "global:local1:local2" (RFC 8092), each 0..4294967295
	LocalPref        *uint32  // iBGP only; nil is the peer's default (100)
	MED              *uint32
	// Prepend adds this node's ASN this many more times to the AS path
	// (0..10), for primary-backup over eBGP. iBGP peers would see their
	// own ASN and drop the route, so it needs every peer to be eBGP.
	Prepend int
}

// Family says whether a is IPv4 or IPv6.
func Family(a netip.Addr) string {
	if a.Unmap().Is4() {
		return "ipv4"
	}
	return "ipv6"
}

// Prefix returns the VIP's host route.
func (r Route) Prefix() netip.Prefix {
	a := r.VIP.Unmap()
	return netip.PrefixFrom(a, a.BitLen())
}

// FieldError is a rejected setting: the field, the bad value and what is
// accepted.
type FieldError struct {
	Field string // "peers[0].hold-time"
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// FieldErrors flattens what Config.Validate returned into its field
// errors, in order; an error that names no field becomes one with an empty
// Field, so that a caller mapping fields to its own names sees it too.
func FieldErrors(err error) []*FieldError {
	var out []*FieldError
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, FieldErrors(e)...)
		}
		return out
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		out = append(out, fe)
	} else if err != nil {
		out = append(out, &FieldError{Msg: err.Error()})
	}
	return out
}

// Families returns the families enabled on p.
func (p Peer) Families() (ipv4, ipv6 bool) {
	if !p.IPv4 && !p.IPv6 {
		return p.Address.Unmap().Is4(), !p.Address.Unmap().Is4()
	}
	return p.IPv4, p.IPv6
}

// IBGP reports whether p is in the speaker's own AS.
func (c *Config) IBGP(p Peer) bool { return p.ASN == c.ASN }

// Validate checks c and returns every problem as a *FieldError, joined.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, &FieldError{Field: field, Msg: fmt.Sprintf(format, a...)})
	}
	if c.ASN == 0 {
		bad("asn", "0 is reserved (RFC 7607); want 1..4294967295")
	}
	if !c.RouterID.IsValid() || !c.RouterID.Is4() || c.RouterID.IsUnspecified() {
		bad("router-id", "%q is not an IPv4 address other than 0.0.0.0; BGP identifiers are 4 bytes (RFC 6286 allows any such value)", addrString(c.RouterID))
	}
	if c.ListenPort < 0 || c.ListenPort > 65535 {
		bad("listen-port", "%d is out of range; want 0 (do not listen) or 1..65535", c.ListenPort)
	}
	if c.NextHopIPv4.IsValid() && !c.NextHopIPv4.Is4() {
		bad("next-hop-ipv4", "%v is not an IPv4 address", c.NextHopIPv4)
	}
	if c.NextHopIPv6.IsValid() && (!c.NextHopIPv6.Is6() || c.NextHopIPv6.Is4In6() || c.NextHopIPv6.IsLinkLocalUnicast()) {
		bad("next-hop-ipv6", "%v is not a global IPv6 address", c.NextHopIPv6)
	}
	if len(c.Peers) == 0 {
		bad("peers", "none; want at least one peer")
	}
	seen := map[netip.Addr]int{}
	anyIBGP := false
	var v4, v6 bool // some peer carries the family
	for i, p := range c.Peers {
		f := fmt.Sprintf("peers[%d]", i)
		if !p.Address.IsValid() || p.Address.IsUnspecified() || p.Address.IsMulticast() {
			bad(f+".address", "%q is not a unicast IP address", addrString(p.Address))
			continue
		}
		if j, ok := seen[p.Address]; ok {
			bad(f+".address", "%v is also peers[%d]; want one entry per peer", p.Address, j)
		}
		seen[p.Address] = i
		if p.ASN == 0 {
			bad(f+".asn", "0 is reserved; want 1..4294967295")
		}
		if c.IBGP(p) {
			anyIBGP = true
		}
		if p.Port < 0 || p.Port > 65535 {
			bad(f+".port", "%d is out of range; want 0 (179) or 1..65535", p.Port)
		}
		if p.LocalAddress.IsValid() && p.LocalAddress.Unmap().Is4() != p.Address.Unmap().Is4() {
			bad(f+".local-address", "%v is not of the family of address %v", p.LocalAddress, p.Address)
		}
		if p.Multihop < 0 || p.Multihop > 255 {
			bad(f+".multihop", "%d is out of range; want 0 (directly connected) or a TTL 1..255", p.Multihop)
		} else if p.Multihop > 0 && c.IBGP(p) {
			bad(f+".multihop", "%d is set on an iBGP peer (asn %d equals the local asn); iBGP sessions are multihop already, want 0", p.Multihop, p.ASN)
		}
		if len(p.Password) > 80 {
			bad(f+".password", "%d bytes; TCP MD5 keys are at most 80 bytes (TCP_MD5SIG_MAXKEYLEN)", len(p.Password))
		}
		if p.HoldTime < 0 || p.HoldTime%time.Second != 0 || (p.HoldTime > 0 && p.HoldTime < 3*time.Second) || p.HoldTime > 65535*time.Second {
			bad(f+".hold-time", "%v; want 0 (default 90s) or whole seconds 3s..65535s (RFC 4271 4.2)", p.HoldTime)
		}
		hold := p.HoldTime
		if hold == 0 {
			hold = 90 * time.Second
		}
		if p.Keepalive < 0 || p.Keepalive%time.Second != 0 || p.Keepalive >= hold {
			bad(f+".keepalive", "%v; want 0 (a third of the hold time) or whole seconds below the hold time %v", p.Keepalive, hold)
		}
		if p.ConnectRetry < 0 || p.ConnectRetry%time.Second != 0 || p.ConnectRetry > 65535*time.Second {
			bad(f+".connect-retry", "%v; want 0 (default %v) or whole seconds 1s..65535s", p.ConnectRetry, DefaultConnectRetry)
		}
		if p.GracefulRestart < 0 || p.GracefulRestart%time.Second != 0 || p.GracefulRestart > 4095*time.Second {
			bad(f+".graceful-restart", "%v; want 0 (off) or whole seconds 1s..4095s (RFC 4724 restart time)", p.GracefulRestart)
		}
		pv4, pv6 := p.Families()
		v4, v6 = v4 || pv4, v6 || pv6
		if pv6 && p.Address.Unmap().Is4() && !c.NextHopIPv6.IsValid() {
			bad(f+".ipv6", "IPv6 routes over an IPv4 session need next-hop-ipv6, which is unset")
		}
		if pv4 && !p.Address.Unmap().Is4() && !c.NextHopIPv4.IsValid() {
			bad(f+".ipv4", "IPv4 routes over an IPv6 session need next-hop-ipv4, which is unset")
		}
		if b := p.BFD; b != nil {
			if b.Interval < 10*time.Millisecond || b.Interval > 60*time.Second || b.Interval%time.Millisecond != 0 {
				bad(f+".bfd.interval", "%v; want whole milliseconds 10ms..60s", b.Interval)
			}
			if b.Multiplier < 1 {
				bad(f+".bfd.multiplier", "0; want 1..255")
			}
			if !b.Multihop && p.Multihop > 1 {
				bad(f+".bfd.multihop", "false for a peer %d hops away (multihop %d); want true", p.Multihop, p.Multihop)
			}
			if !p.LocalAddress.IsValid() {
				bad(f+".local-address", "unset; a peer with BFD needs the session's source address")
			}
			if len(b.Password) > 16 {
				bad(f+".bfd.password", "%d bytes; simple passwords are 1..16 bytes (RFC 5880 4.2)", len(b.Password))
			}
		}
	}
	if !v4 && !v6 {
		return errors.Join(errs...)
	}
	vips := map[netip.Addr]int{}
	for i, r := range c.Routes {
		f := fmt.Sprintf("routes[%d]", i)
		if !r.VIP.IsValid() || r.VIP.IsUnspecified() || r.VIP.IsMulticast() || r.VIP.IsLinkLocalUnicast() {
			bad(f+".vip", "%q is not a unicast, non-link-local IP address", addrString(r.VIP))
			continue
		}
		if j, ok := vips[r.VIP.Unmap()]; ok {
			bad(f+".vip", "%v is also routes[%d]; want one entry per VIP", r.VIP, j)
		}
		vips[r.VIP.Unmap()] = i
		if r.VIP.Unmap().Is4() && !v4 {
			bad(f+".vip", "%v is IPv4 but no peer carries IPv4 unicast", r.VIP)
		}
		if !r.VIP.Unmap().Is4() && !v6 {
			bad(f+".vip", "%v is IPv6 but no peer carries IPv6 unicast", r.VIP)
		}
		for j, s := range r.Communities {
			if _, err := ParseCommunity(s); err != nil {
				bad(fmt.Sprintf("%s.communities[%d]", f, j), "%v", err)
			}
		}
		for j, s := range r.LargeCommunities {
			if _, err := ParseLargeCommunity(s); err != nil {
				bad(fmt.Sprintf("%s.large-communities[%d]", f, j), "%v", err)
			}
		}
		if r.Prepend < 0 || r.Prepend > 10 {
			bad(f+".prepend", "%d; want 0..10", r.Prepend)
		} else if r.Prepend > 0 && anyIBGP {
			bad(f+".prepend", "%d with an iBGP peer; iBGP peers drop a path that holds their own ASN, want 0 or only eBGP peers", r.Prepend)
		}
	}
	if c.Demote != nil {
		c.validateDemote(bad, anyIBGP)
	}
	return errors.Join(errs...)
}

// validateDemote checks that c.Demote makes every route's path worse for
// every peer: prepending for eBGP peers (or MED), LOCAL_PREF or MED for
// iBGP peers.
func (c *Config) validateDemote(bad func(field, format string, a ...any), anyIBGP bool) {
	d := c.Demote
	anyEBGP := false
	for _, p := range c.Peers {
		anyEBGP = anyEBGP || !c.IBGP(p)
	}
	switch {
	case d.Prepend < 0 || d.Prepend > 10:
		bad("demote.prepend", "%d; want 0..10", d.Prepend)
	case d.Prepend > 0 && anyIBGP:
		bad("demote.prepend", "%d with an iBGP peer; iBGP peers drop a path that holds their own ASN, want 0 (and local-pref or med) or only eBGP peers", d.Prepend)
	}
	if d.LocalPref != nil && !anyIBGP {
		bad("demote.local-pref", "%d, but every peer is eBGP and LOCAL_PREF is sent to iBGP peers only; want prepend or med", *d.LocalPref)
	}
	if anyEBGP && d.Prepend == 0 && d.MED == nil {
		bad("demote", "changes nothing an eBGP peer sees; want prepend (1..10) or med")
	}
	if anyIBGP && d.LocalPref == nil && d.MED == nil {
		bad("demote", "changes nothing an iBGP peer sees; want local-pref or med")
	}
	for i, r := range c.Routes {
		if d.LocalPref != nil {
			lp := uint32(100)
			if r.LocalPref != nil {
				lp = *r.LocalPref
			}
			if *d.LocalPref >= lp {
				bad("demote.local-pref", "%d is not below the local preference %d of routes[%d] (%v); a demoted path must be less preferred, want a value below %d", *d.LocalPref, lp, i, r.VIP, lp)
			}
		}
		if d.MED != nil {
			var med uint32
			if r.MED != nil {
				med = *r.MED
			}
			if *d.MED <= med {
				bad("demote.med", "%d is not above the MED %d of routes[%d] (%v); a demoted path must be less preferred, want %d..4294967295", *d.MED, med, i, r.VIP, med+1)
			}
		}
		if r.Prepend+d.Prepend > 10 && d.Prepend <= 10 {
			bad("demote.prepend", "%d on top of the prepend %d of routes[%d] (%v) is %d; want at most 10 in all", d.Prepend, r.Prepend, i, r.VIP, r.Prepend+d.Prepend)
		}
	}
}

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// ParseCommunity parses a standard community, "ASN:value", into its
// 32-bit form.
func ParseCommunity(s string) (uint32, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 2 {
		return 0, fmt.Errorf("%q is not a community; want ASN:value, each 0..65535", s)
	}
	var v [2]uint64
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return 0, fmt.Errorf("%q is not a community; want ASN:value, each 0..65535", s)
		}
		v[i] = n
	}
	return uint32(v[0]<<16 | v[1]), nil
}

// ParseLargeCommunity parses a large community, "global:local1:local2".
func ParseLargeCommunity(s string) ([3]uint32, error) {
	parts := strings.Split(s, ":")
	var v [3]uint32
	if len(parts) != 3 {
		return v, fmt.Errorf("%q is not a large community; want global:local1:local2, each 0..4294967295", s)
	}
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return v, fmt.Errorf("%q is not a large community; want global:local1:local2, each 0..4294967295", s)
		}
		v[i] = uint32(n)
	}
	return v, nil
}

// Equal reports whether a and b announce the same path attributes.
func (a Attributes) Equal(b Attributes) bool {
	eqp := func(x, y *uint32) bool {
		if x == nil || y == nil {
			return x == y
		}
		return *x == *y
	}
	return slices.Equal(a.Communities, b.Communities) && slices.Equal(a.LargeCommunities, b.LargeCommunities) &&
		eqp(a.LocalPref, b.LocalPref) && eqp(a.MED, b.MED) && a.Prepend == b.Prepend
}
