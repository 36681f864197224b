package lb

import (
	"time"

	"github.com/vipstack/vipstack/internal/lb/logging"
	"github.com/vipstack/vipstack/internal/lb/web"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// sectionConfig is what the connections of frontend fc run with: the
// client side's timeouts from fc, the server side's, the retries and the
// keep-alives from its backend, each over defaults' (haproxy takes them
// so).
func sectionConfig(cfg *lbconfig.Config, fc lbconfig.Frontend, p *pool, cl *logging.ConnLog) *feConfig {
	var b *lbconfig.Backend
	for i := range cfg.Backends {
		if cfg.Backends[i].Name == fc.Backend {
			b = &cfg.Backends[i]
		}
	}
	t := cfg.Effective(&fc, b)
	queueTimeout := t.Queue
	if queueTimeout == 0 {
		queueTimeout = t.Connect
	}
	c := &feConfig{pool: p, retries: max(cfg.Retries, 0),
		tunnel: t.Tunnel, client: t.Client, server: t.Server, clientFin: t.ClientFin, serverFin: t.ServerFin,
		queueTimeout: queueTimeout, connectTimeout: t.Connect, log: cl, cliKeepAlive: fc.KeepAlive,
		tcpReq: fc.TCPRequest}
	if b != nil {
		if b.Retries > 0 {
			c.retries = b.Retries
		}
		c.srvKeepAlive, c.abortOnClose = b.KeepAlive, b.AbortOnClose
	}
	return c
}

// frontendMaxconn is fc's cap on concurrent clients: its own maxconn, or
// defaults' (Config.MaxConn, which Validate fills).
func frontendMaxconn(cfg *lbconfig.Config, fc lbconfig.Frontend) int {
	if fc.MaxConn > 0 {
		return fc.MaxConn
	}
	return cfg.MaxConn
}

// idleOf is feConfig.idleFor for cn, with `timeout client-fin` and
// `timeout server-fin` once one direction has ended: they then replace
// the client's and the server's timeout, and take precedence over
// `timeout tunnel`, as in haproxy.
func (c *feConfig) idleOf(cn *conn) time.Duration {
	if (c.clientFin == 0 && c.serverFin == 0) || !cn.halfClosed() {
		return c.idleFor(cn.last)
	}
	client, server := c.client, c.server
	if c.tunnel > 0 {
		client, server = c.tunnel, c.tunnel
	}
	if c.clientFin > 0 {
		client = c.clientFin
	}
	if c.serverFin > 0 {
		server = c.serverFin
	}
	switch cn.last {
	case lastUp:
		return server
	case lastDown:
		return client
	}
	return minNonZero(client, server)
}

// webTimeouts are the timeouts of a monitor or stats listener: a stats
// section's own over defaults'.
func webTimeouts(cfg *lbconfig.Config, site *web.Site) lbconfig.Timeouts {
	if site != nil && site.Stats != nil {
		return site.Stats.Timeouts.Or(cfg.Timeouts)
	}
	return cfg.Timeouts
}

// HardStopAfter is the configuration's hard-stop-after: how long a soft
// stop lets connections run before it closes them; 0: no bound.
func (l *LB) HardStopAfter() time.Duration {
	if v := l.view.Load(); v != nil && v.cfg != nil {
		return v.cfg.HardStopAfter
	}
	return 0
}

// listenMaxConn is the own maxconn of the monitor or stats section
// called name, 0 for none.
func listenMaxConn(cfg *lbconfig.Config, name string) int {
	for _, s := range cfg.Stats {
		if s.Name == name {
			return s.MaxConn
		}
	}
	for _, m := range cfg.Monitors {
		if m.Name == name {
			return m.MaxConn
		}
	}
	return 0
}
