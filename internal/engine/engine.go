package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/sched"
	"github.com/vipstack/vipstack/internal/script"
	"github.com/vipstack/vipstack/internal/track"
	"github.com/vipstack/vipstack/internal/vrrp"
	"github.com/vipstack/vipstack/internal/vrrp/fsm"
	"github.com/vipstack/vipstack/internal/vrrp/transport"
)

// Options configure an Engine.
type Options struct {
	// ConfigPath is the keepalived.conf to load (and reload).
	ConfigPath string
	// ConfigID is keepalived's -i/--config-id, for "@ID" lines; "" means
	// the host name.
	ConfigID string
	// Load, when set, produces the configuration instead of reading
	// ConfigPath (for configurations generated in memory, such as
	// ipfailover's). It is called at start and on every reload.
	Load   func() (*keepalived.Config, error)
	Clock  clock.Clock
	Logger *slog.Logger
	// Registry receives the engine's metrics; nil means none are exported.
	Registry prometheus.Registerer
	// Ledger records the VIPs this process may hold, so a later start (or
	// a supervisor) can remove what a crash left behind.
	Ledger netif.Ledger
	// AnnounceRate caps gratuitous ARP / unsolicited NA per second for
	// each instance (0: unlimited, keepalived's behaviour). With thousands
	// of VIPs it keeps a takeover from flooding the switch and the peers
	// with garp_master_repeat copies of every address at once. The first
	// copy of each address leaves at once all the same (as soon as it is
	// added; in the second burst, the pacer's FirstAtOnce), so no VIP
	// moves later than unpaced: the rate spreads
	// the repeats, which wait the longer. Up to announceFirstMax leave back
	// to back (the pacer's Burst), so a pacing timer that fires late
	// catches up instead of slowing the rest (see announce.Pacer).
	AnnounceRate int
	// Adopt names the instances a predecessor on this node handed over as
	// master, their addresses left on the interfaces (see package
	// handoff). They start as master at once, advertising, and their
	// addresses are neither swept from the ledger nor removed at start.
	// AdoptFrom says from whom, for the log.
	Adopt     []string
	AdoptFrom string
	// Announced, if set, receives (without blocking: it is dropped when
	// the channel is full) each time an instance has sent the last
	// gratuitous ARP / unsolicited NA it had queued: a takeover's
	// announcements are over. A process gives the burst's memory back
	// then (daemon.SettleAtRest): paced announcements allocate
	// too little to count as work themselves.
	Announced chan<- struct{}

	// The seams (see seams.go); nil means the real ones. Netlink opens
	// the netlink side, once per Run; Listen opens the VRRP socket of a
	// family (4 or 6); Announcer opens the GARP / NA sender of an
	// interface, once per instance.
	Netlink   func() (Netlink, error)
	Listen    func(family int) (transport.Conn, error)
	Announcer func(name string, ifIndex int) (Announcer, error)
	// Processes counts the processes a vrrp_track_process matches, at
	// each of its polls; nil means procwatch.Count of /proc.
	Processes ProcessCounter

	// hooks, set by this package's tests only, act at points where
	// another actor may.
	hooks *testHooks
	// backstop replaces the backstop's sockets, sleep and CPUs (tests).
	backstop *backstopSeams
}

// testHooks let a test act at a point of the engine's work.
type testHooks struct {
	// removed runs right after a released VIP was removed from its
	// interface (on the engine's goroutine).
	removed func(v netif.VIP)
}

// Engine runs VRRP instances.
type Engine struct {
	opts    Options
	log     *slog.Logger
	clk     clock.Clock
	metrics *metrics

	events  chan event
	done    chan struct{}
	started chan struct{} // closed once Run has started every instance

	// Owned by the loop goroutine.
	cfg *keepalived.Config
	nl  Netlink
	// slowParts are the current step's slow requests (see timed).
	slowParts []string
	bs        *backstop // fast masters' advertisements when the loop is late (backstop.go)
	// backstopFailed: the backstop's sockets could not be opened (logged once).
	backstopFailed bool
	ledgerW        *ledgerWriter
	addrQ          addrQueue // address changes the loop has not taken yet
	// ledgerDirty: the step saved the ledger for later (saveLedgerLater).
	ledgerDirty bool
	conns       map[int]transport.Conn   // by address family
	joined      map[joinKey]bool         // multicast groups joined, by interface
	vmacs       map[string]netif.VMAC    // VMAC interfaces made for use_vmac, by name (see vmac.go)
	instances   map[string]*instance     // by name
	byKey       map[demuxKey]*instance   // receive demultiplexing
	trackers    map[string]*trackerEntry // by vrrp_script name
	groups      map[string]*syncGroup
	// held are the VIPs we hold: each points into the holding
	// instance's vips (never changed in place: a reload that changes
	// them makes a new list), not a copy of about 120 bytes
	// (docs/design/memory.md).
	held heldSet
	// released are the VIPs we let go, watched for a while (see
	// checkReleased); releasedNext is when to look at them again.
	released     map[string]releasedVIP
	releasedNext time.Time
	links        map[string]bool     // interface name -> up
	dad          map[string]dadWait  // links back up whose IPv6 source is still tentative (see checkDAD)
	dadNext      time.Time           // when to look at them again
	srcAbsent    map[netip.Addr]bool // unicast_src_ip addresses not configured on this node (see checkSources)
	srcNext      time.Time           // when to look at them again
	// adopt holds the instances to adopt at the first apply (Options.Adopt).
	adopt map[string]bool
	// handoff, once set, asks the loop to stop for a hand-off (Handoff).
	handoff chan []string
	// absentNext is when to look again for the interfaces of instances
	// built without one (see checkAbsent); absentErr the last rebuild error
	// logged.
	absentNext time.Time
	absentErr  string
	// proc is the process's scheduling from global_defs (applyTuning);
	// scripts start through it.
	proc *sched.Process
	// stopXCPU stops the SIGXCPU watch (watchRTTime) once a realtime
	// priority was applied; nil before.
	stopXCPU func()
	runner   script.Runner
	ctx      context.Context

	statusMu sync.Mutex
	status   []InstanceStatus
	statusAt time.Time // when status was made
	// unansweredAt is when a status request first found the running loop
	// not answering, zero since the loop last made a status (see Stalled).
	unansweredAt time.Time

	// Loop-owned buffers reused at every advertisement: the message sent
	// (see advertise) and the actions of a tick (see fireInstance).
	wire []byte
	acts []fsm.Action
	// advAddrs holds the addresses of the advert being sent or compared
	// (see appendAdvert).
	advAddrs []netip.Addr
	// rxItems are the readers' *rxItem, reused (see read).
	rxItems sync.Pool

	sortedNames []string // e.instances' keys in order; nil: to compute (see names)

	announcers announcers // one per interface, shared by its instances

	notifying sync.WaitGroup // notify scripts still running
	tracking  sync.WaitGroup // the trackers' runs (see stopTrackers)
}

