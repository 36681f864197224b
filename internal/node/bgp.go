package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vipstack/vipstack/internal/bgp"
	"github.com/vipstack/vipstack/internal/bgpconfig"
	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/track"
)

// The VIPs a node announces by BGP are addresses on its loopback, so that
// it answers them once a router sends it their traffic. They stay there
// while the agent runs, eligible or not: a route withdrawn for a failing
// check takes new flows away from the node at once, and connections the
// router still hashes to it in the meantime are answered, not reset. They
// leave when the agent stops, after the withdrawals.
const bgpVIPDev = "lo"

// verdicts decides, for each VIP of spec, whether the node may announce
// it, as VRRP would set the priority of the instance holding it: every
// check passes, eligible; a failing check that VRRP counts as a weight
// (weights[name] != 0: it lowers the priority, and the last node keeps
// the VIP), demoted; a failing check VRRP counts as fatal (weight 0,
// FAULT) or one not running, not eligible. A VIP without checks (the
// bootstrap node's API VIP, which VRRP gives the bootstrap node without
// condition) is eligible. Whether a demoted route stays announced is the
// speaker's (bgp.Config.Demote).
func verdicts(spec *cluster.BGPSpec, weights map[string]int, status map[string]track.Status) []bgp.Verdict {
	var out []bgp.Verdict
	for _, r := range spec.Config.Routes {
		v := bgp.Verdict{VIP: r.VIP, Eligible: true}
		var ok, weak, fatal []string
		for _, name := range spec.Checks[r.VIP] {
			st, found := status[name]
			var why string
			switch {
			case !found:
				fatal = append(fatal, name+" not running")
				continue
			case st.Pending:
				why = name + " has no result yet"
			case !st.OK:
				why = name + " failing"
				if st.Reason != "" {
					why += " (" + oneLine(st.Reason) + ")"
				}
			default:
				ok = append(ok, name+" ok")
				continue
			}
			if w := weights[name]; w != 0 {
				weak = append(weak, fmt.Sprintf("%s, weight %+d", why, w))
			} else {
				fatal = append(fatal, why+", fatal (weight 0)")
			}
		}
		switch {
		case len(fatal) > 0:
			v.Eligible, v.Reason = false, strings.Join(slices.Concat(fatal, weak), ", ")
		case len(weak) > 0:
			v.Demoted, v.Reason = true, strings.Join(slices.Concat(weak, ok), ", ")
		case len(ok) == 0:
			v.Reason = "no checks for the " + spec.Role[r.VIP] + " VIP on this node"
		default:
			v.Reason = strings.Join(ok, ", ")
		}
		out = append(out, v)
	}
	return out
}

// bgpEligibility runs the checks of the BGP VIPs and gives the speaker
// its verdicts (bgp.Eligibility).
type bgpEligibility struct {
	changed chan struct{}

	mu       sync.Mutex
	spec     *cluster.BGPSpec
	trackers map[string]*track.Tracker
	weights  map[string]int // of the running checks, by name
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

func (e *bgpEligibility) Verdicts() []bgp.Verdict {
	e.mu.Lock()
	st := map[string]track.Status{}
	for name, t := range e.trackers {
		st[name] = t.Status()
	}
	spec, weights := e.spec, e.weights
	e.mu.Unlock()
	return verdicts(spec, weights, st)
}

func (e *bgpEligibility) Changed() <-chan struct{} { return e.changed }

func (e *bgpEligibility) signal() {
	select {
	case e.changed <- struct{}{}:
	default:
	}
}

// startChecks runs a tracker per check the BGP VIPs use, replacing those
// running; one that replaces a check of the same name (a reload changed
// its URLs or timing) starts in its predecessor's state. Checks start failing (keepalived's
// init_fail): a node announces only once they have passed rise times.
func (e *bgpEligibility) startChecks(clk clock.Clock, checks []cluster.CheckSpec, probe func(cluster.CheckSpec) track.Check) {
	e.mu.Lock()
	used := map[string]bool{}
	for _, names := range e.spec.Checks {
		for _, n := range names {
			used[n] = true
		}
	}
	old, oldCancel := e.trackers, e.cancel
	ctx, cancel := context.WithCancel(context.Background())
	e.trackers, e.cancel, e.weights = map[string]*track.Tracker{}, cancel, map[string]int{}
	var start []*track.Tracker
	for _, c := range checks {
		if !used[c.Name] {
			continue
		}
		t := &track.Tracker{
			Spec:     track.Spec{Name: c.Name, Interval: c.Interval, Timeout: c.Timeout, Rise: c.Rise, Fall: c.Fall, InitFail: true},
			Check:    probe(c),
			Clock:    clk,
			OnChange: func(track.Status) { e.signal() },
		}
		if prev, ok := old[c.Name]; ok {
			st := prev.Status()
			t.Resume = &st
		}
		e.trackers[c.Name] = t
		e.weights[c.Name] = c.Weight
		start = append(start, t)
	}
	e.mu.Unlock()
	if oldCancel != nil {
		oldCancel()
		e.wg.Wait()
	}
	for _, t := range start {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			t.Run(ctx)
		}()
	}
	e.signal()
}

