package lb

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"syscall"

	"github.com/vipstack/vipstack/internal/lb/httploop"
	"github.com/vipstack/vipstack/internal/lb/httpproxy"
	"github.com/vipstack/vipstack/internal/lb/logging"
	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lb/tlsconf"
	"github.com/vipstack/vipstack/internal/lb/web"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// proxyListener is an HTTP frontend's bind: a Go listener served by
// httpproxy (mode http), beside the event loops' TCP relay.
type proxyListener struct {
	key   string
	at    boundAddr
	ln    net.Listener
	proxy *httpproxy.Proxy // the std engine, or nil
	loop  *httploop.Engine // the loop engine (--http-engine loop, auto), or nil
	live  tlsconf.Live     // an ssl bind's TLS, replaced on reload
}

// wantsLoop says whether frontend fe of cfg is to run on the loop
// engine; with auto, a frontend that stays on std is logged once per
// configuration (told).
func (l *LB) wantsLoop(cfg *lbconfig.Config, fe *lbconfig.Frontend, told map[string]bool) bool {
	switch l.opts.HTTPEngine {
	case httploop.Loop:
		return true // Apply checked it
	case httploop.Auto:
		r := httploop.Refuse(cfg, fe)
		if r != nil && !told[fe.Name] {
			told[fe.Name] = true
			l.log.Info("lb: --http-engine auto: frontend stays on the std engine", "frontend", fe.Name, "why", r.Error())
		}
		return r == nil
	}
	return false
}

// startProxy serves a new bind's listener with the engine asked for; a
// loop engine that cannot start leaves the bind to the std one.
func (l *LB) startProxy(pl *proxyListener, pc httpproxy.Config, b lbconfig.Bind, loop bool) {
	if loop {
		eng, err := httploop.New(proxyCore{l}, pc, l.log)
		if err == nil {
			if err = eng.Serve(pl.ln); err != nil {
				eng.Close()
			}
		}
		if err == nil {
			pl.loop = eng
			return
		}
		l.log.Error("lb: the loop HTTP engine did not start; the std engine serves the bind", "listener", pl.key, "err", err)
	}
	pl.proxy = httpproxy.New(proxyCore{l}, pc, l.log)
	if b.TLS != nil {
		go pl.proxy.ServeTLS(pl.ln, pl.live.Config())
	} else {
		go pl.proxy.Serve(pl.ln)
	}
}

// setProxy gives a kept bind its new configuration. A bind on the loop
// engine whose frontend now needs std (auto) moves to std: the loop
// stops accepting and finishes its requests; one on std stays there
// until the listener is opened again (std cannot hand its connections
// over).
func (l *LB) setProxy(pl *proxyListener, pc httpproxy.Config, b lbconfig.Bind, loop bool) {
	switch {
	case pl.loop != nil && loop:
		pl.loop.Set(pc)
	case pl.loop != nil:
		old := pl.loop
		pl.loop = nil
		old.StopAccepting() // before std accepts on the same socket
		go old.Shutdown(context.Background())
		l.startProxy(pl, pc, b, false)
	default:
		if loop {
			l.log.Info("lb: --http-engine auto: the bind stays on the std engine until it is opened again", "listener", pl.key)
		}
		pl.proxy.Set(pc)
		if b.TLS != nil {
			pl.setTLS(b.TLS, l.log)
		}
	}
}

func (l *LB) listenProxy(key string, b lbconfig.Bind, queue int) (*proxyListener, error) {
	var conf *tls.Config
	if b.TLS != nil {
		var err error
		if conf, err = tlsconf.Bind(b.TLS); err != nil {
			return nil, err
		}
	}
	network, address, v6only := bindNetwork(b)
	lc := listenConfig(b, v6only, queue)
	ln, err := lc.Listen(context.Background(), network, address)
	if err == nil {
		if err = setBacklog(ln, b, queue); err != nil {
			ln.Close()
		}
	}
	if err != nil {
		if b.Abstract != "" && errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("%w: another socket listens on abns@%s (accepted: an abstract socket name no other process listens on)", err, b.Abstract)
		}
		return nil, err
	}
	pl := &proxyListener{key: key, at: boundOf(b, ln.Addr()), ln: ln}
	if conf != nil {
		pl.live.Set(conf)
	}
	return pl, nil
}

// setTLS puts a reloaded ssl bind's certificates and settings in force
// for its next handshakes.
func (pl *proxyListener) setTLS(t *lbconfig.BindTLS, log *slog.Logger) {
	conf, err := tlsconf.Bind(t)
	if err != nil {
		log.Warn("lb: ssl bind keeps its certificates", "listener", pl.key, "err", err)
		return
	}
	pl.live.Set(conf)
}