type demuxKey struct {
	family  int
	ifIndex int
	vrid    uint8
}

type trackerEntry struct {
	spec    *keepalived.Script
	cancel  context.CancelFunc
	status  track.Status   // as of the last flip: what the priority uses
	tracker *track.Tracker // for the latest probe's reason in the status
}

type event struct {
	packet  *transport.Packet
	advert  *vrrp.Advertisement // packet, parsed by screen
	rx      *rxItem             // holds packet and advert; back to e.rxItems once handled
	family  int
	track   *track.Status
	first   *track.Tracker // its first probe succeeded (see firstSuccess)
	link    *linkEvent
	addrs   bool // addresses changed: see addrQueue
	reload  chan error
	ping    chan struct{}
	publish chan struct{} // publish the status now (see Status)
	readErr error
	handoff chan []string
}

// addrEvent is an address added or removed; the zero Prefix means any may
// have been (the watcher has just subscribed: at the start, or after it lost
// events).
type addrEvent struct {
	prefix netip.Prefix
	added  bool
}

// addrQueue holds the address changes the watcher reported that the loop
// has not taken yet. The watcher sends the loop an event only when the
// queue was empty, and the loop takes every change queued when it handles
// it: the changes reported while the loop was busy (10,000 VIPs added by
// a takeover) are handled at once.
type addrQueue struct {
	mu      sync.Mutex
	pending []addrEvent
}

// put queues ev and reports whether the loop must be told (the queue was
// empty).
func (q *addrQueue) put(ev addrEvent) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = append(q.pending, ev)
	return len(q.pending) == 1
}

// take returns the queued changes, in the order reported, and empties
// the queue.
func (q *addrQueue) take() []addrEvent {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.pending
	q.pending = nil
	return p
}

type linkEvent struct {
	name string
	up   bool
}

// New loads and validates the configuration without touching the system.
func New(opts Options) (*Engine, *keepalived.Config, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Load == nil {
		path, id := opts.ConfigPath, opts.ConfigID
		clk, count := opts.Clock, opts.countProcesses()
		opts.Load = func() (*keepalived.Config, error) {
			cfg, err := CheckID(path, id)
			if err != nil {
				return nil, err
			}
			return cfg, addProcessTracks(cfg, clk, count)
		}
	}
	cfg, err := opts.Load()
	if err != nil {
		return nil, nil, err
	}
	logUnsafeScripts(opts.Logger, cfg)
	e := &Engine{
		opts:      opts,
		log:       opts.Logger,
		clk:       opts.Clock,
		events:    make(chan event, 1024),
		done:      make(chan struct{}),
		started:   make(chan struct{}),
		cfg:       cfg,
		conns:     map[int]transport.Conn{},
		joined:    map[joinKey]bool{},
		instances: map[string]*instance{},
		byKey:     map[demuxKey]*instance{},
		trackers:  map[string]*trackerEntry{},
		groups:    map[string]*syncGroup{},
		released:  map[string]releasedVIP{},
		links:     map[string]bool{},
		dad:       map[string]dadWait{},
		srcAbsent: map[netip.Addr]bool{},
		adopt:     map[string]bool{},
		proc:      &sched.Process{},
	}
	e.metrics = newMetrics(opts.Registry, e.Status)
	for _, name := range opts.Adopt {
		e.adopt[name] = true
	}
	return e, cfg, nil
}

// Check loads a configuration and applies the checks that need the
// machine but change nothing on it: each script it runs must exist and be
// runnable (under enable_script_security, safe too). It is what `--check`
// runs, and what the engine loads at start and on reload.
//
// A script that fails its check is disabled, as keepalived 2.2.7 disables
// it, and a warning in cfg.Warnings says so in keepalived's words: a
// vrrp_script is dropped from every track_script that names it ("Disabling
// track script chk since not found/accessible"; the instance runs without
// it) and a notify script is not run ("Script /x cannot be accessed - No
// such file or directory").
func Check(path string) (*keepalived.Config, error) { return CheckID(path, "") }

// CheckID is Check with keepalived's config ID (-i) for "@ID" lines; ""
// means the host name.
func CheckID(path, configID string) (*keepalived.Config, error) {
	cfg, err := keepalived.LoadID(path, configID)
	if err != nil {
		return nil, err
	}
	disableScripts(cfg, securityOf(cfg).Check)
	return cfg, nil
}

// disableScripts removes from cfg the scripts check refuses, with a warning
// for each, as keepalived 2.2.7 does at start.
func disableScripts(cfg *keepalived.Config, check func(argv []string) error) {
	disabled := map[string]bool{}
	for _, name := range sortedKeys(cfg.Scripts) {
		s := cfg.Scripts[name]
		if s.Probe != nil || !usedScript(cfg, name) {
			continue
		}
		if err := check(s.Args); err != nil {
			disabled[name] = true
			cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("%s: Disabling track script %s since not found/accessible (%v); "+
				"the instances tracking it run without it, as in keepalived", s.Pos, name, err))
		}
	}
	drop := func(ts []keepalived.TrackScript) []keepalived.TrackScript {
		return slices.DeleteFunc(ts, func(t keepalived.TrackScript) bool { return disabled[t.Name] })
	}
	for name := range disabled {
		delete(cfg.Scripts, name)
	}
	notify := func(kind, name string, pos keepalived.Pos, n *keepalived.Notify) {
		for _, cmd := range []*string{&n.Master, &n.Backup, &n.Fault, &n.Stop, &n.Any} {
			if *cmd == "" {
				continue
			}
			argv, err := keepalived.SplitCommand(*cmd)
			if err == nil {
				err = check(argv)
			}
			if err != nil {
				prog := *cmd
				if len(argv) > 0 {
					prog = argv[0]
				}
				cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("%s: Script %s cannot be accessed (%v); %s %s notify script %q "+
					"is disabled, as in keepalived", pos, prog, err, kind, name, *cmd))
				*cmd = ""
			}
		}
	}
	for _, in := range cfg.Instances {
		in.TrackScripts = drop(in.TrackScripts)
		if in.Notify != nil {
			n := *in.Notify // not in place: a copy of in may share it
			notify("vrrp_instance", in.Name, in.Pos, &n)
			in.Notify = &n
			if n == (keepalived.Notify{}) {
				in.Notify = nil // every script disabled
			}
		}
	}
	for _, g := range cfg.SyncGroups {
		g.TrackScripts = drop(g.TrackScripts)
		notify("vrrp_sync_group", g.Name, g.Pos, &g.Notify)
	}
}

