package lbkernel

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/lb"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Path keeps the kernel data path (--datapath kernel or auto) in step
// with a running LB: its Table, and a goroutine (Run) that rewrites a
// backend's map each time the LB says its servers changed. `vipstack lb`
// (internal/lbdaemon) and `vipstack node` (internal/node) use it the same
// way: NewPath, Build before anything listens, Attach the LB with Notify
// as its OnServers and Sessions as its KernelSessions, Install after the
// LB's Apply, go Run, Close at the end.
type Path struct {
	mode  Mode
	Table *Table
	log   *slog.Logger
	lb    *lb.LB // set by Attach once the LB exists

	kick chan struct{}
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex // guards plan, last, base and removed
	plan    *Plan
	last    map[string][]Target
	removed bool
	// base is, by frontend, the connections counted by the tables a
	// reload replaced (whose counters start again from 0).
	base map[string]uint64
	// suspects are the servers whose port refused a connection lately
	// (the table's suspect sets): out of the maps while there.
	suspects map[netip.AddrPort]bool
}

// suspectPoll is how often the suspect sets are read: a server that
// refuses connections keeps getting a third of them (with three) for up
// to this long plus a map update.
const suspectPoll = 50 * time.Millisecond

func NewPath(mode Mode, log *slog.Logger) *Path {
	return &Path{mode: mode, Table: &Table{}, log: log.With("part", "kernel-path"), base: map[string]uint64{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// Attach gives the Path its LB, before Install.
func (k *Path) Attach(l *lb.LB) { k.lb = l }

// Mode is the Path's --datapath value.
func (k *Path) Mode() Mode { return k.mode }

// Notify is the LB's OnServers: it never blocks.
func (k *Path) Notify() {
	select {
	case k.kick <- struct{}{}:
	default: // a sync is pending; it reads the newest state
	}
}

// Build plans cfg; with --datapath kernel a frontend that needs user
// space refuses it.
func (k *Path) Build(cfg *lbconfig.Config) (*Plan, error) {
	p, err := Build(cfg, k.mode)
	if err != nil {
		return nil, fmt.Errorf("--datapath %s: %w", k.mode, err)
	}
	local := localAddrs()
	for _, b := range slices.Clone(p.Backends) {
		if !p.Remote[b] || allLocal(cfg, b, local) {
			continue
		}
		file := "/proc/sys/net/ipv4/ip_forward"
		if p.Family[b] == 6 {
			file = "/proc/sys/net/ipv6/conf/all/forwarding"
		}
		if on, err := os.ReadFile(file); err == nil && strings.TrimSpace(string(on)) != "0" {
			continue
		}
		why := fmt.Sprintf("backend %s has servers on other hosts and %s is not 1: DNAT to another host needs forwarding, which vipstack does not turn on (accepted: sysctl %s=1, or --datapath relay)",
			b, file, strings.ReplaceAll(strings.TrimPrefix(file, "/proc/sys/"), "/", "."))
		if k.mode == Kernel {
			return nil, fmt.Errorf("--datapath kernel: %s", why)
		}
		p.Demote(b, why)
	}
	if len(p.Frontends) > 0 {
		ts, err := DNATTimeouts(func(name string) (string, error) {
			b, err := os.ReadFile("/proc/sys/net/netfilter/" + name)
			return string(b), err
		})
		if err != nil {
			p.Notes = append(p.Notes, "the connections the kernel DNATs keep the host's conntrack timeouts (TIME_WAIT not shortened to "+DNATTimeWait.String()+"): "+err.Error())
		} else {
			p.DNATTimeouts = ts
		}
	}
	return p, nil
}

// localAddrs are this host's addresses (its namespace's); none when
// they cannot be listed, which makes every server count as remote.
func localAddrs() map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return out
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out[p.Addr().Unmap()] = true
		}
	}
	return out
}

// allLocal says whether every server of backend is a loopback address
// or one of local: DNAT to them delivers locally, without forwarding.
func allLocal(cfg *lbconfig.Config, backend string, local map[netip.Addr]bool) bool {
	for _, b := range cfg.Backends {
		if b.Name != backend {
			continue
		}
		for _, s := range b.Servers {
			if a := s.Addr.Addr().Unmap(); !a.IsLoopback() && !local[a] {
				return false
			}
		}
	}
	return true
}

// Install puts p in force with the servers usable now, replacing any
// table (one left by a balancer killed before it could remove its own).
func (k *Path) Install(p *Plan) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.removed {
		return nil
	}
	if left, err := k.Table.Present(); err == nil && left && k.plan == nil {
		k.log.Warn("replacing a kernel-path table left by an earlier run (killed before it could remove it)", "table", TableName)
	}
	if k.plan != nil {
		if n, err := k.Table.Connections(); err == nil {
			for f, c := range n {
				k.base[f] += c
			}
		}
	}
	targets := map[string][]Target{}
	for _, b := range p.Backends {
		targets[b] = k.targets(b)
	}
	if err := k.Table.Install(p, targets); err != nil {
		return err
	}
	k.plan, k.last = p, targets
	for _, d := range p.Decisions {
		where := "relay (user space)"
		if d.Kernel {
			where = "kernel (nftables)"
		}
		k.log.Info("data path of "+d.Proxy+": "+where, "why", d.Why)
	}
	for _, n := range p.Notes {
		k.log.Warn("kernel path: " + n)
	}
	if len(p.Frontends) > 0 {
		k.log.Info("kernel path: the frontends' total sessions (stats page, runtime API, exporter) add the kernel's connections; their current sessions, rates, bytes and the servers' counters count only what the relay carries (clients arriving while no server is usable)", "table", TableName)
	}
	return nil
}

