package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/vipstack/vipstack/internal/chaos"
	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/demo"
)

// demoMode drives internal/demo's cluster of `vipstack node` processes.
type demoMode struct {
	o       options
	c       *demo.Cluster
	cfg     chaos.Config
	idx     []int // chaos node index -> demo node index
	sampler *demo.Sampler
	netem   bool
}

// startDemo builds the cluster and waits until it settled.
func startDemo(ctx context.Context, o options, out io.Writer) (_ mode, cfg chaos.Config, roles []cluster.Role, netem bool, err error) {
	spec := demo.Spec{Masters: 3, Workers: o.Nodes - 3, Advert: o.Advert}
	cf, err := cluster.Parse("chaos cluster.yaml", []byte(spec.ClusterYAML()))
	if err != nil {
		return nil, cfg, nil, false, err
	}
	if cfg, err = chaos.ConfigFor(cf); err != nil {
		return nil, cfg, nil, false, err
	}
	var progress io.Writer = io.Discard
	if o.Verbose {
		progress = out
	}
	fmt.Fprintf(out, "vipstack chaos: seed %d, %d faults, %d nodes (3 masters, %d workers), advert %v\n", o.Seed, o.Faults, o.Nodes, o.Nodes-3, o.Advert)
	c, err := demo.Start(ctx, spec, demo.Options{Bin: o.Bin, Out: progress, Prefix: o.Prefix, View: -1})
	if err != nil {
		return nil, cfg, nil, false, err
	}
	m := &demoMode{o: o, c: c, cfg: cfg}
	ok := false
	defer func() {
		if !ok {
			m.close()
		}
	}()
	for _, name := range cfg.Nodes {
		i := slices.IndexFunc(c.Nodes, func(n *demo.Node) bool { return n.Name == name })
		if i < 0 {
			return nil, cfg, nil, false, fmt.Errorf("node %s of the cluster file is not in the demo cluster", name)
		}
		m.idx = append(m.idx, i)
		roles = append(roles, c.Nodes[i].Role)
	}
	netem = c.ProbeNetem()
	m.netem = netem
	// Settle: every VIP has one holder, for a second.
	for vi, v := range cfg.VIPs {
		if _, err := c.WaitHolder(ctx, v, nil, time.Second, 90*time.Second); err != nil {
			return nil, cfg, nil, false, fmt.Errorf("the cluster did not settle: VIP %d (%s): %w", vi, v, err)
		}
	}
	fmt.Fprintf(out, "cluster settled after %.1f s\n", c.Elapsed().Seconds())
	if m.sampler, err = c.NewSampler(); err != nil {
		return nil, cfg, nil, false, err
	}
	ok = true
	return m, cfg, roles, netem, nil
}

func (m *demoMode) name() string {
	return fmt.Sprintf("`vipstack node`, %d masters + %d workers", 3, m.o.Nodes-3)
}

func (m *demoMode) node(i int) *demo.Node { return m.c.Nodes[m.idx[i]] }

func (m *demoMode) free(i int, k chaos.Kind) bool {
	dn := m.node(i)
	switch k {
	case chaos.FlapAPI, chaos.FlapLB:
		if dn.Role != cluster.Master {
			return false
		}
	case chaos.FlapRouter:
		if dn.Role != cluster.Worker {
			return false
		}
	case chaos.KillEngine:
		if dn.EnginePid() == 0 {
			return false
		}
	}
	return dn.AgentRunning()
}

// guarded: the API and DNS VIPs are the masters' only.
func (m *demoMode) guarded(i int) bool { return m.node(i).Role == cluster.Master }

