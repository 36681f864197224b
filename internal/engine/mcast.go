package engine

import (
	"net/netip"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/vrrp"
)

// joinKey is one multicast group joined on one interface.
type joinKey struct {
	ifIndex int
	group   netip.Addr
}

// mcastGroup is where a multicast instance of family sends its adverts,
// and the group it joins: global_defs vrrp_mcast_group4 / vrrp_mcast_group6,
// else the well-known VRRP group (224.0.0.18, ff02::12).
func mcastGroup(g *keepalived.GlobalDefs, family int) netip.Addr {
	switch {
	case family == 4 && g.McastGroup4.IsValid():
		return g.McastGroup4
	case family == 6 && g.McastGroup6.IsValid():
		return g.McastGroup6
	}
	return vrrp.MulticastGroup(family)
}

// sameGroup reports whether instance ic of the new configuration next
// sends to the group it sent to under old: an instance whose group
// changed is built anew, as keepalived restarts it.
func sameGroup(old, next *keepalived.Config, ic *keepalived.Instance) bool {
	if old == nil || len(ic.UnicastPeers) > 0 {
		return true
	}
	return mcastGroup(&old.Global, ic.Family()) == mcastGroup(&next.Global, ic.Family())
}

// otherGroup reports whether a packet to dst is multicast to a group
// other than in's. keepalived's socket receives only the groups it joined
// (IP_MULTICAST_ALL off), so a peer on another vrrp_mcast_group4/6 is not
// heard; vipstack's socket is shared, and the check is here.
func (in *instance) otherGroup(dst netip.Addr) bool {
	return in.peers == nil && dst.IsMulticast() && len(in.dsts) == 1 && dst != in.dsts[0]
}

// leaveUnusedGroups leaves the multicast groups no running instance sends
// to any more (a reload changed vrrp_mcast_group4/6, or removed the last
// multicast instance of an interface), so that the interface stops
// receiving the old group's adverts.
func (e *Engine) leaveUnusedGroups() {
	used := map[joinKey]bool{}
	for _, in := range e.instances {
		if !in.life.has(condAbsent) && in.peers == nil && len(in.dsts) == 1 {
			used[joinKey{in.ifIndex, in.dsts[0]}] = true
		}
	}
	for k := range e.joined {
		if used[k] {
			continue
		}
		fam := 6
		if k.group.Is4() {
			fam = 4
		}
		if c := e.conns[fam]; c != nil {
			if err := c.LeaveGroup(k.ifIndex, k.group); err != nil {
				e.log.Debug("leaving a multicast group failed", "group", k.group, "ifindex", k.ifIndex, "err", err)
			}
		}
		delete(e.joined, k)
	}
}
