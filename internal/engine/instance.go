package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/announce"
	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/track"
	"github.com/vipstack/vipstack/internal/vrrp"
	"github.com/vipstack/vipstack/internal/vrrp/fsm"
)

// instance is one running vrrp_instance.
type instance struct {
	cfg     *keepalived.Instance
	fsm     *fsm.Machine
	family  int
	ifIndex int
	src     netip.Addr
	dsts    []netip.Addr
	peers   map[netip.Addr]bool // unicast peers; nil in multicast mode
	vips    []vipRef            // virtual_ipaddress then virtual_ipaddress_excluded, as in cfg
	// vipDev is the interface of the VIPs without a dev of their own: the
	// instance's, or its VMAC interface with use_vmac.
	vipDev string
	// vipText is vips as text, for the status report: made by the first
	// status after the list changed (texts), none until then.
	vipText []string
	// heldText is the list heldOf returned last: the VIPs held, as text.
	heldText []string
	auth     [8]byte
	group    *syncGroup
	ann      Announcer
	pacer    *announce.Pacer

	refreshAt      time.Time
	reannounce     reannouncer
	rivals         map[netip.Addr]*rival // lower routers advertising as master (see rivalMaster)
	sendFails      int                   // advertisements that failed to send, in a row
	sendFailLogged time.Time
	lastTransition *Transition
	conflicts      conflictBook
	// advertChanged is when the addresses this instance advertises last
	// changed on a reload (see addrSkew).
	advertChanged  time.Time
	sent, received uint64
	counts         counters  // for the metrics (see metrics.go)
	lastMailed     fsm.State // the state of the last SMTP alert sent (keepalived's last_email_state)
	mailed         bool      // an SMTP alert was sent
	// life is the instance's lifecycle state beside its fsm state
	// (absent, recreated, waiting, no-source, group-fault: lifecycle.go),
	// changed only by setCond.
	life life
	// notPeerLogged is when each source that is not a unicast peer was
	// last logged (see notAPeer).
	notPeerLogged map[netip.Addr]time.Time
}

type syncGroup struct {
	cfg     *keepalived.SyncGroup
	members []*instance
	state   fsm.State // the state all members last shared
}

// vipRoom holds the VIP lists of the instances one apply builds, each
// list the part of one array that build takes (take). A list each, 1,000
// of them made among the garbage of a start, left their spans of the heap
// a quarter empty (docs/design/memory.md); append's room to grow, kept
// for the engine's life, was most of their memory before that. An
// instance whose interface is missing takes no part; its room stays
// unused, and it takes its lists from a later apply's room.
type vipRoom struct {
	vips []vipRef
}

// roomFor makes the room for the VIPs of ics.
func roomFor(ics []*keepalived.Instance) *vipRoom {
	vips := 0
	for _, ic := range ics {
		vips += ic.NumVIPs()
	}
	return &vipRoom{vips: make([]vipRef, 0, vips)}
}

// take returns an empty list with room for vips VIPs (nil for none), out
// of r while it has room. Appending past that room copies, as for any
// slice.
func (r *vipRoom) take(vips int) []vipRef {
	return carve(&r.vips, vips)
}

// appendAdvert appends to b the addresses the adverts of an instance
// configured as ic carry: its virtual_ipaddress, not
// virtual_ipaddress_excluded. They are read from the instance's
// configuration when an advert is sent or compared, not kept beside the
// VIPs: 24 bytes a VIP for the engine's life (docs/design/memory.md). A
// reload gives a kept instance its new configuration before it advertises
// again (apply).
func appendAdvert(b []netip.Addr, ic *keepalived.Instance) []netip.Addr {
	for _, v := range ic.VIPs {
		b = append(b, v.Prefix.Addr())
	}
	return b
}

// carve returns an empty slice with room for n elements, the next n of
// pool's room when it has that many (a new slice when not), nil for 0.
func carve[T any](pool *[]T, n int) []T {
	if n == 0 {
		return nil
	}
	p := *pool
	if cap(p)-len(p) < n {
		return make([]T, 0, n)
	}
	k := len(p)
	*pool = p[:k+n]
	return p[k : k : k+n]
}

