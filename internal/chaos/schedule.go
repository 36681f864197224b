package chaos

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/cluster"
)

// Kind is a kind of fault.
type Kind string

// The faults a schedule draws from.
const (
	// KillEngine sends SIGKILL to the supervised engine only; the
	// supervisor stays, removes what the engine held and restarts it.
	KillEngine Kind = "kill-engine"
	// KillAgent sends SIGKILL to the whole node agent (supervisor and
	// engine) and starts it again after For.
	KillAgent Kind = "kill-agent"
	// Stall stops the node agent's process group (SIGSTOP) for For, then
	// continues it (SIGCONT): a VM descheduled for a few seconds.
	Stall Kind = "stall"
	// Cut pulls the node's cable (its switch port goes down) for For.
	Cut Kind = "cut"
	// IfDown sets the node's own interface down for For.
	IfDown Kind = "ifdown"
	// Loss drops Percent % of the node's outgoing packets for For, below
	// Config.PartitionLoss.
	Loss Kind = "loss"
	// HeavyLoss drops Percent % (at least Config.PartitionLoss) for For.
	HeavyLoss Kind = "heavy-loss"
	// Delay delays the node's outgoing packets by Delay for For (netem
	// only).
	Delay Kind = "delay"
	// FlapAPI stops a master's stand-in API server for For.
	FlapAPI Kind = "flap-api"
	// FlapLB makes a master's load balancer unreachable from the master
	// itself for For.
	FlapLB Kind = "flap-lb"
	// FlapRouter makes a node's stand-in router report not ready for For.
	FlapRouter Kind = "flap-router"
	// Reload rewrites the cluster file with a harmless change and sends
	// SIGHUP to every node agent. It has no duration and no node.
	Reload Kind = "reload"
	// KillController sends SIGKILL to the Kubernetes controller and starts
	// it again after For (Kubernetes mode). It has no node: agents keep
	// serving what the API holds meanwhile.
	KillController Kind = "kill-controller"
	// Churn deletes the LoadBalancer Service of VIP number Fault.VIP and
	// creates it again, asking for the same address, after For
	// (Kubernetes mode). It has no node.
	Churn Kind = "churn-service"
	// KillLeader sends SIGKILL to the controller holding the leader
	// Lease while a standby runs, and starts it again (as the new
	// standby) after For; the fault ends when a controller leads again
	// (Kubernetes mode). It has no node.
	KillLeader Kind = "kill-leader"
	// KillAPIServer sends SIGKILL to kube-apiserver and starts it again
	// after For (Kubernetes mode). It has no node.
	KillAPIServer Kind = "kill-apiserver"
	// KillEtcd sends SIGKILL to etcd and starts it again after For; the
	// API server stays up and fails meanwhile (Kubernetes mode). It has
	// no node.
	KillEtcd Kind = "kill-etcd"
	// EditType makes the Service of VIP Fault.VIP a ClusterIP Service
	// for For, then a LoadBalancer again asking for the same address
	// (Kubernetes mode). It has no node.
	EditType Kind = "edit-type"
	// EditClass gives the Service of VIP Fault.VIP another
	// implementation's loadBalancerClass for For (Kubernetes mode).
	EditClass Kind = "edit-class"
	// EditIP makes the Service of VIP Fault.VIP ask for its spare address
	// (Config.SpareOf) for For, then for its own again (Kubernetes mode).
	EditIP Kind = "edit-ip"
	// EditPolicy sets the Service of VIP Fault.VIP's
	// externalTrafficPolicy to Local for For (every node has a ready
	// endpoint: its address stays where it is), then Cluster again
	// (Kubernetes mode).
	EditPolicy Kind = "edit-policy"
	// TermAgent stops the node agent gracefully (SIGTERM: a BGP speaker
	// withdraws its routes before it closes its sessions), waits for it
	// to exit and starts it again after For.
	TermAgent Kind = "term-agent"
	// RestartBGPD sends SIGKILL to the router's BGP daemon and starts it
	// again after For (bench/chaos -bgp). It has no node.
	RestartBGPD Kind = "restart-bgpd"
	// RestartBFDD sends SIGKILL to the router's BFD daemon and starts it
	// again after For (bench/chaos -bgp). It has no node.
	RestartBFDD Kind = "restart-bfdd"
)

