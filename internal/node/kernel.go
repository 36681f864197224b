package node

import (
	"fmt"
	"net/netip"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/lbkernel"
)

// kernelMode says whether the node's load balancer takes the kernel data
// path (--datapath kernel or auto).
func (a *Agent) kernelMode() bool {
	return a.opts.Datapath != "" && a.opts.Datapath != lbkernel.Relay
}

// lbConfig is c's load balancer configuration as the node runs it. With
// the kernel data path its frontends log no connections: the kernel sees
// none to log, and a frontend `log` needs the relay (lbkernel's
// refusals); the start says so (startKernel).
func (a *Agent) lbConfig(c *cluster.Cluster) (*lbconfig.Config, error) {
	cfg, err := c.LBConfig()
	if err != nil || !a.kernelMode() {
		return cfg, err
	}
	for i := range cfg.Frontends {
		cfg.Frontends[i].LogTargets = nil
	}
	return cfg, nil
}

// kernelPlan plans the kernel path for c's load balancer configuration
// cfg: lbkernel's plan (a frontend it cannot serve refuses it with
// --datapath kernel), plus, on each frontend the kernel serves, the API
// VIPs' ports that the relay path redirects to it (cluster.Redirects):
// the table captures VIP:ports.api itself and sends it to the masters,
// with no redirect and no relay on the way.
func kernelPlan(k *lbkernel.Path, c *cluster.Cluster, cfg *lbconfig.Config) (*lbkernel.Plan, error) {
	p, err := k.Build(cfg)
	if err != nil {
		return nil, err
	}
	for vip, to := range c.Redirects() {
		for i := range p.Frontends {
			f := &p.Frontends[i]
			if !listensOn(f, to) {
				continue
			}
			f.Binds = append(f.Binds, lbkernel.Bind{Addr: vip, IPv4: vip.Addr().Is4(), IPv6: vip.Addr().Is6()})
		}
	}
	return p, nil
}

// listensOn says whether frontend f binds port.
func listensOn(f *lbkernel.Frontend, port uint16) bool {
	for _, b := range f.Binds {
		if b.Addr.Port() == port {
			return true
		}
	}
	return false
}

// kernelVIPs are the VIP:ports the kernel plan in force captures: the
// node starts no redirect for them.
func (a *Agent) kernelVIPs() map[netip.AddrPort]bool {
	out := map[netip.AddrPort]bool{}
	if a.kp == nil || a.kplan == nil {
		return out
	}
	for _, f := range a.kplan.Frontends {
		for _, b := range f.Binds {
			if !b.Wildcard {
				out[b.Addr] = true
			}
		}
	}
	return out
}

// prepareKernel makes the kernel path and plans c's configuration cfg,
// before the LB listens: a refusal, or an nftables that does not answer,
// stops the start.
func (a *Agent) prepareKernel(c *cluster.Cluster, cfg *lbconfig.Config) error {
	k := lbkernel.NewPath(a.opts.Datapath, a.log.With("part", "lb"))
	p, err := kernelPlan(k, c, cfg)
	if err != nil {
		return err // Build's errors name --datapath
	}
	if err := k.Table.Usable(); err != nil {
		return fmt.Errorf("--datapath %s: nftables is not usable: %w (accepted: a process with CAP_NET_ADMIN in the network namespace, on a kernel with nf_tables)", a.opts.Datapath, err)
	}
	a.kp, a.kplan = k, p
	return nil
}

// startKernel installs the planned table once the LB has applied its
// configuration, and keeps it in step with the LB's servers.
func (a *Agent) startKernel() error {
	a.kp.Attach(a.lb)
	if err := a.kp.Install(a.kplan); err != nil {
		a.kp.Close(false)
		return fmt.Errorf("--datapath %s: %w", a.opts.Datapath, err)
	}
	go a.kp.Run()
	if len(a.kplan.Frontends) > 0 {
		a.log.Info("kernel path: the API VIPs' ports go to the masters by nftables DNAT, without a redirect or the relay; the frontends log no connections", "vips", len(a.kernelVIPs()))
	}
	if a.opts.Registry != nil {
		if err := a.opts.Registry.Register(a.kp); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	return nil
}

// reloadKernel plans c's configuration cfg and installs it; a plan that
// is refused or a table that cannot be installed keeps the running one.
func (a *Agent) reloadKernel(c *cluster.Cluster, cfg *lbconfig.Config) error {
	p, err := kernelPlan(a.kp, c, cfg)
	if err != nil {
		return err // Build's errors name --datapath
	}
	if err := a.kp.Install(p); err != nil {
		return fmt.Errorf("--datapath %s: %w", a.opts.Datapath, err)
	}
	a.redirMu.Lock()
	a.kplan = p
	a.redirMu.Unlock()
	return nil
}