// MissingInterfaces returns a note for every interface cfg names (an
// instance's interface, a VIP's dev, a track_interface) that does not exist
// in this network namespace, with its file and line. `--check` prints them
// as warnings: keepalived -t refuses such a file ("Non-existent interface
// specified in configuration"), and vipstack runs an instance whose
// interface is missing in FAULT until it appears; a file may be checked on
// another host than the one that runs it, so they are not errors there.
func MissingInterfaces(cfg *keepalived.Config, exists func(name string) bool) []string {
	var out []string
	seen := map[string]bool{}
	note := func(pos keepalived.Pos, name, what, then string) {
		if name == "" || seen[name] || exists(name) {
			return
		}
		seen[name] = true
		out = append(out, fmt.Sprintf("%s: interface %q (%s) does not exist here; keepalived -t refuses the file, and %s",
			pos, name, what, then))
	}
	for _, in := range cfg.Instances {
		note(in.Pos, in.Interface, "interface of vrrp_instance "+in.Name, "vipstack runs the instance in FAULT until it appears")
		for v := range in.AllVIPs() {
			note(v.Pos(), v.Dev(), "dev of "+v.Prefix.String(), "vipstack cannot add the address")
		}
		for _, ti := range in.TrackInterfaces {
			note(ti.Pos, ti.Name, "track_interface of vrrp_instance "+in.Name, "vipstack counts it down")
		}
	}
	return out
}

// UnsafeScript is a script a configuration runs as root that a non-root
// user could change, and where it is used.
type UnsafeScript struct {
	UsedBy string // "vrrp_script chk (file:line)", "vrrp_instance VI_1 notify (file:line)"
	Err    *script.UnsafeError
}

// UnsafeScripts returns the scripts cfg runs that enable_script_security
// would refuse, when it is not set (when it is, Check refuses them).
// keepalived 2.2.7 runs them and logs, for each, "Unsafe permissions found
// for script 'PATH'." (measured: a world-writable script, one writable by a
// non-root group and one owned by a non-root user, with or without
// `script_user root`); New logs them the same way, naming the reason.
func UnsafeScripts(cfg *keepalived.Config) []UnsafeScript {
	if cfg.Global.EnableScriptSecurity {
		return nil
	}
	sec := securityOf(cfg)
	var out []UnsafeScript
	seen := map[string]bool{}
	check := func(usedBy string, argv []string) {
		if len(argv) == 0 {
			return
		}
		if ue := sec.Unsafe(argv); ue != nil && !seen[ue.Path+" "+usedBy] {
			seen[ue.Path+" "+usedBy] = true
			out = append(out, UnsafeScript{UsedBy: usedBy, Err: ue})
		}
	}
	for _, name := range sortedKeys(cfg.Scripts) {
		if s := cfg.Scripts[name]; usedScript(cfg, name) {
			check(fmt.Sprintf("vrrp_script %s (%s)", name, s.Pos), s.Args)
		}
	}
	notify := func(kind, name string, pos keepalived.Pos, n keepalived.Notify) {
		for _, cmd := range []string{n.Master, n.Backup, n.Fault, n.Stop, n.Any} {
			if argv, err := keepalived.SplitCommand(cmd); cmd != "" && err == nil {
				check(fmt.Sprintf("%s %s notify (%s)", kind, name, pos), argv)
			}
		}
	}
	for _, in := range cfg.Instances {
		notify("vrrp_instance", in.Name, in.Pos, in.Notifies())
	}
	for _, g := range cfg.SyncGroups {
		notify("vrrp_sync_group", g.Name, g.Pos, g.Notify)
	}
	return out
}

// logUnsafeScripts warns about each of UnsafeScripts(cfg), at start and
// after every reload that applies (a reload may point at another script, or
// the file's mode may have changed since).
func logUnsafeScripts(log *slog.Logger, cfg *keepalived.Config) {
	for _, u := range UnsafeScripts(cfg) {
		log.Warn("Unsafe permissions found for script: it runs as root and a non-root user can change it; "+
			"it runs anyway, as keepalived 2.2.7 runs it without enable_script_security (with it, it is refused)",
			"script", u.Err.Path, "reason", u.Err.Err.Error(), "used_by", u.UsedBy)
	}
}

func securityOf(cfg *keepalived.Config) script.Security {
	return script.Security{Enforce: cfg.Global.EnableScriptSecurity, User: cfg.Global.ScriptUser, Group: cfg.Global.ScriptGroup}
}

func usedScript(cfg *keepalived.Config, name string) bool {
	for _, in := range cfg.Instances {
		for _, ts := range in.TrackScripts {
			if ts.Name == name {
				return true
			}
		}
	}
	for _, g := range cfg.SyncGroups {
		for _, ts := range g.TrackScripts {
			if ts.Name == name {
				return true
			}
		}
	}
	return false
}

