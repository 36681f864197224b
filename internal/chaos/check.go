package chaos

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/cluster"
)

// Config is what the checker knows of the cluster, and its bounds.
type Config struct {
	Nodes []string     // node names, by node index
	VIPs  []netip.Addr // the VIPs, by VIP index
	// Allowed[v] lists the nodes that run an instance for VIP v: the
	// nodes whose role lets them hold it (see ConfigFor).
	Allowed [][]int
	Advert  time.Duration // the VRRP advertisement interval
	// Skew is the largest Skew_Time of any instance: (256 - lowest
	// priority) / 256 x Advert (RFC 5798 section 6.1).
	Skew time.Duration
	// Margin is added to every protocol time below: it covers the 10 ms
	// sampling, netlink and process wake-up latency on a loaded machine.
	Margin time.Duration
	// Grace is how long two live, connected holders are tolerated: a
	// handover (preemption, or a woken master meeting a newer one) makes
	// the old master yield on the new master's first advertisement.
	Grace time.Duration
	// HandoverGap is how long a VIP may be on no node while it passes to a
	// node of AdvertFirst. RFC 5798 section 6.4.2 has a new master send its
	// first advertisement before it becomes Master, and the old master
	// yields on receiving it: an implementation that follows that order
	// (keepalived does) leaves the address unheld for the time the two
	// take to act. vipstack takes the VIPs first (holdFirst) and is given
	// no such gap. A no-eligible-holder episode that ends with a node of
	// AdvertFirst, other than the old holder, holding the VIP no later than
	// HandoverGap after the last sample that showed the old holder is
	// counted as a handover (Report.HandoverGaps), not a violation.
	HandoverGap time.Duration
	// AdvertFirst[n], when AdvertFirst is set, says node n sends its first
	// advertisement as master before it adds the VIPs (HandoverGap).
	AdvertFirst []bool
	// PartitionLoss is the loss (percent) from which a Loss fault counts as
	// a partition; below it the node stays connected and eligible.
	PartitionLoss int
	// Resolve is how long a healed link may take to carry unicast adverts
	// again: while a peer was unreachable the kernel's neighbour entry for
	// it went INCOMPLETE or FAILED, adverts wait in its queue, and the next
	// ARP request goes out only after retrans_time (1 s by default,
	// /proc/sys/net/ipv4/neigh/*/retrans_time_ms).
	Resolve time.Duration
	// SupervisorBound is how long a VIP or a table may stay on a node whose
	// engine died while its supervisor lives.
	SupervisorBound time.Duration
	// StartSweep is how long after the node agent starts again the VIPs
	// left by the killed agent may stay (the engine sweeps its ledger when
	// it starts).
	StartSweep time.Duration
	// ServiceBound is how long a deleted Service's address may stay held,
	// and how long a created one's may take to be held (Kubernetes mode:
	// the API's watch, the controller's allocation, the agents' reload).
	ServiceBound time.Duration
	// SpareOf[v], when SpareOf is set, is the index of the address the
	// Service of VIP v asks for during an EditIP fault (-1: none). A spare
	// belongs to no Service otherwise: it must be on no node then, and held
	// like any VIP while an EditIP brings it.
	SpareOf []int
	// AdvertOf[v], when AdvertOf is set and it is not zero, is VIP v's
	// instance's advertisement interval when it differs from Advert (a
	// VRRPv2 instance beside VRRPv3 ones: v2 counts whole seconds). Its
	// bound (BoundOf) and grace scale with it.
	AdvertOf []time.Duration
	// Anycast says the VIPs are announced by BGP (bench/chaos -bgp):
	// every eligible node announces at once and a router spreads the
	// flows (ECMP), so invariant (a) is not a split brain but a stale
	// route (StaleRoute), and (b) asks for a route to an eligible node
	// (NoRoute). NodeSample.Routed carries the router's forwarding table.
	// Advert and Skew play no part then; see checkAnycast.
	Anycast bool
	// Detect is the router's detection time of a dead path (BFD:
	// multiplier x interval); StaleBound adds Margin (Anycast).
	Detect time.Duration
	// Rejoin is how long a node may take to be routed again after a
	// fault that lets the router drop its route ends, or after its
	// agent or engine runs again: BFD up, the BGP session established,
	// the checks passed rise times. Until then (b) does not count it as
	// eligible (Anycast).
	Rejoin time.Duration
	// Warmup is how long after a node's route appears its BGP session
	// may still lack BFD (both ends start BFD once the session is up, at
	// the slow rate of one packet a second until Up), and Hold the
	// session's hold time: a node that stops answering within Warmup of
	// being routed again may keep its route until Hold + Margin
	// (Anycast).
	Warmup, Hold time.Duration
	// RouterBound is how long after a router fault (Kind.OfRouter) ends
	// the router may take to route every VIP to every eligible node
	// again: the daemon's start, the BGP sessions' connect retry (the
	// longer end's), BFD up (the nodes hold a session down until then)
	// and the announcements. While such a fault is under way and until
	// RouterBound after it, no route is expected and none is judged stale
	// (Anycast).
	RouterBound time.Duration
	// MachineStall, when not zero, is the longest time the sampler may
	// go without starting a sample after the last one ended (it asks
	// every 10 ms, from a thread at nice -10): a longer pause means the
	// machine stopped running its processes (a virtual CPU not scheduled,
	// the host's reclaim), unasked. A slow read is not one (Sample.Began). Every node is then taken
	// as stalled over the gap, as an injected Stall would have it, with
	// its tail: a master not run for longer than its peers' master-down
	// interval is deposed while it still holds the VIPs, which is VRRP's
	// answer to a stall and not a fault of the node. The gaps are
	// reported (Report.MachineStalls).
	MachineStall time.Duration
}

// StaleBound is how long a router may keep routing a VIP to a node that
// cannot answer, from when the fault surely took effect: Detect + Margin
// (Anycast).
func (c Config) StaleBound() time.Duration { return c.Detect + c.Margin }

// advertOf is VIP v's advertisement interval.
func (c Config) advertOf(v int) time.Duration {
	if v < len(c.AdvertOf) && c.AdvertOf[v] > 0 {
		return c.AdvertOf[v]
	}
	return c.Advert
}

// maxAdvert is the longest advertisement interval of any VIP.
func (c Config) maxAdvert() time.Duration {
	a := c.Advert
	for v := range c.VIPs {
		a = max(a, c.advertOf(v))
	}
	return a
}

// BoundOf is RecoveryBound for VIP v: 3 x its advert + its skew (Skew
// scaled to its advert) + Margin.
func (c Config) BoundOf(v int) time.Duration {
	a := c.advertOf(v)
	return 3*a + time.Duration(int64(c.Skew)*int64(a)/int64(c.Advert)) + c.Margin
}