// apply makes the running set match cfg: instances that did not change
// are kept as they are, the rest are stopped and started.
func (e *Engine) apply(cfg *keepalived.Config) error {
	now := e.clk.Now()
	// Build everything new first, so a failure changes nothing.
	fresh := map[string]*instance{}
	links := linkReads{}
	var build []*keepalived.Instance
	for _, ic := range cfg.Instances {
		if old, ok := e.instances[ic.Name]; ok && keepsState(old.cfg, ic) && sameGroup(e.cfg, cfg, ic) &&
			!(old.life.has(condAbsent) && e.linkExists(ic.Interface)) && !old.life.has(condRecreated) {
			continue
		}
		build = append(build, ic)
	}
	room := roomFor(build)
	// The sources of the instances built, one look per interface: the
	// running instances, whose VIPs are not a source, do not change
	// while these are built (they go into fresh).
	srcs := map[string]sourceAnswer{}
	for _, ic := range build {
		in, err := e.build(cfg, ic, links, room, srcs)
		if err != nil {
			for _, f := range fresh {
				f.close()
			}
			return err
		}
		fresh[ic.Name] = in
	}
	// Stop what went away or changed.
	var readvertise []*instance // kept, with a new version or authentication
	for _, name := range e.names() {
		old := e.instances[name]
		if _, changed := fresh[name]; changed || !hasInstance(cfg, name) {
			switch {
			case old.life.has(condRecreated) && hasInstance(cfg, name):
				e.stopInstance(old, now, "interface "+old.cfg.Interface+" was created again")
				e.setCond(old, condRecreated, false, "built anew on the interface created again")
			case !old.life.has(condAbsent):
				e.keepMoved(cfg, fresh, old)
				e.stopInstance(old, now, "configuration changed")
			case hasInstance(cfg, name) && !fresh[name].life.has(condAbsent):
				// A placeholder sent and held nothing: its replacement
				// starts below.
				e.log.Info("interface now exists; starting the instance", "instance", name, "interface", fresh[name].cfg.Interface)
				e.setCond(old, condAbsent, false, "interface "+old.cfg.Interface+" now exists; the instance is built on it")
			}
			e.metrics.forget(old, fresh[name])
			delete(e.instances, name)
			e.sortedNames = nil
			delete(e.byKey, old.key())
			old.close()
		} else {
			ic := instanceByName(cfg, name)
			if !sameInstance(old.cfg, ic) {
				if !samePeers(old.cfg, ic) {
					// A node joined or left: update the peers in place,
					// keeping state and VIPs.
					e.log.Info("unicast peers changed; instance keeps its state", "instance", name, "peers", ic.UnicastPeers)
					old.setPeers(ic.UnicastPeers)
				}
				if !sameVIPs(old.cfg, ic) {
					// Addresses came or went: a master adds and announces
					// the new ones and removes the gone ones; the others
					// are not touched.
					e.updateVIPs(old, ic, func(v netif.VIP) string { return e.keptByMaster(cfg, fresh, name, v) })
				}
				if old.cfg.Version != ic.Version || old.cfg.AuthType != ic.AuthType || old.cfg.AuthPass != ic.AuthPass {
					// keepalived 2.2.7 keeps the state (measured: its
					// master went on with the new version or password, no
					// priority 0, its VIP never missing). Peers still on
					// the old one drop our adverts until they reload too,
					// as they would after a restart.
					e.log.Info("VRRP version or authentication changed; instance keeps its state", "instance", name,
						"version", ic.Version, "auth_type", cmp.Or(ic.AuthType, "none"))
					old.auth = [8]byte{}
					if ic.AuthType == "PASS" {
						old.auth = vrrp.Password(ic.AuthPass)
					}
					// Adverts carry old.cfg's version and authentication:
					// they go out below, once old.cfg is ic.
					readvertise = append(readvertise, old)
				}
				if old.cfg.AdvertInterval != ic.AdvertInterval {
					e.log.Info("advert_int changed; instance keeps its state", "instance", name,
						"from", old.cfg.AdvertInterval, "to", ic.AdvertInterval)
					old.fsm.SetAdvertInterval(now, ic.AdvertInterval)
				}
				if old.cfg.Preempt != ic.Preempt || old.cfg.PreemptDelay != ic.PreemptDelay {
					e.log.Info("preemption changed; instance keeps its state", "instance", name,
						"preempt", ic.Preempt, "preempt_delay", ic.PreemptDelay)
					old.fsm.SetPreempt(now, ic.Preempt, ic.PreemptDelay)
				}
				if !reflect.DeepEqual(old.cfg.TieBreak, ic.TieBreak) {
					// The cluster's membership changed (vipstack node).
					old.fsm.SetTieBreak(ic.TieBreak)
				}
				if old.cfg.Priority != ic.Priority {
					// As keepalived does on reload: the instance keeps its
					// state and the new priority takes effect through
					// recomputeAll below (a master advertises it at once).
					e.log.Info("priority changed; instance keeps its state", "instance", name, "from", old.cfg.Priority, "to", ic.Priority)
				}
			}
			old.cfg = ic // same content otherwise; take the new positions
			old.pointAt(ic)
		}
	}
	for _, in := range readvertise {
		// A master advertises the new content at once.
		acts := in.fsm.SetVersion(now, in.cfg.Version)
		if acts == nil {
			acts = in.fsm.AdvertiseNow(now) // only the authentication changed
		}
		e.do(in, now, acts)
	}
	e.cfg = cfg
	e.runner.Security = securityOf(cfg)
	e.syncTrackers(cfg)
	e.groups = map[string]*syncGroup{}
	for _, g := range cfg.SyncGroups {
		sg := &syncGroup{cfg: g}
		e.groups[g.Name] = sg
	}
	for _, ic := range cfg.Instances {
		in := e.instances[ic.Name]
		if in == nil {
			in = fresh[ic.Name]
			e.instances[ic.Name] = in
			e.sortedNames = nil
			e.byKey[in.key()] = in
		}
		in.group = nil
	}
	for _, g := range cfg.SyncGroups {
		sg := e.groups[g.Name]
		for _, m := range g.Members {
			if in := e.instances[m]; in != nil {
				in.group = sg
				sg.members = append(sg.members, in)
			}
		}
	}
	e.syncVMACs(true)
	e.leaveUnusedGroups()
	e.checkSources(now)
	e.absentNext = time.Time{}
	for _, in := range e.instances {
		if in.life.has(condAbsent) {
			e.absentNext = now.Add(srcPoll)
		}
	}
	for _, name := range sortedKeys(fresh) {
		in := fresh[name]
		prio, fault := e.effective(in)
		e.log.Info("starting VRRP instance", "instance", in.cfg.Name, "vrid", in.cfg.VRID, "version", in.cfg.Version,
			"interface", in.cfg.Interface, "priority", prio, "source", in.src, "peers", in.dsts)
		if e.adopt[name] {
			delete(e.adopt, name)
			if !e.waits(in) {
				e.do(in, now, in.fsm.Adopt(now, prio, fault, "handed over by "+cmp.Or(e.opts.AdoptFrom, "the previous agent on this node")))
				if in.fsm.State() != fsm.Master {
					e.dropAdopted(in, "it cannot start as master")
				}
				continue
			}
			e.dropAdopted(in, "it waits for the first result of its tracked scripts")
		}
		if e.waits(in) {
			e.setCond(in, condWaiting, true, "a weight-0 tracked script has no result yet: INIT until its first")
			e.log.Info("VRRP instance waits for the first result of its tracked scripts", "instance", in.cfg.Name, "fault", fault)
			continue
		}
		e.do(in, now, in.fsm.Start(now, prio, fault))
	}
	e.adopt = nil // only at start
	e.recomputeAll(now)
	return nil
}

// dropAdopted removes the addresses a predecessor left for an instance
// that does not start as master after all.
func (e *Engine) dropAdopted(in *instance, why string) {
	for _, v := range in.vips {
		if err := e.nl.DelVIP(v.vip()); err != nil {
			e.log.Warn("removing a handed-over VIP failed", "instance", in.cfg.Name, "vip", v.Prefix, "dev", v.Dev, "err", err)
			continue
		}
		e.log.Info("removed a VIP handed over by the previous agent: "+why, "instance", in.cfg.Name, "vip", v.Prefix, "dev", v.Dev)
	}
}

func hasInstance(cfg *keepalived.Config, name string) bool { return instanceByName(cfg, name) != nil }

func instanceByName(cfg *keepalived.Config, name string) *keepalived.Instance {
	for _, ic := range cfg.Instances {
		if ic.Name == name {
			return ic
		}
	}
	return nil
}