// Run starts every instance and serves until ctx is done, then shuts down
// gracefully: masters send priority 0, VIPs are removed, notify_stop runs.
// It returns an error only when the engine could not start.
func (e *Engine) Run(ctx context.Context) error {
	defer close(e.done)
	nl, err := e.openNetlink()
	if err != nil {
		return fmt.Errorf("open netlink: %w", err)
	}
	defer nl.Close()
	e.nl = timedNetlink{Netlink: nl, e: e}
	e.runner = script.Runner{Security: securityOf(e.cfg), Start: e.proc.Start}
	e.applyTuning()
	bctx, stopBackstop := context.WithCancel(ctx)
	e.bs = newBackstop(bctx, e.backstopSeams(), e.clk.Now)
	defer func() {
		stopBackstop()
		e.bs.stop()
	}()
	defer func() {
		if e.stopXCPU != nil {
			e.stopXCPU()
		}
	}()

	// Leftovers of a crashed earlier run, then any configured VIP that is
	// present although we hold nothing yet; not those of the instances a
	// predecessor handed over.
	adopted := e.adoptedVIPs()
	if removed, err := nl.SweepExcept(e.opts.Ledger, func(v netif.VIP) bool { return adopted[addrKey(v.Prefix, v.Dev)] }); err != nil {
		e.log.Warn("removing VIPs left by an earlier run failed", "ledger", e.opts.Ledger.Path, "err", err)
	} else {
		for _, v := range removed {
			e.log.Info("removed VIP left by an earlier run", "vip", v.Prefix, "dev", v.Dev)
		}
	}

	e.sweepVMACs(nl)
	e.removePresentVIPs()

	// The ledger's background writes end, the last pending one written,
	// before Run returns.
	e.ledgerW = newLedgerWriter(e.opts.Ledger)
	e.warnLedgerOnDisk()
	stopLedger, ledgerDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ledgerDone)
		e.ledgerW.run(stopLedger, func(err error) {
			e.log.Warn("cannot update the VIP ledger", "path", e.opts.Ledger.Path, "err", err)
		})
	}()
	defer func() { close(stopLedger); <-ledgerDone }()

	loopCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	e.ctx = loopCtx
	go func() {
		if err := nl.WatchLinks(loopCtx, func(name string, up bool) {
			e.send(event{link: &linkEvent{name: name, up: up}})
		}); err != nil && loopCtx.Err() == nil {
			e.log.Error("watching links failed; track_interface will not react", "err", err)
		}
	}()
	go func() {
		if err := nl.WatchAddrs(loopCtx, func(p netip.Prefix, added bool) {
			if e.addrQ.put(addrEvent{prefix: p, added: added}) {
				e.send(event{addrs: true})
			}
		}); err != nil && loopCtx.Err() == nil {
			e.log.Error("watching addresses failed; a VIP removed from a master's interface, or an interface losing its address, will not be noticed", "err", err)
		}
	}()

	if err := e.apply(e.cfg); err != nil {
		e.stopAll("start failed")
		e.closeConns()
		return err
	}
	close(e.started)

	timer := e.clk.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := e.nextDeadline()
		if next.IsZero() {
			timer.Reset(time.Hour)
		} else {
			timer.Reset(max(next.Sub(e.clk.Now()), 0))
		}
		select {
		case <-ctx.Done():
			e.stopAll("shutdown")
			e.closeConns()
			e.publishStatus()
			e.stopTrackers(trackerGrace)
			e.waitNotify(notifyGrace)
			return nil
		case <-timer.C():
			e.drain()
			e.readBeforeTakeover(next)
			e.tick(e.clk.Now())
		case ev := <-e.events:
			e.handle(ev)
			// Under a flood of packets, handle what is already queued
			// as one step (the ledger's list is then handed over once),
			// a bounded batch so the timers still get their turn.
			e.drainUpTo(eventBatch - 1)
		}
		e.handLedger()
		if e.handoff != nil {
			e.handoff <- e.stopForHandoff()
			return nil
		}
	}
}

// Started is closed once Run has started every instance of the
// configuration (none has settled yet: each waits for its first timer).
func (e *Engine) Started() <-chan struct{} { return e.started }

// statusWait bounds how long Status waits for the loop to make the status.
const statusWait = 100 * time.Millisecond

// refreshStatus has the loop make the status, waiting up to statusWait;
// false when it did not answer in that time.
func (e *Engine) refreshStatus() bool {
	reply := make(chan struct{})
	t := time.NewTimer(statusWait) // a bound on a wait for the loop, not a timer of the protocol
	defer t.Stop()
	select {
	case e.events <- event{publish: reply}:
	case <-e.done:
		return true
	case <-t.C:
		return false
	}
	select {
	case <-reply:
	case <-e.done:
	case <-t.C:
		// An answer that came as the time ran out is an answer.
		select {
		case <-reply:
			return true
		default:
		}
		return false
	}
	return true
}

// removePresentVIPs removes every configured VIP that is on its interface
// at start, before any instance runs: we hold nothing yet, so it is what a
// keepalived or an earlier vipstack killed without its ledger left behind
// (a container killed whole, a migration off keepalived after kill -9),
// and a backup keeping it would hold the VIP beside the master. keepalived
// does the same at start. An address counts only with the configured
// prefix length, so a node address that equals a VIP with another length
// stays.
func (e *Engine) removePresentVIPs() {
	// Both lists made at their size, each VIP read where it is: grown by
	// appends, with a list of each instance's VIPs made to range over,
	// they took 5.8 of the 88 MB the engine allocated to start
	// bench/scale's 1,000 instances (1.3 now), all of it garbage once
	// this returns.
	n := 0
	for _, ic := range e.cfg.Instances {
		if !e.adopt[ic.Name] {
			n += ic.NumVIPs()
		}
	}
	vips := make([]netif.VIP, 0, n)
	owner := make([]string, 0, n) // instance of each of vips
	for _, ic := range e.cfg.Instances {
		if e.adopt[ic.Name] {
			continue
		}
		for v := range ic.AllVIPs() {
			vips = append(vips, toVIP(v, ic.Interface))
			owner = append(owner, ic.Name)
		}
	}
	// One dump of the addresses for them all: one per VIP, each listing
	// its interface's addresses, grew with their square when a crash left
	// them there.
	present, err := e.nl.Present(vips)
	if err != nil {
		e.log.Warn("looking for configured VIPs present at start failed", "vips", len(vips), "err", err)
		return
	}
	for i, vip := range vips {
		if !present[i] {
			continue
		}
		if err := e.nl.DelVIP(vip); err != nil {
			e.log.Warn("removing a configured VIP present at start failed", "instance", owner[i], "vip", vip.Prefix, "dev", vip.Dev, "err", err)
			continue
		}
		e.log.Info("removed a configured VIP present at start (left by an earlier keepalived or vipstack)", "instance", owner[i], "vip", vip.Prefix, "dev", vip.Dev)
	}
}

// eventBatch is how many queued events the loop handles before it looks
// at its timers again.
const eventBatch = 64

// drainUpTo handles at most n events that are already queued.
func (e *Engine) drainUpTo(n int) {
	for range n {
		select {
		case ev := <-e.events:
			e.handle(ev)
		default:
			return
		}
	}
}

// notifyGrace is how long shutdown waits for notify scripts, as keepalived
// 2.2.7 does (measured: a 0.3s notify STOP completes, a 2s one is killed).
const notifyGrace = time.Second

// trackerGrace bounds how long shutdown waits for the runs of the tracked
// scripts to end: the script runner's time between SIGTERM and SIGKILL, and a
// second more.
const trackerGrace = script.DefaultKillGrace + time.Second

// stopTrackers ends every tracked script's run and waits, at most d, until
// each has ended: a script still running gets SIGTERM and, after the
// runner's grace, its whole process group SIGKILL, as keepalived 2.2.7
// leaves none behind. The engine used to return at once, before the runner
// could, and a script that ignored SIGTERM (or its background jobs)
// outlived vipstack (TestShutdownEndsHungScripts). Results that come in
// meanwhile are dropped: nothing acts on them any more.
func (e *Engine) stopTrackers(d time.Duration) {
	for _, te := range e.trackers {
		te.cancel()
	}
	done := make(chan struct{})
	go func() {
		e.tracking.Wait()
		close(done)
	}()
	t := e.clk.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-e.events:
		case <-t.C():
			e.log.Warn("tracked scripts still running at shutdown are left behind", "waited", d)
			return
		}
	}
}

