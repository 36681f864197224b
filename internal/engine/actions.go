package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/smtpalert"
	"github.com/vipstack/vipstack/internal/vrrp"
	"github.com/vipstack/vipstack/internal/vrrp/fsm"
	"github.com/vipstack/vipstack/internal/vrrp/transport"
)

// do carries out the state machine's actions for in, in order, except
// that becoming master takes the VIPs before the advertisement that goes
// with it (see holdFirst).
func (e *Engine) do(in *instance, now time.Time, acts []fsm.Action) {
	for _, a := range holdFirst(acts) {
		switch a.Kind {
		case fsm.SendAdvert:
			e.advertise(in, now, a.Priority)
		case fsm.Transition:
			e.transition(in, now, a)
		}
	}
}

func (e *Engine) advertise(in *instance, now time.Time, prio uint8) {
	adv := vrrp.Advertisement{
		Version:  in.cfg.Version,
		VRID:     in.cfg.VRID,
		Priority: prio,
		Interval: in.cfg.AdvertInterval,
	}
	e.advAddrs = appendAdvert(e.advAddrs[:0], in.cfg)
	adv.Addresses = e.advAddrs
	if in.cfg.Version == 2 && in.cfg.AuthType == "PASS" {
		adv.AuthType, adv.AuthData = vrrp.AuthSimple, in.auth
	}
	c := e.conns[in.family]
	if c == nil {
		return
	}
	var failErr error
	var failDst netip.Addr
	var sent [][]byte // for the backstop: its own copies
	for _, dst := range in.dsts {
		// One buffer for every advertisement the loop sends, and no
		// closure for timed: with 1,000 masters these were most of the
		// engine's allocations at rest (docs/design/memory.md).
		b, err := adv.AppendMarshal(e.wire[:0], in.src, dst)
		if err != nil {
			e.log.Error("cannot encode advertisement", "instance", in.cfg.Name, "err", err)
			return
		}
		e.wire = b
		if prio > 0 && in.cfg.AdvertInterval <= backstopBelow {
			sent = append(sent, slices.Clone(b))
		}
		began := e.clk.Now()
		err = c.WritePacket(b, in.src, dst, in.ifIndex)
		if took, slow := e.tookLong(began); slow {
			e.slowParts = append(e.slowParts, "advertisement to "+dst.String()+" "+took.Round(time.Millisecond).String())
		}
		if err != nil {
			in.counts.sendErrors++
			if failErr == nil {
				failErr, failDst = err, dst
			}
			continue
		}
		in.sent++
		in.counts.sent++
	}
	e.backstopAdvert(in, prio, sent)
	// One count per advertisement that failed to reach a destination (a
	// unicast instance has several), logged at the first and then every
	// sendFailLogEvery; the first advertisement that reaches them all ends
	// the run.
	switch {
	case failErr != nil:
		in.sendFails++
		if in.sendFails == 1 || now.Sub(in.sendFailLogged) >= sendFailLogEvery {
			in.sendFailLogged = now
			e.log.Warn("sending advertisement failed", "instance", in.cfg.Name, "to", failDst, "err", failErr, "failures_in_a_row", in.sendFails)
		}
	case in.sendFails > 0:
		e.log.Info("sending advertisements again", "instance", in.cfg.Name, "failures_in_a_row", in.sendFails)
		in.sendFails = 0
	}
}

func (e *Engine) transition(in *instance, now time.Time, a fsm.Action) {
	if a.From == fsm.Master && a.To != fsm.Master {
		e.leaveBackstop(in)
	}
	prio := in.fsm.Priority()
	master, mprio := in.fsm.Master()
	// One event per change, with the same keys every time (docs/metrics.md,
	// "Logs"): master is "" while none is known.
	e.log.Info("VRRP state change", "instance", in.cfg.Name, "from", a.From.String(), "to", a.To.String(),
		"reason", a.Reason, "priority", int(prio), "master", addrText(master), "master_priority", int(mprio),
		"vrid", int(in.cfg.VRID), "interface", in.cfg.Interface)
	in.lastTransition = &Transition{From: a.From.String(), To: a.To.String(), Reason: a.Reason, At: now}
	in.counts.entered(a.To)
	switch {
	case a.To == fsm.Master:
		e.takeVIPs(in, now)
	case a.From == fsm.Master:
		e.releaseVIPs(in, now)
	}
	e.notify(in, a.To, prio)
	e.followGroup(in, now, a)
}

// followGroup keeps a sync group together: when one member becomes master
// the backups follow, and when one falls back to backup the masters follow
// (faults are shared through the priority computation). When every member
// has reached the same state, the group's notify scripts run.
func (e *Engine) followGroup(in *instance, now time.Time, a fsm.Action) {
	g := in.group
	if g == nil {
		return
	}
	if a.To == fsm.Master || (a.From == fsm.Master && a.To == fsm.Backup) {
		reason := fmt.Sprintf("sync group %s: %s went %s", g.cfg.Name, in.cfg.Name, a.To)
		for _, m := range g.members {
			if m != in {
				e.do(m, now, m.fsm.Follow(now, a.To, reason))
			}
		}
	}
	for _, m := range g.members {
		if m.fsm.State() != a.To {
			return
		}
	}
	if g.state == a.To {
		return
	}
	e.groupState(g, a.To)
}