// sameInstance compares two instance configurations, ignoring where in the
// files they were written.
func sameInstance(a, b *keepalived.Instance) bool {
	ca, cb := *a, *b
	ca.Pos, cb.Pos = keepalived.Pos{}, keepalived.Pos{}
	strip := func(vs []keepalived.VIP) []keepalived.VIP {
		out := make([]keepalived.VIP, len(vs))
		for i, v := range vs {
			v.SetPos(keepalived.Pos{})
			out[i] = v
		}
		return out
	}
	ca.VIPs, cb.VIPs = strip(ca.VIPs), strip(cb.VIPs)
	ca.ExcludedVIPs, cb.ExcludedVIPs = strip(ca.ExcludedVIPs), strip(cb.ExcludedVIPs)
	stripT := func(ts []keepalived.TrackScript) []keepalived.TrackScript {
		out := make([]keepalived.TrackScript, len(ts))
		for i, t := range ts {
			t.Pos = keepalived.Pos{}
			out[i] = t
		}
		return out
	}
	ca.TrackScripts, cb.TrackScripts = stripT(ca.TrackScripts), stripT(cb.TrackScripts)
	stripI := func(ts []keepalived.TrackInterface) []keepalived.TrackInterface {
		out := make([]keepalived.TrackInterface, len(ts))
		for i, t := range ts {
			t.Pos = keepalived.Pos{}
			out[i] = t
		}
		return out
	}
	ca.TrackInterfaces, cb.TrackInterfaces = stripI(ca.TrackInterfaces), stripI(cb.TrackInterfaces)
	return reflect.DeepEqual(ca, cb)
}

// keepsState reports whether a running instance with configuration a can
// take configuration b in place, keeping its state and VIPs, as keepalived
// keeps an instance's state over a reload: when they differ only in their
// addresses (same family), unicast peers (unicast stays unicast), base
// priority (the address owner's 255 neither given nor taken), tracked
// scripts, notify scripts, nopreempt / preempt_delay, advert_int, initial
// state, VRRP version or authentication, or the tie-break (vipstack node's
// cluster membership). Anything else (VRID, interface,
// family, unicast / multicast, ...) restarts the instance.
func keepsState(a, b *keepalived.Instance) bool {
	if a.Family() != b.Family() || (len(a.UnicastPeers) == 0) != (len(b.UnicastPeers) == 0) {
		return false
	}
	if (a.Priority == 255) != (b.Priority == 255) {
		return false
	}
	ca, cb := *a, *b
	for _, c := range []*keepalived.Instance{&ca, &cb} {
		c.VIPs, c.ExcludedVIPs, c.UnicastPeers = nil, nil, nil
		c.Priority, c.TrackScripts, c.Notify, c.InitialState = 0, nil, nil, ""
		c.Preempt, c.PreemptDelay, c.AdvertInterval = false, 0, 0
		c.Version, c.AuthType, c.AuthPass = 0, "", ""
		c.TieBreak = fsm.TieBreak{}
	}
	return sameInstance(&ca, &cb)
}

func samePeers(a, b *keepalived.Instance) bool {
	return reflect.DeepEqual(a.UnicastPeers, b.UnicastPeers)
}

func sameVIPs(a, b *keepalived.Instance) bool {
	ca, cb := *a, *b
	ca.UnicastPeers, cb.UnicastPeers = nil, nil
	ca.TieBreak, cb.TieBreak = fsm.TieBreak{}, fsm.TieBreak{}
	return sameInstance(&ca, &cb)
}

// keptByMaster returns the name of another instance that is master, keeps
// its state over the reload to cfg (it is not in fresh) and has v in cfg, or
// "": the instance a VIP moves to when a reload regroups the VIPs of two
// masters of this node.
func (e *Engine) keptByMaster(cfg *keepalived.Config, fresh map[string]*instance, self string, v netif.VIP) string {
	k := addrKey(v.Prefix, v.Dev)
	for _, ic := range cfg.Instances {
		other := e.instances[ic.Name]
		if ic.Name == self || other == nil || fresh[ic.Name] != nil || other.fsm.State() != fsm.Master {
			continue
		}
		for w := range ic.AllVIPs() {
			if w := toVIP(w, other.vipDev); addrKey(w.Prefix, w.Dev) == k {
				return ic.Name
			}
		}
	}
	return ""
}

// keepMoved takes out of a master about to stop (it went away or changed)
// the VIPs that another master of this node, kept in place, holds in cfg:
// they stay on the interface. Releasing them on the stop removed an
// address that master had just taken over (handled first: instance names
// sort so), and it stepped down and took all its VIPs again (seen in
// bench/chaos -k8s: an externalTrafficPolicy Local Service back to
// Cluster; TestReloadMovesVIPFromStoppedInstance).
func (e *Engine) keepMoved(cfg *keepalived.Config, fresh map[string]*instance, in *instance) {
	if in.fsm.State() != fsm.Master {
		return
	}
	kept := in.vips[:0:0]
	for _, v := range in.vips {
		if to := e.keptByMaster(cfg, fresh, in.cfg.Name, v.vip()); to != "" {
			e.log.Info("VIP moves to another instance that is master here; it stays on the interface", "instance", in.cfg.Name, "vip", v.Prefix, "dev", v.Dev, "to", to)
			continue
		}
		kept = append(kept, v)
	}
	in.vips = kept
}