// waitNotify waits at most d for the notify scripts still running; the
// rest get SIGTERM (Pdeathsig) when vipstack exits.
func (e *Engine) waitNotify(d time.Duration) {
	done := make(chan struct{})
	go func() {
		e.notifying.Wait()
		close(done)
	}()
	t := e.clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C():
		e.log.Warn("notify scripts still running at shutdown are terminated", "waited", d)
	}
}

func (e *Engine) send(ev event) {
	select {
	case e.events <- ev:
	case <-e.done:
	}
}

// A timer that fires more than stallThreshold late means the process was
// stalled; stallGrace is how long the loop then keeps reading events before
// it acts on its timers. Shorter advertisement intervals shorten both
// (lateLimit, lateGrace).
const (
	stallThreshold = 100 * time.Millisecond
	stallGrace     = 20 * time.Millisecond
)

// queuedGrace bounds how long a due takeover waits for the socket readers
// to pass on packets the kernel has queued (readBeforeTakeover), and
// queuedPoll how long it then waits for the last one: both short against
// the shortest Master_Down_Interval (30 ms and the skew at advert_int
// 0.01), and spent only when a takeover is due with packets queued.
const (
	queuedGrace = 5 * time.Millisecond
	queuedPoll  = 200 * time.Microsecond
)

// readBeforeTakeover reads what waits for the engine before a backup
// takes over on its Master_Down timer, next being when the timer was
// due. A takeover on a silence that a queued advertisement has already
// ended is a false failover, and the timer and the socket's reader run
// on different threads, so either can go first:
//   - when the timer fired more than lateLimit late, the process was
//     most likely stopped (SIGSTOP, a descheduled VM), and a master
//     stopped with it sends as it wakes: the loop reads for lateGrace
//     before it decides (the backstop sends this node's own masters'
//     advertisements meanwhile);
//   - otherwise, when a socket holds a packet the kernel received and its
//     reader has not read yet (under load its thread may wait for a CPU
//     an instant longer than the timer's), the engine handles events
//     until the readers have passed on what was queued, at most
//     queuedGrace.
//
// A master's advertisements and every other timer do not wait: nothing
// is read ahead unless a takeover is due.
func (e *Engine) readBeforeTakeover(next time.Time) {
	now := e.clk.Now()
	mdi, due := e.takeoverDue(now)
	if !due {
		return
	}
	if late := now.Sub(next); !next.IsZero() && late > lateLimit(mdi) {
		e.log.Warn("timer fired late; reading queued packets before deciding", "late", late.Round(time.Millisecond))
		e.drainFor(lateGrace(mdi))
		return
	}
	switch {
	case e.socketsQueued():
		e.log.Debug("a takeover is due while a packet waits in a VRRP socket; reading it first")
		e.drainQueued(queuedGrace)
	case inFlightWait(mdi) > 0:
		e.drainFor(inFlightWait(mdi))
	}
}

// inFlightWait is how long a due takeover at a short advertisement
// interval (Master_Down_Interval mdi, at most four times backstopBelow)
// waits for an advertisement in flight: a sixteenth of mdi, at most
// 5 ms (2.25 ms at advert_int 0.01). A stop of the whole machine
// shorter than lateLimit leaves the backup's timer and the master's
// advertisement due within an instant of each other as it ends, and the
// timer may go first (bench/fastvrrp logged the takeover and the
// master's advertisement a millisecond apart). The crash failover grows
// by as much, within the 10 ms that issue 32's bound allows beyond
// 3 x advert + skew.
func inFlightWait(mdi time.Duration) time.Duration {
	if mdi > 4*backstopBelow {
		return 0
	}
	return min(mdi/16, 5*time.Millisecond)
}

// takeoverDue reports whether a backup's Master_Down timer is due at
// now, and the shortest Master_Down_Interval of those that are.
func (e *Engine) takeoverDue(now time.Time) (time.Duration, bool) {
	var mdi time.Duration
	due := false
	for _, in := range e.instances {
		if in.fsm.State() == fsm.Backup {
			if at := in.fsm.NextDeadline(); !at.IsZero() && !now.Before(at) {
				if d := in.fsm.MasterDownInterval(); !due || d < mdi {
					mdi = d
				}
				due = true
			}
		}
	}
	return mdi, due
}

// lateLimit is how late a timer may fire before the engine takes it that
// the process was stopped, for a backup whose Master_Down_Interval is
// mdi: stallThreshold, or an eighth of mdi when that is shorter (4.5 ms
// at advert_int 0.01, where a stop of the whole machine for 40 ms leaves
// the backup's timer and the master's advertisement due at the same
// instant, and the timer may go first).
func lateLimit(mdi time.Duration) time.Duration { return min(stallThreshold, mdi/8) }

// lateGrace is how long the loop then reads before it decides:
// stallGrace, or a third of mdi (an advertisement interval) when that is
// shorter.
func lateGrace(mdi time.Duration) time.Duration { return min(stallGrace, mdi/3) }

// queueReporter is a socket that can tell whether a packet waits in its
// receive queue (transport's raw sockets on Linux).
type queueReporter interface {
	Queued() (bool, error)
}

// socketsQueued reports whether a VRRP socket holds a packet not read yet.
func (e *Engine) socketsQueued() bool {
	for _, c := range e.conns {
		if q, ok := c.(queueReporter); ok {
			if got, err := q.Queued(); err == nil && got {
				return true
			}
		}
	}
	return false
}

// drainQueued handles events until no socket holds a packet and the
// events already passed on are handled, or until d has passed (on the
// engine's clock).
func (e *Engine) drainQueued(d time.Duration) {
	t := e.clk.NewTimer(d)
	defer t.Stop()
	for e.socketsQueued() {
		select {
		case ev := <-e.events:
			e.handle(ev)
		case <-t.C():
			return
		}
	}
	// The last packet read may still be on its way from the reader.
	poll := e.clk.NewTimer(queuedPoll)
	defer poll.Stop()
	for {
		select {
		case ev := <-e.events:
			e.handle(ev)
		case <-poll.C():
			return
		case <-t.C():
			return
		}
	}
}

// drainFor handles events for d (on the engine's clock).
func (e *Engine) drainFor(d time.Duration) {
	t := e.clk.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case ev := <-e.events:
			e.handle(ev)
		case <-t.C():
			return
		}
	}
}

func (e *Engine) drain() {
	for {
		select {
		case ev := <-e.events:
			e.handle(ev)
		default:
			return
		}
	}
}

