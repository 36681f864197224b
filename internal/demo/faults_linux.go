package demo

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/procfs"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
)

// Faults for chaos runs (bench/chaos). Each acts on one node from outside,
// as an operator or a failing machine would; none changes the cluster's
// own code paths.

// KillEngine sends SIGKILL to the node agent's supervised engine only; the
// supervisor stays and restarts it. It returns the engine's PID.
func (n *Node) KillEngine() (int, error) {
	sup := n.agentPid()
	if sup == 0 || !n.AgentRunning() {
		return 0, fmt.Errorf("demo: %s: no node agent runs", n.Name)
	}
	pid := procfs.ChildOf(sup)
	if pid == 0 {
		return 0, fmt.Errorf("demo: %s: the node agent (pid %d) runs no engine now", n.Name, sup)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("demo: %s: kill -9 the engine (pid %d): %w", n.Name, pid, err)
	}
	return pid, nil
}

// EnginePid returns the PID of the node agent's supervised engine, 0 if
// none runs.
func (n *Node) EnginePid() int {
	sup := n.agentPid()
	if sup == 0 || !n.AgentRunning() {
		return 0
	}
	return procfs.ChildOf(sup)
}

// AgentRunning reports whether the node agent's process (its supervisor)
// is alive.
func (n *Node) AgentRunning() bool {
	n.mu.Lock()
	a := n.agent
	n.mu.Unlock()
	if a == nil {
		return false
	}
	select {
	case <-a.done:
		return false
	default:
		return true
	}
}

// KillAgent sends SIGKILL to the whole node agent (supervisor and engine):
// what it configured stays behind, as after a crash of the machine's
// daemon. The node stays connected; Restart starts the agent again.
func (n *Node) KillAgent() error {
	n.mu.Lock()
	a := n.agent
	n.mu.Unlock()
	if a == nil {
		return fmt.Errorf("demo: %s: no node agent runs", n.Name)
	}
	_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
	if err := a.wait(context.Background(), n.c.clk, 5*time.Second); err != nil {
		return fmt.Errorf("demo: %s: kill -9 the node agent: %w", n.Name, err)
	}
	n.mu.Lock()
	n.off = "killed"
	n.mu.Unlock()
	return nil
}

// Restart starts the node agent again after KillAgent, with the binary it
// ran.
func (n *Node) Restart() error {
	if n.AgentRunning() {
		return fmt.Errorf("demo: %s: the node agent still runs", n.Name)
	}
	n.mu.Lock()
	bin := n.bin
	n.mu.Unlock()
	return n.startAgent(filepath.Join(n.c.Dir, "cluster.yaml"), bin)
}

// Replace replaces the node agent's binary as a package upgrade under
// systemd (or a static pod's new image) does: SIGTERM to the running agent,
// which stops as it does on any stop, and once it has exited, bin started
// in its place with the same arguments. The node stays connected and its
// stand-in servers keep running. The new agent runs as the old one did
// (see ReplaceAs).
func (n *Node) Replace(ctx context.Context, bin string) error {
	n.mu.Lock()
	pidns := n.pidns
	n.mu.Unlock()
	return n.ReplaceAs(ctx, bin, pidns)
}

// ReplaceAs is Replace with the new agent started as process 1 of a PID
// namespace of its own when pidns is set, as a container runtime starts a
// static pod's container (its supervisor then reaps orphans, and when it
// exits the kernel kills what is left in the namespace); else as a service
// manager starts it. Restarts after a crash keep the choice.
func (n *Node) ReplaceAs(ctx context.Context, bin string, pidns bool) error {
	n.mu.Lock()
	a := n.agent
	n.mu.Unlock()
	if a == nil || !n.AgentRunning() {
		return fmt.Errorf("demo: %s: no node agent runs", n.Name)
	}
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("demo: %s: SIGTERM to the node agent: %w", n.Name, err)
	}
	if err := a.wait(ctx, n.c.clk, 10*time.Second); err != nil {
		return fmt.Errorf("demo: %s: the node agent did not stop on SIGTERM: %w", n.Name, err)
	}
	n.mu.Lock()
	n.pidns = pidns
	n.mu.Unlock()
	return n.startAgent(filepath.Join(n.c.Dir, "cluster.yaml"), bin)
}

// Stall stops (SIGSTOP) or continues (SIGCONT) the node agent's whole
// process group: a machine descheduled for a while.
func (n *Node) Stall(stop bool) error {
	pid := n.agentPid()
	if pid == 0 {
		return fmt.Errorf("demo: %s: no node agent runs", n.Name)
	}
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	if err := syscall.Kill(-pid, sig); err != nil {
		return fmt.Errorf("demo: %s: %v to the node agent's group %d: %w", n.Name, sig, pid, err)
	}
	return nil
}

// SetCut pulls the node's cable (its switch port goes down) or plugs it
// back.
func (n *Node) SetCut(cut bool) error {
	if err := n.Host.Cut(cut); err != nil {
		return fmt.Errorf("demo: %s: %w", n.Name, err)
	}
	return nil
}

// SetIfUp sets the node's own interface up or down.
func (n *Node) SetIfUp(up bool) error {
	if err := n.Host.SetLink(up); err != nil {
		return fmt.Errorf("demo: %s: %w", n.Name, err)
	}
	return nil
}