// RecoveryBound is the time within which every VIP must have an eligible
// holder after a fault begins or ends: 3 x Advert + Skew (the
// Master_Down_Interval) + Margin; with AdvertOf, the longest BoundOf.
func (c Config) RecoveryBound() time.Duration {
	b := 3*c.Advert + c.Skew + c.Margin
	for v := range c.VIPs {
		b = max(b, c.BoundOf(v))
	}
	return b
}

// PartitionTail is how long a partition window lasts after its fault
// ends: neighbour re-resolution (Resolve), one advertisement (the two
// masters hear each other and the lower yields) and Margin.
func (c Config) PartitionTail() time.Duration { return c.Resolve + c.maxAdvert() + c.Margin }

// StallTail is how long a stalled holder may keep its VIPs after it
// wakes: one advertisement + Margin (its neighbour entries did not age).
func (c Config) StallTail() time.Duration { return c.maxAdvert() + c.Margin }

// ConfigFor derives the VIPs, who may hold them and the skew from a
// cluster file, with OpenShift's priorities (cluster.PlanFor). Margin,
// Grace, PartitionLoss, Resolve and the bounds get the defaults documented
// in docs/reliability.md: Margin = 2 x advert, Grace = advert + Margin,
// PartitionLoss = 20, Resolve = 1 s (retrans_time's default),
// SupervisorBound = 250 ms, StartSweep = 3 s; HandoverGap is left zero
// (every node runs vipstack).
func ConfigFor(c *cluster.Cluster) (Config, error) {
	vips := append(append(append([]netip.Addr(nil), c.APIVIPs...), c.DNSVIP), c.IngressVIPs...)
	var plans []NodePlan
	for _, n := range c.Nodes {
		p, err := c.PlanFor(n.Name)
		if err != nil {
			return Config{}, fmt.Errorf("chaos: %w", err)
		}
		np := NodePlan{Node: n.Name}
		for _, in := range p.Instances {
			np.Instances = append(np.Instances, PlanInstance{Priority: in.Priority, VIPs: in.VIPs})
		}
		plans = append(plans, np)
	}
	return ConfigForPlans(c.VRRP.AdvertInterval, vips, plans)
}

// NodePlan is what one node runs: its VRRP instances.
type NodePlan struct {
	Node      string
	Instances []PlanInstance
}

// PlanInstance is one VRRP instance of a node: its priority there and the
// addresses it holds as master.
type PlanInstance struct {
	Priority uint8
	VIPs     []netip.Addr
}

// ConfigForPlans derives the Config from what every node runs: the VIPs
// are vips (invalid and repeated ones dropped), a node may hold a VIP when
// one of its instances carries it, and the skew is that of the lowest
// priority of any instance. ConfigFor calls it with a cluster file's
// plans; bench/chaos's Kubernetes mode with the agents' plans (their
// status). The other fields get the defaults ConfigFor documents, and
// ServiceBound = 3 s.
func ConfigForPlans(advert time.Duration, vips []netip.Addr, plans []NodePlan) (Config, error) {
	cfg := Config{Advert: advert, PartitionLoss: 20, Resolve: time.Second,
		SupervisorBound: 250 * time.Millisecond, StartSweep: 3 * time.Second, ServiceBound: 3 * time.Second}
	cfg.Margin = 2 * cfg.Advert
	cfg.Grace = cfg.Advert + cfg.Margin
	index := map[netip.Addr]int{}
	for _, v := range vips {
		if v.IsValid() {
			if _, dup := index[v]; !dup {
				index[v] = len(cfg.VIPs)
				cfg.VIPs = append(cfg.VIPs, v)
			}
		}
	}
	cfg.Allowed = make([][]int, len(cfg.VIPs))
	lowest := 255
	for i, p := range plans {
		cfg.Nodes = append(cfg.Nodes, p.Node)
		for _, in := range p.Instances {
			lowest = min(lowest, int(in.Priority))
			for _, v := range in.VIPs {
				if vi, ok := index[v]; ok && !slices.Contains(cfg.Allowed[vi], i) {
					cfg.Allowed[vi] = append(cfg.Allowed[vi], i)
				}
			}
		}
	}
	cfg.Skew = time.Duration(256-lowest) * cfg.Advert / 256
	return cfg, nil
}

// NodeSample is one node as seen from outside at one moment.
type NodeSample struct {
	Agent  bool         // the node agent (its supervisor) runs
	Engine bool         // the supervised engine runs
	Holds  []netip.Addr // the VIPs configured on its interface
	Rules  []string     // vipstack's nftables tables in its namespace
	// Routed are the VIPs the router's forwarding table sends to this
	// node now (a nexthop via its address, not dead): Config.Anycast.
	Routed []netip.Addr
	// Dropped are the VIPs removed from its interface since the previous
	// sample (netlink events), also those added again meanwhile: a
	// restarted agent sweeps what its killed predecessor left and may take
	// the same address back as master within one sampling interval.
	Dropped []netip.Addr
}

// Sample is the whole cluster at one moment.
type Sample struct {
	At    time.Time
	Nodes []NodeSample // by node index
	// Began, when set, is when the sampler started reading (At is when
	// it finished): a read can wait hundreds of milliseconds on the
	// kernel's lock while the daemons run, which is not a stall of the
	// machine (Config.MachineStall).
	Began time.Time
}

// began is when the sample's reading started.
func (s Sample) began() time.Time {
	if s.Began.IsZero() {
		return s.At
	}
	return s.Began
}

// Window is one fault as injected: Start when it began, End when it was
// undone (for KillEngine: when a new engine ran; for KillAgent: when the
// agent was started again). A zero End means it never ended.
type Window struct {
	Fault Fault
	Node  int // the node it hit (-1: the whole cluster)
	Start time.Time
	End   time.Time
	// Began and Ended, when set, are when the commands that make and undo
	// a network fault returned. The fault took effect somewhere between
	// Start and Began (a link change can hold the kernel's lock for
	// hundreds of milliseconds), so its node is out from Start on, while
	// the others' bounds count from Began; likewise the node is back
	// from End on, and the partition lasts until Ended.
	Began, Ended time.Time
}

// began is when the fault surely took effect.
func (w Window) began() time.Time {
	if w.Began.IsZero() {
		return w.Start
	}
	return w.Began
}

// ended is when the fault was surely undone (zero: still under way).
func (w Window) ended() time.Time {
	if w.Ended.IsZero() {
		return w.End
	}
	return w.Ended
}

// ViolationKind names an invariant.
type ViolationKind string