// slowStep is how long one event or one round of timers may keep the
// loop before it says so: every instance's timers wait meanwhile, and a
// master's next advertisement with them.
const slowStep = 100 * time.Millisecond

// warnLedgerOnDisk says so when the ledger is on a disk file system: a
// VIP is added only after its ledger write, and the loop, every master's
// advertisements included, waits for that write (finding 8 in
// docs/reliability.md).
func (e *Engine) warnLedgerOnDisk() {
	if e.opts.Ledger.Path == "" {
		return
	}
	dir := filepath.Dir(e.opts.Ledger.Path)
	if mem, fs, err := netif.InMemory(dir); err == nil && !mem {
		e.log.Warn("the VIP ledger is on a disk file system: each VIP taken waits for a write to it, and every VRRP instance waits meanwhile (hundreds of milliseconds on a busy disk); give --state-dir a tmpfs such as /run",
			"dir", dir, "fs", fs)
	}
}

// slowPart is how long one request of a step to the kernel or the disk
// (a netlink request, a ledger write, a packet sent) may take before the
// warning of a slow step names it.
const slowPart = 10 * time.Millisecond

// timed runs f, a request to the kernel or the disk, and records it for
// the warning of a slow step (warnSlow) when it took slowPart or longer.
func (e *Engine) timed(what func() string, f func() error) error {
	began := e.clk.Now()
	err := f()
	if took, slow := e.tookLong(began); slow {
		e.slowParts = append(e.slowParts, what()+" "+took.Round(time.Millisecond).String())
	}
	return err
}

// tookLong returns how long ago began was, and whether that is slowPart or
// longer: timed for a caller that names its request only when it was slow
// (advertise, which sends without building a closure for timed).
func (e *Engine) tookLong(began time.Time) (time.Duration, bool) {
	took := e.clk.Now().Sub(began)
	return took, took >= slowPart
}

// warnSlow logs a loop step that took longer than slowStep, with the
// requests of it that took slowPart or longer; none says the time went
// to the engine's own work or to the process waiting for a CPU.
func (e *Engine) warnSlow(began time.Time, step func() string) {
	parts := e.slowParts
	e.slowParts = nil
	took := e.clk.Now().Sub(began)
	if took <= slowStep {
		return
	}
	slow := "none over " + slowPart.String()
	if len(parts) > 0 {
		slow = strings.Join(parts, "; ")
	}
	e.log.Warn("engine loop step took long; every instance's timers waited for it", "step", step(), "took", took.Round(time.Millisecond), "slow_requests", slow)
}

// String names the event for a log line.
func (ev event) String() string {
	switch {
	case ev.packet != nil && ev.advert != nil:
		return fmt.Sprintf("advertisement VRID %d priority %d from %v", ev.advert.VRID, ev.advert.Priority, ev.packet.Src)
	case ev.packet != nil:
		return fmt.Sprintf("packet from %v", ev.packet.Src)
	case ev.track != nil:
		return "check result"
	case ev.first != nil:
		return "first check success"
	case ev.link != nil:
		return "link " + ev.link.name + " change"
	case ev.addrs:
		return "address changes"
	case ev.reload != nil:
		return "reload"
	case ev.handoff != nil:
		return "hand-off"
	case ev.readErr != nil:
		return "socket error"
	}
	return "status request"
}

func (e *Engine) handle(ev event) {
	if ev.rx != nil {
		// Deferred first, so it runs last: warnSlow may still name the
		// advertisement.
		defer e.rxItems.Put(ev.rx)
	}
	now := e.clk.Now()
	defer e.warnSlow(now, ev.String)
	switch {
	case ev.packet != nil:
		e.receive(now, ev.family, *ev.packet, ev.advert)
	case ev.track != nil:
		e.trackChanged(now, *ev.track)
	case ev.first != nil:
		e.firstSuccess(now, ev.first)
	case ev.link != nil:
		e.linkChanged(now, ev.link.name, ev.link.up)
	case ev.addrs:
		e.addrsChanged(now, e.addrQ.take())
	case ev.reload != nil:
		ev.reload <- e.reload()
	case ev.ping != nil:
		close(ev.ping)
	case ev.publish != nil:
		e.publishStatus()
		close(ev.publish)
	case ev.handoff != nil:
		e.handoff = ev.handoff
	case ev.readErr != nil:
		e.log.Error("VRRP socket read failed", "family", ev.family, "err", ev.readErr)
	}
}

// Reload re-reads the configuration. Instances whose configuration did not
// change keep their state and their VIPs. A configuration that does not
// load is reported and nothing changes.
func (e *Engine) Reload() error {
	reply := make(chan error, 1)
	select {
	case e.events <- event{reload: reply}:
	case <-e.done:
		return errors.New("engine is not running")
	}
	err, ok := await(reply, e.done)
	if !ok {
		return errors.New("engine stopped during reload")
	}
	return err
}

// Handoff stops the engine for a successor on this node that takes over
// (see package handoff): unlike a shutdown, masters send no priority 0 and
// every address stays on its interface and in the ledger, so that peers
// and hosts see no change if the successor advertises within the master
// down interval. No notify script runs: no state changes. It returns the
// instances that were master; Run returns nil.
func (e *Engine) Handoff(ctx context.Context) ([]string, error) {
	reply := make(chan []string, 1)
	select {
	case e.events <- event{handoff: reply}:
	case <-e.done:
		return nil, errors.New("engine is not running")
	case <-ctx.Done():
		return nil, fmt.Errorf("engine loop did not take the hand-off: %w", context.Cause(ctx))
	}
	// The loop answers and then returns at once, closing done: await
	// takes the answer when both are there.
	m, ok := await(reply, e.done)
	if !ok {
		return nil, errors.New("engine stopped before the hand-off")
	}
	return m, nil
}

// await waits for the loop's answer to a request or for its end. An
// answer the loop gave before it ended is returned even when the end is
// also there by the time the caller looks: a select would pick one of
// the two at random. false when the loop ended without answering.
func await[T any](reply <-chan T, done <-chan struct{}) (T, bool) {
	select {
	case v := <-reply:
		return v, true
	case <-done:
	}
	select {
	case v := <-reply:
		return v, true
	default:
		var zero T
		return zero, false
	}
}

