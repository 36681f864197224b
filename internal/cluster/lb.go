package cluster

import (
	"net/netip"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Load balancer ports beside ports.lb, as in the seeds' haproxy.cfg.
const (
	LBMonitorPort = 50936 // `listen health_check_http_url`, /haproxy_ready
	LBStatsPort   = 50000 // `listen stats` on localhost
	LBMonitorURI  = "/haproxy_ready"
	LBStatsURI    = "/haproxy_stats"
	// LBFrontend names the API frontend, on ports.lb.
	LBFrontend = "main"
	// LBMachineConfigFrontend names the machine-config server's frontend,
	// on ports.lbMachineConfig (with loadBalancer.machineConfig).
	LBMachineConfigFrontend = "machine-config"
)

// stdoutLog is `log stdout local0`: haproxy's messages (connections,
// health checks, server state changes) on standard output, where a
// container's logs belong.
var stdoutLog = []lbconfig.LogTarget{{Network: "stdout", Facility: 16, Level: lbconfig.LevelDebug}}

// LBConfig is the API load balancer every master runs, as seed 000's
// haproxy.cfg: a dual-stack TCP frontend on ports.lb, round-robin over
// every master's API port with TLS /readyz checks (inter 1s fall 2 rise 3),
// the monitor URI and the stats page. It is validated.
func (c *Cluster) LBConfig() (*lbconfig.Config, error) {
	all := func(port int) []lbconfig.Bind {
		return []lbconfig.Bind{{Addr: netip.AddrPortFrom(netip.IPv6Unspecified(), uint16(port)), V4V6: true}}
	}
	cfg := &lbconfig.Config{
		MaxConn: 20000,
		Retries: 3,
		Timeouts: lbconfig.Timeouts{
			HTTPRequest: 30 * time.Second, Queue: time.Minute, Connect: 10 * time.Second,
			Client: 86400 * time.Second, Server: 86400 * time.Second, Tunnel: 86400 * time.Second,
		},
		Frontends: []lbconfig.Frontend{{Name: LBFrontend, Binds: all(c.Ports.LB), Backend: "masters", LogTargets: stdoutLog}},
		Monitors:  []lbconfig.Monitor{{Name: "health_check_http_url", Binds: all(LBMonitorPort), URI: LBMonitorURI, LogTargets: stdoutLog}},
		Stats: []lbconfig.Stats{{
			Name:  "stats",
			Binds: []lbconfig.Bind{{Addr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), LBStatsPort), Host: "localhost"}},
			URI:   LBStatsURI, Refresh: 30 * time.Second, HideVersion: true,
			Users:      []lbconfig.UserPass{{User: "admin", Pass: c.Name + "-stats"}},
			LogTargets: stdoutLog,
		}},
	}
	b := lbconfig.Backend{
		Name: "masters", Balance: lbconfig.RoundRobin, LogHealthChecks: true, LogTargets: stdoutLog,
		Check: lbconfig.HTTPCheck{Method: "GET", URI: "/readyz", Version: "HTTP/1.0"},
	}
	for _, n := range c.withRoles(Master) {
		for _, a := range n.IPs {
			b.Servers = append(b.Servers, lbconfig.Server{
				Name: n.Name, Addr: netip.AddrPortFrom(a, uint16(c.Ports.API)), Weight: 1,
				Check: true, CheckSSL: true, Verify: false, Inter: time.Second, Fall: 2, Rise: 3,
			})
			break // one address per master: the first, as OpenShift does
		}
	}
	cfg.Backends = []lbconfig.Backend{b}
	if c.BalanceMachineConfig {
		// The machine-config server as the API: every master's port,
		// HTTPS /healthz checks (what OpenShift's cloud load balancers
		// probe on 22623).
		mc := b
		mc.Name, mc.Servers = LBMachineConfigFrontend, nil
		mc.Check = lbconfig.HTTPCheck{Method: "GET", URI: "/healthz", Version: "HTTP/1.0"}
		for _, s := range b.Servers {
			s.Addr = netip.AddrPortFrom(s.Addr.Addr(), uint16(c.Ports.MachineConfig))
			mc.Servers = append(mc.Servers, s)
		}
		cfg.Frontends = append(cfg.Frontends, lbconfig.Frontend{Name: LBMachineConfigFrontend, Binds: all(c.Ports.LBMachineConfig), Backend: mc.Name, LogTargets: stdoutLog})
		cfg.Backends = append(cfg.Backends, mc)
	}
	if err := lbconfig.Validate(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Redirects are the captures a master keeps while its load balancer is
// healthy: each API VIP's ports.api to ports.lb, and with
// loadBalancer.machineConfig its ports.machineConfig to
// ports.lbMachineConfig.
func (c *Cluster) Redirects() map[netip.AddrPort]uint16 {
	out := map[netip.AddrPort]uint16{}
	for _, v := range c.APIVIPs {
		out[netip.AddrPortFrom(v, uint16(c.Ports.API))] = uint16(c.Ports.LB)
		if c.BalanceMachineConfig {
			out[netip.AddrPortFrom(v, uint16(c.Ports.MachineConfig))] = uint16(c.Ports.LBMachineConfig)
		}
	}
	return out
}
