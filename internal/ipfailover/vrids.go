package ipfailover

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/vrrp"
)

// Heard is what was heard on the link for one VRID from one sender before
// the pool started.
type Heard struct {
	VRID      uint8        `json:"vrid"`
	From      netip.Addr   `json:"from"`
	Version   int          `json:"version"`
	Addresses []netip.Addr `json:"addresses"`
	Packets   int          `json:"packets"`
	// Interval is the advertisement interval of the first packet heard.
	Interval time.Duration `json:"-"`
}

// Finding is a VRID heard on the link that is not this pool's.
type Finding struct {
	VRID uint8        `json:"vrid"`
	From []netip.Addr `json:"from"`
	// Action is "avoided" (the pool picked other VRIDs), "conflict" (the
	// pool uses it anyway: the offset was fixed, or the pool already runs
	// on it) or "unused" (outside the VRIDs the pool needs).
	Action string `json:"action"`
	Group  string `json:"group,omitempty"` // our group on that VRID, for "conflict"
	// VIPs are the pool's VIPs the advertisements carry, though they match
	// none of this node's groups: a node of the pool running other
	// settings (a rollout of changed OPENSHIFT_HA_* values), or another
	// router holding them. Any such finding arms the LayoutGuard.
	VIPs []netip.Addr `json:"pool_vips,omitempty"`
}

// String is the log line for f.
func (f Finding) String() string {
	from := make([]string, len(f.From))
	for i, a := range f.From {
		from[i] = a.String()
	}
	s := fmt.Sprintf("VRID %d is spoken on the link by %s, not by this pool", f.VRID, strings.Join(from, ", "))
	switch f.Action {
	case "avoided":
		s += ": avoided"
	case "conflict":
		s += ": CONFLICT, used anyway by " + f.Group + " (the VRID offset is fixed, or the pool already runs on it); failover on it is unreliable until one side moves"
	default:
		s += " (not one this pool needs)"
	}
	if len(f.VIPs) > 0 {
		shown := make([]string, 0, 6)
		for i, a := range f.VIPs {
			if i == 5 {
				shown = append(shown, "...")
				break
			}
			shown = append(shown, a.String())
		}
		s += fmt.Sprintf("; it carries %d of this pool's VIPs (%s) in a group this node does not have: a node of this pool running other settings "+
			"(%s, %s, %s, %s or --node-addresses differ, as while a change rolls out) or another router; VRRP elects per VRID, so they would be held twice: "+
			"this node holds back its groups that carry them until that layout is gone", len(f.VIPs), strings.Join(shown, ", "), EnvVirtualIPs, EnvVIPGroups, EnvReplicaCount, EnvUnicastPeers)
	}
	return s
}