func (m *demoMode) fault(ctx context.Context, f chaos.Fault, i int) (begin, end func() error, err error) {
	if f.Kind == chaos.Reload {
		return func() error { return m.c.Reload(fmt.Sprintf("fault %d", f.Seq)) }, nil, nil
	}
	if i < 0 {
		return nil, nil, fmt.Errorf("%s: not a fault of `vipstack node` clusters", f.Kind)
	}
	dn := m.node(i)
	switch f.Kind {
	case chaos.KillEngine:
		var pid int
		begin = func() error {
			var err error
			pid, err = dn.KillEngine()
			return err
		}
		end = func() error {
			// The supervisor restarts the engine (1 s back-off, doubling if
			// it crashed again within a minute): wait for it, bounded.
			deadline := time.Now().Add(70 * time.Second)
			for time.Now().Before(deadline) && ctx.Err() == nil {
				if p := dn.EnginePid(); p != 0 && p != pid {
					return nil
				}
				time.Sleep(10 * time.Millisecond)
			}
			return fmt.Errorf("%s: no new engine 70 s after kill -9 of pid %d", dn.Name, pid)
		}
	case chaos.KillAgent:
		begin, end = dn.KillAgent, dn.Restart
	case chaos.Stall:
		begin, end = func() error { return dn.Stall(true) }, func() error { return dn.Stall(false) }
	case chaos.Cut:
		begin, end = func() error { return dn.SetCut(true) }, func() error { return dn.SetCut(false) }
	case chaos.IfDown:
		begin, end = func() error { return dn.SetIfUp(false) }, func() error { return dn.SetIfUp(true) }
	case chaos.Loss, chaos.HeavyLoss:
		begin = func() error { return dn.Impair(demo.Impairment{LossPercent: f.Percent}, m.netem) }
		end = func() error { return dn.Impair(demo.Impairment{}, m.netem) }
	case chaos.Delay:
		begin = func() error { return dn.Impair(demo.Impairment{Delay: f.Delay}, m.netem) }
		end = func() error { return dn.Impair(demo.Impairment{}, m.netem) }
	case chaos.FlapAPI:
		begin, end = func() error { return dn.SetAPI(false) }, func() error { return dn.SetAPI(true) }
	case chaos.FlapLB:
		begin, end = func() error { return dn.SetLB(false) }, func() error { return dn.SetLB(true) }
	case chaos.FlapRouter:
		begin = func() error { return dn.SetRouter(demo.RouterNotReady) }
		end = func() error { return dn.SetRouter(demo.RouterReady) }
	default:
		return nil, nil, fmt.Errorf("%s: not a fault of `vipstack node` clusters", f.Kind)
	}
	return begin, end, nil
}

func (m *demoMode) sample() ([]chaos.NodeSample, error) {
	snaps, err := m.sampler.Sample()
	if err != nil {
		return nil, err
	}
	out := make([]chaos.NodeSample, len(m.cfg.Nodes))
	for i, di := range m.idx {
		sn := snaps[di]
		ns := chaos.NodeSample{Agent: sn.Agent, Engine: sn.Engine, Rules: sn.Tables}
		for _, a := range sn.Addrs {
			if slices.Contains(m.cfg.VIPs, a) {
				ns.Holds = append(ns.Holds, a)
			}
		}
		out[i] = ns
	}
	return out, nil
}

func (m *demoMode) slowest() string {
	sa, st, sp := m.sampler.Slowest()
	return fmt.Sprintf("slowest node read: addresses %v, nftables %v, processes %v",
		sa.Round(time.Millisecond), st.Round(time.Millisecond), sp.Round(time.Millisecond))
}

func (m *demoMode) names() map[netip.Addr]string { return demoVIPNames() }

func (m *demoMode) check() []string { return nil }

func (m *demoMode) judge(chaos.Config, []chaos.Window) (string, []chaos.Violation, error) {
	return "", nil, nil
}

// keepLogs copies the node agents' logs out of the cluster's work
// directory (which close removes).
func (m *demoMode) keepLogs() (string, error) {
	dir, err := os.MkdirTemp("", "vipstack-chaos-logs-")
	if err != nil {
		return "", err
	}
	for _, n := range m.c.Nodes {
		if err := os.WriteFile(filepath.Join(dir, n.Name+".log"), []byte(n.Log()), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func (m *demoMode) close() {
	if m.sampler != nil {
		m.sampler.Close()
	}
	m.c.Close()
}