func (e *bgpEligibility) stop() {
	e.mu.Lock()
	cancel := e.cancel
	e.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	e.wg.Wait()
}

// vipAddrs is what places the BGP VIPs on the node (a *netif.Handle).
type vipAddrs interface {
	AddVIP(netif.VIP) error
	DelVIP(netif.VIP) error
}

// BGPRunner is a speaker with its checks and VIP addresses: the node's,
// and `vipstack ipfailover`'s for a pool announced by BGP, which builds a
// cluster.BGPSpec of its own and calls StartBGP.
type BGPRunner struct {
	specMu  sync.Mutex // spec changes on a reload while status reads it
	spec    *cluster.BGPSpec
	log     *slog.Logger
	elig    *bgpEligibility
	speaker *bgp.Speaker
	addrs   vipAddrs
	closeFn func()
	cancel  context.CancelCauseFunc
	done    chan error
	// stopped is the error with which the speaker's Run ended before
	// Stop or Leave asked it to (its start or a peer's addition failed).
	stopped atomic.Pointer[error]
	// ledger, when its Path is set, records the VIPs on lo before they
	// are added, for the supervisor to remove them if this process
	// crashes (cmd/vipstack's releaseNode), unless a peer has graceful
	// restart: that router keeps forwarding to the node until the next
	// start, which the VIPs must answer (as Leave keeps them).
	ledger netif.Ledger
}

// StartBGP places the VIPs on lo, starts the checks (each probe(spec)
// run by a tracker with the spec's interval, timeout, rise and fall) and
// runs the speaker; Stop or Leave ends it.
func StartBGP(log *slog.Logger, clk clock.Clock, spec *cluster.BGPSpec, checks []cluster.CheckSpec, probe func(cluster.CheckSpec) track.Check) (*BGPRunner, error) {
	return StartBGPRecorded(log, clk, spec, checks, probe, netif.Ledger{})
}