// stopForHandoff closes every socket without a word and returns the
// masters (see Handoff).
func (e *Engine) stopForHandoff() []string {
	var masters []string
	for _, name := range e.names() {
		in := e.instances[name]
		if !in.life.has(condAbsent) && !in.life.has(condWaiting) && in.fsm.State() == fsm.Master {
			masters = append(masters, name)
		}
		in.close()
	}
	e.closeConns()
	e.log.Info("VRRP stopped for a hand-off to a successor on this node: no priority 0 sent, addresses left in place",
		"masters", len(masters), "addresses", e.held.len())
	e.publishStatus()
	e.stopTrackers(trackerGrace)
	e.waitNotify(notifyGrace)
	return masters
}

// adoptedVIPs are the configured addresses of the instances to adopt, by
// addrKey.
func (e *Engine) adoptedVIPs() map[string]bool {
	keys := map[string]bool{}
	for _, ic := range e.cfg.Instances {
		if !e.adopt[ic.Name] {
			continue
		}
		for v := range ic.AllVIPs() {
			vip := toVIP(v, ic.Interface)
			keys[addrKey(vip.Prefix, vip.Dev)] = true
		}
	}
	return keys
}

// Ping returns once the engine's loop has taken an event from its queue,
// behind whatever was queued before: the loop runs and is not wedged. It
// fails when ctx ends first or the engine has stopped. A liveness check.
func (e *Engine) Ping(ctx context.Context) error {
	select {
	case <-e.done:
		return errors.New("engine is not running")
	default:
	}
	reply := make(chan struct{})
	select {
	case e.events <- event{ping: reply}:
	case <-e.done:
		return errors.New("engine is not running")
	case <-ctx.Done():
		return fmt.Errorf("engine loop did not take an event: %w", context.Cause(ctx))
	}
	select {
	case <-reply:
		return nil
	case <-e.done:
		return errors.New("engine stopped")
	case <-ctx.Done():
		return fmt.Errorf("engine loop did not answer: %w", context.Cause(ctx))
	}
}

// Status returns the current state of every instance.
//
// Each call has the loop make the status and waits for it up to
// statusWait; a stalled loop's caller gets the status the last call had
// (none before the first), with a warning in the log that says so, and a
// call after Run returned gets the loop's last, made as it stopped. The
// loop does not make the status unasked: made on each change of state,
// its texts and lists for 1,000 instances were kept among the start's
// garbage by an engine nobody asked, 1 MiB of its resident memory at
// bench/scale's rest (docs/design/memory.md).
func (e *Engine) Status() []InstanceStatus {
	answered := e.refreshStatus()
	e.statusMu.Lock()
	defer e.statusMu.Unlock()
	if !answered && e.isStarted() {
		if e.unansweredAt.IsZero() {
			e.unansweredAt = e.clk.Now() // see Stalled
		}
		// Whoever asked (a scrape, `vipstack status`) shows what it got
		// as current: the log says it is not.
		if e.statusAt.IsZero() {
			e.log.Warn("status: the engine's loop did not answer within " + statusWait.String() + " and no status was made before: none is returned; the loop is held up, and a log line names the slow step once it ends")
		} else {
			e.log.Warn("status: the engine's loop did not answer within "+statusWait.String()+": the status returned is the last one made; the loop is held up, and a log line names the slow step once it ends",
				"made", e.statusAt.Format(time.RFC3339Nano))
		}
	}
	return append([]InstanceStatus(nil), e.status...)
}

// isStarted reports whether Run has started every instance.
func (e *Engine) isStarted() bool {
	select {
	case <-e.started:
		return true
	default:
		return false
	}
}

func (e *Engine) publishStatus() {
	s := e.snapshot()
	at := e.clk.Now()
	e.statusMu.Lock()
	e.status, e.statusAt, e.unansweredAt = s, at, time.Time{}
	e.statusMu.Unlock()
}

// stallLimit is how long the running loop may leave the status requests
// unanswered before Stalled says so. The loop answers within
// milliseconds, even under a flood of packets; a kernel call or a reload
// may hold it for a second or two. A loop held for this long has missed
// its adverts, and its peers have taken its VIPs over.
const stallLimit = 10 * time.Second

// Stalled says why the engine counts as wedged: since a status request
// first found its running loop not answering (Status), stallLimit or
// more has passed and the loop has made no status. "" while it answers,
// before Run has started every instance, and after Run returned. The
// daemons' status endpoints serve 503 then, which fails their liveness
// probe: only a restart mends a loop that stays held.
func (e *Engine) Stalled() string {
	select {
	case <-e.done:
		// The requests of the stop's last moments are dropped unanswered
		// (stopTrackers); a stopped loop is not a held one.
		return ""
	default:
	}
	e.statusMu.Lock()
	since := e.unansweredAt
	e.statusMu.Unlock()
	if since.IsZero() {
		return ""
	}
	held := e.clk.Now().Sub(since)
	if held < stallLimit {
		return ""
	}
	return fmt.Sprintf("the VRRP engine's loop has answered no status request since %s (%v): it is held up (its log names the slow step if it ends)",
		since.UTC().Format(time.RFC3339), held.Round(time.Second))
}

// The engine's own timers, in the order tick runs them (see engineDeadline
// and fireEngine).
const (
	deadlineDAD = iota
	deadlineSources
	deadlineAbsent
	deadlineReleased
	engineTimers
)

// engineDeadline is when the engine's timer i is due (zero: not armed).
// An index and a switch, not a list of closures: the loop reads them on
// each of its wake-ups, and the list allocated each time (with 1,000
// masters, a wake-up about every millisecond).
func (e *Engine) engineDeadline(i int) time.Time {
	switch i {
	case deadlineDAD:
		return e.dadNext
	case deadlineSources:
		return e.srcNext
	case deadlineAbsent:
		return e.absentNext
	}
	return e.releasedNext
}

// fireEngine runs the engine's timer i.
func (e *Engine) fireEngine(i int, now time.Time) {
	switch i {
	case deadlineDAD:
		e.recheckDAD(now)
	case deadlineSources:
		if e.checkSources(now) {
			e.recomputeAll(now)
		}
	case deadlineAbsent:
		e.checkAbsent(now)
	case deadlineReleased:
		e.checkReleased(now)
	}
}

// instanceDeadlines are in's timers, in the order tick runs them: its
// state machine's, the GARP refresh, the follow-up announcement and, after
// every instance's others, the conflicts' expiry. A fixed array and
// methods, not closures: the loop reads them for every instance on each of
// its wake-ups, a thousand a second with 1,000 instances, and closures
// made that allocate 4,000 objects each time.
func instanceDeadlines(in *instance) [4]time.Time {
	return [4]time.Time{in.fsm.NextDeadline(), in.refreshAt, in.reannounce.deadline(), in.conflicts.next()}
}

