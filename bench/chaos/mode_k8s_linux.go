package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/chaos"
	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/k8s/k8slab"
)

// k8sMode drives Kubernetes agents in a k8slab lab: one VIPGroup of every
// node, Services with one address each.
type k8sMode struct {
	o       options
	p       *k8slab.Program
	lab     *k8slab.Lab
	cfg     chaos.Config
	sampler *k8slab.Sampler
	netem   bool
	caps    bool

	// The Services' status, read from the API every 200 ms by svcLoop
	// (not while the API fails).
	svcMu      sync.Mutex
	svcSamples []chaos.ServiceSample
	svcStop    chan struct{}
	svcDone    chan struct{}

	ctrlMu    sync.Mutex
	failovers []time.Duration // kill -9 of the leader -> a controller leads again
	restarted []string        // controllers that exited on their own, started again
}

// settle waits (at most 40 s) until both controllers run and one leads,
// starting again one that exited meanwhile, as its pod's restart would:
// a controller that cannot renew its Lease (the API server or etcd was
// down longer than the renew deadline) exits. One leads when the Lease
// was renewed or taken from now on (the controllers write it with this
// machine's clock): a leader that the outage kept from renewing runs on,
// and says it holds the Lease, until its renew deadline passes, so the
// fault's end (and the bound of every Service change made meanwhile)
// would come before any controller acts again.
func (m *k8sMode) settle(ctx context.Context, why string) error {
	since := time.Now()
	deadline := time.Now().Add(40 * time.Second)
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for i := range 2 {
			if !m.lab.ControllerIndexRunning(i) {
				if err := m.lab.RestartController(i); err != nil {
					return err
				}
				m.ctrlMu.Lock()
				m.restarted = append(m.restarted, fmt.Sprintf("controller %d after %s", i, why))
				m.ctrlMu.Unlock()
			}
		}
		ok, err := m.lab.LeadsSince(ctx, since)
		if ok {
			return nil
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no controller renewed the Lease within 40 s after %s (last error: %v)", why, last)
}

// startK8s builds the lab (API server, controller, agents under their
// supervisor with the DaemonSet's capabilities when capsh is there,
// Services), waits until every address has one holder, and derives the
// checker's Config from the agents' plans.
func startK8s(ctx context.Context, o options, out io.Writer) (_ mode, cfg chaos.Config, roles []cluster.Role, netem bool, err error) {
	m := &k8sMode{o: o, p: &k8slab.Program{Out: o.Log}}
	ok := false
	defer func() {
		if !ok {
			m.p.Close()
		}
	}()
	_, capErr := exec.LookPath("capsh")
	m.caps = capErr == nil
	fmt.Fprintf(out, "vipstack chaos (Kubernetes): seed %d, %d faults, %d agents, %d LoadBalancer Services, advert %v\n", o.Seed, o.Faults, o.Nodes, o.Services, o.Advert)
	if !m.caps {
		fmt.Fprintf(out, "capsh is not installed (Debian package libcap2-bin): the agents run with every capability of root\n")
	}
	if err := m.p.Do(func() {
		m.lab = k8slab.Start(ctx, m.p, k8slab.Options{Nodes: o.Nodes, Prefix: o.Prefix, Bin: o.Bin, Advert: o.Advert,
			Services: o.Services, Supervisor: true, Caps: m.caps, Log: o.Log, Standby: true, AutoAssign: true, Endpoints: true})
	}); err != nil {
		return nil, cfg, nil, false, err
	}
	var plans []chaos.NodePlan
	for _, n := range m.lab.Nodes {
		st, err := n.Status(ctx)
		if err != nil {
			return nil, cfg, nil, false, err
		}
		np := chaos.NodePlan{Node: n.Name}
		for _, in := range st.Plan {
			np.Instances = append(np.Instances, chaos.PlanInstance{Priority: in.Priority, VIPs: in.VIPs})
		}
		plans = append(plans, np)
		roles = append(roles, cluster.Master) // every agent may hold every address
	}
	// Each Service's spare (an edit-ip moves it there) follows the
	// Services' addresses; no plan has it yet, and every node may hold it.
	vips := slices.Clone(m.lab.VIPs)
	for i := range m.lab.VIPs {
		vips = append(vips, k8slab.SpareAddr(i))
	}
	if cfg, err = chaos.ConfigForPlans(o.Advert, vips, plans); err != nil {
		return nil, cfg, nil, false, err
	}
	if len(cfg.VIPs) != 2*len(m.lab.VIPs) {
		return nil, cfg, nil, false, fmt.Errorf("the Services' addresses %v and their spares are not %d distinct addresses", vips, len(vips))
	}
	cfg.SpareOf = make([]int, len(cfg.VIPs))
	for vi := range cfg.VIPs {
		cfg.SpareOf[vi] = -1
		if vi < len(m.lab.VIPs) {
			cfg.SpareOf[vi] = len(m.lab.VIPs) + vi
			continue
		}
		cfg.Allowed[vi] = nil
		for n := range cfg.Nodes {
			cfg.Allowed[vi] = append(cfg.Allowed[vi], n)
		}
	}
	for vi, a := range cfg.Allowed {
		if len(a) < 2 {
			return nil, cfg, nil, false, fmt.Errorf("VIP %d (%s) is in the plans of %d nodes, want every node's", vi, cfg.VIPs[vi], len(a))
		}
	}
	fmt.Fprintf(out, "Services' addresses %v (the odd ones picked by the controller); spares %v\n", m.lab.VIPs, vips[len(m.lab.VIPs):])
	m.cfg = cfg
	m.netem = m.lab.ProbeNetem()
	if m.sampler, err = m.lab.NewSampler(); err != nil {
		return nil, cfg, nil, false, err
	}
	m.svcStop, m.svcDone = make(chan struct{}), make(chan struct{})
	go m.svcLoop(ctx)
	ok = true
	return m, cfg, roles, m.netem, nil
}

func (m *k8sMode) name() string {
	how := "every capability"
	if m.caps {
		how = "only NET_ADMIN and NET_RAW"
	}
	return fmt.Sprintf("Kubernetes: %d `vipstack agent`s under their supervisor with %s, 2 controllers (leader and standby), %d Services", m.o.Nodes, how, m.o.Services)
}

// svcLoop samples the Services' status every 200 ms until svcStop.
func (m *k8sMode) svcLoop(ctx context.Context) {
	defer close(m.svcDone)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		addrs, err := m.lab.ServiceAddrs(rctx)
		cancel()
		if err == nil {
			s := chaos.ServiceSample{At: time.Now(), Addrs: make([][]netip.Addr, len(m.lab.VIPs))}
			for i := range m.lab.VIPs {
				if a, ok := addrs[k8slab.ServiceName(i)]; ok {
					s.Addrs[i] = a
				}
			}
			m.svcMu.Lock()
			m.svcSamples = append(m.svcSamples, s)
			m.svcMu.Unlock()
		}
		select {
		case <-m.svcStop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// judge checks the Services' status as sampled from the API.
func (m *k8sMode) judge(cfg chaos.Config, windows []chaos.Window) (string, []chaos.Violation, error) {
	m.stopSvc()
	m.svcMu.Lock()
	samples := m.svcSamples
	m.svcMu.Unlock()
	vs, err := chaos.CheckServices(cfg, windows, samples)
	m.ctrlMu.Lock()
	defer m.ctrlMu.Unlock()
	note := fmt.Sprintf("the Services' status read %d times from the API server; leader failover (kill -9 of the leader -> a controller holds the Lease, Lease %v): n=%d, p50 %v, max %v",
		len(samples), k8slab.StandbyLease, len(m.failovers), pct(m.failovers, 50), pct(m.failovers, 100))
	if len(m.restarted) > 0 {
		note += fmt.Sprintf("; %d controllers exited (lost the Lease) and were started again: %s", len(m.restarted), strings.Join(m.restarted, "; "))
	}
	return note, vs, err
}

func (m *k8sMode) stopSvc() {
	if m.svcStop != nil {
		select {
		case <-m.svcStop:
		default:
			close(m.svcStop)
		}
		<-m.svcDone
	}
}

func (m *k8sMode) free(i int, k chaos.Kind) bool {
	n := m.lab.Nodes[i]
	if k == chaos.KillEngine && n.EnginePid() == 0 {
		return false
	}
	return n.AgentRunning()
}

// guarded: every node may hold every address; the runner keeps one of
// them out of disruptive faults.
func (m *k8sMode) guarded(int) bool { return true }

func (m *k8sMode) fault(ctx context.Context, f chaos.Fault, i int) (begin, end func() error, err error) {
	// A controller's fault ends when one leads again (the standby took
	// over, or the restarted one took the Lease).
	leads := func() error { return m.settle(ctx, f.String()) }
	edit := func(e k8slab.Edit) (func() error, func() error, error) {
		return func() error { return m.lab.EditService(ctx, f.VIP, e, true) }, func() error { return m.lab.EditService(ctx, f.VIP, e, false) }, nil
	}
	switch f.Kind {
	case chaos.KillController:
		return m.lab.KillController, func() error {
			if err := m.lab.StartController(); err != nil {
				return err
			}
			return leads()
		}, nil
	case chaos.KillLeader:
		killed := -1
		var at time.Time
		return func() error {
				var err error
				killed, err = m.lab.KillLeader()
				at = time.Now()
				return err
			}, func() error {
				if err := m.lab.RestartController(killed); err != nil {
					return err
				}
				if err := m.lab.WaitLeader(ctx, 30*time.Second); err != nil {
					return err
				}
				m.ctrlMu.Lock()
				m.failovers = append(m.failovers, time.Since(at))
				m.ctrlMu.Unlock()
				return leads()
			}, nil
	case chaos.KillAPIServer:
		return m.lab.Env.KillAPIServer, func() error {
			if err := m.lab.Env.RestartAPIServer(ctx); err != nil {
				return err
			}
			return leads()
		}, nil
	case chaos.KillEtcd:
		return m.lab.Env.KillEtcd, func() error {
			if err := m.lab.Env.RestartEtcd(ctx); err != nil {
				return err
			}
			return leads()
		}, nil
	case chaos.Churn:
		return func() error { return m.lab.DeleteService(ctx, f.VIP) }, func() error { return m.lab.CreateService(ctx, f.VIP) }, nil
	case chaos.EditType:
		return edit(k8slab.EditType)
	case chaos.EditClass:
		return edit(k8slab.EditClass)
	case chaos.EditIP:
		return edit(k8slab.EditIP)
	case chaos.EditPolicy:
		return edit(k8slab.EditPolicy)
	}
	if i < 0 || f.Kind.ClusterWide() {
		return nil, nil, fmt.Errorf("%s: not a fault of Kubernetes agents", f.Kind)
	}
	n := m.lab.Nodes[i]
	switch f.Kind {
	case chaos.KillEngine:
		var pid int
		begin = func() error {
			var err error
			pid, err = n.KillEngine()
			return err
		}
		end = func() error {
			// The supervisor restarts its child (1 s back-off, doubling if
			// it crashed again within a minute): wait for it, bounded.
			return waitFor(ctx, 70e9, func() bool { p := n.EnginePid(); return p != 0 && p != pid },
				fmt.Sprintf("%s: no new agent child 70 s after kill -9 of pid %d", n.Name, pid))
		}
	case chaos.KillAgent:
		begin, end = n.KillAgent, n.StartAgent
	case chaos.Stall:
		begin, end = func() error { return n.Stall(true) }, func() error { return n.Stall(false) }
	case chaos.Cut:
		begin, end = func() error { return n.SetCut(true) }, func() error { return n.SetCut(false) }
	case chaos.IfDown:
		begin, end = func() error { return n.SetIfUp(false) }, func() error { return n.SetIfUp(true) }
	case chaos.Loss, chaos.HeavyLoss:
		begin = func() error { return n.Impair(f.Percent, 0, m.netem) }
		end = func() error { return n.Impair(0, 0, m.netem) }
	case chaos.Delay:
		begin = func() error { return n.Impair(0, f.Delay, m.netem) }
		end = func() error { return n.Impair(0, 0, m.netem) }
	default:
		return nil, nil, fmt.Errorf("%s: not a fault of Kubernetes agents", f.Kind)
	}
	return begin, end, nil
}

func (m *k8sMode) sample() ([]chaos.NodeSample, error) {
	snaps, err := m.sampler.Sample()
	if err != nil {
		return nil, err
	}
	out := make([]chaos.NodeSample, len(snaps))
	for i, sn := range snaps {
		ns := chaos.NodeSample{Agent: sn.Agent, Engine: sn.Engine}
		for _, a := range sn.Addrs {
			if slices.Contains(m.cfg.VIPs, a) {
				ns.Holds = append(ns.Holds, a)
			}
		}
		out[i] = ns
	}
	return out, nil
}

func (m *k8sMode) slowest() string { return "addresses by netlink, processes from /proc" }

func (m *k8sMode) names() map[netip.Addr]string {
	names := map[netip.Addr]string{}
	for i, v := range m.lab.VIPs {
		names[v] = k8slab.ServiceNamespace + "/" + k8slab.ServiceName(i)
		names[k8slab.SpareAddr(i)] = "spare of " + k8slab.ServiceNamespace + "/" + k8slab.ServiceName(i)
	}
	return names
}

func (m *k8sMode) check() []string {
	var out []string
	if !m.lab.ControllerRunning() {
		out = append(out, "a controller does not run at the end of the run (it exited on its own)")
	}
	if !m.lab.Env.APIServerRunning() || !m.lab.Env.EtcdRunning() {
		out = append(out, "kube-apiserver or etcd does not run at the end of the run (it exited on its own)")
	}
	return out
}

func (m *k8sMode) keepLogs() (string, error) {
	dir, err := os.MkdirTemp("", "vipstack-chaos-logs-")
	if err != nil {
		return "", err
	}
	for _, n := range m.lab.Nodes {
		if err := os.WriteFile(filepath.Join(dir, n.Name+".log"), []byte(n.Log()), 0o644); err != nil {
			return "", err
		}
	}
	// The API server's and etcd's logs say whether a controller that
	// lagged was waiting on them.
	for _, f := range m.lab.Env.LogFiles() {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			return "", err
		}
	}
	return dir, os.WriteFile(filepath.Join(dir, "controller.log"), []byte(m.lab.ControllerLog()), 0o644)
}

func (m *k8sMode) close() {
	m.stopSvc()
	if m.sampler != nil {
		m.sampler.Close()
	}
	m.p.Close()
}