// The invariants.
const (
	SplitBrain ViolationKind = "split-brain"
	NoHolder   ViolationKind = "no-eligible-holder"
	Leftover   ViolationKind = "leftover"
	// Exit is an engine or agent that died with no kill to explain it (a
	// crash): not one of the three invariants, but never acceptable.
	Exit ViolationKind = "unexpected-exit"
	// Stale is an address no Service has (deleted, edited away, a spare
	// no Service asks for) still held, past ServiceBound, by a node whose
	// agent runs (Kubernetes mode).
	Stale ViolationKind = "stale-address"
	// Shared is one address in the status of two Services at once, as the
	// API server has them (Kubernetes mode, CheckServices).
	Shared ViolationKind = "address-shared"
	// Changed is a Service whose status shows an address it did not ask
	// for (a restart gave it another), or the old one past ServiceBound
	// after it asked for another (Kubernetes mode, CheckServices).
	Changed ViolationKind = "address-changed"
	// StaleRoute is a VIP the router still sends to a node that cannot
	// answer it (its agent or engine dead, stalled, cut, its interface
	// down, the VIP off its loopback) more than StaleBound after that
	// began (Config.Anycast: invariant a).
	StaleRoute ViolationKind = "stale-route"
	// NoRoute is a VIP that has an eligible node but is routed to none,
	// more than StaleBound after a fault began (Config.Anycast:
	// invariant b).
	NoRoute ViolationKind = "no-eligible-route"
)

// ViolationKinds lists every kind in the order reports print them.
var ViolationKinds = []ViolationKind{SplitBrain, NoHolder, Leftover, Exit, Stale, Shared, Changed, StaleRoute, NoRoute}

// Violation is one breach, reported once per episode.
type Violation struct {
	Kind   ViolationKind
	At     time.Time     // when the episode began
	For    time.Duration // how long it lasted (until the last sample if it never ended)
	VIP    netip.Addr    // zero for an nftables leftover
	Nodes  []string
	Detail string
}

// Report is the checker's verdict.
type Report struct {
	Samples  int
	Span     time.Duration // first to last sample
	MaxGap   time.Duration // longest time between two samples
	LateGaps int           // gaps between two samples longer than 50 ms
	// MachineStalls are the sampler's pauses longer than
	// Config.MachineStall, each taken as a stall of every node.
	MachineStalls []time.Duration
	Violations    []Violation
	// Recoveries are, for each disruptive fault start or end, the time
	// until the cluster was settled (every VIP that has an eligible node is
	// held by one, and by at most one counted holder), measured only when
	// that happened before the next such event; zero when it already was.
	Recoveries []Recovery
	// Reactions are, for each KillEngine of a node that held VIPs, the time
	// from the kill to the first sample without them (the supervisor's
	// reaction).
	Reactions []time.Duration
	// RuleReactions are the same for vipstack's nftables tables: from the
	// kill to the first sample without them, while the engine was still
	// down (a new engine may install them again).
	RuleReactions []time.Duration
	// HandoverGaps are the no-eligible-holder episodes Config.HandoverGap
	// forgave: for each, the time from the last sample that showed the old
	// holder to the first that showed the new one.
	HandoverGaps []time.Duration
	// Sweeps are, for each KillAgent of a node that held VIPs, the time
	// from the agent's restart to the first sample without them.
	Sweeps []time.Duration
	// ServiceGone are, for each Churn (or edit that takes the address
	// away), the time from the Service's delete to the first sample where
	// no node holds its address; ServiceBack from its create again (or the
	// edit's undoing) to the first sample where one does. Changes that an
	// API server, etcd or controller fault held up (ControlFault) are
	// judged but not measured.
	ServiceGone, ServiceBack []time.Duration
	// Rejoins are, for each fault that let the router drop a node's route
	// (Config.Anycast), the time from its end to the first sample routing
	// every VIP the node may announce to it, measured when that happened
	// before the node's next fault. Recoveries are then, for each fault
	// that left a routed node unable to answer, the time from when it
	// surely took effect to the first sample routing nothing to it.
	Rejoins []Recovery
	// RouterReturns are, for each router fault (Kind.OfRouter), the time
	// from its end to the first sample routing every VIP to every
	// eligible node (Config.Anycast).
	RouterReturns []Recovery
	// Judged counts the samples in which some VIP had an eligible node,
	// so that (b) applied (Config.Anycast).
	Judged int
	// Unprotected counts the faults that left a node unable to answer
	// within Config.Warmup of its route's return: judged against the hold
	// time, not timed in Recoveries (Config.Anycast).
	Unprotected int
}

// Recovery is the time from one event to a settled cluster.
type Recovery struct {
	Event string
	At    time.Time
	Took  time.Duration
}

// Worst returns the longest recovery (zero value if none).
func (r Report) Worst() Recovery {
	var w Recovery
	for _, x := range r.Recoveries {
		if x.Took > w.Took {
			w = x
		}
	}
	return w
}

// Count returns the violations of kind k.
func (r Report) Count(k ViolationKind) int {
	n := 0
	for _, v := range r.Violations {
		if v.Kind == k {
			n++
		}
	}
	return n
}

// Validate rejects a Config the checker cannot use.
func (c Config) Validate() error {
	switch {
	case len(c.Nodes) == 0:
		return fmt.Errorf("chaos: Config.Nodes is empty")
	case len(c.Allowed) != len(c.VIPs):
		return fmt.Errorf("chaos: Config.Allowed has %d entries for %d VIPs: want one per VIP", len(c.Allowed), len(c.VIPs))
	case c.Advert <= 0:
		return fmt.Errorf("chaos: Config.Advert = %v: want > 0", c.Advert)
	case c.Margin < 0 || c.Grace < 0 || c.Skew < 0 || c.Resolve < 0 || c.SupervisorBound < 0 || c.StartSweep < 0 || c.ServiceBound < 0 || c.HandoverGap < 0:
		return fmt.Errorf("chaos: Config has a negative time (Margin %v, Grace %v, Skew %v, Resolve %v, SupervisorBound %v, StartSweep %v, ServiceBound %v, HandoverGap %v)", c.Margin, c.Grace, c.Skew, c.Resolve, c.SupervisorBound, c.StartSweep, c.ServiceBound, c.HandoverGap)
	}
	if c.Anycast && (c.Detect <= 0 || c.Rejoin < 0 || c.Warmup < 0 || c.Hold < c.Detect || c.RouterBound < 0) {
		return fmt.Errorf("chaos: Config.Anycast with Detect %v, Rejoin %v, Warmup %v, Hold %v, RouterBound %v: want Detect > 0, Rejoin, Warmup and RouterBound >= 0, Hold >= Detect",
			c.Detect, c.Rejoin, c.Warmup, c.Hold, c.RouterBound)
	}
	if c.AdvertOf != nil && len(c.AdvertOf) != len(c.VIPs) {
		return fmt.Errorf("chaos: Config.AdvertOf has %d entries for %d VIPs: want one per VIP, or none", len(c.AdvertOf), len(c.VIPs))
	}
	for v, a := range c.AdvertOf {
		if a < 0 {
			return fmt.Errorf("chaos: Config.AdvertOf[%d] = %v: want >= 0 (0: Advert)", v, a)
		}
	}
	if c.AdvertFirst != nil && len(c.AdvertFirst) != len(c.Nodes) {
		return fmt.Errorf("chaos: Config.AdvertFirst has %d entries for %d nodes: want one per node, or none", len(c.AdvertFirst), len(c.Nodes))
	}
	if c.SpareOf != nil && len(c.SpareOf) != len(c.VIPs) {
		return fmt.Errorf("chaos: Config.SpareOf has %d entries for %d VIPs: want one per VIP, or none", len(c.SpareOf), len(c.VIPs))
	}
	for v, sp := range c.SpareOf {
		if sp == v || sp < -1 || sp >= len(c.VIPs) {
			return fmt.Errorf("chaos: Config.SpareOf[%d] = %d: want -1 or another VIP's index (0..%d)", v, sp, len(c.VIPs)-1)
		}
	}
	for v, ns := range c.Allowed {
		for _, n := range ns {
			if n < 0 || n >= len(c.Nodes) {
				return fmt.Errorf("chaos: Config.Allowed[%d] names node %d: want 0..%d", v, n, len(c.Nodes)-1)
			}
		}
	}
	return nil
}