// groupState records that every member of g is in to and runs the group's
// notify scripts.
func (e *Engine) groupState(g *syncGroup, to fsm.State) {
	g.state = to
	state := to.String()
	if to == fsm.Initialize {
		state = "STOP"
	}
	e.log.Info("sync group state", "group", g.cfg.Name, "state", state)
	e.runNotify("group "+g.cfg.Name, g.cfg.Notify, state)
	e.runNotify("group "+g.cfg.Name, g.cfg.Notify, "", "GROUP", g.cfg.Name, state, "0")
}

// takeVIPs adds every VIP (recording it in the ledger first), announces
// each as soon as the kernel has it, and schedules the rest of the
// gratuitous ARP / unsolicited NA pattern.
func (e *Engine) takeVIPs(in *instance, now time.Time) {
	for i := range in.vips {
		e.held.put(&in.vips[i])
		e.unrelease(in.vips[i].Prefix, in.vips[i].Dev) // ours again: no longer watched
	}
	vips := netifVIPs(in.vips)
	if err := e.recordVIPs(vips); err != nil {
		e.log.Error("cannot record VIPs in the ledger; a crash now would leave them behind", "path", e.opts.Ledger.Path, "err", err)
	}
	// keepalived: garp_master_repeat announcements at once, the same again
	// after garp_master_delay. The first of each address leaves as soon as
	// the address is added, not after the last of thousands (each add
	// costs the kernel up to a millisecond on a loaded machine with
	// thousands of addresses); the pacer sends the rest.
	var first func(netip.Addr)
	if in.cfg.GARPMasterRepeat > 0 {
		first = func(a netip.Addr) { _ = in.pacer.SendNow(a) }
	}
	addrs := e.addVIPs(in.cfg.Name, vips, first)
	if first != nil {
		in.pacer.ScheduleRest(addrs, in.cfg.GARPMasterRepeat, in.cfg.GARPMasterDelay)
	}
	if in.cfg.GARPMasterRefresh > 0 {
		in.refreshAt = now.Add(in.cfg.GARPMasterRefresh)
	}
}

// addVIPs adds vips, logs each that fails, calls added (if not nil) with
// each address as soon as it is on its interface, and returns those
// addresses.
func (e *Engine) addVIPs(instance string, vips []netif.VIP, added func(netip.Addr)) []netip.Addr {
	addrs := make([]netip.Addr, 0, len(vips))
	for _, v := range vips {
		if err := e.nl.AddVIP(v); err != nil {
			e.log.Error("adding VIP failed", "instance", instance, "vip", v.Prefix, "dev", v.Dev, "err", err)
			continue
		}
		addrs = append(addrs, v.Prefix.Addr())
		if added != nil {
			added(v.Prefix.Addr())
		}
	}
	return addrs
}

// reannounce answers an advertisement from a router of lower priority (or
// equal priority and a lower address) that advertises as master while we
// are (see reannouncer).
func (e *Engine) reannounce(in *instance, now time.Time, from netip.Addr, prio uint8) {
	if in.reannounce.heard(now) {
		e.log.Info("another router advertised as master with a lower priority, or an equal one and a lower address; announcing our VIPs again",
			"instance", in.cfg.Name, "from", from, "its_priority", prio, "ours", in.fsm.Priority())
		e.announceVIPs(in)
	}
}

// reannounceFollowUp sends the follow-up announcement reannounceSettle
// after the last advertisement of a lower router as master.
func (e *Engine) reannounceFollowUp(in *instance, now time.Time) {
	if !in.reannounce.fire(now) || in.fsm.State() != fsm.Master {
		return
	}
	e.log.Info("announcing our VIPs once more, after the last advertisement of the lower router as master", "instance", in.cfg.Name)
	e.announceVIPs(in)
}

// rivalStreak is how many advertisements as master a lower router sends in
// a row, each within rivalGap advertisement intervals of the one before and
// over at least rivalLasts intervals, before it counts as a second master:
// one that does not hear (or does not accept) our advertisements, so that
// both hold the VIPs. Three routers that take over together send a few in
// milliseconds (becoming master, answering each other, stepping down), and
// are not one.
const (
	rivalStreak = 3
	rivalGap    = 3
	rivalLasts  = 2
)

// rival is a lower router's recent run of advertisements as master.
type rival struct {
	first, last time.Time
	n           int
}

// rivalMaster records an advertisement as master from a router that ranks
// below us. A router that heard our answer steps down after one or two; one
// that keeps on is a second master, which the status lists (conflict kind
// "dual_master") and the log reports: both nodes hold the VIPs, and only the
// path between them can end it.
func (e *Engine) rivalMaster(in *instance, now time.Time, from netip.Addr, prio uint8, interval time.Duration) {
	r := in.rivals[from]
	if r == nil {
		if len(in.rivals) >= maxConflictPeers {
			for a, o := range in.rivals {
				if now.Sub(o.last) > rivalGap*interval {
					delete(in.rivals, a)
				}
			}
			if len(in.rivals) >= maxConflictPeers {
				return
			}
		}
		r = &rival{}
		if in.rivals == nil { // made on the first rival, as the conflict book
			in.rivals = map[netip.Addr]*rival{}
		}
		in.rivals[from] = r
	}
	if r.n == 0 || now.Sub(r.last) > rivalGap*interval {
		r.first, r.n = now, 0
	}
	r.n++
	r.last = now
	if r.n < rivalStreak || r.last.Sub(r.first) < rivalLasts*interval {
		return
	}
	e.conflict(in, now, from, "dual_master", fmt.Sprintf(
		"advertises as master too (priority %d, ours %d), %d times in a row since %s: it does not hear or accept our advertisements, and both of us hold the VIPs",
		prio, in.fsm.Priority(), r.n, r.first.UTC().Format("15:04:05.000")))
}