// Impairment degrades the node's outgoing packets. The zero value removes
// any impairment.
type Impairment struct {
	LossPercent int           // 0..100
	Delay       time.Duration // needs netem
}

// Impair applies imp to the node's interface: with tc netem when netem is
// true, else with an nftables rule dropping a random share of outgoing
// packets, which cannot delay (testnet.Host.Impair).
func (n *Node) Impair(imp Impairment, netem bool) error {
	if err := n.Host.Impair(imp.LossPercent, imp.Delay, netem); err != nil {
		return fmt.Errorf("demo: %s: %w", n.Name, err)
	}
	return nil
}

// ProbeNetem reports whether the kernel has tc netem (probed in the
// client's namespace).
func (c *Cluster) ProbeNetem() bool { return c.Client.ProbeNetem() }

// Reload rewrites the cluster file with a harmless change (a comment
// naming note) and sends SIGHUP to every running node agent, whose
// supervisor forwards it to the engine.
func (c *Cluster) Reload(note string) error {
	return c.Rewrite(c.Spec.ClusterYAML() + "# chaos: " + strings.ReplaceAll(note, "\n", " ") + "\n")
}

// Rewrite replaces the cluster file with data (in one rename) and sends
// SIGHUP to every running node agent.
func (c *Cluster) Rewrite(data string) error {
	path := filepath.Join(c.Dir, "cluster.yaml")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		return fmt.Errorf("demo: reload: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("demo: reload: %w", err)
	}
	var errs []error
	for _, n := range c.Nodes {
		if pid := n.agentPid(); pid != 0 && n.AgentRunning() {
			if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
				errs = append(errs, fmt.Errorf("demo: reload: SIGHUP to %s (pid %d): %w", n.Name, pid, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Snapshot is one node as seen from outside at one moment.
type Snapshot struct {
	Addrs  []netip.Addr // the addresses on its interface
	Tables []string     // vipstack's nftables tables (the demo's own stand-in table excluded)
	Agent  bool         // the node agent (its supervisor) runs
	Engine bool         // its supervised engine runs
}

// Sampler takes Snapshots of every node quickly enough to be called every
// 10 ms: netlink and nftables handles stay open, the engine's PID is
// looked up again only when it is gone.
type Sampler struct {
	c      *Cluster
	nft    []*nftables.Conn
	engine []int
	mu     sync.Mutex
	// The longest time each step took (addresses, tables, processes).
	slowAddrs, slowTables, slowProcs time.Duration
}

// Slowest reports the longest time one node's addresses, nftables tables
// and processes took to read, for diagnosing a slow sampler.
func (s *Sampler) Slowest() (addrs, tables, procs time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slowAddrs, s.slowTables, s.slowProcs
}

// NewSampler opens the handles. Close it.
func (c *Cluster) NewSampler() (*Sampler, error) {
	s := &Sampler{c: c, engine: make([]int, len(c.Nodes))}
	for _, n := range c.Nodes {
		conn, err := nftables.New(nftables.AsLasting(), nftables.WithNetNSFd(int(n.nsh)))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("demo: nftables in %s: %w", n.Host.Name, err)
		}
		s.nft = append(s.nft, conn)
	}
	return s, nil
}

// Close releases the handles.
func (s *Sampler) Close() {
	for _, c := range s.nft {
		_ = c.CloseLasting()
	}
	s.nft = nil
}

// Sample returns a snapshot of every node, in c.Nodes order.
func (s *Sampler) Sample() ([]Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Snapshot, len(s.c.Nodes))
	for i, n := range s.c.Nodes {
		snap := &out[i]
		t0 := time.Now()
		l, err := n.nl.LinkByName(n.Host.Link)
		if err != nil {
			return nil, fmt.Errorf("demo: %s: %w", n.Name, err)
		}
		addrs, err := n.nl.AddrList(l, netlink.FAMILY_V4)
		if err != nil {
			return nil, fmt.Errorf("demo: %s: list addresses: %w", n.Name, err)
		}
		for _, a := range addrs {
			if ip, ok := netip.AddrFromSlice(a.IP); ok {
				snap.Addrs = append(snap.Addrs, ip.Unmap())
			}
		}
		t1 := time.Now()
		tables, err := s.nft[i].ListTables()
		if err != nil {
			return nil, fmt.Errorf("demo: %s: list nftables tables: %w", n.Name, err)
		}
		for _, t := range tables {
			if strings.HasPrefix(t.Name, "vipstack_") && !strings.HasPrefix(t.Name, "vipstack_demo_") {
				snap.Tables = append(snap.Tables, t.Name)
			}
		}
		t2 := time.Now()
		snap.Agent = n.AgentRunning()
		if snap.Agent {
			if s.engine[i] == 0 || !procfs.Alive(s.engine[i]) || procfs.PPid(s.engine[i]) != n.agentPid() {
				s.engine[i] = procfs.ChildOf(n.agentPid())
			}
			snap.Engine = s.engine[i] != 0
		} else {
			s.engine[i] = 0
		}
		t3 := time.Now()
		s.slowAddrs = max(s.slowAddrs, t1.Sub(t0))
		s.slowTables = max(s.slowTables, t2.Sub(t1))
		s.slowProcs = max(s.slowProcs, t3.Sub(t2))
	}
	return out, nil
}