// shutdown stops accepting and waits for the requests in flight until
// ctx ends, then closes every connection.
func (pl *proxyListener) shutdown(ctx context.Context) {
	if pl.loop != nil {
		pl.loop.Shutdown(ctx)
		pl.ln.Close()
		return
	}
	if pl.proxy == nil {
		pl.ln.Close()
		return
	}
	pl.proxy.Shutdown(ctx)
	pl.ln.Close()
}

func (pl *proxyListener) close() {
	if pl.loop != nil {
		pl.loop.Close()
	}
	if pl.proxy != nil {
		pl.proxy.Close()
	}
	pl.ln.Close()
}

// proxyConfig is what an HTTP frontend's proxy needs of cfg.
func (l *LB) proxyConfig(cfg *lbconfig.Config, fe *lbconfig.Frontend, to *logging.Dests) httpproxy.Config {
	bs := map[string]*lbconfig.Backend{}
	for i := range cfg.Backends {
		bs[cfg.Backends[i].Name] = &cfg.Backends[i]
	}
	st := map[string]func(http.ResponseWriter, *http.Request) bool{}
	site := func(key string, s *lbconfig.Stats) {
		if s == nil {
			return
		}
		ws := &web.Site{Stats: s, Core: webCore{l}, Clock: l.clk, Version: l.opts.Version}
		st[key] = ws.ServeStats
	}
	if fe.HTTP != nil {
		site(lbconfig.FrontendKey(fe.Name), fe.HTTP.Stats)
	}
	for name, b := range bs {
		if b.HTTP != nil {
			site(lbconfig.BackendKey(name), b.HTTP.Stats)
		}
	}
	prom := &web.Site{Core: webCore{l}, Clock: l.clk, Version: l.opts.Version}
	pc := httpproxy.Config{Frontend: *fe, Backends: bs, Timeouts: cfg.Timeouts, Retries: cfg.Retries, Stats: st, Log: l.httpLogger(fe, to),
		Prometheus: prom.ServePrometheus}
	pc.HeadRaw, pc.HeadHTX = cfg.HeadLimits()
	if fe.HTTP != nil && fe.HTTP.TCPMode && fe.HTTP.LogFormat == "" && to != nil && len(*to) > 0 {
		pc.Accepted = func(client, local netip.AddrPort) {
			var buf [160]byte
			l.sendLog(to, lbconfig.LevelInfo, logging.AppendConnect(buf[:0], client, local, fe.Name, "TCP"))
		}
	}
	if fe.HTTP != nil && fe.HTTP.MonitorURI != "" {
		ms := &web.Site{Monitor: &lbconfig.Monitor{Name: fe.Name, URI: fe.HTTP.MonitorURI}, Core: webCore{l}, Clock: l.clk, Version: l.opts.Version}
		pc.Monitor = ms.ServeMonitor
	}
	return pc
}

// proxyCore is what httpproxy needs of the LB: the pools of the
// configuration in force.
type proxyCore struct{ l *LB }

func (c proxyCore) pool(backend string) *pool {
	for _, p := range c.l.view.Load().pools {
		if p.name == backend {
			return p
		}
	}
	return nil
}

func (c proxyCore) Pick(backend string, client netip.Addr, hash uint32, useHash bool, skip uint64) int {
	p := c.pool(backend)
	if p == nil {
		return -1
	}
	now := c.l.clk.Now()
	if i := p.stickyPick(client, skip, now); i >= 0 { // stick.go
		return i
	}
	var i int
	switch {
	case useHash:
		i = p.pickHash(hash, skip)
	case p.balance == lbconfig.URI || p.balance == lbconfig.Header:
		i = p.pickRoundRobin(skip)
	default:
		i = p.pick(client, skip)
	}
	p.stickStore(client, i, now)
	return i
}

func (c proxyCore) Usable(backend string, i int) bool {
	p := c.pool(backend)
	return p != nil && i < len(p.servers) && p.servers[i].usable()
}

func (c proxyCore) Begin(backend string, i int) func(failed bool) {
	p := c.pool(backend)
	if p == nil || i >= len(p.servers) {
		return func(bool) {}
	}
	s := p.servers[i]
	n := s.cur.Add(1)
	for {
		m := s.smax.Load()
		if n <= m || s.smax.CompareAndSwap(m, n) {
			break
		}
	}
	s.tot.Add(1)
	s.lbtot.Add(1)
	return func(failed bool) {
		s.cur.Add(-1)
		if failed {
			s.econ.Add(1)
		}
	}
}