func (e *Engine) announceVIPs(in *instance) {
	addrs := make([]netip.Addr, 0, len(in.vips))
	for _, v := range in.vips {
		addrs = append(addrs, v.Prefix.Addr())
	}
	in.pacer.Schedule(addrs, in.cfg.GARPMasterRepeat, 0)
}

func (e *Engine) refreshGARP(in *instance, now time.Time) {
	if in.fsm.State() != fsm.Master || in.cfg.GARPMasterRefresh <= 0 {
		in.refreshAt = time.Time{}
		return
	}
	addrs := make([]netip.Addr, 0, len(in.vips))
	for _, v := range in.vips {
		addrs = append(addrs, v.Prefix.Addr())
	}
	in.pacer.Schedule(addrs, max(in.cfg.GARPMasterRefreshRepeat, 1), 0)
	in.refreshAt = now.Add(in.cfg.GARPMasterRefresh)
}

func (e *Engine) releaseVIPs(in *instance, now time.Time) {
	in.pacer.Cancel()
	in.refreshAt = time.Time{}
	in.reannounce.cancel()
	for _, v := range in.vips {
		e.release(in.cfg.Name, v.vip(), now)
	}
	e.checkReleased(now)
	// The released VIPs stay on file while they are watched: this list
	// adds nothing.
	e.saveLedgerLater()
}

// recordVIPs records vips in the ledger before it returns: a VIP must be
// on file before it is added.
func (e *Engine) recordVIPs(vips []netif.VIP) error {
	return e.timed(func() string { return "ledger append " + e.opts.Ledger.Path }, func() error { return e.ledgerW.add(vips) })
}

// saveLedger writes the list of the VIPs held to the ledger before it
// returns.
func (e *Engine) saveLedger() error {
	return e.timed(func() string { return "ledger write " + e.opts.Ledger.Path }, func() error { return e.ledgerW.now(e.heldList()) })
}

// saveLedgerLater has the list of the VIPs held written off the loop,
// for a list that adds nothing to the one on file (see ledgerWriter): the
// loop hands it over once its step is done (handLedger), so a step that
// releases a thousand instances builds the list once.
func (e *Engine) saveLedgerLater() { e.ledgerDirty = true }

// handLedger hands the list of the VIPs held to the ledger's background
// writer when the step saved it for later.
func (e *Engine) handLedger() {
	if e.ledgerDirty {
		e.ledgerDirty = false
		e.ledgerW.later(e.heldList())
	}
}

// unrelease ends the watch of a released VIP that an instance of ours
// holds again.
func (e *Engine) unrelease(p netip.Prefix, dev string) {
	if len(e.released) == 0 {
		return
	}
	var buf [64]byte
	delete(e.released, string(appendAddrKey(buf[:0], p, dev)))
}

// release removes one VIP an instance of ours held and watches it for
// releaseWatch (see checkReleased), also when the removal failed: then the
// watch retries it until it succeeds.
func (e *Engine) release(instance string, v netif.VIP, now time.Time) {
	e.held.remove(v.Prefix, v.Dev)
	e.released[addrKey(v.Prefix, v.Dev)] = releasedVIP{vip: v, instance: instance, at: now}
	if err := e.nl.DelVIP(v); err != nil {
		e.log.Error("removing VIP failed; trying again", "instance", instance, "vip", v.Prefix, "dev", v.Dev, "err", err)
		return
	}
	if h := e.opts.hooks; h != nil && h.removed != nil {
		h.removed(v)
	}
}

// addrsChanged handles the addresses added or removed since it last ran
// (see addrQueue), all at once: one look for the masters' VIPs removed,
// one at the sources. Each change was handled alone, a dump of every
// address of the node for each, 51 MB of the 243 MB the engine allocated
// while starting 1,000 instances of 10,000 VIPs (bench/scale,
// docs/design/memory.md).
func (e *Engine) addrsChanged(now time.Time, evs []addrEvent) {
	anyGone, check := false, false
	var gone map[netip.Prefix]bool
	for _, ev := range evs {
		switch {
		case ev.added:
		case !ev.prefix.IsValid():
			anyGone = true
		default:
			if gone == nil {
				gone = map[netip.Prefix]bool{}
			}
			gone[ev.prefix] = true
		}
		// A VIP is never the source: our own takeovers and releases
		// change nothing there.
		check = check || !ev.prefix.IsValid() || !e.isVIP(ev.prefix.Addr())
	}
	if anyGone || len(gone) > 0 {
		e.vipGone(now, func(p netip.Prefix) bool { return anyGone || gone[p] })
	}
	if check && e.checkPrimaries(now) {
		e.recomputeAll(now)
	}
}