// episode tracks one ongoing breach.
type episode struct {
	start, last time.Time
	nodes       map[string]bool
	detail      string
	// For a no-eligible-holder episode: the last sample before it that
	// showed an eligible holder, and who.
	heldAt time.Time
	heldBy []string
}

// nodeState is the checker's memory of one node between samples.
type nodeState struct {
	prev NodeSample
	seen bool
	engineDeath
	agentDead  bool
	leftVIPs   []netip.Addr // VIPs held when the whole agent died, not yet swept
	restarted  time.Time    // when the agent was seen running again (zero: not yet)
	sweepCount bool         // leftVIPs held at death: count the sweep time
}

// engineDeath follows a node's engine dying under a live supervisor.
type engineDeath struct {
	engineDead time.Time // when a live supervisor's engine was last seen dying (zero: not dead)
	killedAt   time.Time // the KillEngine that caused it, if any
	// byAgentKill: a KillAgent explains the engine's death. The
	// supervisor was killed with it and may still show as running for a
	// while (its exit is seen when its Wait returns, late on a loaded
	// machine): no supervisor bound applies, the restart's sweep does.
	byAgentKill bool
	reactHeld   []netip.Addr // what it held when its engine died
	reactRules  bool         // had vipstack tables when its engine died
}

// observe notes node n's engine dying between samples prev and ns (at
// prevAt and t) while its supervisor lives, and reports an exit no kill
// explains.
func (e *engineDeath) observe(rep *Report, windows []Window, n int, name string, prev, ns NodeSample, prevAt, t time.Time) {
	if !ns.Agent || ns.Engine || !prev.Agent || !prev.Engine || !e.engineDead.IsZero() {
		return
	}
	e.engineDead = t
	e.killedAt = killTime(windows, n, KillEngine, prevAt, t)
	// A kill of the whole agent may show the engine gone one sample
	// before its supervisor.
	e.byAgentKill = e.killedAt.IsZero() && !agentStopTime(windows, n, prevAt, t).IsZero()
	if e.killedAt.IsZero() && !e.byAgentKill {
		rep.Violations = append(rep.Violations, Violation{Kind: Exit, At: t, Nodes: []string{name}, Detail: "the engine exited with no kill to explain it (its supervisor lives)"})
	}
	e.reactHeld, e.reactRules = nil, false
	if !e.byAgentKill {
		e.reactHeld = slices.Clone(prev.Holds)
		e.reactRules = len(prev.Rules) > 0
	}
}

// withMachineStalls adds, for each pause of the sampler (from a sample's
// end to the next one's start) longer than cfg.MachineStall, a Stall
// window of every node over the pause, and returns the pauses so taken.
func withMachineStalls(cfg Config, windows []Window, samples []Sample) ([]Window, []time.Duration) {
	if cfg.MachineStall <= 0 {
		return windows, nil
	}
	var gaps []time.Duration
	for i := 1; i < len(samples); i++ {
		from, to := samples[i-1].At, samples[i].began()
		if to.Sub(from) <= cfg.MachineStall {
			continue
		}
		gaps = append(gaps, to.Sub(from))
		if len(gaps) == 1 {
			windows = slices.Clone(windows) // the caller's stay as given
		}
		for n := range cfg.Nodes {
			windows = append(windows, Window{Fault: Fault{Seq: machineStallSeq, Kind: Stall, Node: n, HolderOf: -1}, Node: n, Start: from, End: to})
		}
	}
	return windows, gaps
}

// machineStallSeq marks the Stall windows withMachineStalls adds.
const machineStallSeq = -1

// windowName names a window's fault and node for the report.
func windowName(cfg Config, w Window) string {
	if w.Fault.Seq == machineStallSeq {
		return "machine stall (no sample) on " + nodeName(cfg, w.Node)
	}
	return fmt.Sprintf("%s on %s", w.Fault.Kind, nodeName(cfg, w.Node))
}