// AssignVRIDs gives every group of p a VRID and says which VRIDs heard on
// the link belong to other routers.
//
// Advertisements that carry exactly a group's advertised addresses, or that
// come from one of members (the pool's known nodes), are this pool's own
// (a node restarting hears the others). A group heard on the link keeps the
// VRID it runs on, unless the offset is fixed; so a node that restarts
// after a foreign router appeared agrees with the nodes already running.
//
// With a fixed offset (OPENSHIFT_HA_VRRP_ID_OFFSET or --vrrp-id-offset
// given), group i gets the i-th VRID from offset+1 up that is not
// excluded, as the image does, and foreign VRIDs among them are reported
// as conflicts. Otherwise foreign VRIDs are skipped as the excluded ones
// are, and the search wraps around to 1..offset when it passes 255.
func AssignVRIDs(p *Plan, s *Spec, heard []Heard, members []netip.Addr) ([]Finding, error) {
	excluded := map[int]bool{}
	for _, v := range s.ExcludedVRIDs {
		excluded[v] = true
	}
	foreign := map[uint8][]netip.Addr{}
	adopted := map[int]uint8{} // group -> VRID it runs on
	pool := map[netip.Addr]bool{}
	for _, g := range p.Groups {
		for _, a := range g.VIPs {
			pool[a] = true
		}
	}
	// elsewhere: per VRID, the pool's VIPs heard in a group this node does
	// not have, and who sent them.
	elsewhere := map[uint8][]netip.Addr{}
	elsewhereFrom := map[uint8][]netip.Addr{}
	for _, h := range heard {
		if g := groupOf(p, h.Addresses); g >= 0 {
			if _, ok := adopted[g]; !ok {
				adopted[g] = h.VRID
			}
			continue
		}
		for _, a := range h.Addresses {
			if pool[a] && !slices.Contains(elsewhere[h.VRID], a) {
				elsewhere[h.VRID] = append(elsewhere[h.VRID], a)
			}
		}
		if len(elsewhere[h.VRID]) > 0 && !slices.Contains(elsewhereFrom[h.VRID], h.From) {
			elsewhereFrom[h.VRID] = append(elsewhereFrom[h.VRID], h.From)
		}
		if slices.Contains(members, h.From) {
			continue
		}
		if !slices.Contains(foreign[h.VRID], h.From) {
			foreign[h.VRID] = append(foreign[h.VRID], h.From)
		}
	}

	taken := map[int]bool{}
	if !s.OffsetFixed {
		for g, v := range adopted {
			if excluded[int(v)] {
				continue
			}
			p.Groups[g].VRID = v
			taken[int(v)] = true
		}
	}
	candidates := make([]int, 0, 255)
	for v := s.VRIDOffset + 1; v <= 255; v++ {
		candidates = append(candidates, v)
	}
	if !s.OffsetFixed {
		for v := 1; v <= s.VRIDOffset; v++ {
			candidates = append(candidates, v)
		}
	}
	next := 0
	for g := range p.Groups {
		if p.Groups[g].VRID != 0 {
			continue
		}
		for next < len(candidates) {
			v := candidates[next]
			if excluded[v] || taken[v] || (!s.OffsetFixed && len(foreign[uint8(v)]) > 0) {
				next++
				continue
			}
			break
		}
		if next == len(candidates) {
			what := fmt.Sprintf("%s %d, %d excluded VRIDs", EnvVRIDOffset, s.VRIDOffset, len(s.ExcludedVRIDs))
			if !s.OffsetFixed {
				what = fmt.Sprintf("%d excluded VRIDs, %d VRIDs spoken by other routers", len(s.ExcludedVRIDs), len(foreign))
			}
			return nil, &ConfigError{fmt.Errorf("%d groups need %d VRIDs, but only %d are free (%s): lower %s", len(p.Groups), len(p.Groups), g, what, EnvVIPGroups)}
		}
		p.Groups[g].VRID = uint8(candidates[next])
		taken[candidates[next]] = true
		next++
	}

	// natural holds the VRIDs the pool would use with nothing heard: a
	// foreign one among them (or one the search passed over) was avoided,
	// even when the pool's running groups kept other VRIDs.
	natural := map[int]bool{}
	for _, v := range candidates {
		if len(natural) == len(p.Groups) {
			break
		}
		if !excluded[v] {
			natural[v] = true
		}
	}
	byVRID := map[uint8]string{}
	for _, g := range p.Groups {
		byVRID[g.VRID] = g.Name
	}
	// A known node is never foreign, but one that carries the pool's VIPs
	// in another layout is still reported.
	for v, from := range elsewhereFrom {
		for _, a := range from {
			if !slices.Contains(foreign[v], a) {
				foreign[v] = append(foreign[v], a)
			}
		}
	}
	var out []Finding
	for v, from := range foreign {
		sort.Slice(from, func(i, j int) bool { return from[i].Less(from[j]) })
		f := Finding{VRID: v, From: from, Action: "unused", VIPs: elsewhere[v]}
		slices.SortFunc(f.VIPs, netip.Addr.Compare)
		if name, ok := byVRID[v]; ok {
			f.Action, f.Group = "conflict", name
		} else if i := slices.Index(candidates, int(v)); !s.OffsetFixed && (natural[int(v)] || i >= 0 && i < next) {
			f.Action = "avoided"
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VRID < out[j].VRID })
	return out, nil
}

// groupOf returns the group whose advertised addresses are addrs, or -1.
func groupOf(p *Plan, addrs []netip.Addr) int {
	if len(addrs) == 0 {
		return -1
	}
	for i := range p.Groups {
		if vrrp.SameAddresses(p.Groups[i].Advertised(), addrs) {
			return i
		}
	}
	return -1
}