// updateVIPs gives a running instance a new address list in place. A VIP
// it loses that movedTo names another master of this node for stays on the
// interface: that master holds it now. Removing it, when the master that
// gained it had been handled first, left that master without it (seen:
// gone until the master stepped down and took its VIPs again;
// TestReloadMovesVIPBetweenMasters).
func (e *Engine) updateVIPs(in *instance, ic *keepalived.Instance, movedTo func(netif.VIP) string) {
	vips := appendRefs(nil, ic, in.vipDev)
	keep, had := map[string]int{}, map[string]bool{} // keep: the index in vips
	for i, v := range vips {
		keep[addrKey(v.Prefix, v.Dev)] = i
	}
	for _, v := range in.vips {
		had[addrKey(v.Prefix, v.Dev)] = true
	}
	var added []int // indexes in vips
	var removed []vipRef
	for i, v := range vips {
		if !had[addrKey(v.Prefix, v.Dev)] {
			added = append(added, i)
		}
	}
	for j, v := range in.vips {
		k := addrKey(v.Prefix, v.Dev)
		i, kept := keep[k]
		if !kept {
			removed = append(removed, v)
			continue
		}
		// A VIP held and kept points at the new list: an entry left on
		// the old one would keep that list, and the configuration it
		// points into, for as long as the VIP is held; a reload each
		// adding one VIP would keep a list per reload.
		if e.held.get(v.Prefix, v.Dev) == &in.vips[j] {
			e.held.put(&vips[i])
		}
	}
	e.log.Info("addresses changed; instance keeps its state", "instance", ic.Name, "added", len(added), "removed", len(removed))
	if !vrrp.SameAddresses(appendAdvert(nil, ic), appendAdvert(nil, in.cfg)) {
		// The peers take the same change at about the same time: what
		// they advertised against the old list is no conflict.
		in.advertChanged = e.clk.Now()
		in.conflicts.forget("addresses")
	}
	in.vips, in.vipText = vips, nil
	if in.fsm.State() != fsm.Master {
		return
	}
	now := e.clk.Now()
	for _, v := range removed {
		if to := movedTo(v.vip()); to != "" {
			e.log.Info("VIP moves to another instance that is master here; it stays on the interface", "instance", ic.Name, "vip", v.Prefix, "dev", v.Dev, "to", to)
			continue
		}
		e.release(ic.Name, v.vip(), now)
	}
	adds := make([]netif.VIP, len(added))
	for j, i := range added {
		adds[j] = vips[i].vip()
		e.held.put(&vips[i])
		e.unrelease(vips[i].Prefix, vips[i].Dev)
	}
	if len(removed) > 0 {
		e.checkReleased(now)
	}
	if err := e.recordVIPs(adds); err != nil {
		e.log.Error("cannot record VIPs in the ledger; a crash now would leave them behind", "path", e.opts.Ledger.Path, "err", err)
	}
	addrs := e.addVIPs(ic.Name, adds, nil)
	in.pacer.Schedule(addrs, ic.GARPMasterRepeat, ic.GARPMasterDelay)
}

func (in *instance) setPeers(peers []netip.Addr) {
	in.peers = map[netip.Addr]bool{}
	in.dsts = nil
	for _, p := range peers {
		in.peers[p] = true
		in.dsts = append(in.dsts, p)
	}
}

// linkReads keeps the links read while apply builds its instances, all
// before it changes anything: each instance read its interface anew, 1,000
// reads of four links at the start of bench/scale, 12 MB of garbage
// (docs/design/memory.md).
type linkReads map[string]linkRead

type linkRead struct {
	info netif.LinkInfo
	err  error
}

// link returns the link named name as read the first time it was asked
// for.
func (r linkReads) link(nl Netlink, name string) (netif.LinkInfo, error) {
	if l, ok := r[name]; ok {
		return l.info, l.err
	}
	info, err := nl.Link(name)
	r[name] = linkRead{info: info, err: err}
	return info, err
}

// build prepares an instance: interface, addresses, socket, announcer.
// links keeps the links read by the builds of one apply.
func (e *Engine) build(cfg *keepalived.Config, ic *keepalived.Instance, links linkReads, room *vipRoom, srcs map[string]sourceAnswer) (*instance, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: vrrp_instance %s: %s", ic.Pos, ic.Name, fmt.Sprintf(format, args...))
	}
	link, err := links.link(e.nl, ic.Interface)
	if errors.Is(err, netif.ErrNoLink) {
		// keepalived 2.2.7 exits at start for this ("Non-existent
		// interface specified in configuration") unless dynamic_interfaces
		// is set; then the instance is in FAULT until the interface is
		// created, and the others run. vipstack always does the latter.
		e.log.Warn("interface does not exist; instance in FAULT until it appears",
			"instance", ic.Name, "interface", ic.Interface, "at", ic.Pos.String())
		e.links[ic.Interface] = false
		in := &instance{cfg: ic, family: ic.Family(), vipDev: ic.Interface, conflicts: newConflictBook(),
			fsm: fsm.New(fsm.Config{Version: ic.Version, AdvertInterval: ic.AdvertInterval, Preempt: ic.Preempt, PreemptDelay: ic.PreemptDelay, TieBreak: ic.TieBreak})}
		e.setCond(in, condAbsent, true, "interface "+ic.Interface+" does not exist")
		return in, nil
	}
	if err != nil {
		return nil, fail("interface %q: %v", ic.Interface, err)
	}
	e.links[ic.Interface] = link.Up
	in := &instance{cfg: ic, family: ic.Family(), ifIndex: link.Index, conflicts: newConflictBook()}
	vipDev, annName, annIndex, err := e.vmacFor(ic, in)
	if err != nil {
		return nil, fail("%v", err)
	}
	in.vipDev = vipDev
	in.vips = appendRefs(room.take(ic.NumVIPs()), ic, vipDev)
	if ic.UnicastSrcIP.IsValid() {
		in.src = ic.UnicastSrcIP
	} else {
		src, what, err := e.sourceNow(in, srcs)
		switch {
		case errors.Is(err, netif.ErrNoAddress):
			// keepalived 2.2.7 starts such an instance in FAULT ("entering
			// FAULT state (no IPv4 address for interface)") and enters BACKUP
			// when an address is assigned (TestStartWithoutAddress; for
			// IPv6, TestInterfaceLosesItsLinkLocal). A node whose DHCP lease
			// comes after the agent starts must not lose its agent. The
			// address watcher's first report makes checkPrimaries look again.
			e.log.Warn("interface has no "+what+" to send from; instance in FAULT until it has one",
				"instance", ic.Name, "interface", ic.Interface, "at", ic.Pos.String())
			e.setCond(in, condNoSource, true, "interface "+ic.Interface+" has no "+what+" to send from")
		case err != nil:
			return nil, fail("%s of %s to send from: %v", what, ic.Interface, err)
		}
		in.src = src
	}
	if len(ic.UnicastPeers) > 0 {
		in.setPeers(ic.UnicastPeers)
	} else {
		in.dsts = []netip.Addr{mcastGroup(&cfg.Global, in.family)}
	}
	if ic.AuthType == "PASS" {
		in.auth = vrrp.Password(ic.AuthPass)
	}
	if other, ok := e.byKey[in.key()]; ok && other.cfg.Name != ic.Name {
		if _, stays := e.instances[other.cfg.Name]; stays && hasInstance(e.cfg, other.cfg.Name) {
			// The parser rejects duplicates within one file; this only
			// catches a rename that keeps the VRID during a reload.
			e.log.Warn("instance takes over the VRID of another", "instance", ic.Name, "other", other.cfg.Name)
		}
	}
	c, err := e.conn(in.family)
	if err != nil {
		return nil, fail("open VRRP socket: %v", err)
	}
	if in.peers == nil && !e.joined[joinKey{in.ifIndex, in.dsts[0]}] {
		if err := c.JoinGroup(in.ifIndex, in.dsts[0]); err != nil {
			return nil, fail("%v", err)
		}
		e.joined[joinKey{in.ifIndex, in.dsts[0]}] = true
	}
	annMAC := link.MAC // as read above, unless the announcer's is a VMAC interface
	if annIndex != in.ifIndex {
		annMAC = nil
	}
	if in.ann, err = e.openAnnouncer(annName, annIndex, annMAC); err != nil {
		return nil, fail("%v", err)
	}
	in.pacer = &announce.Pacer{Clock: e.clk, Rate: e.opts.AnnounceRate, Burst: announceFirstMax, FirstAtOnce: true, Send: func(a netip.Addr) error {
		err := in.ann.Announce(a)
		if err != nil {
			e.log.Warn("announcement failed", "instance", ic.Name, "vip", a, "err", err)
		}
		return err
	}}
	if c := e.opts.Announced; c != nil {
		in.pacer.Drained = func() {
			select {
			case c <- struct{}{}:
			default:
			}
		}
	}
	in.fsm = fsm.New(fsm.Config{
		Version:        ic.Version,
		AdvertInterval: ic.AdvertInterval,
		Preempt:        ic.Preempt,
		PreemptDelay:   ic.PreemptDelay,
		Primary:        in.src,
		TieBreak:       ic.TieBreak,
	})
	return in, nil
}

