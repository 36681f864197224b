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
			Services: o.Services, Supervisor: true, Caps: m.caps, Log: o.Log})
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
	if cfg, err = chaos.ConfigForPlans(o.Advert, m.lab.VIPs, plans); err != nil {
		return nil, cfg, nil, false, err
	}
	for vi, a := range cfg.Allowed {
		if len(a) < 2 {
			return nil, cfg, nil, false, fmt.Errorf("VIP %d (%s) is in the plans of %d nodes, want every node's", vi, cfg.VIPs[vi], len(a))
		}
	}
	m.cfg = cfg
	m.netem = m.lab.ProbeNetem()
	if m.sampler, err = m.lab.NewSampler(); err != nil {
		return nil, cfg, nil, false, err
	}
	ok = true
	return m, cfg, roles, m.netem, nil
}

func (m *k8sMode) name() string {
	how := "every capability"
	if m.caps {
		how = "only NET_ADMIN and NET_RAW"
	}
	return fmt.Sprintf("Kubernetes: %d `vipstack agent`s under their supervisor with %s, %d Services", m.o.Nodes, how, m.o.Services)
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
	switch f.Kind {
	case chaos.KillController:
		return m.lab.KillController, m.lab.StartController, nil
	case chaos.Churn:
		return func() error { return m.lab.DeleteService(ctx, f.VIP) }, func() error { return m.lab.CreateService(ctx, f.VIP) }, nil
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
	}
	return names
}

func (m *k8sMode) check() []string {
	if !m.lab.ControllerRunning() {
		return []string{"the controller does not run at the end of the run (it exited on its own)"}
	}
	return nil
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
	return dir, os.WriteFile(filepath.Join(dir, "controller.log"), []byte(m.lab.ControllerLog()), 0o644)
}

func (m *k8sMode) close() {
	if m.sampler != nil {
		m.sampler.Close()
	}
	m.p.Close()
}