// StartBGPRecorded is StartBGP recording the VIPs it places on lo in
// ledger first (see BGPRunner.ledger); a zero ledger records nothing.
func StartBGPRecorded(log *slog.Logger, clk clock.Clock, spec *cluster.BGPSpec, checks []cluster.CheckSpec, probe func(cluster.CheckSpec) track.Check, ledger netif.Ledger) (*BGPRunner, error) {
	elig := &bgpEligibility{spec: spec, changed: make(chan struct{}, 1)}
	sp, err := bgp.New(bgp.Options{Config: spec.Config, Eligibility: elig, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("bgp: %w", err)
	}
	h, err := netif.Open()
	if err != nil {
		return nil, fmt.Errorf("bgp: netlink: %w", err)
	}
	r := &BGPRunner{spec: spec, log: log, elig: elig, speaker: sp, addrs: h, closeFn: h.Close, done: make(chan error, 1), ledger: ledger}
	r.record(spec, r.vips())
	for _, v := range r.vips() {
		if err := h.AddVIP(v); err != nil {
			r.delVIPs()
			r.record(spec, nil)
			h.Close()
			return nil, fmt.Errorf("bgp: place VIP %v on %s: %w", v.Prefix.Addr(), bgpVIPDev, err)
		}
	}
	elig.startChecks(clk, checks, probe)
	ctx, cancel := context.WithCancelCause(context.Background())
	r.cancel = cancel
	go func() {
		if gracefulRestart(spec) {
			elig.await(ctx, clk, settle(checks))
		}
		r.done <- r.run(ctx)
	}()
	return r, nil
}

// run runs the speaker until ctx ends, and records why it stopped if it
// did so on its own (BGPRunner.stopped): the node then announces nothing,
// and its status says so (Unhealthy), which fails its liveness probe.
func (r *BGPRunner) run(ctx context.Context) error {
	err := r.speaker.Run(ctx)
	if ctx.Err() == nil {
		if err == nil {
			err = errors.New("the speaker returned without an error")
		}
		r.stopped.Store(&err)
		r.log.Error("bgp: the speaker stopped; the node announces nothing until it restarts", "err", err)
	}
	return err
}

// gracefulRestart reports whether a peer of spec keeps this node's routes
// over a restart.
func gracefulRestart(spec *cluster.BGPSpec) bool {
	for _, p := range spec.Config.Peers {
		if p.GracefulRestart > 0 {
			return true
		}
	}
	return false
}

// settle is how long the checks take to decide at the longest: a check
// starts failed and passes after rise probes.
func settle(checks []cluster.CheckSpec) time.Duration {
	var d time.Duration
	for _, c := range checks {
		if w := time.Duration(c.Rise)*c.Interval + c.Timeout; w > d {
			d = w
		}
	}
	return d
}

// await returns once every VIP is eligible (not demoted), after bound, or
// when ctx ends. The sessions open after it: a peer that kept this node's
// routes over a graceful restart purges those the first End-of-RIB lacks,
// and a starting node's checks have not passed yet.
func (e *bgpEligibility) await(ctx context.Context, clk clock.Clock, bound time.Duration) {
	t := clk.NewTimer(bound)
	defer t.Stop()
	for {
		all := true
		for _, v := range e.Verdicts() {
			all = all && v.Eligible && !v.Demoted
		}
		if all {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			return
		case <-e.changed:
		}
	}
}

// record writes vips to the ledger, or none when a peer of spec has
// graceful restart (BGPRunner.ledger). A failure is logged: the VIPs go
// on lo all the same, as the VRRP engine does.
func (r *BGPRunner) record(spec *cluster.BGPSpec, vips []netif.VIP) {
	if r.ledger.Path == "" {
		return
	}
	if gracefulRestart(spec) {
		vips = nil
	}
	if err := r.ledger.Save(vips); err != nil {
		r.log.Error("bgp: cannot record the VIPs on lo in the ledger; a crash now would leave them behind", "path", r.ledger.Path, "err", err)
	}
}

func (r *BGPRunner) vips() []netif.VIP {
	r.specMu.Lock()
	defer r.specMu.Unlock()
	return vipsOf(r.spec)
}

func vipsOf(spec *cluster.BGPSpec) []netif.VIP {
	var out []netif.VIP
	for _, rt := range spec.Config.Routes {
		out = append(out, netif.VIP{Prefix: rt.Prefix(), Dev: bgpVIPDev})
	}
	return out
}

// update applies a reloaded spec: new VIPs go on the loopback first, the
// checks follow the new spec, the speaker changes its peers and routes
// (sessions to unchanged peers stay up), and VIPs no longer announced
// leave the loopback once withdrawn.
func (r *BGPRunner) update(clk clock.Clock, spec *cluster.BGPSpec, oldChecks, checks []cluster.CheckSpec, probe func(cluster.CheckSpec) track.Check) error {
	old := r.vips()
	next := vipsOf(spec)
	both := slices.Clone(old)
	for _, v := range next {
		if !slices.Contains(both, v) {
			both = append(both, v)
		}
	}
	r.record(spec, both)
	for _, v := range next {
		if !slices.Contains(old, v) {
			if err := r.addrs.AddVIP(v); err != nil {
				return fmt.Errorf("bgp: place VIP %v on %s: %w", v.Prefix.Addr(), bgpVIPDev, err)
			}
		}
	}
	r.elig.mu.Lock()
	checksChanged := !reflect.DeepEqual(r.elig.spec.Checks, spec.Checks)
	r.elig.spec = spec
	r.elig.mu.Unlock()
	if checksChanged || !reflect.DeepEqual(oldChecks, checks) {
		r.elig.startChecks(clk, checks, probe)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if e := r.stopped.Load(); e != nil {
		// Its loop is gone: Update would wait out ctx.
		err = fmt.Errorf("bgp: the speaker stopped (%v): BGP changes apply again once the node restarts", *e)
	} else {
		err = r.speaker.Update(ctx, spec.Config)
	}
	r.specMu.Lock()
	r.spec = spec
	r.specMu.Unlock()
	for _, v := range old {
		if !slices.Contains(next, v) {
			if derr := r.addrs.DelVIP(v); derr != nil {
				r.log.Error("bgp: remove VIP", "vip", v.Prefix.Addr(), "err", derr)
			}
		}
	}
	r.record(spec, next)
	return err
}

func (r *BGPRunner) delVIPs() {
	for _, v := range r.vips() {
		if err := r.addrs.DelVIP(v); err != nil {
			r.log.Error("bgp: remove VIP", "vip", v.Prefix.Addr(), "err", err)
		}
	}
}

// Stop withdraws every route (the speaker waits until the withdrawals are
// sent), closes the sessions, then removes the VIPs and stops the checks.
func (r *BGPRunner) Stop() error {
	r.cancel(nil)
	err := <-r.done
	r.delVIPs()
	r.record(r.spec, nil)
	r.closeFn()
	r.elig.stop()
	return err
}

// Leave stops for a restart: the speaker leaves its routes announced (the
// routers keep them by graceful restart once this process has exited)
// and the VIPs stay on lo, so traffic keeps reaching the node meanwhile.
func (r *BGPRunner) Leave() error {
	r.cancel(bgp.ErrRestarting)
	err := <-r.done
	r.closeFn()
	r.elig.stop()
	return err
}

// bgpChecks are the checks of checks that the VIPs of spec use.
func bgpChecks(spec *cluster.BGPSpec, checks []cluster.CheckSpec) []cluster.CheckSpec {
	var out []cluster.CheckSpec
	for _, c := range checks {
		for _, names := range spec.Checks {
			if slices.Contains(names, c.Name) {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// speakerRestart says what of a change from a to b a running node cannot
// apply (turning BGP on or off, a new ASN or router ID), "" when it can.
func speakerRestart(a, b *cluster.BGPSpec) string {
	switch {
	case a == nil && b == nil:
		return ""
	case a == nil:
		return "the node starts announcing VIPs by BGP"
	case b == nil:
		return "the node stops announcing VIPs by BGP"
	case a.Config.ASN != b.Config.ASN:
		return fmt.Sprintf("bgp.asn changes (%d to %d)", a.Config.ASN, b.Config.ASN)
	case a.Config.RouterID != b.Config.RouterID:
		return fmt.Sprintf("the node's router ID changes (%v to %v)", a.Config.RouterID, b.Config.RouterID)
	}
	return ""
}

// BGPStatus is the node's speaker in the status (bgpconfig.SpeakerStatus:
// the commands that report one need not link the speaker).
type (
	BGPStatus      = bgpconfig.SpeakerStatus
	BGPPeerStatus  = bgpconfig.PeerStatus
	BGPRouteStatus = bgpconfig.RouteStatus
)

// Status is the speaker's peers and routes, for vipstack status.
func (r *BGPRunner) Status() *BGPStatus {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := r.speaker.Status(ctx)
	r.specMu.Lock()
	spec := r.spec
	r.specMu.Unlock()
	out := &BGPStatus{ASN: spec.Config.ASN, RouterID: spec.Config.RouterID.String(), Announces: st.Announces, Withdrawals: st.Withdrawals, Wedged: st.Wedged}
	if err != nil {
		out.Error = err.Error()
	}
	stopped := r.stopped.Load()
	if stopped != nil {
		out.Stopped = (*stopped).Error()
	}
	for _, p := range st.Peers {
		out.Peers = append(out.Peers, BGPPeerStatus{Address: p.Address.String(), ASN: p.ASN, IBGP: p.IBGP, Session: p.Session,
			BFD: p.BFD, BFDRejected: p.BFDRejected, HeldDown: p.HeldDown, Advertised: p.Advertised, UpdatesSent: p.SentUpdates})
	}
	for _, rt := range st.Routes {
		out.Routes = append(out.Routes, BGPRouteStatus{Prefix: rt.Prefix.String(), Role: spec.Role[rt.Prefix.Addr()],
			Announced: rt.Announced, Demoted: rt.Demoted, Reason: rt.Reason})
	}
	if len(out.Routes) == 0 { // before the first plan
		for _, rt := range spec.Config.Routes {
			out.Routes = append(out.Routes, BGPRouteStatus{Prefix: rt.Prefix().String(), Role: spec.Role[rt.VIP], Reason: "speaker starting"})
		}
	}
	if stopped != nil {
		// The speaker's last word no longer holds: its routes are in a
		// RIB nothing updates, or in none.
		for i := range out.Routes {
			out.Routes[i].Announced, out.Routes[i].Demoted = false, false
			out.Routes[i].Reason = "not known: the speaker stopped (see stopped): it sent what it could of its stop, and a router keeps the rest only while this process holds its sessions"
		}
	}
	return out
}

// WriteBGP prints the speaker's part of the status table.
func WriteBGP(w io.Writer, b *BGPStatus) {
	fmt.Fprintf(w, "\nbgp: AS %d, router ID %s\n", b.ASN, b.RouterID)
	if u := b.Unhealthy(); u != "" {
		fmt.Fprintf(w, "    NOT LIVE: %s\n", oneLine(u))
	} else if b.Stopped != "" {
		fmt.Fprintf(w, "    stopped: %s; starts again %s\n", oneLine(b.Stopped), oneLine(b.Retry))
	}
	if b.Error != "" {
		fmt.Fprintf(w, "    error: %s\n", oneLine(b.Error))
	}
	for _, p := range b.Peers {
		kind := "eBGP"
		if p.IBGP {
			kind = "iBGP"
		}
		line := fmt.Sprintf("peer %s AS %d (%s): %s, %d routes sent", p.Address, p.ASN, kind, p.Session, p.Advertised)
		if p.BFD != "" {
			line += ", BFD " + p.BFD
		}
		fmt.Fprintln(w, line)
		if p.HeldDown != "" {
			fmt.Fprintf(w, "    held down: %s\n", oneLine(p.HeldDown))
		}
		if p.BFDRejected != "" {
			fmt.Fprintf(w, "    BFD packets %s\n", printable(oneLine(p.BFDRejected)))
		}
	}
	for _, r := range b.Routes {
		state := "not announced"
		switch {
		case r.Announced && r.Demoted && !strings.HasPrefix(r.Reason, "demoted"):
			state = "announced, demoted"
		case r.Announced:
			state = "announced"
		}
		fmt.Fprintf(w, "route %s (%s): %s: %s\n", r.Prefix, r.Role, state, printable(oneLine(r.Reason)))
	}
}