// vipRef is one VIP of a built instance: its entry in the instance's
// configuration, which the engine keeps, and the interface it goes on.
// The engine makes the kernel's form (netif.VIP, 112 bytes) only when it
// adds, removes or looks for addresses: a second copy of each VIP, kept
// for the engine's life, was 1.1 MB of the heap at 10,000 VIPs
// (docs/design/memory.md). Dev, the interface, hides the configuration's
// Dev (empty for the instance's interface); the rest (Prefix, Label,
// ...) is the configuration's.
type vipRef struct {
	*keepalived.VIP
	Dev string
}

// appendRefs appends to refs a vipRef of each of ic's VIPs, then of its
// excluded VIPs: the order of instance.vips. vipDev is the interface of
// those without a dev of their own.
func appendRefs(refs []vipRef, ic *keepalived.Instance, vipDev string) []vipRef {
	for _, l := range [][]keepalived.VIP{ic.VIPs, ic.ExcludedVIPs} {
		for i := range l {
			refs = append(refs, vipRef{VIP: &l[i], Dev: cmp.Or(l[i].Dev(), vipDev)})
		}
	}
	return refs
}

// vip is the VIP in the kernel's form.
func (r vipRef) vip() netif.VIP { return toVIP(*r.VIP, r.Dev) }

// netifVIPs returns refs in the kernel's form.
func netifVIPs(refs []vipRef) []netif.VIP {
	out := make([]netif.VIP, len(refs))
	for i, r := range refs {
		out[i] = r.vip()
	}
	return out
}

// pointAt points the VIPs of a kept instance at ic, its configuration
// now, whose VIPs are the same (sameVIPs, or updateVIPs made them so):
// the configuration replaced is then no longer held.
func (in *instance) pointAt(ic *keepalived.Instance) {
	if len(in.vips) != ic.NumVIPs() {
		return
	}
	i := 0
	for _, l := range [][]keepalived.VIP{ic.VIPs, ic.ExcludedVIPs} {
		for j := range l {
			in.vips[i].VIP = &l[j]
			i++
		}
	}
}

func toVIP(v keepalived.VIP, dflt string) netif.VIP {
	o := v.Options()
	return netif.VIP{Prefix: v.Prefix, Dev: cmp.Or(o.Dev, dflt), Label: o.Label, Scope: o.Scope, Broadcast: o.Broadcast, NoPrefixRoute: o.NoPrefixRoute}
}

func (in *instance) key() demuxKey {
	return demuxKey{family: in.family, ifIndex: in.ifIndex, vrid: in.cfg.VRID}
}

func (in *instance) close() {
	if in.pacer != nil {
		in.pacer.Cancel()
	}
	if in.ann != nil {
		in.ann.Close()
	}
}

// syncTrackers starts a tracker for every script in use, keeps those whose
// definition did not change, and stops the rest. A script still in use
// whose definition changed gets a new tracker that starts in the old one's
// state, as keepalived 2.2.7 does ("VRRP_Script(chk) considered
// unsuccessful on reload"): a failing check stays failing until the new
// definition has succeeded rise times, and a passing one needs fall
// failures. Starting it afresh would count it as passing until its first
// result, and a backup held down by it would preempt the master meanwhile.
func (e *Engine) syncTrackers(cfg *keepalived.Config) {
	resume := map[string]*track.Status{}
	for name, te := range e.trackers {
		s, ok := cfg.Scripts[name]
		used := ok && usedScript(cfg, name)
		if used && sameScript(te.spec, s) {
			te.spec = s
			continue
		}
		if used {
			st := te.status
			if te.tracker != nil {
				st = te.tracker.Status() // the latest, flipped or not
			}
			if !st.Pending {
				resume[name] = &st
				e.log.Info("tracked script redefined; it keeps its state until the new definition's results change it",
					"script", name, "ok", st.OK)
			}
		}
		te.cancel()
		delete(e.trackers, name)
	}
	for _, name := range sortedKeys(cfg.Scripts) {
		s := cfg.Scripts[name]
		if _, ok := e.trackers[name]; ok || !usedScript(cfg, name) {
			continue
		}
		ctx, cancel := context.WithCancel(e.ctx)
		spec := track.Spec{Name: name, Interval: s.Interval, Timeout: s.Timeout, Rise: s.Rise, Fall: s.Fall, InitFail: s.InitFail}
		runner := e.runner
		if s.User != "" {
			runner.Security.User, runner.Security.Group = s.User, s.Group
		}
		var check track.Check = track.ScriptCheck{Runner: runner, Argv: s.Args, Timeout: s.Timeout}
		if s.Probe != nil {
			check = s.Probe
		}
		first := &firstResult{Check: e.metrics.counted(name, check)}
		tr := &track.Tracker{
			Spec:     spec,
			Check:    first,
			Clock:    e.clk,
			OnChange: func(st track.Status) { e.send(event{track: &st}) },
			Resume:   resume[name],
		}
		first.done = func() { e.send(event{first: tr}) }
		e.trackers[name] = &trackerEntry{spec: s, cancel: cancel, status: tr.Status(), tracker: tr}
		e.tracking.Add(1)
		go func() {
			defer e.tracking.Done()
			tr.Run(ctx)
		}()
	}
}