// Check judges a run: samples sorted by time, windows in any order.
func Check(cfg Config, windows []Window, samples []Sample) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	for i, s := range samples {
		if len(s.Nodes) != len(cfg.Nodes) {
			return Report{}, fmt.Errorf("chaos: sample %d has %d nodes: want %d", i, len(s.Nodes), len(cfg.Nodes))
		}
		if i > 0 && s.At.Before(samples[i-1].At) {
			return Report{}, fmt.Errorf("chaos: sample %d (%v) is older than sample %d: want samples sorted by time", i, s.At, i-1)
		}
	}
	rep := Report{Samples: len(samples)}
	if len(samples) == 0 {
		return rep, nil
	}
	rep.Span = samples[len(samples)-1].At.Sub(samples[0].At)
	for i := 1; i < len(samples); i++ {
		gap := samples[i].At.Sub(samples[i-1].At)
		rep.MaxGap = max(rep.MaxGap, gap)
		if gap > 50*time.Millisecond {
			rep.LateGaps++
		}
	}
	windows, rep.MachineStalls = withMachineStalls(cfg, windows, samples)
	if cfg.Anycast {
		return checkAnycast(cfg, windows, samples, rep), nil
	}

	// The VIPs each stalled node held when it stopped (the last sample
	// before the stall, and those it shows within Margin after: an address
	// its daemon was adding as SIGSTOP came, which a stopped process cannot
	// have added later); its partition window excuses only those.
	stallHeld := make([][]netip.Addr, len(windows))
	for wi, w := range windows {
		if w.Fault.Kind != Stall || w.Node < 0 {
			continue
		}
		i := sort.Search(len(samples), func(i int) bool { return !samples[i].At.Before(w.Start) })
		if i > 0 {
			stallHeld[wi] = slices.Clone(samples[i-1].Nodes[w.Node].Holds)
		}
		for ; i < len(samples) && !samples[i].At.After(w.Start.Add(cfg.Margin)) && (w.End.IsZero() || samples[i].At.Before(w.End)); i++ {
			for _, v := range samples[i].Nodes[w.Node].Holds {
				if !slices.Contains(stallHeld[wi], v) {
					stallHeld[wi] = append(stallHeld[wi], v)
				}
			}
		}
	}
	// Service windows: the address a fault takes from its Service (Churn,
	// the edits but EditPolicy) and the spare an EditIP gives it.
	type svcWin struct {
		wi    int
		vi    int
		bring bool // the window brings vi (a spare); else it takes vi away
	}
	var svcWins []svcWin
	spare := make([]bool, len(cfg.VIPs)) // a spare: on no node outside its windows
	for _, sp := range cfg.SpareOf {
		if sp >= 0 {
			spare[sp] = true
		}
	}
	for wi, w := range windows {
		if !w.Fault.Kind.OfService() {
			continue
		}
		if w.Fault.VIP < 0 || w.Fault.VIP >= len(cfg.VIPs) || spare[w.Fault.VIP] {
			return Report{}, fmt.Errorf("chaos: window %d (%s) names VIP %d: want a Service's VIP (0..%d, not a spare)", wi, w.Fault, w.Fault.VIP, len(cfg.VIPs)-1)
		}
		if w.Fault.Kind.Removes() {
			svcWins = append(svcWins, svcWin{wi: wi, vi: w.Fault.VIP})
		}
		if w.Fault.Kind == EditIP {
			if cfg.SpareOf == nil || cfg.SpareOf[w.Fault.VIP] < 0 {
				return Report{}, fmt.Errorf("chaos: window %d (%s): VIP %d has no spare (Config.SpareOf)", wi, w.Fault, w.Fault.VIP)
			}
			svcWins = append(svcWins, svcWin{wi: wi, vi: cfg.SpareOf[w.Fault.VIP], bring: true})
		}
	}
	churnGone := make([]bool, len(windows)) // the address was seen gone
	churnBack := make([]bool, len(windows)) // the address was seen back
	// due is when a Service change made at c must show on the nodes:
	// ServiceBound later, or ServiceBound after the end of a fault that
	// kept the controllers from acting (the API server or etcd down, no
	// leader) and overlapped that time.
	due := func(c time.Time) time.Time { return serviceDue(cfg, windows, c) }
	stale := make([]*episode, len(cfg.VIPs))
	// busyNode reports whether node n's agent could not act at t: it was
	// stalled or killed within the last ServiceBound.
	busyNode := func(n int, t time.Time) bool {
		for _, w := range windows {
			switch w.Fault.Kind {
			case Stall, KillAgent, KillEngine:
				if w.Node == n && !t.Before(w.Start) && (w.End.IsZero() || t.Before(w.End.Add(cfg.ServiceBound))) {
					return true
				}
			}
		}
		return false
	}

	// Disruptive events (starts and ends), sorted, for the recovery bound.
	type event struct {
		at   time.Time // when it may have taken effect
		from time.Time // when it surely had: the bounds count from here
		what string
	}
	var events []event
	for _, w := range windows {
		// An edit of externalTrafficPolicy moves the address to another
		// VRRP instance (Local Services get their own): it may change
		// hands once, within the bound.
		policy := w.Fault.Kind == EditPolicy
		if !policy && (!w.Fault.Kind.Disruptive() || (w.Fault.Kind == HeavyLoss && w.Fault.Percent < cfg.PartitionLoss)) {
			continue
		}
		name := windowName(cfg, w)
		events = append(events, event{w.Start, w.began(), name + " began"})
		if !w.End.IsZero() {
			events = append(events, event{w.End, w.ended(), name + " ended"})
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].at.Before(events[j].at) })

	active := func(w Window, t time.Time, tail time.Duration) bool {
		if t.Before(w.Start) {
			return false
		}
		return w.End.IsZero() || t.Before(w.End.Add(tail))
	}
	// partitionOf: a network fault partitions until its undoing returned.
	partitionOf := func(w Window, t time.Time, tail time.Duration) bool {
		return !t.Before(w.Start) && (w.End.IsZero() || t.Before(w.ended().Add(tail)))
	}
	states := make([]nodeState, len(cfg.Nodes))
	split := make([]*episode, len(cfg.VIPs))
	gone := make([]*episode, len(cfg.VIPs))
	// The last sample that showed each VIP on an eligible node, and who.
	lastHeldAt := make([]time.Time, len(cfg.VIPs))
	lastHeldBy := make([][]string, len(cfg.VIPs))
	rules := make([]*episode, len(cfg.Nodes))
	engVIP := make([]*episode, len(cfg.Nodes))
	closeEp := func(kind ViolationKind, vip netip.Addr, ep *episode, min time.Duration) {
		if ep == nil || ep.last.Sub(ep.start) <= min {
			return
		}
		var names []string
		for n := range ep.nodes {
			names = append(names, n)
		}
		sort.Strings(names)
		rep.Violations = append(rep.Violations, Violation{Kind: kind, At: ep.start, For: ep.last.Sub(ep.start), VIP: vip, Nodes: names, Detail: ep.detail})
	}
	extend := func(ep **episode, t time.Time, nodes []string, detail string) {
		if *ep == nil {
			*ep = &episode{start: t, nodes: map[string]bool{}, detail: detail}
		}
		(*ep).last = t
		for _, n := range nodes {
			(*ep).nodes[n] = true
		}
	}

	var prevAt time.Time // the previous sample's time
	ev := 0              // events[:ev] are at or before the current sample
	var lastEvent time.Time
	pending := -1 // index of the event whose recovery is being timed
	for _, s := range samples {
		t := s.At
		for ev < len(events) && !events[ev].at.After(t) {
			if lastEvent.Before(events[ev].from) {
				lastEvent = events[ev].from
			}
			ev++
			pending = ev - 1
		}
		// Per-node flags from the fault windows.
		ineligible := make([]bool, len(cfg.Nodes))
		partitioned := make([]bool, len(cfg.Nodes))
		excusedVIP := make([][]netip.Addr, len(cfg.Nodes))
		for wi, w := range windows {
			if w.Node < 0 {
				continue
			}
			k := w.Fault.Kind
			switch {
			case k == Stall:
				if active(w, t, 0) {
					ineligible[w.Node] = true
				}
				if active(w, t, cfg.StallTail()) {
					excusedVIP[w.Node] = append(excusedVIP[w.Node], stallHeld[wi]...)
				}
			case k == Cut || k == IfDown:
				if active(w, t, 0) {
					ineligible[w.Node] = true
				}
				if partitionOf(w, t, cfg.PartitionTail()) {
					partitioned[w.Node] = true
				}
			case k == HeavyLoss && w.Fault.Percent >= cfg.PartitionLoss:
				// Still eligible: the others hear some of its adverts, so
				// it may keep its VIPs as well as lose them.
				if partitionOf(w, t, cfg.PartitionTail()) {
					partitioned[w.Node] = true
				}
			}
		}
		// Process state and leftovers (invariant c).
		leftover := make([]bool, len(cfg.Nodes)) // holdings (a) leaves to (c)
		for n, ns := range s.Nodes {
			st := &states[n]
			name := cfg.Nodes[n]
			if !ns.Engine || !ns.Agent {
				ineligible[n] = true
			}
			switch {
			case !ns.Agent:
				if !st.agentDead {
					if st.seen && st.prev.Agent && agentStopTime(windows, n, prevAt, t).IsZero() {
						rep.Violations = append(rep.Violations, Violation{Kind: Exit, At: t, VIP: netip.Addr{}, Nodes: []string{name}, Detail: "the node agent exited with no kill to explain it"})
					}
					st.agentDead = true
					st.restarted = time.Time{}
					st.leftVIPs = nil
					if st.seen {
						st.leftVIPs = append([]netip.Addr(nil), st.prev.Holds...)
					}
					st.sweepCount = len(st.leftVIPs) > 0
				}
				st.engineDead = time.Time{}
				leftover[n] = true
			case st.agentDead:
				// Running again: the leftovers must go within StartSweep.
				st.agentDead = false
				st.restarted = t
			}
			if ns.Agent && !st.agentDead && len(st.leftVIPs) > 0 {
				var still []netip.Addr
				for _, v := range st.leftVIPs {
					if slices.Contains(ns.Holds, v) && !slices.Contains(ns.Dropped, v) {
						still = append(still, v)
					}
				}
				st.leftVIPs = still
				if len(still) == 0 {
					if st.sweepCount && !st.restarted.IsZero() {
						rep.Sweeps = append(rep.Sweeps, t.Sub(st.restarted))
					}
				} else {
					leftover[n] = true
					if t.Sub(st.restarted) > cfg.StartSweep {
						for _, v := range still {
							rep.Violations = append(rep.Violations, Violation{Kind: Leftover, At: st.restarted, For: t.Sub(st.restarted), VIP: v, Nodes: []string{name},
								Detail: fmt.Sprintf("left by the killed agent and still there %v after its restart (bound %v)", t.Sub(st.restarted).Round(time.Millisecond), cfg.StartSweep)})
						}
						st.leftVIPs = nil // reported once
					}
				}
			}
			if st.seen {
				st.observe(&rep, windows, n, name, st.prev, ns, prevAt, t)
			}
			if ns.Agent && ns.Engine {
				st.engineDead = time.Time{}
			}
			if !st.engineDead.IsZero() {
				leftover[n] = true
				from := st.engineDead
				if !st.killedAt.IsZero() {
					from = st.killedAt
				}
				late := !st.byAgentKill && t.Sub(from) > cfg.SupervisorBound
				if len(ns.Holds) > 0 && late {
					extend(&engVIP[n], t, []string{name}, fmt.Sprintf("VIPs %v stay after the engine died (supervisor bound %v)", ns.Holds, cfg.SupervisorBound))
				} else if engVIP[n] != nil {
					closeEp(Leftover, netip.Addr{}, engVIP[n], -1)
					engVIP[n] = nil
				}
				if len(ns.Rules) > 0 && late {
					extend(&rules[n], t, []string{name}, fmt.Sprintf("nftables %v stay after the engine died (supervisor bound %v)", ns.Rules, cfg.SupervisorBound))
				} else if rules[n] != nil {
					closeEp(Leftover, netip.Addr{}, rules[n], -1)
					rules[n] = nil
				}
				if len(st.reactHeld) > 0 && !anyOf(ns.Holds, st.reactHeld) {
					rep.Reactions = append(rep.Reactions, t.Sub(from))
					st.reactHeld = nil
				}
				if st.reactRules && len(ns.Rules) == 0 {
					rep.RuleReactions = append(rep.RuleReactions, t.Sub(from))
					st.reactRules = false
				}
			} else {
				for _, ep := range []**episode{&engVIP[n], &rules[n]} {
					if *ep != nil {
						closeEp(Leftover, netip.Addr{}, *ep, -1)
						*ep = nil
					}
				}
			}
			st.prev, st.seen = ns, true
		}

		// Services deleted, edited and restored: an address taken from its
		// Service (or a spare no Service asks for) must leave every node
		// whose agent can act, and one given back (or a spare asked for)
		// come, within ServiceBound; (b) does not judge it meanwhile.
		churning := make([]bool, len(cfg.VIPs))
		staleNow := make([][]string, len(cfg.VIPs))
		holdersOf := func(v netip.Addr) (held bool, acting []string) {
			for n, ns := range s.Nodes {
				if !slices.Contains(ns.Holds, v) {
					continue
				}
				held = true
				if !leftover[n] && !busyNode(n, t) {
					acting = append(acting, cfg.Nodes[n])
				}
			}
			return held, acting
		}
		brought := make([]bool, len(cfg.VIPs)) // a spare asked for now, past ServiceBound
		for _, sw := range svcWins {
			w := windows[sw.wi]
			vi := sw.vi
			if t.Before(w.Start) || (!w.End.IsZero() && !t.Before(due(w.End))) {
				continue
			}
			in := w.End.IsZero() || t.Before(w.End)
			if sw.bring {
				if in && t.After(due(w.Start)) {
					brought[vi] = true
				} else {
					churning[vi] = true
				}
				continue
			}
			churning[vi] = true
			held, acting := holdersOf(cfg.VIPs[vi])
			if in {
				if !held && !churnGone[sw.wi] {
					churnGone[sw.wi] = true
					if due(w.Start).Equal(w.Start.Add(cfg.ServiceBound)) { // no API, etcd or controller fault in the way
						rep.ServiceGone = append(rep.ServiceGone, t.Sub(w.Start))
					}
				}
				if t.After(due(w.Start)) && len(acting) > 0 {
					staleNow[vi] = acting
				}
			} else if held && !churnBack[sw.wi] {
				churnBack[sw.wi] = true
				if due(w.End).Equal(w.End.Add(cfg.ServiceBound)) {
					rep.ServiceBack = append(rep.ServiceBack, t.Sub(w.End))
				}
			}
		}
		for vi, v := range cfg.VIPs {
			if !spare[vi] || brought[vi] {
				continue
			}
			if !churning[vi] {
				// A spare no Service asks for: on no node whose agent acts.
				if _, acting := holdersOf(v); len(acting) > 0 {
					staleNow[vi] = acting
				}
			}
			churning[vi] = true
		}
		for vi, v := range cfg.VIPs {
			if len(staleNow[vi]) > 0 {
				extend(&stale[vi], t, staleNow[vi], fmt.Sprintf("no Service has it; still held by %s (bound %v)", strings.Join(staleNow[vi], " and "), cfg.ServiceBound))
			} else if stale[vi] != nil {
				closeEp(Stale, v, stale[vi], -1)
				stale[vi] = nil
			}
		}

		// Invariants (a) and (b), per VIP.
		settled := true
		for vi, v := range cfg.VIPs {
			var counted, eligible []string
			anyEligible := false
			for _, n := range cfg.Allowed[vi] {
				if !ineligible[n] {
					anyEligible = true
				}
			}
			for n, ns := range s.Nodes {
				if !slices.Contains(ns.Holds, v) {
					continue
				}
				name := cfg.Nodes[n]
				if leftover[n] {
					continue // invariant (c)'s business
				}
				if !ineligible[n] && slices.Contains(cfg.Allowed[vi], n) {
					eligible = append(eligible, name)
				}
				if partitioned[n] || slices.Contains(excusedVIP[n], v) {
					continue
				}
				counted = append(counted, name)
			}
			if len(counted) >= 2 {
				extend(&split[vi], t, counted, "held by "+strings.Join(counted, " and "))
			} else if split[vi] != nil {
				closeEp(SplitBrain, v, split[vi], cfg.Grace+cfg.advertOf(vi)-cfg.Advert)
				split[vi] = nil
			}
			if churning[vi] {
				// Not (b)'s business while its Service is away.
				lastHeldAt[vi], lastHeldBy[vi] = time.Time{}, nil
				if gone[vi] != nil {
					closeEp(NoHolder, v, gone[vi], -1)
					gone[vi] = nil
				}
				continue
			}
			if len(eligible) == 0 && anyEligible && (lastEvent.IsZero() || t.Sub(lastEvent) > cfg.BoundOf(vi)) {
				if gone[vi] == nil {
					gone[vi] = &episode{start: t, nodes: map[string]bool{}, heldAt: lastHeldAt[vi], heldBy: lastHeldBy[vi]}
				}
				extend(&gone[vi], t, nil, fmt.Sprintf("no eligible node holds it (counted holders: %v)", counted))
			} else if gone[vi] != nil {
				if g := gone[vi]; isHandover(cfg, g, eligible, t) {
					rep.HandoverGaps = append(rep.HandoverGaps, t.Sub(g.heldAt))
				} else {
					closeEp(NoHolder, v, g, -1)
				}
				gone[vi] = nil
			}
			if len(eligible) > 0 {
				lastHeldAt[vi], lastHeldBy[vi] = t, eligible
			}
			// Settled: an eligible node holds it and no two counted nodes
			// do (a partitioned holder may keep it meanwhile).
			if (anyEligible && len(eligible) == 0) || len(counted) > 1 {
				settled = false
			}
		}
		// A newer event replaces the one being timed (superseded).
		if pending >= 0 && settled {
			e := events[pending]
			rep.Recoveries = append(rep.Recoveries, Recovery{Event: e.what, At: e.from, Took: max(t.Sub(e.from), 0)})
			pending = -1
		}
		prevAt = t
	}
	for vi, v := range cfg.VIPs {
		closeEp(SplitBrain, v, split[vi], cfg.Grace+cfg.advertOf(vi)-cfg.Advert)
		closeEp(NoHolder, v, gone[vi], -1)
		closeEp(Stale, v, stale[vi], -1)
	}
	for n := range cfg.Nodes {
		closeEp(Leftover, netip.Addr{}, engVIP[n], -1)
		closeEp(Leftover, netip.Addr{}, rules[n], -1)
	}
	sort.SliceStable(rep.Violations, func(i, j int) bool { return rep.Violations[i].At.Before(rep.Violations[j].At) })
	return rep, nil
}

