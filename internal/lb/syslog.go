package lb

import (
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/vipstack/vipstack/internal/lb/logging"
	"github.com/vipstack/vipstack/internal/lb/web"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// logView is the log configuration in force: the backends' lines (the
// frontends' are in their feConfig).
type logView struct {
	backends map[string]*logging.Dests
	// fronts are the frontends', monitors' and stats sections' lines
	// by name, for the soft stop's lines.
	fronts map[string]*logging.Dests
}

// applyLogs opens (or keeps) the sinks cfg's targets name, closes those no
// longer named, and returns the lines of each frontend and of each monitor
// and stats section, by name (they share haproxy's frontend names); the
// backends' are stored for their servers. It runs under l.mu.
func (l *LB) applyLogs(cfg *lbconfig.Config) map[string]*logging.Dests {
	tag := cfg.LogTag
	if tag == "" {
		tag = logging.DefaultTag
	}
	lineMax := logging.LineMax(cfg)
	sinks := map[string]*logging.Sink{}
	dests := func(ts []lbconfig.LogTarget, own string) *logging.Dests {
		if len(ts) == 0 {
			return nil
		}
		tag := tag
		if own != "" {
			tag = own // the section's log-tag
		}
		out := make(logging.Dests, 0, len(ts))
		for _, t := range ts {
			key := t.Network + " " + t.Address
			s := sinks[key]
			if s == nil {
				s = l.sinks[key]
			}
			if s == nil {
				var w io.Writer
				switch t.Network {
				case "stdout":
					w = l.opts.Stdout
				case "stderr":
					w = l.opts.Stderr
				}
				s = logging.NewSink(t.Network, t.Address, w, l.reportSink)
			}
			sinks[key] = s
			out = append(out, logging.NewDest(s, t, tag, lineMax).WithHostname(cfg.LogHostname))
		}
		return &out
	}
	fronts := map[string]*logging.Dests{}
	for _, f := range cfg.Frontends {
		fronts[f.Name] = dests(f.LogTargets, f.LogTag)
	}
	for _, m := range cfg.Monitors {
		fronts[m.Name] = dests(m.LogTargets, m.LogTag)
	}
	for _, s := range cfg.Stats {
		fronts[s.Name] = dests(s.LogTargets, s.LogTag)
	}
	backs := map[string]*logging.Dests{}
	for _, b := range cfg.Backends {
		backs[b.Name] = dests(b.LogTargets, b.LogTag)
	}
	for k, s := range l.sinks {
		if sinks[k] == nil {
			s.Close()
		}
	}
	l.sinks = sinks
	l.logs.Store(&logView{backends: backs, fronts: fronts})
	return fronts
}

// reportSink says on vipstack's own log that a log target failed, once
// until it works again, and when it does.
func (l *LB) reportSink(s *logging.Sink, err error) {
	if err != nil {
		l.log.Warn("log target: cannot send; its messages are dropped (counted in vipstack_lb_access_log_dropped_total) and it is tried again every second",
			"target", s.String(), "err", err)
		return
	}
	l.log.Info("log target: sending again", "target", s.String())
}

// backendLog is where backend's messages go.
func (l *LB) backendLog(backend string) *logging.Dests {
	v := l.logs.Load()
	if v == nil {
		return nil
	}
	return v.backends[backend]
}

// sendLog queues msg (without newline) at level for to's targets.
func (l *LB) sendLog(to *logging.Dests, level int, msg []byte) {
	if to == nil || len(*to) == 0 {
		return
	}
	l.accessLog.Add(to, level, l.clk.Now(), msg)
}

// logConnect sends haproxy's line for a connection accepted by a frontend
// without a log format (measured; sent at accept whatever dontlognull
// says):
//
//	Connect from 127.0.0.1:56490 to 127.0.0.1:17001 (fe/TCP)
func (f *frontend) logConnect(cn *conn, cl *logging.ConnLog) {
	var buf [160]byte
	b := logging.AppendConnect(buf[:0], cn.client(), cn.local, f.name, "TCP")
	f.lb.sendLog(cl.To, lbconfig.LevelInfo, b)
}

// logHTTPConnect sends haproxy's line for a request to a monitor or stats
// section (level info), which haproxy 2.6 sends without a log format
// (measured, TestSyslogMatchesHaproxy): one per request, a keep-alive
// connection's second request included; none for a connection that sends
// nothing, an incomplete request or one haproxy answers 400, whatever
// dontlognull says; the same for a stats page's 200, 401 and other URIs:
//
//	Connect from 127.0.0.1:37074 to 127.0.0.1:18091 (health_check_http_url/HTTP)
func (l *LB) logHTTPConnect(to *logging.Dests, section string, c net.Conn) {
	var buf [160]byte
	b := logging.AppendConnect(buf[:0], logging.TCPAddrPort(c.RemoteAddr()), logging.TCPAddrPort(c.LocalAddr()), section, "HTTP")
	l.sendLog(to, lbconfig.LevelInfo, b)
}

// logStopped sends haproxy's soft stop lines (level warning) to each
// proxy's targets, in the configuration's order, as haproxy 2.6 sends them
// when SIGUSR1 starts its soft stop, all at once, while connections still
// run (measured, haproxy 2.6.12; SIGTERM, its hard stop, sends none):
//
//	Proxy fe stopped (cumulated conns: FE: 3, BE: 0).
//	Proxy health_check_http_url stopped (cumulated conns: FE: 6, BE: 1).
//	Proxy be stopped (cumulated conns: FE: 0, BE: 3).
//
// FE counts a frontend's (or monitor's, stats page's) accepted
// connections, BE the clients a backend took, each once whether a server
// took it or not (BackendStats.Clients: a client that found no server UP,
// logged "<NOSRV> ... SC", counts too, measured), or the requests a
// monitor or stats section passed to its serverless backend, answered
// 503.
func (l *LB) logStopped() {
	v, logs := l.view.Load(), l.logs.Load()
	if v == nil || v.cfg == nil || logs == nil {
		return
	}
	backends := map[string]uint64{}
	for _, b := range l.Snapshot().Backends {
		backends[b.Name] = b.Clients()
	}
	l.mu.Lock()
	counts := make(map[string]*web.Count, len(l.webCounts))
	for k, c := range l.webCounts {
		counts[k] = c
	}
	l.mu.Unlock()
	for _, key := range v.cfg.ProxyOrder() {
		kind, name, _ := strings.Cut(key, " ")
		var to *logging.Dests
		var fe, be uint64
		switch kind {
		case "frontend":
			to = logs.fronts[name]
			for _, f := range v.frontends {
				if f.name == name {
					fe = f.tot.Load()
				}
			}
		case "backend":
			to = logs.backends[name]
			be = backends[name]
		default:
			to = logs.fronts[name]
			if c := counts[name]; c != nil {
				fe, be = c.Sessions()
			}
		}
		l.sendLog(to, lbconfig.LevelWarning, logging.StoppedLine(name, fe, be))
	}
}

// logHardStopped sends, for each frontend that still has connections when
// a soft stop's deadline comes, haproxy's line (warning) to its targets,
// in the configuration's order, before they are closed (measured, haproxy
// 2.6.12 with hard-stop-after, a frontend with one connection and one
// with none: only the first sends its line, then its connection's, "K-"):
//
//	Proxy fe2 hard-stopped (1 remaining conns will be closed).
//
// haproxy's "soft-stop running for too long, performing a hard-stop." goes
// to global's targets only, which vipstack has no use for.
func (l *LB) logHardStopped() {
	v, logs := l.view.Load(), l.logs.Load()
	if v == nil || logs == nil {
		return
	}
	for _, f := range v.frontends {
		n := f.cur.Load()
		if n <= 0 {
			continue
		}
		b := append([]byte("Proxy "), f.name...)
		b = append(b, " hard-stopped ("...)
		b = strconv.AppendInt(b, n, 10)
		b = append(b, " remaining conns will be closed)."...)
		l.sendLog(logs.fronts[f.name], lbconfig.LevelWarning, b)
	}
}