// fireInstance runs in's timers that are due at now except the conflicts'
// expiry (see tick), reading each deadline after the one before ran.
func (e *Engine) fireInstance(in *instance, now time.Time) {
	due := func(at time.Time) bool { return !at.IsZero() && !now.Before(at) }
	if due(in.fsm.NextDeadline()) {
		// The actions go into the engine's reused slice: a master's
		// advertisement every interval allocated one each. The slice is
		// taken while they run, so that a tick nested in them (none
		// today) would get its own.
		master := in.fsm.State() == fsm.Master
		acts := in.fsm.AppendTick(e.acts[:0], now)
		e.acts = nil
		if master && !e.bs.claim(in.cfg.Name, now) {
			// A backstop thread sent it while the loop was late.
			acts = slices.DeleteFunc(acts, func(a fsm.Action) bool { return a.Kind == fsm.SendAdvert })
		}
		e.do(in, now, acts)
		clear(acts) // the reasons they hold
		e.acts = acts[:0]
	}
	if due(in.refreshAt) {
		e.refreshGARP(in, now)
	}
	if due(in.reannounce.deadline()) {
		e.reannounceFollowUp(in, now)
	}
}

// nextDeadline is when the first timer is due; zero when none is armed.
func (e *Engine) nextDeadline() time.Time {
	var next time.Time
	earlier := func(at time.Time) {
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	for i := range engineTimers {
		earlier(e.engineDeadline(i))
	}
	for _, name := range e.names() {
		for _, at := range instanceDeadlines(e.instances[name]) {
			earlier(at)
		}
	}
	return next
}

// tick runs every timer due at now: the engine's, then each instance's in
// name order, then the conflicts' expiry.
func (e *Engine) tick(now time.Time) {
	defer e.warnSlow(now, func() string { return "timers" })
	// Each deadline is read when its turn comes, after the ones before it
	// ran, as they may move it.
	for i := range engineTimers {
		if at := e.engineDeadline(i); !at.IsZero() && !now.Before(at) {
			e.fireEngine(i, now)
		}
	}
	names := e.names()
	for _, name := range names {
		if in := e.instances[name]; in != nil {
			e.fireInstance(in, now)
		}
	}
	for _, name := range names {
		if in := e.instances[name]; in != nil {
			if at := in.conflicts.next(); !at.IsZero() && !now.Before(at) {
				e.expireConflicts(in, now)
			}
		}
	}
}

func (e *Engine) closeConns() {
	for fam, c := range e.conns {
		c.Close()
		delete(e.conns, fam)
	}
}

// conn returns the socket for family, opening it (and its reader) on first use.
func (e *Engine) conn(family int) (transport.Conn, error) {
	if c, ok := e.conns[family]; ok {
		return c, nil
	}
	c, err := e.listen(family)
	if err != nil {
		return nil, err
	}
	e.conns[family] = c
	go e.read(family, c)
	return c, nil
}

// readerInto is a socket that reads into the caller's buffer (the real
// ones; see transport's ReadPacketInto).
type readerInto interface {
	ReadPacketInto(buf []byte) (transport.Packet, error)
}

// readBuf is the reader's buffer: any IP packet fits.
const readBuf = 1 << 16

// rxItem carries one screened advertisement from a socket's reader to the
// loop, which puts it back in e.rxItems once handled: a backup hearing
// 1,000 masters allocated a packet, an advertisement and its address
// list for each (docs/design/memory.md).
type rxItem struct {
	pkt transport.Packet // without Payload: the advertisement is decoded
	adv vrrp.Advertisement
}

// read passes what socket c receives to the loop until it is closed.
func (e *Engine) read(family int, c transport.Conn) {
	into, _ := c.(readerInto)
	var buf []byte
	if into != nil {
		buf = make([]byte, readBuf)
	}
	for {
		var p transport.Packet
		var err error
		if into != nil {
			p, err = into.ReadPacketInto(buf)
		} else {
			p, err = c.ReadPacket()
		}
		if err != nil {
			if e.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				e.send(event{family: family, readErr: err})
			}
			return
		}
		it, _ := e.rxItems.Get().(*rxItem)
		if it == nil {
			it = new(rxItem)
		}
		if !e.screen(&p, &it.adv) {
			e.rxItems.Put(it)
			continue
		}
		p.Payload = nil // buf is read into again
		it.pkt = p
		e.send(event{family: family, packet: &it.pkt, advert: &it.adv, rx: it})
	}
}

func addrKey(p netip.Prefix, dev string) string {
	return string(appendAddrKey(make([]byte, 0, 48), p, dev))
}

// appendAddrKey appends addrKey(p, dev) to b: a map lookup with
// string(appendAddrKey(buf[:0], ...)) allocates nothing.
func appendAddrKey(b []byte, p netip.Prefix, dev string) []byte {
	if p.IsValid() {
		b = p.AppendTo(b)
	} else {
		b = append(b, p.String()...) // as addrKey always was
	}
	b = append(b, '%')
	return append(b, dev...)
}

// applyTuning applies global_defs' vrrp_rt_priority, vrrp_priority,
// vrrp_no_swap and vrrp_rlimit_rttime to this process, as keepalived does
// to its VRRP process (sched.ForVRRP), at start and after a reload that
// changes them, logging what it did or why it could not.
func (e *Engine) applyTuning() {
	g := e.cfg.Global
	done, err := e.proc.Apply(sched.ForVRRP(g.RTPriority, g.Nice, g.NoSwap, g.RLimitRTTime))
	if g.RTPriority > 0 && e.stopXCPU == nil {
		// Only then: signal.Notify starts a goroutine of the runtime's,
		// which a test's synctest bubble must not own.
		e.stopXCPU = e.watchRTTime()
	}
	if len(done) > 0 {
		e.log.Info("VRRP process scheduling set from global_defs", "applied", strings.Join(done, "; "))
	}
	if err != nil {
		e.log.Warn("VRRP process scheduling from global_defs not fully applied; the engine runs without what failed", "err", err)
	}
}

// watchRTTime logs the kernel's SIGXCPU until stop is called: a thread of
// the engine ran at realtime priority for the soft RLIMIT_RTTIME (half of
// vrrp_rlimit_rttime) without blocking; at the hard limit the kernel kills
// the engine, and the supervisor starts it again. The kernel sends it once
// per process. The Go runtime drops SIGXCPU unless asked for it.
func (e *Engine) watchRTTime() (stop func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGXCPU)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-c:
				e.log.Warn("a thread of the VRRP engine ran at realtime priority for half of vrrp_rlimit_rttime without blocking " +
					"(SIGXCPU); at the whole of it the kernel kills the engine: raise vrrp_rlimit_rttime if this recurs")
			}
		}
	}()
	return func() {
		signal.Stop(c)
		close(done)
	}
}