// AllKinds lists every kind in the order reports print them.
var AllKinds = []Kind{KillEngine, KillAgent, Stall, Cut, IfDown, Loss, HeavyLoss, Delay, FlapAPI, FlapLB, FlapRouter, Reload, KillController, Churn,
	KillLeader, KillAPIServer, KillEtcd, EditType, EditClass, EditIP, EditPolicy, TermAgent, RestartBGPD, RestartBFDD}

// ClusterWide reports whether the fault hits no node but the cluster as a
// whole (Node is -1).
func (k Kind) ClusterWide() bool {
	switch k {
	case Reload, KillController, Churn, KillLeader, KillAPIServer, KillEtcd, EditType, EditClass, EditIP, EditPolicy, RestartBGPD, RestartBFDD:
		return true
	}
	return false
}

// OfRouter reports whether the fault restarts a daemon of the router the
// nodes announce their VIPs to (Config.Anycast): routes may come and go
// while it lasts and until Config.RouterBound after it.
func (k Kind) OfRouter() bool { return k == RestartBGPD || k == RestartBFDD }

// OfService reports whether the fault acts on the Service of VIP
// Fault.VIP.
func (k Kind) OfService() bool {
	switch k {
	case Churn, EditType, EditClass, EditIP, EditPolicy:
		return true
	}
	return false
}

// Removes reports whether the fault takes the address of VIP Fault.VIP
// from its Service while it lasts (the Service is gone, not a
// LoadBalancer, not of vipstack's class, or asks for another address).
func (k Kind) Removes() bool { return k == Churn || k == EditType || k == EditClass || k == EditIP }

// Disruptive reports whether the fault takes its node out of the set of
// nodes that may hold a VIP (Config's eligibility) while it lasts.
func (k Kind) Disruptive() bool {
	switch k {
	case KillEngine, KillAgent, TermAgent, Stall, Cut, IfDown, HeavyLoss:
		return true
	}
	return false
}

// Ineligible reports whether the fault makes its node unable to hold a
// VIP while it lasts: its engine is dead or stopped, or its link is down.
// HeavyLoss is disruptive but not this: a lossy master may keep its VIPs
// as well as lose them.
func (k Kind) Ineligible() bool {
	switch k {
	case KillEngine, KillAgent, TermAgent, Stall, Cut, IfDown:
		return true
	}
	return false
}

// OnNetwork reports whether the fault acts on the node's network (its
// cable, its link, loss or delay on it): a command that takes effect
// somewhere before it returns, so a runner records both (Window.Began,
// Window.Ended).
func (k Kind) OnNetwork() bool {
	switch k {
	case Cut, IfDown, Loss, HeavyLoss, Delay:
		return true
	}
	return false
}

// Partition reports whether the fault cuts its node off from the others,
// so that the node and the rest may both hold a VIP (a partition window).
// Stall is one only for the VIPs the node held when it stopped.
func (k Kind) Partition() bool {
	switch k {
	case Cut, IfDown, HeavyLoss, Stall:
		return true
	}
	return false
}

// Fault is one planned fault.
type Fault struct {
	Seq  int           // 1-based position in the schedule
	At   time.Duration // from the start of the run
	Kind Kind
	// Node is the target's index in the cluster's node list, or -1 for a
	// cluster-wide fault (Reload).
	Node int
	// HolderOf, when >= 0, asks the runner to aim at the node holding that
	// VIP (an index into the VIP list) when the fault starts, if that node
	// is free; Node is the fallback.
	HolderOf int
	For      time.Duration // how long the fault lasts (the down time for KillAgent)
	Percent  int           // Loss and HeavyLoss
	Delay    time.Duration // Delay
	VIP      int           // Churn and the edits: the index of the VIP whose Service goes or changes
}