// isVIP reports whether a is a configured virtual address.
func (e *Engine) isVIP(a netip.Addr) bool {
	for _, in := range e.instances {
		for _, v := range in.vips {
			if v.Prefix.Addr() == a {
				return true
			}
		}
	}
	return false
}

// checkPrimaries looks again at the source of every instance that sends
// from its interface's own address (no unicast_src_ip: the primary IPv4
// address, or the IPv6 link-local one), after an address came or went, and
// reports whether one lost its last address or got one back. keepalived
// 2.2.7 (measured: the only IPv4 address of a master's interface deleted,
// the VIP a /32 beside it; or the link-local address of an IPv6 master's)
// logs "Deassigned address", enters FAULT at once, sends priority 0 and
// removes its VIPs; when an address is assigned again it enters BACKUP and
// sends from it. vipstack stayed MASTER, advertising from an address the
// node no longer had (IPv4: with the VIP on a node that had lost its route
// to the subnet, TestInterfaceLosesItsAddress; IPv6: every advert failed
// with EINVAL, the backup took over and both held the VIP,
// TestInterfaceLosesItsLinkLocal). An instance whose source changed sends
// from the new one, and compares it on a priority tie. An IPv6 instance
// keeps its link-local source while it is on the interface and usable.
func (e *Engine) checkPrimaries(now time.Time) bool {
	changed := false
	memo := map[string]sourceAnswer{}
	for _, name := range e.names() {
		in := e.instances[name]
		if in.life.has(condAbsent) || in.cfg.UnicastSrcIP.IsValid() {
			continue
		}
		src, what, err := e.sourceNow(in, memo)
		switch {
		case errors.Is(err, netif.ErrNoAddress):
			if !in.life.has(condNoSource) {
				e.log.Warn("interface has no "+what+" left to send from; instance in FAULT until it has one", "instance", name, "interface", in.cfg.Interface, "was", in.src)
				changed = e.setCond(in, condNoSource, true, "interface "+in.cfg.Interface+" has no "+what+" left to send from") || changed
			}
		case err != nil:
			e.log.Warn("cannot look for the interface's "+what+" after an address changed", "instance", name, "interface", in.cfg.Interface, "err", err)
		default:
			if src != in.src {
				e.log.Info("interface's "+what+" changed; advertisements now come from it", "instance", name, "interface", in.cfg.Interface, "from", in.src, "to", src)
				in.src = src
				in.fsm.SetPrimary(src)
			}
			if in.life.has(condNoSource) {
				e.log.Info("interface has an "+what+" to send from again", "instance", name, "interface", in.cfg.Interface, "source", src)
				changed = e.setCond(in, condNoSource, false, "interface "+in.cfg.Interface+" has an "+what+" to send from again") || changed
			}
		}
	}
	return changed
}

// sourceAnswer is one interface's IPv4 source, or why there is none.
type sourceAnswer struct {
	src netip.Addr
	err error
}

// sourceNow returns the address in would send from now (see checkPrimaries),
// and what kind of address that is, for the log.
//
// An IPv4 source is the interface's first address that is none of the VIPs
// of the instances on that interface (a VIP is never the source), so every
// IPv4 instance on an interface has the same one: memo, when not nil,
// keeps it per interface for one pass over the instances. checkPrimaries
// looked it up for each instance, a dump of every address on the node each
// time: with 1,000 instances and 10,000 VIPs, a quarter of a CPU at rest
// (bench/scale). An apply's builds share one memo too: a dump each, they
// made 13.6 of the 88 MB the engine allocated to start bench/scale's
// 1,000 instances. The IPv6 link-local address, when an instance has
// none that is still usable, is kept per interface in memo as well.
func (e *Engine) sourceNow(in *instance, memo map[string]sourceAnswer) (netip.Addr, string, error) {
	if in.family == 4 {
		if a, ok := memo[in.cfg.Interface]; ok {
			return a.src, "IPv4 address", a.err
		}
		var vipAddrs []netip.Addr
		for _, name := range e.names() {
			other := e.instances[name]
			if other != in && (other.family != 4 || other.cfg.Interface != in.cfg.Interface) {
				continue
			}
			for _, v := range other.vips {
				vipAddrs = append(vipAddrs, v.Prefix.Addr())
			}
		}
		src, err := e.nl.PrimaryIPv4(in.cfg.Interface, vipAddrs)
		if memo != nil {
			memo[in.cfg.Interface] = sourceAnswer{src: src, err: err}
		}
		return src, "IPv4 address", err
	}
	if in.src.IsValid() {
		if tentative, err := e.nl.Tentative(in.cfg.Interface, in.src); err == nil && !tentative {
			return in.src, "IPv6 link-local address", nil
		}
	}
	key := in.cfg.Interface + "/6" // no interface's name: Linux refuses a '/' in one
	if a, ok := memo[key]; ok {
		return a.src, "IPv6 link-local address", a.err
	}
	src, err := e.nl.LinkLocalIPv6(in.cfg.Interface)
	if memo != nil {
		memo[key] = sourceAnswer{src: src, err: err}
	}
	return src, "IPv6 link-local address", err
}