// firstResult tells the engine when a tracked check's first probe
// succeeds. The tracker reports flips only, and a first success is none
// (a pending check is OK, and stays OK), yet it ends keepalived's INIT
// state, in which the script counts for nothing (see contributions). A
// first failure is a flip, reported as any other.
type firstResult struct {
	track.Check
	once sync.Once
	done func()
}

func (f *firstResult) Probe(ctx context.Context) error {
	err := f.Check.Probe(ctx)
	if err == nil {
		f.once.Do(f.done)
	}
	return err
}

// firstSuccess ends the INIT state of tr's script, if tr is still the
// engine's tracker for it (a reload may have replaced it) and its first
// result was not a failure reported before.
func (e *Engine) firstSuccess(now time.Time, tr *track.Tracker) {
	for name, te := range e.trackers {
		if te.tracker != tr || !te.status.Pending {
			continue
		}
		te.status.Pending = false
		e.log.Info("tracked script now succeeding", "script", name)
		e.recomputeAll(now)
	}
}

func sameScript(a, b *keepalived.Script) bool {
	ca, cb := *a, *b
	ca.Pos, cb.Pos = keepalived.Pos{}, keepalived.Pos{}
	return reflect.DeepEqual(ca, cb)
}

func (e *Engine) trackChanged(now time.Time, st track.Status) {
	te, ok := e.trackers[st.Name]
	if !ok {
		return
	}
	te.status = st
	if st.OK {
		e.log.Info("tracked script now succeeding", "script", st.Name)
	} else {
		e.log.Warn("tracked script now failing", "script", st.Name, "reason", st.Reason)
	}
	e.recomputeAll(now)
}

func (e *Engine) linkChanged(now time.Time, name string, up bool) {
	rebuild := false
	// The link is read once for all the instances on it (250 each in
	// bench/scale: a read each was 10 MB of garbage at the start).
	read, found, index := false, false, 0
	for _, in := range e.instances {
		if in.cfg.Interface != name {
			continue
		}
		if !in.life.has(condAbsent) && up {
			if !read {
				l, err := e.nl.Link(name)
				read, found, index = true, err == nil, l.Index
			}
			// Deleted and created again, as keepalived 2.2.7 follows
			// (measured: FAULT while gone, BACKUP when back).
			if found && index != in.ifIndex {
				e.setCond(in, condRecreated, true, fmt.Sprintf("interface %s was created again (index %d, was %d)", name, index, in.ifIndex))
			}
		}
		rebuild = rebuild || in.life.has(condAbsent) || in.life.has(condRecreated)
	}
	if rebuild {
		e.checkAbsent(now)
	}
	was, known := e.links[name]
	e.links[name] = up
	if !known || was == up {
		// Links no instance uses are recorded quietly (the watcher
		// reports every link once at start).
		return
	}
	e.log.Info("interface state changed", "interface", name, "up", up)
	if up {
		e.checkDAD(now, name)
		e.announceSources(name)
	} else {
		delete(e.dad, name)
	}
	e.recomputeAll(now)
}

// dadWait is a link that came back up while the IPv6 source of an instance
// on it was tentative or missing.
type dadWait struct {
	since time.Time
	src   netip.Addr
}

// dadGiveUp bounds the wait for duplicate address detection; past it the
// instances go on (and their sends fail, logged) rather than stay in FAULT.
const dadGiveUp = 10 * time.Second

// dadPoll is how often a tentative source is looked at again.
const dadPoll = 100 * time.Millisecond

// checkDAD looks at the IPv6 sources on a link that just came back up. The
// kernel runs duplicate address detection on the link-local address again
// (about a second by default) and refuses it as a source meanwhile: an
// instance that preempted then would take the VIPs with every advertisement
// failing, unheard by the master it displaced, and both would hold them (an
// audit saw 1.4 s of two holders; keepalived waited). Until the source is
// usable the IPv6 instances on the link are in FAULT (with the reason),
// so they neither advertise nor take the VIPs. A source the link does not
// carry yet (the kernel adds the link-local address again on link-up)
// counts as tentative.
func (e *Engine) checkDAD(now time.Time, link string) {
	for _, name := range e.names() {
		in := e.instances[name]
		if in.cfg.Interface != link || in.family == 4 || !in.src.IsValid() {
			continue
		}
		tentative, err := e.nl.Tentative(link, in.src)
		if err != nil {
			e.log.Warn("cannot read the IPv6 source's state; not waiting for duplicate address detection", "interface", link, "source", in.src, "err", err)
			continue
		}
		if tentative {
			e.log.Info("IPv6 source still tentative (duplicate address detection); the link counts as down until it is usable",
				"interface", link, "source", in.src)
			e.dad[link] = dadWait{since: now, src: in.src}
			e.dadNext = now.Add(dadPoll)
			return
		}
	}
}

// recheckDAD ends the waits whose source became usable, or that lasted
// dadGiveUp.
func (e *Engine) recheckDAD(now time.Time) {
	changed := false
	for link, w := range e.dad {
		tentative, err := e.nl.Tentative(link, w.src)
		switch {
		case err == nil && !tentative:
			e.log.Info("IPv6 source usable: duplicate address detection finished", "interface", link, "source", w.src, "waited", now.Sub(w.since))
		case now.Sub(w.since) >= dadGiveUp:
			e.log.Warn("IPv6 source still not usable; no longer waiting for duplicate address detection", "interface", link, "source", w.src, "waited", now.Sub(w.since), "err", err)
		default:
			continue
		}
		delete(e.dad, link)
		changed = true
	}
	e.dadNext = time.Time{}
	if len(e.dad) > 0 {
		e.dadNext = now.Add(dadPoll)
	}
	if changed {
		e.recomputeAll(now)
	}
}