func (f Fault) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d +%.2fs %s", f.Seq, f.At.Seconds(), f.Kind)
	if f.Node >= 0 {
		fmt.Fprintf(&b, " node %d", f.Node)
	}
	if f.HolderOf >= 0 {
		fmt.Fprintf(&b, " (or the holder of VIP %d)", f.HolderOf)
	}
	if f.For > 0 {
		fmt.Fprintf(&b, " for %v", f.For)
	}
	if f.Percent > 0 {
		fmt.Fprintf(&b, " %d%%", f.Percent)
	}
	if f.Delay > 0 {
		fmt.Fprintf(&b, " +%v", f.Delay)
	}
	if f.Kind.OfService() {
		fmt.Fprintf(&b, " VIP %d", f.VIP)
	}
	return b.String()
}

// Busy is how long the fault keeps its node from taking another one: the
// fault itself and the time to come back (a restart, a recovery to
// observe).
func (f Fault) Busy() time.Duration {
	switch f.Kind {
	case KillEngine:
		return 3 * time.Second // the supervisor restarts the engine after 1 s
	case KillAgent, TermAgent:
		return f.For + 3*time.Second
	case RestartBGPD, RestartBFDD:
		// The sessions' return (Config.RouterBound): router faults never
		// overlap.
		return f.For + 20*time.Second
	case Reload:
		return 0
	case KillController, KillLeader:
		// The controller's restart and the standby's taking the Lease
		// (k8slab.StandbyLease): cluster-wide faults never overlap.
		return f.For + 10*time.Second
	case KillAPIServer, KillEtcd:
		// The restart (a few seconds on a loaded machine) and the
		// watches' return.
		return f.For + 8*time.Second
	case Churn, EditType, EditClass, EditIP, EditPolicy:
		// The Service's address coming back.
		return f.For + 3*time.Second
	}
	return f.For + time.Second
}

// GenOptions shape a schedule.
type GenOptions struct {
	Seed   uint64
	Faults int            // how many; at least 1, at most 100000
	Roles  []cluster.Role // the nodes' roles, by node index
	VIPs   int            // how many VIPs HolderOf may name
	// Kinds and their weights; nil: DefaultWeights. A kind whose
	// role has no node (FlapRouter without workers) is dropped.
	Weights map[Kind]int
	// MaxConcurrent bounds the faults under way at once (default 3);
	// MaxDisruptive bounds the Disruptive ones (default: the masters
	// minus one, at most 2), so that every VIP keeps an eligible node.
	MaxConcurrent, MaxDisruptive int
	// MinGap and MaxGap bound the time between two fault starts (default
	// 0.4 s and 2 s).
	MinGap, MaxGap time.Duration
}

// DefaultWeights are the kinds' relative frequencies against `vipstack
// node` clusters.
func DefaultWeights() map[Kind]int {
	return map[Kind]int{
		KillEngine: 10, KillAgent: 10, Stall: 14, Cut: 10, IfDown: 6, Loss: 8, HeavyLoss: 6,
		Delay: 8, FlapAPI: 6, FlapLB: 6, FlapRouter: 6, Reload: 8,
	}
}

// AgentWeights are the kinds' relative frequencies against Kubernetes
// agents: no flapping checks or cluster-file reloads (an agent has
// neither); Services deleted, created and edited, the controllers, the API
// server and etcd killed instead.
func AgentWeights() map[Kind]int {
	return map[Kind]int{
		KillEngine: 10, KillAgent: 10, Stall: 14, Cut: 10, IfDown: 6, Loss: 8, HeavyLoss: 6,
		Delay: 8, KillController: 2, KillLeader: 3, KillAPIServer: 3, KillEtcd: 2, Churn: 5,
		EditType: 3, EditClass: 3, EditIP: 3, EditPolicy: 3,
	}
}

// MixedWeights are the kinds' relative frequencies against a mixed
// cluster of keepalived and vipstack nodes: the faults a keepalived node
// meets (kill, stall, cut, ifdown, loss, delay, reload), and kill -9 of
// vipstack's supervised engine; no checks to flap.
func MixedWeights() map[Kind]int {
	return map[Kind]int{
		KillEngine: 6, KillAgent: 10, Stall: 14, Cut: 10, IfDown: 6, Loss: 8, HeavyLoss: 6, Delay: 8, Reload: 8,
	}
}