// isHandover reports whether the no-eligible-holder episode ep, closing
// at t with eligible holding the VIP, was a handover Config.HandoverGap
// forgives: a node of AdvertFirst other than the old holder took the VIP,
// no later than HandoverGap after the last sample that showed the old one.
func isHandover(cfg Config, ep *episode, eligible []string, t time.Time) bool {
	if cfg.HandoverGap <= 0 || ep.heldAt.IsZero() || t.Sub(ep.heldAt) > cfg.HandoverGap {
		return false
	}
	first := false
	for _, n := range eligible {
		if slices.Contains(ep.heldBy, n) {
			return false // the old holder again: a flap, not a handover
		}
		if i := slices.Index(cfg.Nodes, n); i >= 0 && i < len(cfg.AdvertFirst) && cfg.AdvertFirst[i] {
			first = true
		}
	}
	return first
}

// ControlFault reports whether the fault keeps the controllers from
// acting on Services while it lasts: the API server or etcd down, the
// controller or the leader killed.
func (k Kind) ControlFault() bool {
	return k == KillAPIServer || k == KillEtcd || k == KillController || k == KillLeader
}

// serviceDue is when a Service change made at c must show: c +
// ServiceBound, pushed to ServiceBound after the end of each ControlFault
// window that began before that time and ended after c.
func serviceDue(cfg Config, windows []Window, c time.Time) time.Time {
	d := c.Add(cfg.ServiceBound)
	for changed := true; changed; {
		changed = false
		for _, w := range windows {
			if !w.Fault.Kind.ControlFault() || !w.Start.Before(d) {
				continue
			}
			if w.End.IsZero() {
				return c.Add(1 << 62) // never ended: never due (146 years on)
			}
			if w.End.After(c) && w.End.Add(cfg.ServiceBound).After(d) {
				d, changed = w.End.Add(cfg.ServiceBound), true
			}
		}
	}
	return d
}