// vipGone handles addresses removed from an interface, those for which
// removed is true (all: the address watcher has just subscribed, at the
// start or after it lost events, so any may be). A master whose VIP is no
// longer on its interface (something else removed it: `ip addr flush`, a
// network manager) steps down as keepalived 2.2.7 does (see fsm.Resign):
// priority 0, so that a backup takes the VIPs after its Skew_Time, or this
// node again after its own when no backup does. Before, it went on
// advertising as master without the VIP, and no node answered for it until
// the master stopped (TestVIPRemovedFromMaster). Removals of our own (a
// release) find the instance no longer master, and an event that arrives
// after the VIP was added again finds it present: both are ignored.
func (e *Engine) vipGone(now time.Time, removed func(netip.Prefix) bool) {
	// One dump for every master's VIPs: the zero prefix (the address watch
	// resubscribed after the kernel dropped events, which 10,000 VIPs
	// being added at start-up do) used to cost a dump of every address on
	// the node per master, 1,000 dumps of 10,000 addresses (bench/scale).
	var vips []netif.VIP
	var owners []*instance
	for _, name := range e.names() {
		in := e.instances[name]
		if in.fsm.State() != fsm.Master {
			continue
		}
		for _, v := range in.vips {
			if removed(v.Prefix) {
				vips, owners = append(vips, v.vip()), append(owners, in)
			}
		}
	}
	if len(vips) == 0 {
		return
	}
	present, err := e.nl.Present(vips)
	if err != nil {
		e.log.Warn("cannot look for the masters' VIPs on their interfaces after an address was removed", "masters", len(owners), "err", err)
		return
	}
	for i, v := range vips {
		in := owners[i]
		// A master that stepped down for an earlier VIP (or with its sync
		// group) holds none of its VIPs any longer.
		if present[i] || in.fsm.State() != fsm.Master {
			continue
		}
		reason := fmt.Sprintf("VIP %s removed from %s behind our back; stepping down with priority 0 (as keepalived does)", v.Prefix, v.Dev)
		e.log.Warn("a VIP of a master was removed from its interface by something else; stepping down", "instance", in.cfg.Name, "vip", v.Prefix, "dev", v.Dev)
		e.do(in, now, in.fsm.Resign(now, reason))
	}
}

// releasedVIP is a VIP an instance of ours held and let go.
type releasedVIP struct {
	vip      netif.VIP
	instance string
	at       time.Time // when it was released, or last found and removed again
}

// A released VIP is looked for on its interface at once and then every
// releasePoll for releaseWatch; whenever it is found there while no
// instance of ours is master for it, it is removed again (logged) and
// watched anew. A removal that failed is retried the same way, however
// long it takes. A VIP on two nodes is the one failure VRRP exists to
// prevent: a removal lost anywhere between us and the kernel must not
// leave one for good.
//
// Only VIPs we held are watched, and only for a while: keepalived 2.2.7
// leaves a VIP that another program adds on a backup's interface alone
// (measured: `ip addr add` of the VIP on a BACKUP stayed, with or without
// a label, and keepalived logged nothing), and so does vipstack, once the
// watch is over.
const (
	releasePoll  = time.Second
	releaseWatch = 10 * time.Second
)

// checkReleased looks for the released VIPs on their interfaces (one
// address dump), removes those found there again, and ends the watch of
// those absent for releaseWatch.
func (e *Engine) checkReleased(now time.Time) {
	e.releasedNext = time.Time{}
	for k, r := range e.released {
		if e.held.has(r.vip.Prefix, r.vip.Dev) {
			delete(e.released, k) // a master of ours holds it again
		}
	}
	if len(e.released) == 0 {
		return
	}
	keys := sortedKeys(e.released)
	vips := make([]netif.VIP, len(keys))
	for i, k := range keys {
		vips[i] = e.released[k].vip
	}
	present, err := e.nl.Present(vips)
	if err != nil {
		e.log.Warn("cannot look for released VIPs on their interfaces; trying again", "err", err)
		e.releasedNext = now.Add(releasePoll)
		return
	}
	changed := false
	for i, k := range keys {
		r := e.released[k]
		switch {
		case present[i]:
			if err := e.nl.DelVIP(r.vip); err != nil {
				e.log.Error("removing a released VIP still on its interface failed; trying again",
					"instance", r.instance, "vip", r.vip.Prefix, "dev", r.vip.Dev, "err", err)
				continue
			}
			e.log.Warn("removed a VIP still on its interface after its instance let it go (it is not master for it); a VIP on two nodes would answer for both",
				"instance", r.instance, "vip", r.vip.Prefix, "dev", r.vip.Dev, "released", now.Sub(r.at).Round(time.Millisecond))
			r.at = now
			e.released[k] = r
		case now.Sub(r.at) >= releaseWatch:
			delete(e.released, k)
			changed = true
		}
	}
	if len(e.released) > 0 {
		e.releasedNext = now.Add(releasePoll)
	}
	if changed {
		e.saveLedgerLater() // entries dropped, none added
	}
}

// heldList is what the ledger records: the VIPs held, and those released
// and still watched (a crash while one is on the interface again must not
// leave it there).
func (e *Engine) heldList() []netif.VIP {
	out := make([]netif.VIP, 0, e.held.len()+len(e.released))
	for _, r := range e.held.refs {
		out = append(out, r.vip())
	}
	for _, k := range sortedKeys(e.released) {
		if v := e.released[k].vip; !e.held.has(v.Prefix, v.Dev) {
			out = append(out, v)
		}
	}
	return out
}