// announceSources sends a gratuitous ARP (unsolicited NA) for the source
// address of every unicast instance on the link that just came back. Peers
// that kept sending to us while the link was down hold an INCOMPLETE or
// FAILED neighbour entry for that address, and the kernel would only ask
// again after its retransmit timer (1 s): meanwhile their adverts queue
// and we see no master, a false failover after the heal (bench/chaos,
// docs/reliability.md, finding 3). The announcement refreshes their entry
// at once.
func (e *Engine) announceSources(link string) {
	done := map[netip.Addr]bool{}
	for _, name := range e.names() {
		in := e.instances[name]
		if in.peers == nil || in.ann == nil || in.cfg.Interface != link || !in.src.IsValid() || done[in.src] {
			continue
		}
		done[in.src] = true
		if err := in.ann.Announce(in.src); err != nil {
			e.log.Warn("announcing the unicast source after the link came back failed", "interface", link, "source", in.src, "err", err)
		} else {
			e.log.Debug("announced the unicast source after the link came back", "interface", link, "source", in.src)
		}
	}
}

// srcPoll is how often the unicast_src_ip addresses are looked for.
const srcPoll = time.Second

// linkExists reports whether the network namespace has an interface name.
func (e *Engine) linkExists(name string) bool {
	_, err := e.nl.Link(name)
	return err == nil
}

// checkAbsent rebuilds the instances whose interface was missing when they
// were built and now exists (see build), and those whose interface was
// created again (see linkChanged), keeping everything else as it is.
// It runs every srcPoll while there are any, and at once when the link
// watcher reports one of their interfaces. A rebuild that fails (the
// interface has no address to send from yet) is tried again at the next
// poll.
func (e *Engine) checkAbsent(now time.Time) {
	e.absentNext = time.Time{}
	appeared := false
	for _, name := range e.names() {
		in := e.instances[name]
		if !in.life.has(condAbsent) && !in.life.has(condRecreated) {
			continue
		}
		e.absentNext = now.Add(srcPoll)
		appeared = appeared || in.life.has(condRecreated) || e.linkExists(in.cfg.Interface)
	}
	if !appeared {
		return
	}
	if err := e.apply(e.cfg); err != nil {
		if msg := err.Error(); msg != e.absentErr {
			e.absentErr = msg
			e.log.Warn("interface exists but the instance cannot start yet; trying again", "err", err)
		}
		e.absentNext = now.Add(srcPoll)
		return
	}
	e.absentErr = ""
}

// checkSources looks for every configured unicast_src_ip among the
// addresses of the node, now and every srcPoll while an instance has one,
// and reports whether one came or went. keepalived cannot bind an absent
// source and keeps the instance in FAULT ("src address not configured");
// vipstack sends from a raw socket, so without this check an instance
// whose source is not (or no longer) on the node sent adverts its peers
// drop as not from a peer, and took the VIPs beside the real master (seen:
// two masters, the keepalived peer never heard it).
func (e *Engine) checkSources(now time.Time) bool {
	e.srcNext = time.Time{}
	want := map[netip.Addr]bool{}
	for _, in := range e.instances {
		if src := in.cfg.UnicastSrcIP; src.IsValid() {
			want[src] = true
		}
	}
	if len(want) == 0 {
		clear(e.srcAbsent)
		return false
	}
	e.srcNext = now.Add(srcPoll)
	local, err := e.nl.LocalAddrs()
	if err != nil {
		e.log.Warn("cannot list the node's addresses to look for the unicast sources", "err", err)
		return false
	}
	srcs := slices.SortedFunc(maps.Keys(want), netip.Addr.Compare)
	changed := false
	for _, src := range srcs {
		switch absent := !local[src]; {
		case absent && !e.srcAbsent[src]:
			e.log.Warn("unicast_src_ip is not an address of this node; its instances stay in FAULT until it is", "source", src)
			e.srcAbsent[src] = true
		case !absent && e.srcAbsent[src]:
			e.log.Info("unicast_src_ip is an address of this node again", "source", src)
			delete(e.srcAbsent, src)
		default:
			continue
		}
		changed = true
	}
	for src := range e.srcAbsent {
		if !want[src] {
			delete(e.srcAbsent, src)
		}
	}
	return changed
}

// Contribution is one input to the effective priority.
type Contribution struct {
	Source  string `json:"source"` // "script chk_ocp_lb", "interface eth1"
	Weight  int    `json:"weight"`
	OK      bool   `json:"ok"`
	Applied int    `json:"applied"` // what it adds to the priority now
	Fault   bool   `json:"fault,omitempty"`
	Reason  string `json:"reason,omitempty"`
	pending bool   // a weight-0 script before its first result
}

// contributions evaluates the tracked scripts and interfaces of in.
func (e *Engine) contributions(in *instance) []Contribution {
	var out []Contribution
	scripts := append([]keepalived.TrackScript(nil), in.cfg.TrackScripts...)
	if in.group != nil {
		scripts = append(scripts, in.group.cfg.TrackScripts...)
	}
	for _, ts := range scripts {
		s := e.cfg.Scripts[ts.Name]
		te := e.trackers[ts.Name]
		if s == nil || te == nil {
			continue
		}
		w := s.Weight
		if ts.HasWeight {
			w = ts.Weight
		}
		c := Contribution{Source: "script " + ts.Name, Weight: w, OK: te.status.OK, Reason: te.status.Reason}
		if te.tracker != nil {
			c.Reason = te.tracker.Status().Reason // the latest probe's, even without a flip
		}
		good := te.status.OK
		if s.WeightReverse {
			w = -w
		}
		switch {
		case te.status.Pending && w == 0:
			// keepalived 2.2.7 (measured): an instance tracking a
			// weight-0 script whose first result has not come is not
			// running (INIT, see waits), and goes BACKUP on its
			// first success.
			c.Fault, c.pending = true, true
		case te.status.Pending:
			// keepalived 2.2.7 (measured): until its first result a
			// script adds nothing and takes nothing away, whichever
			// the sign of its weight. Counting it as passing made a
			// node start above a master it then preempted, before its
			// first result took it back down.
		case w == 0:
			c.Fault = !good
		case w > 0 && good, w < 0 && !good:
			c.Applied = w
		}
		out = append(out, c)
	}
	// The instance's own interface: missing means fault, whatever
	// dont_track_primary says (there is nothing to send on); down means
	// fault, unless dont_track_primary.
	if in.life.has(condAbsent) {
		out = append(out, Contribution{Source: "interface " + in.cfg.Interface, OK: false, Fault: true, Reason: "does not exist"})
	} else if !in.cfg.DontTrackPrimary {
		up := e.links[in.cfg.Interface]
		out = append(out, Contribution{Source: "interface " + in.cfg.Interface, OK: up, Fault: !up})
	}
	// An IPv6 source still tentative after the link came back (see
	// checkDAD): the instance can send nothing yet, whatever it tracks.
	if w, waiting := e.dad[in.cfg.Interface]; waiting && in.family != 4 && e.links[in.cfg.Interface] {
		out = append(out, Contribution{Source: "IPv6 source " + w.src.String(), OK: false, Fault: true,
			Reason: "still tentative after " + in.cfg.Interface + " came back up (duplicate address detection)"})
	}
	if in.life.has(condNoSource) {
		what := "IPv4 address"
		if in.family != 4 {
			what = "IPv6 link-local address"
		}
		out = append(out, Contribution{Source: "interface " + in.cfg.Interface + " " + what, OK: false, Fault: true,
			Reason: "the interface has no " + what + " to send from"})
	}
	if src := in.cfg.UnicastSrcIP; src.IsValid() && e.srcAbsent[src] {
		out = append(out, Contribution{Source: "unicast_src_ip " + src.String(), OK: false, Fault: true,
			Reason: "not an address of this node"})
	}
	for _, ti := range in.cfg.TrackInterfaces {
		up, known := e.links[ti.Name]
		if !known {
			if l, err := e.nl.Link(ti.Name); err == nil {
				up = l.Up
				e.links[ti.Name] = up
			}
		}
		c := Contribution{Source: "interface " + ti.Name, Weight: ti.Weight, OK: up}
		switch {
		case ti.Weight == 0:
			c.Fault = !up
		case ti.Weight > 0 && up, ti.Weight < 0 && !up:
			c.Applied = ti.Weight
		}
		out = append(out, c)
	}
	return out
}

