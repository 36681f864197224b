package haproxycfg

import "github.com/vipstack/vipstack/internal/lbconfig"

// proxyEnd is what haproxy's end-of-configuration checks look at in one
// frontend, backend or listen section (proxyWarnings).
type proxyEnd struct {
	what, name string // "frontend", "backend" or "proxy" (listen), as haproxy names them
	line       int    // the section's line
	fe, be     bool   // it takes clients (frontend, listen), it forwards (backend, listen)
	timeouts   lbconfig.Timeouts
	servers    bool // it has server lines
	http       bool // mode http
	format     bool // a log format is in force: log-format, option tcplog or httplog
	logs       bool // it has log targets
}

// noteProxy records the section being closed for proxyWarnings, with its
// own timeouts (defaults' fill the rest).
func (p *parser) noteProxy(e proxyEnd, own lbconfig.Timeouts) {
	if p.broken {
		return
	}
	e.line, e.timeouts = p.secLine, own.Or(p.cfg.Timeouts)
	p.ends = append(p.ends, e)
}

// formatInForce reports whether defaults or the section's own lines set a
// log format (ownFormat: log-format or option tcplog; option httplog).
func (p *parser) formatInForce(ownFormat string) bool {
	return ownFormat != "" || p.logFormat != "" || p.httplogAt != 0 || p.hs != nil && p.hs.httplog
}

// proxyWarnings gives haproxy 2.6's warnings about each proxy at the end
// of the file, in its words (measured with haproxy -c):
//
//   - "missing timeouts": a section taking clients without timeout client,
//     or forwarding to servers without timeout connect, or without timeout
//     server (in mode tcp, timeout tunnel stands in for it). Such
//     connections never time out, in haproxy and in vipstack.
//   - "log format ignored": a section taking clients with a log format
//     and no log target sends no log line.
//
// A backend without servers and the backends' log formats draw neither.
func (p *parser) proxyWarnings() {
	for _, e := range p.ends {
		t := e.timeouts
		if e.fe && t.Client == 0 || e.be && e.servers && (t.Connect == 0 || t.Server == 0 && (e.http || t.Tunnel == 0)) {
			p.warnf(line{num: e.line}, "missing timeouts for %s '%s'. While not properly invalid, you will certainly encounter "+
				"various problems with such a configuration. To fix this, please ensure that all following timeouts are set "+
				"to a non-zero value: 'client', 'connect', 'server'.", e.what, e.name)
		}
		if e.fe && e.format && !e.logs {
			p.warnf(line{num: e.line}, "log format ignored for %s '%s' since it has no log address.", e.what, e.name)
		}
	}
}
