package ipfailover

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/track"
)

// LayoutGuard holds this node's groups back while the pool's VIPs are
// advertised in a layout this node does not share.
//
// VRRP elects one master per VRID, not per VIP. While a change of
// OPENSHIFT_HA_VIRTUAL_IPS, OPENSHIFT_HA_VIP_GROUPS,
// OPENSHIFT_HA_REPLICA_COUNT or the node list rolls out, nodes with the old
// and the new settings put the same VIPs in different groups on different
// VRIDs, and each side's masters hold them: every moved VIP is held twice
// (measured, TestPoolOtherSettingsReported). A node that heard such
// advertisements while it probed the link (it is the newcomer: the nodes
// already running did not) arms the guard; each of its groups then stays
// in FAULT, holding nothing, while an advertisement carrying one of the
// group's VIPs in another layout was heard within HoldFor of its interval,
// and takes part in the election again once the other layout is gone
// (its nodes restarted with the new settings, or stepped down: a
// priority-0 advertisement ends the hold at once).
//
// The guard only sees advertised addresses (a group's first
// MaxAdvertised VIPs, and the image's one VIP per group).
type LayoutGuard struct {
	clk   clock.Clock
	plan  *Plan
	owner map[netip.Addr]int // VIP -> this node's group

	mu   sync.Mutex
	seen map[guardKey]*guardEntry
}

type guardKey struct {
	vrid uint8
	from netip.Addr
}

type guardEntry struct {
	groups   []int        // this node's groups whose VIPs it carries
	vips     []netip.Addr // the pool's VIPs it carries
	last     time.Time
	interval time.Duration
}

// NewLayoutGuard returns a guard for plan's groups.
func NewLayoutGuard(clk clock.Clock, plan *Plan) *LayoutGuard {
	g := &LayoutGuard{clk: clk, plan: plan, owner: map[netip.Addr]int{}, seen: map[guardKey]*guardEntry{}}
	for i, gr := range plan.Groups {
		for _, a := range gr.VIPs {
			g.owner[a] = i
		}
	}
	return g
}

// HoldFor is how long an advertisement of another layout, sent every
// interval, holds a group back: the other side's master-down time (three
// intervals and the skew, under one more) and a second, so that a failover
// within the other layout, silent for that long, does not let this node
// take the VIPs in the gap.
func HoldFor(interval time.Duration) time.Duration {
	if interval <= 0 {
		interval = time.Second
	}
	return 4*interval + time.Second
}

// Observe notes an advertisement heard on the link and reports whether it
// carries the pool's VIPs in another layout. Advertisements of this node's
// own layout (any of its groups, exactly) are not the guard's business.
func (g *LayoutGuard) Observe(vrid uint8, from netip.Addr, priority uint8, interval time.Duration, addrs []netip.Addr) bool {
	if groupOf(g.plan, addrs) >= 0 {
		return false
	}
	var groups []int
	var vips []netip.Addr
	for _, a := range addrs {
		if i, ok := g.owner[a]; ok {
			vips = append(vips, a)
			if !slices.Contains(groups, i) {
				groups = append(groups, i)
			}
		}
	}
	if len(groups) == 0 {
		return false
	}
	k := guardKey{vrid, from.WithZone("")}
	g.mu.Lock()
	defer g.mu.Unlock()
	if priority == 0 {
		delete(g.seen, k) // it stepped down: its VIPs are released now
		return true
	}
	sort.Ints(groups)
	g.seen[k] = &guardEntry{groups: groups, vips: vips, last: g.clk.Now(), interval: interval}
	return true
}

// Blocking says what holds group back now ("" when nothing does).
func (g *LayoutGuard) Blocking(group int) string {
	now := g.clk.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	var by []string
	for k, e := range g.seen {
		if now.Sub(e.last) >= HoldFor(e.interval) {
			delete(g.seen, k)
			continue
		}
		if slices.Contains(e.groups, group) {
			by = append(by, fmt.Sprintf("VRID %d from %s", k.vrid, k.from))
		}
	}
	if len(by) == 0 {
		return ""
	}
	sort.Strings(by)
	return strings.Join(by, ", ")
}

// Check returns the track.Check that fails while group is held back.
func (g *LayoutGuard) Check(group int) track.Check { return guardCheck{g: g, group: group} }

// ScriptName is the name of group's guard among the engine's scripts.
func (g *LayoutGuard) ScriptName(group int) string {
	return "vipstack_layout_" + g.plan.Groups[group].Name
}

type guardCheck struct {
	g     *LayoutGuard
	group int
}

func (c guardCheck) Probe(context.Context) error {
	if by := c.g.Blocking(c.group); by != "" {
		return fmt.Errorf("held back: %s carries VIPs of group %s in another layout (a node with other settings, or another router); "+
			"this node takes the group when that layout is gone", by, c.g.plan.Groups[c.group].Name)
	}
	return nil
}