// notify runs the instance's notify scripts for a new state, with
// keepalived's arguments for the generic `notify`: INSTANCE name state prio.
func (e *Engine) notify(in *instance, to fsm.State, prio uint8) {
	state := to.String()
	if to == fsm.Initialize {
		state = "STOP"
	}
	e.runNotify("instance "+in.cfg.Name, in.cfg.Notifies(), state)
	e.runNotify("instance "+in.cfg.Name, in.cfg.Notifies(), "", "INSTANCE", in.cfg.Name, state, strconv.Itoa(int(prio)))
	e.mailAlert(in, to)
}

// mailAlert sends the instance's SMTP alert for a new state, as keepalived
// 2.2.7's vrrp_smtp_notifier does: with smtp_alert on, once per change of
// state (not twice for the same one), none for FAULT with no_email_faults,
// none when stopping.
func (e *Engine) mailAlert(in *instance, to fsm.State) {
	g := e.cfg.Global
	if !in.cfg.SMTPAlert || g.SMTPServer == "" || len(g.NotificationEmail) == 0 ||
		(g.NoEmailFaults && to == fsm.Fault) || (in.mailed && in.lastMailed == to) {
		return
	}
	text := map[fsm.State][2]string{
		fsm.Master: {"Entering MASTER state", "=> VRRP Instance is now owning VRRP VIPs <="},
		fsm.Backup: {"Entering BACKUP state", "=> VRRP Instance is no longer owning VRRP VIPs <="},
		fsm.Fault:  {"Entering FAULT state", "=> VRRP Instance is no longer owning VRRP VIPs <="},
		// No "Stopping" mail: keepalived 2.2.7 means to send one on
		// SIGTERM, but exits once connected, before a word is sent
		// (measured, TestSMTPAlertLikeKeepalived); none arrives.
	}[to]
	if text[0] == "" {
		return
	}
	in.mailed, in.lastMailed = true, to
	host, _ := os.Hostname()
	msg := smtpalert.Message{
		HeloName: cmp.Or(g.SMTPHeloName, host),
		From:     g.NotificationEmailFrom,
		To:       g.NotificationEmail,
		Subject:  fmt.Sprintf("[%s] VRRP Instance %s - %s", cmp.Or(g.RouterID, host), in.cfg.Name, text[0]),
		Body:     text[1],
		Date:     e.clk.Now(),
	}
	timeout := cmp.Or(g.SMTPConnectTimeout, 30*time.Second)
	e.notifying.Add(1)
	go func() {
		defer e.notifying.Done()
		if err := smtpalert.Send(context.Background(), g.SMTPServer, timeout, msg); err != nil {
			e.log.Error("SMTP alert failed", "instance", in.cfg.Name, "err", err)
			return
		}
		e.log.Info("SMTP alert successfully sent", "instance", in.cfg.Name, "server", g.SMTPServer, "subject", msg.Subject)
	}()
}

// runNotify runs n's script for state ("" for the plain notify script),
// with extra arguments, as the user the line names, else script_user.
func (e *Engine) runNotify(owner string, n keepalived.Notify, state string, extra ...string) {
	cmd, as := n.Script(state)
	if cmd == "" {
		return
	}
	runner := e.runner
	if as.User != "" {
		runner.Security.User, runner.Security.Group = as.User, as.Group
	}
	argv, err := keepalived.SplitCommand(cmd)
	if err != nil {
		e.log.Error("notify script failed to start", "for", owner, "script", cmd, "err", err)
		return
	}
	// Run in the background but tracked, so that shutdown can give the
	// scripts (notify_stop above all) time to finish: scripts get SIGTERM
	// when vipstack exits (see waitNotify).
	e.notifying.Add(1)
	go func() {
		defer e.notifying.Done()
		if res := runner.Run(context.Background(), append(argv, extra...), 0, nil); res.Err != nil {
			e.log.Error("notify script failed to start", "for", owner, "script", cmd, "err", res.Err)
		}
	}()
}

func (e *Engine) stopInstance(in *instance, now time.Time, why string) {
	e.log.Info("stopping VRRP instance", "instance", in.cfg.Name, "why", why)
	if in.life.has(condWaiting) {
		e.stopWaiting(in, why)
		return
	}
	e.do(in, now, in.fsm.Shutdown(now))
}

// stopWaiting stops an instance still waiting in INIT for the first result
// of its tracked scripts (see waits). It sends nothing and holds nothing,
// but keepalived 2.2.7 still runs its notify_stop and notify INSTANCE name
// STOP priority, and, once every member of its sync group has stopped so,
// the group's notify_stop and notify GROUP name STOP 0 (measured,
// TestInteropSyncGroupFirstProbe: SIGTERM during the wait). vipstack
// ran none of them for such an instance, as its state machine never left
// INIT.
func (e *Engine) stopWaiting(in *instance, why string) {
	e.setCond(in, condWaiting, false, why+" while waiting for the first result of its tracked scripts")
	prio, _ := e.effective(in)
	e.log.Info("VRRP state change", "instance", in.cfg.Name, "from", "INIT", "to", "INIT",
		"reason", why+" while waiting for the first result of its tracked scripts", "priority", prio)
	e.notify(in, fsm.Initialize, prio)
	g := in.group
	if g == nil || g.state != fsm.Initialize {
		return
	}
	for _, m := range g.members {
		if m.life.has(condWaiting) || m.fsm.State() != fsm.Initialize {
			return
		}
	}
	e.groupState(g, fsm.Initialize)
}