func (k *Path) targets(backend string) []Target {
	var out []Target
	for _, s := range k.lb.Usable(backend) {
		if k.suspects[s.Addr] {
			continue
		}
		out = append(out, Target{Name: s.Name, Addr: s.Addr, Weight: s.Weight})
	}
	return out
}

// Run rewrites the maps of backends whose servers changed, on each
// notify, until close.
func (k *Path) Run() {
	defer close(k.done)
	tick := time.NewTicker(suspectPoll)
	defer tick.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-k.kick:
			k.sync()
		case <-tick.C:
			k.pollSuspects()
		}
	}
}

// pollSuspects reads the suspect sets and, when they changed, rewrites
// the maps: a server whose port refused a connection the kernel sent it
// leaves the maps at once, before its check can say it is DOWN, and comes
// back when the set's timeout (Plan.SuspectFor) drops it, if its check
// still says it is usable then.
func (k *Path) pollSuspects() {
	k.mu.Lock()
	if k.plan == nil || k.removed {
		k.mu.Unlock()
		return
	}
	now, err := k.Table.Suspects()
	k.mu.Unlock()
	if err != nil {
		k.log.Warn("kernel path: could not read the suspect sets", "err", err)
		return
	}
	k.mu.Lock()
	changed := len(now) != len(k.suspects)
	for a := range now {
		if !k.suspects[a] {
			changed = true
			k.log.Warn("kernel path: a server refused a connection: out of the kernel's maps for a while, then back if its check still says it is usable", "server", a.String(), "for", k.plan.SuspectFor)
		}
	}
	k.suspects = now
	k.mu.Unlock()
	if changed {
		k.sync()
	}
}

func (k *Path) sync() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.plan == nil || k.removed {
		return
	}
	for _, b := range k.plan.Backends {
		t := k.targets(b)
		if slices.Equal(t, k.last[b]) {
			continue
		}
		if err := k.Table.Update(b, t); err != nil {
			k.log.Error("kernel path: could not update the backend's servers; new connections keep the previous ones", "backend", b, "err", err)
			continue
		}
		k.last[b] = t
		names := make([]string, len(t))
		for i, s := range t {
			names[i] = fmt.Sprintf("%s(%d)", s.Name, s.Weight)
		}
		k.log.Info("kernel path: backend servers updated", "backend", b, "servers", names)
	}
}

// Remove deletes the table for good: new connections reach the relay's
// listeners (closing at shutdown); established ones keep their NAT in
// conntrack and run to their end without the balancer.
func (k *Path) Remove() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.removed {
		return
	}
	k.removed = true
	if err := k.Table.Remove(); err != nil {
		k.log.Error("kernel path: could not remove the table; the next start (or `nft delete table inet "+TableName+"`) removes it", "err", err)
		return
	}
	k.log.Info("kernel path: table removed", "table", TableName)
}

// Close stops the goroutine (if Run was started) and removes the table.
func (k *Path) Close(started bool) {
	k.Remove()
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
	if started {
		<-k.done
	}
}

// Describe and Collect make the kernel frontends' connection counters a
// Prometheus collector.
var kernelConnsDesc = prometheus.NewDesc("vipstack_lb_kernel_connections_total",
	"Connections a frontend took through the kernel data path (nftables counter of its chain), since start.",
	[]string{"frontend"}, nil)

func (k *Path) Describe(ch chan<- *prometheus.Desc) { ch <- kernelConnsDesc }

func (k *Path) Collect(ch chan<- prometheus.Metric) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.removed || k.plan == nil {
		return
	}
	n := k.sessionsLocked()
	for _, f := range k.plan.Frontends {
		ch <- prometheus.MustNewConstMetric(kernelConnsDesc, prometheus.CounterValue, float64(n[f.Name]), f.Name)
	}
}

// Sessions is the LB's KernelSessions: each frontend's connections
// through the kernel since start, over reloads.
func (k *Path) Sessions() map[string]uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.sessionsLocked()
}

func (k *Path) sessionsLocked() map[string]uint64 {
	out := map[string]uint64{}
	for f, c := range k.base {
		out[f] = c
	}
	if k.removed || k.plan == nil {
		return out
	}
	n, err := k.Table.Connections()
	if err != nil {
		k.log.Warn("kernel path: could not read the counters", "err", err)
		return out
	}
	for f, c := range n {
		out[f] += c
	}
	return out
}