// killTime returns the start of the window of kind k on node n that
// explains a process seen dead at t, or zero: it is still open at t, began
// at most a second before t, or began after the previous sample at prev
// (a slow sampler).
func killTime(windows []Window, n int, k Kind, prev, t time.Time) time.Time {
	var best time.Time
	for _, w := range windows {
		open := w.End.IsZero() || t.Before(w.End)
		recent := open || t.Sub(w.Start) < time.Second || w.Start.After(prev)
		if w.Node == n && w.Fault.Kind == k && !w.Start.After(t) && recent && w.Start.After(best) {
			best = w.Start
		}
	}
	return best
}

// agentStopTime is killTime of a KillAgent or, if later, of a TermAgent:
// what explains a node agent seen gone at t.
func agentStopTime(windows []Window, n int, prev, t time.Time) time.Time {
	k, g := killTime(windows, n, KillAgent, prev, t), killTime(windows, n, TermAgent, prev, t)
	if g.After(k) {
		return g
	}
	return k
}

func anyOf(have, want []netip.Addr) bool {
	for _, w := range want {
		if slices.Contains(have, w) {
			return true
		}
	}
	return false
}

func nodeName(cfg Config, n int) string {
	if n < 0 || n >= len(cfg.Nodes) {
		return "the cluster"
	}
	return cfg.Nodes[n]
}