// stopAll shuts every instance down: masters send priority 0 and drop
// their VIPs. Anything still recorded as held is removed as well.
func (e *Engine) stopAll(why string) {
	now := e.clk.Now()
	for _, name := range e.names() {
		in := e.instances[name]
		e.stopInstance(in, now, why)
		in.close()
	}
	e.held.keep(func(r *vipRef) bool {
		v := r.vip()
		if err := e.nl.DelVIP(v); err != nil {
			e.log.Error("removing VIP at shutdown failed", "vip", v.Prefix, "err", err)
			return true
		}
		return false
	})
	// The released VIPs still watched: one last removal (a no-op for
	// those gone, as they should all be).
	for _, k := range sortedKeys(e.released) {
		v := e.released[k].vip
		if err := e.nl.DelVIP(v); err != nil {
			e.log.Error("removing a released VIP at shutdown failed", "vip", v.Prefix, "err", err)
			continue
		}
		delete(e.released, k)
	}
	e.releasedNext = time.Time{}
	if err := e.saveLedger(); err != nil {
		e.log.Warn("cannot update the VIP ledger", "err", err)
	}
	e.syncVMACs(false)
}

// screen applies the receive checks that need no configuration and
// decodes the advertisement into adv, or counts and logs the drop and
// returns false. It runs on the socket's reader goroutine: under a flood most
// packets fail here, and dropping them there keeps them away from the
// loop, whose timers send our own advertisements (and whose queue would
// otherwise fill, so that the kernel drops real advertisements with the
// bogus ones).
func (e *Engine) screen(p *transport.Packet, adv *vrrp.Advertisement) bool {
	// RFC 5798 7.1: TTL / hop limit must be 255, which proves the sender is
	// on the link. Enforced for multicast. keepalived 2.2.7 sends IPv6
	// unicast adverts with hop limit 64 (measured), so for unicast the
	// check is the configured peer list instead.
	if p.TTL != 255 && p.Dst.IsMulticast() {
		e.dropped(p, "", "bad_ttl")
		return false
	}
	if err := vrrp.UnmarshalTo(adv, p.Payload, p.Src, p.Dst); err != nil {
		e.dropped(p, "", string(vrrp.ReasonOf(err)))
		e.log.Debug("dropped malformed VRRP packet", "from", p.Src, "err", err)
		return false
	}
	return true
}

// dropped counts and logs a dropped packet.
func (e *Engine) dropped(p *transport.Packet, instance, reason string) {
	e.metrics.dropped.WithLabelValues(instance, reason).Inc()
	e.log.Debug("dropped VRRP packet", "instance", instance, "reason", reason, "from", p.Src, "to", p.Dst, "ttl", p.TTL, "ifindex", p.IfIndex)
}

// receive applies the configuration-dependent receive checks to an
// advertisement that passed screen and hands a valid one to its
// instance's state machine.
func (e *Engine) receive(now time.Time, family int, p transport.Packet, adv *vrrp.Advertisement) {
	drop := func(instance string, reason string) { e.dropped(&p, instance, reason) }
	in, ok := e.byKey[demuxKey{family: family, ifIndex: p.IfIndex, vrid: adv.VRID}]
	if !ok || in.fsm.State() == fsm.Initialize {
		drop("", "other_vrid")
		return
	}
	name := in.cfg.Name
	if p.Src == in.src {
		return // our own packet
	}
	if in.peers != nil && !in.peers[p.Src] {
		e.notAPeer(in, now, p.Src)
		drop(name, "not_a_peer")
		return
	}
	if in.otherGroup(p.Dst) {
		drop(name, "other_group")
		return
	}
	if kind, detail := e.mismatch(in, adv); kind == "addresses" && now.Sub(in.advertChanged) < addrSkew {
		e.log.Debug("advertisement with other addresses just after ours changed: taken as a peer not yet reloaded", "instance", in.cfg.Name, "peer", p.Src, "detail", detail)
	} else if kind != "" {
		e.conflict(in, now, p.Src, kind, detail)
		drop(name, "conflict_"+kind)
		return
	}
	in.received++
	in.counts.received++
	wasMaster := in.fsm.State() == fsm.Master
	e.do(in, now, in.fsm.Receive(now, fsm.Advert{From: p.Src, Priority: adv.Priority, Interval: adv.Interval}))
	if wasMaster && in.fsm.State() == fsm.Master && adv.Priority != 0 {
		// Another router thought it was master (a healed partition,
		// backups that timed out together): it may have announced our
		// VIPs meanwhile, so announce them again (keepalived's
		// garp_lower_prio_repeat), now and after it steps down.
		e.reannounce(in, now, p.Src, adv.Priority)
		e.rivalMaster(in, now, p.Src, adv.Priority, max(adv.Interval, in.cfg.AdvertInterval))
	}
}