// Opened counts an HTTP client connection as the TCP relay counts its
// clients (the frontend's scur, smax, stot and rate), so that the stats
// page shows it and a drain waits for it.
func (c proxyCore) Opened(name string) func() {
	var fe *frontend
	for _, f := range c.l.view.Load().frontends {
		if f.name == name {
			fe = f
			break
		}
	}
	if fe == nil {
		return func() {}
	}
	n := fe.cur.Add(1)
	stats.StoreMax(&fe.smax, n)
	fe.tot.Add(1)
	fe.rate.Add(c.l.clk.Now())
	return func() {
		if done, _ := fe.putSlotServe(); done {
			fe.closeDrained()
		}
	}
}

// pickHash maps a request's hash (balance uri, hdr) onto the eligible
// servers by weight, as pickSource maps a client address.
func (p *pool) pickHash(h uint32, skip uint64) int {
	total := 0
	ws := make([]int, len(p.servers))
	for i := range p.servers {
		ws[i] = p.pickWeight(i, skip)
		total += ws[i]
	}
	if total == 0 {
		return -1
	}
	k := int(h % uint32(total))
	for i, w := range ws {
		if k < w {
			return i
		}
		k -= w
	}
	return -1
}

// httpLogger writes an HTTP frontend's request lines to its targets,
// in its format; nil when it logs none.
func (l *LB) httpLogger(fe *lbconfig.Frontend, to *logging.Dests) func(httpproxy.Entry) {
	if fe.HTTP == nil {
		return nil
	}
	hl, err := logging.NewHTTPLog(fe.HTTP.LogFormat, to)
	if err != nil { // Validate has checked it
		l.log.Warn("lb: frontend's log format refused; no request log", "frontend", fe.Name, "err", err)
		return nil
	}
	if hl == nil {
		if to == nil || len(*to) == 0 {
			return nil
		}
		if !fe.HTTP.TCPMode {
			return nil
		}
		// A mode tcp frontend before a mode http backend: without a
		// log format, haproxy 2.6 sends "Connect from ... (fe/TCP)" for
		// each connection it accepts (httpAccepted) and each further
		// request on it (measured, TestTCPFrontendHTTPBackendMatchesHaproxy).
		return func(e httpproxy.Entry) {
			if e.Nth < 2 {
				return
			}
			var buf [160]byte
			l.sendLog(to, lbconfig.LevelInfo, logging.AppendConnect(buf[:0], e.Client, e.Frontend, fe.Name, "TCP"))
		}
	}
	return func(e httpproxy.Entry) {
		f := logging.HTTPFields{Client: e.Client, Local: e.Frontend, UnixClient: e.UnixClient, Frontend: fe.Name, TLS: e.TLS, Backend: e.Backend,
			AcceptAt: e.Accept, TR: e.TR, Tw: e.Tw, Tc: e.Tc, Tr: e.Tr, Ta: e.Ta, Status: e.Status,
			Down: uint64(max(e.Bytes, 0)), Method: e.Method, URI: e.URI, Version: e.Version, Retries: e.Retries, BadRequest: e.BadRequest,
			Counts:  httpCounts{l: l, frontend: fe.Name, backend: e.Backend, server: e.Server},
			ReqCaps: e.ReqCaps, ResCaps: e.ResCaps, CookieReq: e.CookieReq, CookieRes: e.CookieRes}
		if e.Server != "<NOSRV>" {
			f.Server, f.ServerAddr, f.UnixServer = e.Server, e.ServerAddr, e.UnixServer
		}
		copy(f.Term[:], e.Term)
		var buf [1024]byte
		l.sendLog(hl.To, lbconfig.LevelInfo, hl.AppendLine(buf[:0], &f))
	}
}

// httpCounts are a request line's %ac %fc %bc %sc: the client
// connections of the process (TCP relay and HTTP frontends) and of the
// frontend, and the backend's and the server's current sessions, when
// the line is written.
type httpCounts struct {
	l                         *LB
	frontend, backend, server string
}

func (c httpCounts) Global() int64 {
	v := c.l.view.Load()
	n := c.l.gcount.Load()
	for _, fc := range v.cfg.Frontends {
		if fc.HTTP == nil {
			continue
		}
		for _, f := range v.frontends {
			if f.name == fc.Name {
				n += f.cur.Load()
			}
		}
	}
	return n
}

func (c httpCounts) Frontend() int64 {
	for _, f := range c.l.view.Load().frontends {
		if f.name == c.frontend {
			return f.cur.Load()
		}
	}
	return 0
}

func (c httpCounts) Backend() int64 {
	var n int64
	if p := (proxyCore{c.l}).pool(c.backend); p != nil {
		for _, s := range p.servers {
			n += s.cur.Load()
		}
	}
	return n
}

func (c httpCounts) Server() int64 {
	if p := (proxyCore{c.l}).pool(c.backend); p != nil {
		for _, s := range p.servers {
			if s.name == c.server {
				return s.cur.Load()
			}
		}
	}
	return 0
}