// waits reports whether in is held in INIT until the first result of
// weight-0 tracked scripts. keepalived 2.2.7 holds such an instance in INIT
// (measured, a script taking 0.8 s: no "Entering FAULT STATE", no
// notify_fault nor notify FAULT; "Entering BACKUP STATE" after its first
// success, FAULT with both notifies after a first failure), so vipstack
// starts its state machine only on that first result. Entering FAULT at
// once ran notify_fault (and notify ... FAULT) on every start of a node
// whose checks pass.
//
// In a vrrp_sync_group the whole group waits for any member's first
// result, as keepalived 2.2.7 does (measured,
// TestInteropSyncGroupFirstProbe: the other member stays in INIT too,
// sends no advert and runs no notify script until the result, then the
// group enters BACKUP together). vipstack started the other member, which
// went BACKUP and at once FAULT for the group and ran its notify_fault and
// notify ... FAULT. A member in fault for another reason ends the wait:
// the group starts, in FAULT.
func (e *Engine) waits(in *instance) bool {
	if in.group == nil {
		pending, fault := e.pendingOnly(in)
		return pending && !fault
	}
	any := false
	for _, m := range in.group.members {
		pending, fault := e.pendingOnly(m)
		if fault {
			return false
		}
		any = any || pending
	}
	return any
}

// pendingOnly reports whether in has weight-0 tracked scripts without a
// first result, and whether it is in fault for another reason of its own.
func (e *Engine) pendingOnly(in *instance) (pending, fault bool) {
	for _, c := range e.contributions(in) {
		switch {
		case c.Fault && c.pending:
			pending = true
		case c.Fault:
			fault = true
		}
	}
	return pending, fault
}

// effective returns the effective priority and, if the instance must be in
// FAULT, why.
func (e *Engine) effective(in *instance) (uint8, string) {
	base := int(in.cfg.Priority)
	var faults []string
	sum := 0
	for _, c := range e.contributions(in) {
		if c.Fault {
			faults = append(faults, c.Source+" failing")
		}
		sum += c.Applied
	}
	if f := in.life.reason(condGroupFault); f != "" {
		faults = append(faults, f)
	}
	p := base
	if base < 255 {
		p = min(max(base+sum, 1), 254)
	}
	return uint8(p), strings.Join(faults, "; ")
}

// ownFault is why the instance itself must be in FAULT, its sync group
// aside ("" when it need not): the faults effective reports but the
// group's.
func (e *Engine) ownFault(in *instance) string {
	var faults []string
	for _, c := range e.contributions(in) {
		if c.Fault {
			faults = append(faults, c.Source+" failing")
		}
	}
	return strings.Join(faults, "; ")
}

// recomputeAll re-evaluates priorities and faults after a tracked input
// changed, propagating faults through sync groups.
func (e *Engine) recomputeAll(now time.Time) {
	for _, g := range e.groups {
		// A member's own faults, without the group's.
		var bad []string
		for _, m := range g.members {
			if e.ownFault(m) != "" {
				bad = append(bad, m.cfg.Name)
			}
		}
		for _, m := range g.members {
			if len(bad) > 0 && !contains(bad, m.cfg.Name) {
				e.setCond(m, condGroupFault, true, fmt.Sprintf("sync group %s: %s in fault", g.cfg.Name, strings.Join(bad, ", ")))
			} else if m.life.has(condGroupFault) {
				why := "sync group " + g.cfg.Name + ": no other member in fault"
				if len(bad) > 0 {
					why = "sync group " + g.cfg.Name + ": in fault itself"
				}
				e.setCond(m, condGroupFault, false, why)
			}
		}
	}
	for _, name := range e.names() {
		in := e.instances[name]
		if in.life.has(condWaiting) && !e.waits(in) {
			e.setCond(in, condWaiting, false, "the first results of its tracked scripts came")
			prio, fault := e.effective(in)
			e.do(in, now, in.fsm.Start(now, prio, fault))
			continue
		}
		if in.fsm.State() == fsm.Initialize {
			continue
		}
		prio, fault := e.effective(in)
		if prio != in.fsm.Priority() {
			e.log.Info("effective priority changed", "instance", in.cfg.Name, "from", in.fsm.Priority(), "to", prio,
				"contributions", describe(e.contributions(in)))
		}
		e.do(in, now, in.fsm.SetPriority(now, prio))
		e.do(in, now, in.fsm.SetFault(now, fault))
	}
}

func describe(cs []Contribution) string {
	var parts []string
	for _, c := range cs {
		state := "ok"
		if !c.OK {
			state = "failing"
		}
		parts = append(parts, fmt.Sprintf("%s %s %+d", c.Source, state, c.Applied))
	}
	return strings.Join(parts, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// names returns the instances' names in order. It is computed once per
// change of e.instances, not on each of the loop's wake-ups (1,000
// instances wake it a thousand times a second); callers must not modify
// the slice.
func (e *Engine) names() []string {
	if e.sortedNames == nil {
		e.sortedNames = sortedKeys(e.instances)
	}
	return e.sortedNames
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