// mismatch reports how an advertisement for our VRID disagrees with our
// configuration, if it does.
func (e *Engine) mismatch(in *instance, adv *vrrp.Advertisement) (kind, detail string) {
	if adv.Version != in.cfg.Version {
		return "version", fmt.Sprintf("peer speaks VRRPv%d, we are configured for VRRPv%d", adv.Version, in.cfg.Version)
	}
	if in.cfg.Version == 2 {
		want := uint8(vrrp.AuthNone)
		if in.cfg.AuthType == "PASS" {
			want = vrrp.AuthSimple
		}
		if adv.AuthType != want || (want == vrrp.AuthSimple && adv.AuthData != in.auth) {
			return "auth", fmt.Sprintf("authentication differs (peer auth type %d)", adv.AuthType)
		}
		if adv.Interval != in.cfg.AdvertInterval {
			return "interval", fmt.Sprintf("peer advertises every %v, we every %v", adv.Interval, in.cfg.AdvertInterval)
		}
	}
	e.advAddrs = appendAdvert(e.advAddrs[:0], in.cfg)
	if !vrrp.SameAddresses(adv.Addresses, e.advAddrs) {
		return "addresses", fmt.Sprintf("peer holds %v, we hold %v", adv.Addresses, e.advAddrs)
	}
	return "", ""
}

// announceFirstMax is the pacer's Burst: with an AnnounceRate, a pacing
// timer that fires late may catch up by as many. (It also bounded the first
// announcements a new master sent before its advertisement, until each
// VIP's first one left as soon as it was added.)
const announceFirstMax = 64

// sendFailLogEvery limits how often failing sends are logged while they
// go on (a master sends ten adverts a second at 100 ms); the count in a row
// is in each line, and the first success after them is logged too.
const sendFailLogEvery = 10 * time.Second

func (e *Engine) conflict(in *instance, now time.Time, from netip.Addr, kind, detail string) {
	c, logIt := in.conflicts.record(now, from, kind, detail)
	e.metrics.conflicts.WithLabelValues(append(in.labels(), kind)...).Inc()
	if logIt {
		msg := "VRID conflict: another router speaks on our VRID with a different configuration; its packets are dropped"
		if kind == "dual_master" {
			msg = "two masters: another router keeps advertising as master while we are; check the path from us to it"
		}
		e.log.Warn(msg, "instance", in.cfg.Name, "vrid", in.cfg.VRID, "peer", from, "kind", kind, "detail", c.Detail, "count", c.Count)
	}
}

// expireConflicts drops the conflicts not seen for conflictForget from
// in's status and logs that each is over.
func (e *Engine) expireConflicts(in *instance, now time.Time) {
	for _, c := range in.conflicts.expire(now) {
		msg := "VRID conflict over: nothing more from the peer"
		if c.Kind == "dual_master" {
			msg = "two masters over: the other router stopped advertising as master"
		}
		e.log.Info(msg, "instance", in.cfg.Name, "vrid", in.cfg.VRID, "peer", c.Peer, "kind", c.Kind,
			"count", c.Count, "first_seen", c.FirstSeen.UTC().Format(time.RFC3339), "last_seen", c.LastSeen.UTC().Format(time.RFC3339))
	}
}

// reload loads the configuration again and applies it.
func (e *Engine) reload() error {
	cfg, err := e.opts.Load()
	if err != nil {
		e.metrics.reloads.WithLabelValues("error").Inc()
		e.log.Error("reload rejected; keeping the running configuration", "err", err)
		return err
	}
	if err := e.apply(cfg); err != nil {
		e.metrics.reloads.WithLabelValues("error").Inc()
		e.log.Error("reload failed; keeping the running configuration", "err", err)
		return err
	}
	e.metrics.reloads.WithLabelValues("ok").Inc()
	logUnsafeScripts(e.log, cfg)
	e.applyTuning()
	if e.opts.ConfigPath != "" {
		e.log.Info("configuration reloaded", "file", e.opts.ConfigPath, "instances", len(e.instances))
	} else {
		e.log.Info("configuration reloaded", "instances", len(e.instances))
	}
	return nil
}

// holdFirst moves a transition to MASTER ahead of the advertisements
// before it, unless no router would let the VIPs go on that advertisement
// (fsm.Action.MasterGone: the master fell silent or left). The
// advertisement makes the old master (a lower priority
// preempted, or a woken one meeting us) let go of the VIPs at once, and
// taking them means recording them in the ledger first (a write; it had
// an fsync too, tens of milliseconds on a busy disk): in the advertisement's
// order the VIP had no holder for that long, in this order the two
// holders overlap for the advertisement's flight time instead. A chaos
// run found the gap (bench/chaos, docs/reliability.md).
func holdFirst(acts []fsm.Action) []fsm.Action {
	for i, a := range acts {
		if a.Kind != fsm.Transition || a.To != fsm.Master || i == 0 {
			continue
		}
		if a.MasterGone {
			// Nobody lets go on our advertisement, so taking the VIPs first
			// buys no overlap; advertising first stops the other backups,
			// whose master-down timers may be due while we add thousands
			// of VIPs (bench/ipfailover: the backup 78 ms behind took the
			// same 1,667 VIPs, announced them and let them go again).
			return acts
		}
		moved := true
		for _, b := range acts[:i] {
			moved = moved && b.Kind == fsm.SendAdvert
		}
		if !moved {
			return acts
		}
		out := make([]fsm.Action, 0, len(acts))
		out = append(out, a)
		out = append(out, acts[:i]...)
		return append(out, acts[i+1:]...)
	}
	return acts
}