// Timeline renders the samples between from and to, one line per change:
// for each node the VIPs it holds (by index: 0, 1, ...), "!" when its
// agent is dead, "e" when only its engine is, "r" when it has vipstack
// nftables tables, then (Config.Anycast) ">" and the VIPs the router
// sends to it; and the fault windows beginning or ending there.
func Timeline(cfg Config, windows []Window, samples []Sample, from, to time.Time) []string {
	var out []string
	type mark struct {
		at   time.Time
		text string
	}
	var marks []mark
	for _, w := range windows {
		name := fmt.Sprintf("%s on %s", w.Fault.Kind, nodeName(cfg, w.Node))
		if !w.Start.Before(from) && !w.Start.After(to) {
			marks = append(marks, mark{w.Start, name + " begins"})
		}
		if !w.End.IsZero() && !w.End.Before(from) && !w.End.After(to) {
			marks = append(marks, mark{w.End, name + " ends"})
		}
	}
	sort.SliceStable(marks, func(i, j int) bool { return marks[i].at.Before(marks[j].at) })
	prev := ""
	for _, s := range samples {
		if s.At.Before(from) || s.At.After(to) {
			continue
		}
		for len(marks) > 0 && !marks[0].at.After(s.At) {
			out = append(out, fmt.Sprintf("%s  -- %s", marks[0].at.Format("15:04:05.000"), marks[0].text))
			marks = marks[1:]
		}
		var b strings.Builder
		for n, ns := range s.Nodes {
			fmt.Fprintf(&b, " %s:", cfg.Nodes[n])
			for vi, v := range cfg.VIPs {
				if slices.Contains(ns.Holds, v) {
					fmt.Fprintf(&b, "%d", vi)
				}
			}
			switch {
			case !ns.Agent:
				b.WriteString("!")
			case !ns.Engine:
				b.WriteString("e")
			}
			if len(ns.Rules) > 0 {
				b.WriteString("r")
			}
			if cfg.Anycast {
				b.WriteString(">")
				for vi, v := range cfg.VIPs {
					if slices.Contains(ns.Routed, v) {
						fmt.Fprintf(&b, "%d", vi)
					}
				}
			}
		}
		if line := b.String(); line != prev {
			out = append(out, s.At.Format("15:04:05.000")+" "+line)
			prev = line
		}
	}
	return out
}

// ServiceSample is the load-balancer addresses in the Services' status at
// one moment, as the API server has them: Addrs[v] for the Service of VIP
// v (nil: the Service does not exist).
type ServiceSample struct {
	At    time.Time
	Addrs [][]netip.Addr
}

// CheckServices judges the Services' status over a run: no address in two
// Services' status at once (Shared), and each Service's status shows only
// the address it asks for (its VIP, or its spare during an EditIP), give
// or take ServiceBound after it changed what it asks for (Changed): a
// controller restart, a leader's failover or the API server's must not
// give a Service another address. Samples sorted by time.
func CheckServices(cfg Config, windows []Window, samples []ServiceSample) ([]Violation, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var out []Violation
	type key struct {
		kind ViolationKind
		vip  netip.Addr
	}
	open := map[key]*episode{}
	for i, s := range samples {
		if i > 0 && s.At.Before(samples[i-1].At) {
			return nil, fmt.Errorf("chaos: Service sample %d is older than sample %d: want samples sorted by time", i, i-1)
		}
		now := map[key]episode{}
		owners := map[netip.Addr][]string{}
		for v, addrs := range s.Addrs {
			if v >= len(cfg.VIPs) {
				return nil, fmt.Errorf("chaos: Service sample %d has %d Services for %d VIPs", i, len(s.Addrs), len(cfg.VIPs))
			}
			name := fmt.Sprintf("the Service of VIP %d", v)
			sp := netip.Addr{}
			if cfg.SpareOf != nil && cfg.SpareOf[v] >= 0 {
				sp = cfg.VIPs[cfg.SpareOf[v]]
			}
			// What it asks for now and within the last ServiceBound.
			wantOwn, wantSpare := true, false
			for _, w := range windows {
				if w.Fault.Kind != EditIP || w.Fault.VIP != v || s.At.Before(w.Start) {
					continue
				}
				if w.End.IsZero() || s.At.Before(serviceDue(cfg, windows, w.End)) {
					wantSpare = true
				}
				if (w.End.IsZero() || s.At.Before(w.End)) && s.At.After(serviceDue(cfg, windows, w.Start)) {
					wantOwn = false
				}
			}
			for _, a := range addrs {
				owners[a] = append(owners[a], name)
				ok := (a == cfg.VIPs[v] && wantOwn) || (a == sp && wantSpare)
				if !ok {
					now[key{Changed, a}] = episode{nodes: map[string]bool{name: true},
						detail: fmt.Sprintf("%s shows %s; it asks for %s", name, a, map[bool]string{true: sp.String(), false: cfg.VIPs[v].String()}[!wantOwn])}
				}
			}
		}
		for a, names := range owners {
			if len(names) > 1 {
				ep := episode{nodes: map[string]bool{}, detail: "in the status of " + strings.Join(names, " and ")}
				for _, n := range names {
					ep.nodes[n] = true
				}
				now[key{Shared, a}] = ep
			}
		}
		for k, ep := range now {
			if open[k] == nil {
				e := ep
				e.start = s.At
				open[k] = &e
			}
			open[k].last = s.At
		}
		for k, ep := range open {
			if _, still := now[k]; !still {
				out = append(out, serviceViolation(k.kind, k.vip, ep))
				delete(open, k)
			}
		}
	}
	for k, ep := range open {
		out = append(out, serviceViolation(k.kind, k.vip, ep))
	}
	// By time, then kind and detail: episodes that open at one sample
	// come out of a map.
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Detail < out[j].Detail
	})
	return out, nil
}

func serviceViolation(k ViolationKind, vip netip.Addr, ep *episode) Violation {
	var names []string
	for n := range ep.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	return Violation{Kind: k, At: ep.start, For: ep.last.Sub(ep.start), VIP: vip, Nodes: names, Detail: ep.detail}
}