// BGPWeights are the kinds' relative frequencies against `vipstack node`s
// announcing VIPs by BGP (bench/chaos -bgp): the node faults of
// DefaultWeights, graceful stops (the speaker withdraws first), the load
// balancer's checks failing (the node's routes are demoted), reloads,
// and the router's BGP and BFD daemons killed and restarted; no API
// servers or Ingress routers to flap (FlapAPI, FlapRouter).
func BGPWeights() map[Kind]int {
	return map[Kind]int{
		KillEngine: 10, KillAgent: 8, TermAgent: 6, Stall: 14, Cut: 10, IfDown: 8, Loss: 8, HeavyLoss: 6, Delay: 6, FlapLB: 6, Reload: 8,
		RestartBGPD: 3, RestartBFDD: 3,
	}
}

// Generate returns a schedule of o.Faults faults, sorted by At. The same
// options (the same seed) give the same schedule. At most MaxConcurrent
// faults are under way at any moment, at most MaxDisruptive of them
// disruptive, and no node has two at once.
func Generate(o GenOptions) ([]Fault, error) {
	if o.Faults < 1 || o.Faults > 100000 {
		return nil, fmt.Errorf("chaos: GenOptions.Faults = %d: want 1..100000", o.Faults)
	}
	masters, workers := 0, 0
	for _, r := range o.Roles {
		switch r {
		case cluster.Master:
			masters++
		case cluster.Worker:
			workers++
		}
	}
	if masters < 2 {
		return nil, fmt.Errorf("chaos: GenOptions.Roles has %d masters: want at least 2, so a disruptive fault always leaves one", masters)
	}
	if o.MaxConcurrent == 0 {
		o.MaxConcurrent = 3
	}
	if o.MaxDisruptive == 0 {
		o.MaxDisruptive = min(masters-1, 2)
	}
	if o.MaxDisruptive > masters-1 {
		return nil, fmt.Errorf("chaos: GenOptions.MaxDisruptive = %d with %d masters: want at most %d, so the API VIP keeps an eligible master", o.MaxDisruptive, masters, masters-1)
	}
	if o.MaxConcurrent < 1 || o.MaxConcurrent > len(o.Roles) {
		return nil, fmt.Errorf("chaos: GenOptions.MaxConcurrent = %d: want 1..%d (the nodes)", o.MaxConcurrent, len(o.Roles))
	}
	if o.MinGap == 0 {
		o.MinGap = 400 * time.Millisecond
	}
	if o.MaxGap == 0 {
		o.MaxGap = 2 * time.Second
	}
	if o.MinGap < 0 || o.MaxGap < o.MinGap {
		return nil, fmt.Errorf("chaos: GenOptions.MinGap %v, MaxGap %v: want 0 <= MinGap <= MaxGap", o.MinGap, o.MaxGap)
	}
	w := o.Weights
	if w == nil {
		w = DefaultWeights()
	}
	var kinds []Kind
	total := 0
	for _, k := range AllKinds {
		if w[k] <= 0 || (k == FlapRouter && workers == 0) {
			continue
		}
		kinds = append(kinds, k)
		total += w[k]
	}
	for k, n := range w {
		if n < 0 || !known(k) {
			return nil, fmt.Errorf("chaos: GenOptions.Weights[%q] = %d: want a known kind (%v) with a weight >= 0", k, n, AllKinds)
		}
	}
	if total == 0 {
		return nil, fmt.Errorf("chaos: GenOptions.Weights: no kind has a positive weight")
	}
	for _, k := range kinds {
		if k.OfService() && o.VIPs < 1 {
			return nil, fmt.Errorf("chaos: GenOptions.VIPs = %d with %s faults: want at least one VIP whose Service can change", o.VIPs, k)
		}
	}

	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	dur := func(lo, hi time.Duration) time.Duration {
		// 100 ms steps keep schedules readable.
		steps := int64((hi - lo) / (100 * time.Millisecond))
		return lo + time.Duration(rng.Int64N(steps+1))*100*time.Millisecond
	}
	type span struct {
		node       int
		end        time.Duration
		disruptive bool
	}
	var active []span
	busyUntil := make([]time.Duration, len(o.Roles))
	var out []Fault
	var t time.Duration
	var clusterBusy time.Duration // KillController and Churn wait for each other
	for len(out) < o.Faults {
		t += o.MinGap + time.Duration(rng.Int64N(int64(o.MaxGap-o.MinGap)+1))
		// Draw the fault first, so that waiting for room does not change
		// which faults the seed gives.
		pick := rng.IntN(total)
		var k Kind
		for _, c := range kinds {
			if pick < w[c] {
				k = c
				break
			}
			pick -= w[c]
		}
		f := Fault{Kind: k, Node: -1, HolderOf: -1}
		switch k {
		case KillAgent, TermAgent:
			f.For = dur(500*time.Millisecond, 3*time.Second)
		case RestartBGPD, RestartBFDD:
			f.For = dur(500*time.Millisecond, 3*time.Second)
		case Stall:
			f.For = dur(time.Second, 5*time.Second)
		case Cut, IfDown:
			f.For = dur(time.Second, 4*time.Second)
		case Loss:
			f.For = dur(2*time.Second, 6*time.Second)
			f.Percent = 1 + rng.IntN(10)
		case HeavyLoss:
			f.For = dur(2*time.Second, 5*time.Second)
			f.Percent = 30 + rng.IntN(41)
		case Delay:
			f.For = dur(2*time.Second, 6*time.Second)
			f.Delay = time.Duration(10+rng.IntN(141)) * time.Millisecond
		case FlapAPI, FlapLB, FlapRouter:
			f.For = dur(2*time.Second, 8*time.Second)
		case KillController, KillLeader:
			f.For = dur(500*time.Millisecond, 5*time.Second)
		case KillAPIServer:
			f.For = dur(time.Second, 8*time.Second)
		case KillEtcd:
			f.For = dur(time.Second, 6*time.Second)
		case Churn, EditType, EditClass, EditIP, EditPolicy:
			f.For = dur(time.Second, 4*time.Second)
			f.VIP = rng.IntN(o.VIPs)
		}
		if !k.ClusterWide() && k != FlapAPI && k != FlapLB && k != FlapRouter && o.VIPs > 0 && rng.IntN(10) < 6 {
			f.HolderOf = rng.IntN(o.VIPs)
		}
		allowed := func(i int) bool {
			switch k {
			case FlapAPI, FlapLB:
				return o.Roles[i] == cluster.Master
			case FlapRouter:
				return o.Roles[i] == cluster.Worker
			}
			return true
		}
		nodeDraw := rng.Uint64()
		if k.ClusterWide() {
			if k != Reload {
				t = max(t, clusterBusy)
				clusterBusy = t + f.Busy()
			}
			f.Seq, f.At = len(out)+1, t
			out = append(out, f)
			continue
		}
		// Wait (in schedule time) until the bounds leave room.
		for {
			kept := active[:0]
			for _, s := range active {
				if s.end > t {
					kept = append(kept, s)
				}
			}
			active = kept
			dis := 0
			for _, s := range active {
				if s.disruptive {
					dis++
				}
			}
			var free []int
			for i := range o.Roles {
				if busyUntil[i] <= t && allowed(i) {
					free = append(free, i)
				}
			}
			if len(active) < o.MaxConcurrent && (!k.Disruptive() || dis < o.MaxDisruptive) && len(free) > 0 {
				f.Node = free[nodeDraw%uint64(len(free))]
				break
			}
			// Jump to the next end of a span or of a node's busy time.
			next := time.Duration(-1)
			for _, s := range active {
				if next < 0 || s.end < next {
					next = s.end
				}
			}
			for i, b := range busyUntil {
				if b > t && allowed(i) && (next < 0 || b < next) {
					next = b
				}
			}
			t = next
		}
		f.Seq, f.At = len(out)+1, t
		end := t + f.Busy()
		busyUntil[f.Node] = end
		active = append(active, span{node: f.Node, end: end, disruptive: k.Disruptive()})
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out, nil
}

func known(k Kind) bool {
	for _, c := range AllKinds {
		if c == k {
			return true
		}
	}
	return false
}

// End is when the schedule's last fault is over.
func End(s []Fault) time.Duration {
	var end time.Duration
	for _, f := range s {
		end = max(end, f.At+f.Busy())
	}
	return end
}
