package lb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/lb/httploop"
	"github.com/vipstack/vipstack/internal/lb/logging"
	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lb/tlsconf"
	"github.com/vipstack/vipstack/internal/lb/web"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Options are an LB's dependencies.
type Options struct {
	// Logger receives server state changes, health checks (with `option
	// log-health-checks`) and errors; nil discards.
	Logger *slog.Logger
	// Registry receives the LB's metrics; nil means none.
	Registry prometheus.Registerer
	// Clock drives health checks, queue and idle timeouts; nil means
	// clock.Real{}. Connect timeouts are socket deadlines on the wall
	// clock.
	Clock clock.Clock
	// OnHealthy is called whenever the monitor's verdict (at least one
	// server UP) changes, and once after the first Apply. Calls are
	// serialized; they should return quickly.
	OnHealthy func(healthy bool)
	// OnServers is called after any change of which servers take new
	// connections or of their weights: a check's UP or DOWN, the runtime
	// API's state or weight, a reload (see Usable). It runs under a lock
	// of the LB's and must not block (the kernel data path only signals
	// its own goroutine).
	OnServers func()
	// KernelSessions returns, by frontend name, the connections the
	// kernel data path carried (nftables counters, kept over reloads):
	// Snapshot adds them to the frontends' total sessions, so that the
	// stats page, `show stat` and the exporter do not show only the
	// relay's. nil: none.
	KernelSessions func() map[string]uint64
	// HTTPEngine is --http-engine: which engine serves the mode http
	// frontends ("" is httploop.Std).
	HTTPEngine httploop.Mode
	// ListenersPerBind opens this many SO_REUSEPORT sockets for each TCP
	// frontend bind, each with its own accept loop; 0 means 1. Binds to
	// port 0 always get one.
	ListenersPerBind int
	// Version is shown on the stats page unless `stats hide-version`.
	Version string
	// Stdout and Stderr receive the messages of `log stdout` and `log
	// stderr` targets, one line per write; nil means the process's.
	// Other targets are sockets (lb/logging).
	Stdout, Stderr io.Writer

	// hooks, set by this package's tests only, act between the steps
	// of a race (nil otherwise).
	hooks *testHooks
}

// testHooks let a test act where another goroutine may, between two
// steps that must stay correct whatever happens in between.
type testHooks struct {
	// admitted runs in admit after a fast admit took its slot without
	// the frontend's lock; queueing before a client that found no slot
	// joins the queue.
	admitted, queueing func(*frontend)
	// adminCounted runs in setAdmin between the count of the backend's
	// usable servers and the move; checkRestarted right after a server
	// leaving MAINT has its check started again.
	adminCounted, checkRestarted func(*server)
}

// LB is a running load balancer. Create it with New, configure it with
// Apply, stop it with Shutdown.
type LB struct {
	opts  Options
	log   *slog.Logger
	clk   clock.Clock
	start time.Time
	pools relay.Pools // the relay's copy buffers and splice pipes
	loops []*loop     // the relay's event loops

	idleCloses atomic.Uint64
	accessLog  *logging.Queue           // the log messages' queue
	logs       atomic.Pointer[logView]  // the backends' log targets (syslog.go)
	sinks      map[string]*logging.Sink // log targets by network and address, guarded by mu
	webCounts  map[string]*web.Count    // monitor and stats sections' counts by name, guarded by mu
	dns        dnsLoops                 // servers re-resolved by their resolvers (resolve.go), guarded by mu

	// Global maxconn: accepted connections (admitted or queued) over all
	// frontends, and the cap; at the cap the accept loops wait.
	gcount, gmax atomic.Int64
	gwaiting     atomic.Bool
	gmu          sync.Mutex
	gspace       chan struct{}

	mu        sync.Mutex // serializes Apply and Shutdown; guards the fields below
	frontends map[string]*frontend
	servers   map[string]*server // by serverKey
	// noSrv counts, by backend name, the clients a backend could not
	// connect to anywhere that no server's counters hold (haproxy's
	// backend-level failed connections); kept over reloads.
	noSrv   map[string]*atomic.Uint64
	tcpLns  map[string]*tcpListener
	httpLns map[string]*httpListener
	// proxyLns are the HTTP frontends' binds (httpfront.go).
	proxyLns map[string]*proxyListener
	// tlsLns are the ssl binds of TCP frontends (tlsfront.go).
	tlsLns map[string]*tlsListener
	shut   bool

	// beCounters are the backends' rates, last sessions and times, by
	// name, kept over reloads as noSrv (guarded by mu too).
	beCounters map[string]*backendCounters
	// sticks are the backends' stick tables by name (stick.go), kept
	// over a reload only as haproxy's local peer keeps them (guarded by
	// mu too).
	sticks map[string]*stickTable

	view atomic.Pointer[view]

	healthMu sync.Mutex
	// usableMu serializes the changes of a server's usability (a check's
	// UP or DOWN, the runtime API's admin state) with the count of the
	// backend's usable servers before and after each (see server.left).
	usableMu sync.Mutex
	// beStates is each backend's UP/DOWN history, by name (guarded by
	// usableMu; backendstate.go).
	beStates map[string]*beState
	// checksOff: Shutdown has stopped the health checks; none starts
	// again.
	checksOff   atomic.Bool
	healthy     bool
	healthKnown bool
	// draining is set by Shutdown: the frontends no longer accept, so
	// the monitor answers 503 whatever the servers' state.
	draining atomic.Bool
	// hold is whether the LB was healthy when the configuration in force
	// was applied: while a server new to it has not been checked yet, the
	// LB stays healthy.
	hold atomic.Bool
}

// view is the configuration in force, read without locks.
type view struct {
	cfg       *lbconfig.Config
	frontends []*frontend // in configuration order
	pools     []*pool     // in configuration order
	addrs     map[string][]net.Addr
}

// New returns an LB with no configuration; nothing listens until Apply.
func New(opts Options) (*LB, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	l := &LB{
		opts: opts, log: opts.Logger, clk: opts.Clock, start: opts.Clock.Now(),
		frontends: map[string]*frontend{}, servers: map[string]*server{}, noSrv: map[string]*atomic.Uint64{},
		tcpLns: map[string]*tcpListener{}, httpLns: map[string]*httpListener{},
		proxyLns: map[string]*proxyListener{}, tlsLns: map[string]*tlsListener{},
	}
	if l.opts.Stdout == nil {
		l.opts.Stdout = os.Stdout
	}
	if l.opts.Stderr == nil {
		l.opts.Stderr = os.Stderr
	}
	l.accessLog = logging.NewQueue(os.Getpid(), func(n uint64) {
		l.log.Warn("log: a target does not keep up or cannot be reached; messages are dropped (counted in vipstack_lb_access_log_dropped_total)", "dropped", n)
	})
	lps, err := newLoops(l, loopCount())
	if err != nil {
		return nil, fmt.Errorf("lb: %w", err)
	}
	l.loops = lps
	l.view.Store(&view{cfg: &lbconfig.Config{}, addrs: map[string][]net.Addr{}})
	if opts.Registry != nil {
		if err := opts.Registry.Register(newCollector(l)); err != nil {
			l.stopLoops()
			return nil, fmt.Errorf("lb: registering metrics: %w", err)
		}
	}
	return l, nil
}

func serverKey(backend string, s lbconfig.Server) string {
	if s.Abstract != "" {
		return backend + "/" + s.Name + "@abns@" + s.Abstract
	}
	return backend + "/" + s.Name + "@" + s.Addr.String()
}

// bindKey identifies a listening address across reloads.
func bindKey(b lbconfig.Bind) string {
	if b.Abstract != "" {
		if b.TLS != nil {
			return "abns@" + b.Abstract + " ssl"
		}
		return "abns@" + b.Abstract
	}
	host := b.Host
	if host == "" {
		host = b.Addr.Addr().String()
	}
	k := net.JoinHostPort(host, strconv.Itoa(int(b.Addr.Port())))
	if b.V4V6 {
		k += " v4v6"
	}
	if b.TLS != nil {
		k += " ssl" // a bind that turns ssl on or off is a new listener
	}
	if o := b.Sock.String(); o != "" {
		k += " " + o // so is one whose socket options change
	}
	return k
}

// where names a configuration item and, when the reader recorded it, its
// file and line.
func where(cfg *lbconfig.Config, key string) string {
	if loc, ok := cfg.Source[key]; ok {
		return key + " (" + loc + ")"
	}
	return key
}

// wantListener is one bind of the new configuration.
type wantListener struct {
	section string // frontend or listen name
	key     string // its lbconfig.BindKey, for messages
	bind    lbconfig.Bind
	id      int // the bind's place in its section, from 1 (haproxy's listener id)
	fe      *lbconfig.Frontend
	site    *web.Site
}

// Apply makes cfg the configuration in force. It opens new listeners
// first and leaves everything as it was if one fails. Established
// connections are not touched.
func (l *LB) Apply(cfg *lbconfig.Config) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shut {
		return errors.New("lb: apply: the load balancer is shut down")
	}

	// Check what the model cannot express by itself.
	backends := map[string]*lbconfig.Backend{}
	for i := range cfg.Backends {
		b := &cfg.Backends[i]
		if _, dup := backends[b.Name]; dup {
			return fmt.Errorf("lb: apply: %s: duplicate backend name %q", where(cfg, lbconfig.BackendKey(b.Name)), b.Name)
		}
		backends[b.Name] = b
		names := map[string]bool{}
		for _, sv := range b.Servers {
			if names[sv.Name] {
				return fmt.Errorf("lb: apply: %s: duplicate server name %q", where(cfg, lbconfig.BackendKey(b.Name)), sv.Name)
			}
			names[sv.Name] = true
		}
	}
	if err := httploop.Check(cfg, l.opts.HTTPEngine); err != nil {
		return fmt.Errorf("lb: apply: --http-engine loop: %w", err)
	}
	feNames := map[string]bool{}
	for _, f := range cfg.Frontends {
		if feNames[f.Name] {
			return fmt.Errorf("lb: apply: %s: duplicate frontend name %q", where(cfg, lbconfig.FrontendKey(f.Name)), f.Name)
		}
		feNames[f.Name] = true
	}
	wants := map[string]wantListener{}
	var order []string
	add := func(section string, b lbconfig.Bind, w wantListener) error {
		k := bindKey(b)
		if b.Abstract == "" && b.Addr.Port() == 0 {
			// Every port 0 bind is a port of its own; it keeps it across
			// reloads while its section and place stay.
			k += fmt.Sprintf(" (%s #%d)", section, n0(wants, order, w.section))
		}
		if prev, dup := wants[k]; dup {
			return fmt.Errorf("lb: apply: %s: bind %s is already used by %q", where(cfg, section), k, prev.section)
		}
		w.bind = b
		w.id = n0(wants, order, w.section) + 1
		w.key = lbconfig.BindKey(section, w.id-1)
		wants[k] = w
		order = append(order, k)
		return nil
	}
	for i := range cfg.Frontends {
		f := &cfg.Frontends[i]
		if f.Backend != "" && backends[f.Backend] == nil {
			return fmt.Errorf("lb: apply: %s: default_backend %q: no such backend", where(cfg, lbconfig.FrontendKey(f.Name)), f.Backend)
		}
		for _, b := range f.Binds {
			if err := add(lbconfig.FrontendKey(f.Name), b, wantListener{section: f.Name, fe: f}); err != nil {
				return err
			}
		}
	}
	for i := range cfg.Monitors {
		m := &cfg.Monitors[i]
		for _, b := range m.Binds {
			if err := add(lbconfig.ListenKey(m.Name), b, wantListener{section: m.Name, site: &web.Site{Monitor: m, Core: webCore{l}, Clock: l.clk, Version: l.opts.Version, Count: l.webCount(m.Name)}}); err != nil {
				return err
			}
		}
	}
	for i := range cfg.Stats {
		s := &cfg.Stats[i]
		for _, b := range s.Binds {
			if err := add(lbconfig.ListenKey(s.Name), b, wantListener{section: s.Name, site: &web.Site{Stats: s, Core: webCore{l}, Clock: l.clk, Version: l.opts.Version, Count: l.webCount(s.Name)}}); err != nil {
				return err
			}
		}
	}

	// Open what is new; undo on failure.
	newTCP := map[string]*tcpListener{}
	newHTTP := map[string]*httpListener{}
	newProxy := map[string]*proxyListener{}
	newTLS := map[string]*tlsListener{}
	undo := func() {
		for _, t := range newTLS {
			t.close()
		}
		for _, t := range newTCP {
			t.close()
		}
		for _, pl := range newProxy {
			pl.close()
		}
		for _, h := range newHTTP {
			h.Close()
		}
	}
	held := l.held()
	for _, k := range order {
		w := wants[k]
		if w.fe != nil && w.fe.HTTP != nil {
			if l.proxyLns[k] != nil {
				continue
			}
			if err := portFree(w.bind, held); err != nil {
				undo()
				return fmt.Errorf("lb: apply: %s: %s: %w", where(cfg, w.key), k, err)
			}
			pl, err := l.listenProxy(k, w.bind, listenQueue(cfg, w.fe))
			if err != nil {
				undo()
				return fmt.Errorf("lb: apply: %s: %s: %w", where(cfg, w.key), k, err)
			}
			newProxy[k] = pl
			held = append(held, pl.at)
			continue
		}
		if w.fe != nil && w.bind.TLS != nil {
			if l.tlsLns[k] != nil {
				continue
			}
			if err := portFree(w.bind, held); err != nil {
				undo()
				return fmt.Errorf("lb: apply: %s: %s: %w", where(cfg, w.key), k, err)
			}
			t, err := l.listenTLS(k, w.bind, listenQueue(cfg, w.fe))
			if err != nil {
				undo()
				return fmt.Errorf("lb: apply: %s: %s: %w", where(cfg, w.key), k, err)
			}
			newTLS[k] = t
			held = append(held, t.at)
			continue
		}
		if w.fe != nil {
			if l.tcpLns[k] != nil {
				continue
			}
			if err := portFree(w.bind, held); err != nil {
				undo()
				return fmt.Errorf("lb: apply: %s: %s: %w", where(cfg, w.key), k, err)
			}
			t, err := l.listenTCP(k, w.bind, listenQueue(cfg, w.fe))
			if err != nil {
				undo()
				return fmt.Errorf("lb: apply: %s: %s: %w", where(cfg, w.key), k, err)
			}
			newTCP[k] = t
			held = append(held, t.at)
			continue
		}
		if l.httpLns[k] != nil {
			// Kept, with its clients: it takes the new site and
			// timeouts below (closing it would cut the requests in
			// flight, which haproxy's old process finishes).
			continue
		}
		if err := portFree(w.bind, held); err != nil {
			undo()
			return fmt.Errorf("lb: apply: %s: %s: %w", where(cfg, w.key), k, err)
		}
		h, err := l.listenHTTP(k, w.bind, webTimeouts(cfg, w.site), listenQueue(cfg, nil))
		if err != nil {
			undo()
			return fmt.Errorf("lb: apply: %s: %s: %w", where(cfg, w.key), k, err)
		}
		newHTTP[k] = h
		held = append(held, h.at)
	}

	// Servers and pools.
	servers := map[string]*server{}
	pools := map[string]*pool{}
	noSrv := map[string]*atomic.Uint64{}
	beCounters := map[string]*backendCounters{}
	sticks := l.stickTables(cfg) // stick.go
	var poolOrder []*pool
	type restart struct {
		s    *server
		conf checkConf
	}
	var restarts []restart
	var takeOvers [][2]*server // renamed servers: old, new
	// A server keeps its state by backend, name and address; failing
	// that, a server of the backend at the same address that no server of
	// the new configuration keeps by name takes it over: a renamed server
	// keeps its health and check history.
	kept := map[string]bool{}
	for _, b := range cfg.Backends {
		for _, sc := range b.Servers {
			kept[serverKey(b.Name, sc)] = true
		}
	}
	renamed := func(backend string, sc lbconfig.Server) *server {
		for k, o := range l.servers {
			if !kept[k] && o.backend == backend && o.addr == sc.Addr && o.abstract == sc.Abstract {
				kept[k] = true // taken over once
				return o
			}
		}
		return nil
	}
	for _, b := range cfg.Backends {
		var ss []*server
		var ws []int
		for si, sc := range b.Servers {
			key := serverKey(b.Name, sc)
			s := l.servers[key]
			if s == nil {
				s = servers[key]
			}
			if s == nil {
				s = l.newServer(b.Name, sc)
				if sc.Disabled {
					// `disabled`: in maintenance from the start, as
					// haproxy's; a reload keeps a running server's state.
					s.admin.Store(int32(stats.AdminMaint))
				}
				if o := renamed(b.Name, sc); o != nil {
					s.inherit(o)
					takeOvers = append(takeOvers, [2]*server{o, s})
					l.log.Info("server renamed: it keeps its state and check history", "backend", b.Name, "server", sc.Name, "was", o.name, "addr", sc.Addr.String())
				}
			}
			if _, seen := servers[key]; !seen {
				servers[key] = s
				conf := checkConfOf(b, sc)
				conf.spread = cfg.SpreadChecks
				conf.bufSize, _ = cfg.HeadLimits()
				if conf.enabled {
					conf.ext = extCheckOf(cfg, b, si) // extcheck.go
				}
				s.mu.Lock()
				running := s.checker != nil
				same := s.check == conf
				s.mu.Unlock()
				if !same || (conf.enabled && !running) {
					restarts = append(restarts, restart{s, conf})
				}
			}
			s.configure(sc)
			ss = append(ss, s)
			ws = append(ws, sc.Weight)
		}
		p := newPool(b.Name, b.Balance, ss, ws)
		p.setTiers(b)
		p.ring = newRing(b)
		if p.noSrv = l.noSrv[b.Name]; p.noSrv == nil {
			p.noSrv = new(atomic.Uint64)
		}
		noSrv[b.Name] = p.noSrv
		if be := l.beCounters[b.Name]; be != nil {
			p.be = be
		}
		beCounters[b.Name] = p.be
		p.setStick(b, sticks)
		pools[b.Name] = p
		poolOrder = append(poolOrder, p)
	}
	var removed []*server
	for k, s := range l.servers {
		if servers[k] == nil {
			removed = append(removed, s)
		}
	}
	l.servers = servers
	l.noSrv = noSrv
	l.beCounters = beCounters
	l.sticks = sticks

	// Frontends.
	var feOrder []*frontend
	feLogs := l.applyLogs(cfg)
	for _, fc := range cfg.Frontends {
		fe := l.frontends[fc.Name]
		if fe == nil {
			fe = newFrontend(l, fc.Name)
			l.frontends[fc.Name] = fe
		}
		cl, err := logging.NewConnLog(fc.Log, feLogs[fc.Name])
		if err != nil { // Validate has checked it
			cl = nil
			l.log.Warn("lb: frontend's log format refused; no connection log", "frontend", fc.Name, "err", err)
		}
		fe.cfg.Store(sectionConfig(cfg, fc, pools[fc.Backend], cl))
		fe.setMaxconn(frontendMaxconn(cfg, fc))
		feOrder = append(feOrder, fe)
	}

	// Listeners: point them at their frontends and sites, start the new
	// ones, close the ones no longer wanted.
	addrs := map[string][]net.Addr{}
	told := map[string]bool{} // frontends --http-engine auto logged about
	for _, k := range order {
		w := wants[k]
		if w.fe != nil && w.fe.HTTP != nil {
			pc := l.proxyConfig(cfg, w.fe, feLogs[w.fe.Name])
			pc.ListenerID = w.id
			pl := l.proxyLns[k]
			if pl == nil {
				pl = newProxy[k]
				l.proxyLns[k] = pl
				l.startProxy(pl, pc, w.bind, l.wantsLoop(cfg, w.fe, told))
			} else {
				l.setProxy(pl, pc, w.bind, l.wantsLoop(cfg, w.fe, told))
			}
			if w.bind.Abstract != "" {
				addrs[w.section] = append(addrs[w.section], abnsAddr(w.bind.Abstract))
			} else {
				addrs[w.section] = append(addrs[w.section], pl.ln.Addr())
			}
			continue
		}
		if w.fe != nil && w.bind.TLS != nil {
			t := l.tlsLns[k]
			if t == nil {
				t = newTLS[k]
				l.tlsLns[k] = t
				t.fe.Store(l.frontends[w.fe.Name])
				t.start(l)
			} else {
				t.fe.Store(l.frontends[w.fe.Name])
				if conf, err := tlsconf.Bind(w.bind.TLS); err == nil {
					t.live.Set(conf)
				} else {
					l.log.Warn("lb: ssl bind keeps its certificates", "listener", k, "err", err)
				}
			}
			addrs[w.section] = append(addrs[w.section], t.ln.Addr())
			continue
		}
		if w.fe != nil {
			t := l.tcpLns[k]
			if t == nil {
				t = newTCP[k]
				l.tcpLns[k] = t
				t.fe.Store(l.frontends[w.fe.Name])
				t.start(l)
			} else {
				t.fe.Store(l.frontends[w.fe.Name])
			}
			addrs[w.section] = append(addrs[w.section], t.addr)
			continue
		}
		h := l.httpLns[k]
		if to := feLogs[w.section]; to != nil {
			if lg := l.webLogger(w.site, to); lg != nil {
				w.site.LogRequest = lg
			} else {
				w.site.Log = func(section string, c net.Conn) { l.logHTTPConnect(to, section, c) }
			}
		}
		if nh := newHTTP[k]; nh != nil {
			nh.SetLimits(web.LimitsOf(cfg))
			nh.SetSite(w.site)
			nh.Start()
			l.httpLns[k], h = nh, nh
		} else {
			// A client reads the timeouts at each deadline it sets: the
			// new ones apply from its next wait on.
			h.SetTimeouts(web.TimeoutsOf(webTimeouts(cfg, w.site)))
			h.SetLimits(web.LimitsOf(cfg))
			h.SetSite(w.site)
		}
		addrs[w.section] = append(addrs[w.section], h.Addr())
	}
	for k, t := range l.tcpLns {
		if w, ok := wants[k]; !ok || w.fe == nil || w.fe.HTTP != nil {
			t.close()
			delete(l.tcpLns, k)
		}
	}
	for k, t := range l.tlsLns {
		if w, ok := wants[k]; !ok || w.fe == nil || w.fe.HTTP != nil {
			t.close()
			delete(l.tlsLns, k)
		}
	}
	for k, pl := range l.proxyLns {
		if w, ok := wants[k]; !ok || w.fe == nil || w.fe.HTTP == nil {
			pl.close()
			delete(l.proxyLns, k)
		}
	}
	for k, h := range l.httpLns {
		if w, ok := wants[k]; !ok || w.site == nil {
			h.Close()
			delete(l.httpLns, k)
		}
	}

	// Servers new to this configuration start UP but unconfirmed; until
	// each has had its first check the monitor keeps the verdict it had
	// (see health).
	l.healthMu.Lock()
	l.hold.Store(l.healthKnown && l.healthy)
	l.healthMu.Unlock()
	nv := &view{cfg: cfg, frontends: feOrder, pools: poolOrder, addrs: addrs}
	l.usableMu.Lock()
	l.view.Store(nv)
	l.applyBackendStates(nv)
	l.usableMu.Unlock()
	l.gmax.Store(int64(max(cfg.GlobalMaxConn, 0)))
	l.globalChanged()

	// Health checks last, so that their first verdicts find the new view.
	for _, o := range takeOvers {
		o[1].takeOver(o[0])
	}
	for _, s := range removed {
		s.retire()
	}
	for _, r := range restarts {
		r.s.startCheck(r.conf)
	}
	l.applyResolvers(cfg)
	l.log.Info("configuration applied", "frontends", len(cfg.Frontends), "backends", len(cfg.Backends), "servers", len(servers))
	l.recomputeHealth()
	if l.opts.OnServers != nil {
		l.opts.OnServers()
	}
	if _, _, held := l.health(); held {
		l.log.Info("load balancer keeps its healthy verdict until the new servers' first checks: none of them has been checked yet")
	}
	return nil
}

// n0 counts the binds of section already wanted: the index of its next.
func n0(wants map[string]wantListener, order []string, section string) int {
	n := 0
	for _, o := range order {
		if wants[o].section == section {
			n++
		}
	}
	return n
}

func minNonZero(a, b time.Duration) time.Duration {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// Addrs returns the addresses a frontend or listen section listens on, in
// configuration order (with port 0 binds, the ports the kernel chose).
func (l *LB) Addrs(section string) []net.Addr {
	return slices.Clone(l.view.Load().addrs[section])
}

// Healthy reports whether at least one server of any backend is UP and
// has passed a check (or has none), and Shutdown has not begun: the
// monitor URI's rule. Servers start UP, so without the check a node would
// announce itself healthy, and take the VIP's redirect, before it knew of
// one server that answers. After a reload that brought new servers, a
// healthy LB stays healthy until each new server has had its first check
// (its timeout, inter, bounds the wait): a reload that replaces every
// server does not turn the monitor 503 for the time of a check, which
// would move the API VIP away from every node reloading at once.
func (l *LB) Healthy() bool {
	h, _, _ := l.health()
	return h
}

// health is Healthy, whether a server is UP but not confirmed yet (its
// first check has not passed), and whether the verdict is the one held
// over a reload (healthy only because new servers wait for a first check).
func (l *LB) health() (healthy, unconfirmed, held bool) {
	if l.draining.Load() {
		return false, false, false
	}
	waiting := false
	for _, p := range l.view.Load().pools {
		for _, s := range p.servers {
			if s.usable() {
				if s.confirmed.Load() {
					return true, false, false
				}
				unconfirmed = true
				waiting = waiting || !s.checked.Load()
			}
		}
	}
	if waiting && l.hold.Load() {
		return true, unconfirmed, true
	}
	return false, unconfirmed, false
}

// upServers counts the UP servers of a backend in the current view.
func (l *LB) upServers(backend string) int {
	n := 0
	for _, p := range l.view.Load().pools {
		if p.name != backend {
			continue
		}
		for _, s := range p.servers {
			if s.up.Load() {
				n++
			}
		}
	}
	return n
}

// usableServers counts backend's servers that take new connections: UP,
// ready and of a weight above 0, haproxy's "active" servers of its log
// lines (a drained server is not one, measured).
func (l *LB) usableServers(backend string) int {
	n := 0
	for _, p := range l.view.Load().pools {
		if p.name != backend {
			continue
		}
		for _, s := range p.servers {
			if s.usable() {
				n++
			}
		}
	}
	return n
}

func (l *LB) recomputeHealth() {
	l.healthMu.Lock()
	defer l.healthMu.Unlock()
	h, unconfirmed, _ := l.health()
	if l.healthKnown && h == l.healthy {
		return
	}
	l.healthy, l.healthKnown = h, true
	switch {
	case h:
		l.log.Info("load balancer healthy: at least one server is UP")
	case l.draining.Load():
		l.log.Info("load balancer draining: the frontends no longer accept, the monitor answers 503")
	case unconfirmed:
		l.log.Info("load balancer not healthy yet: no server has passed a check")
	default:
		l.log.Warn("load balancer unhealthy: no server is UP and ready (a drained or maintained server takes no client)")
	}
	if l.opts.OnHealthy != nil {
		l.opts.OnHealthy(h)
	}
}

// webCount is the counts of the monitor or stats section called name,
// kept over reloads. It runs under l.mu.
func (l *LB) webCount(name string) *web.Count {
	if l.webCounts == nil {
		l.webCounts = map[string]*web.Count{}
	}
	c := l.webCounts[name]
	if c == nil {
		c = &web.Count{}
		l.webCounts[name] = c
	}
	return c
}

// SoftStop is haproxy's soft stop (SIGUSR1): it shuts down as Shutdown
// does, and sends haproxy's "Proxy NAME stopped (cumulated conns: ...)"
// line of every proxy to its log targets once the listeners are closed;
// when ctx ends before the connections do, each frontend that still has
// some sends "Proxy NAME hard-stopped (N remaining conns will be
// closed)." before they are closed, as haproxy's hard-stop-after does.
// Shutdown alone sends neither, as haproxy's hard stop (SIGTERM) sends no
// line (measured, haproxy 2.6.12). Only the first of SoftStop and
// Shutdown does anything.
func (l *LB) SoftStop(ctx context.Context) error { return l.shutdown(ctx, true) }

// Shutdown stops accepting connections and health checks, waits for
// connections to finish until ctx is done, then closes those left and
// returns ctx's error. From its start the LB counts as unhealthy: the
// monitor answers 503 and OnHealthy(false) is called.
func (l *LB) Shutdown(ctx context.Context) error { return l.shutdown(ctx, false) }

// shutdown is Shutdown, or SoftStop when soft.
func (l *LB) shutdown(ctx context.Context, soft bool) error {
	l.mu.Lock()
	if l.shut {
		l.mu.Unlock()
		return nil
	}
	l.shut = true
	l.dns.stopAll()
	for k, t := range l.tcpLns {
		t.close()
		delete(l.tcpLns, k)
	}
	for k, t := range l.tlsLns {
		t.close()
		delete(l.tlsLns, k)
	}
	// HTTP frontends stop accepting now and finish the requests in
	// flight, as the TCP frontends drain, until ctx ends.
	var proxies []*proxyListener
	for k, pl := range l.proxyLns {
		proxies = append(proxies, pl)
		delete(l.proxyLns, k)
	}
	proxiesDone := make(chan struct{})
	go func() {
		defer close(proxiesDone)
		var wg sync.WaitGroup
		for _, pl := range proxies {
			wg.Go(func() { pl.shutdown(ctx) })
		}
		wg.Wait()
	}()
	var fes []*frontend
	for _, f := range l.frontends {
		fes = append(fes, f)
	}
	servers := l.servers
	https := l.httpLns
	l.httpLns = map[string]*httpListener{}
	l.mu.Unlock()
	if soft {
		l.logStopped()
	}
	// The monitor keeps answering while connections drain, and must not
	// say 200 for frontends that refuse connections: a check script
	// polling it would keep the VIP here (haproxy's soft stop closes the
	// monitor's listener too).
	l.draining.Store(true)
	l.recomputeHealth()

	drained := make([]<-chan struct{}, len(fes))
	for i, f := range fes {
		drained[i] = f.drain()
	}
	var forced error
wait:
	for _, d := range drained {
		select {
		case <-d:
		case <-ctx.Done():
			forced = ctx.Err()
			break wait
		}
	}
	if forced == nil {
		select {
		case <-proxiesDone:
		case <-ctx.Done():
			forced = ctx.Err()
		}
	}
	if forced != nil {
		if soft {
			l.logHardStopped()
		}
		for _, f := range fes {
			f.closeAll()
		}
		for _, f := range fes {
			<-f.drained // closed sockets end their relays at once
		}
		l.log.Warn("shutdown: closed connections still open at the deadline")
	}
	for _, h := range https {
		h.Close()
	}
	<-proxiesDone // at ctx's end, shutdown closes what is left
	// For good: a server the runtime API takes out of MAINT from now on
	// does not start its check again (startCheckLocked).
	l.checksOff.Store(true)
	for _, s := range servers {
		s.stop()
	}
	l.stopLoops()
	l.accessLog.Flush()
	l.mu.Lock()
	for _, s := range l.sinks {
		s.Close()
	}
	l.mu.Unlock()
	return forced
}

// stopLoops ends the relay's event loops; no connection may be left.
func (l *LB) stopLoops() {
	for _, lp := range l.loops {
		lp.stop()
	}
}

// pickLoop picks the event loop for a new connection and counts it
// there. A connection stays on the loop that accepted it (from) unless
// that loop relays more than loopSlack, and more than a quarter, more
// connections than the least loaded: a client that opens its pool in one
// burst (wrk's 64 keep-alive connections, say) is accepted by whichever
// loop wakes first, which took nearly all of them before. Handing a
// connection over costs a wake-up of the other loop, so a steady stream
// of short connections, which keeps the loops near balance, stays put.
// Without from (a client that waited in the queue), the least loaded.
func (l *LB) pickLoop(from *loop) *loop {
	best := l.loops[0]
	for _, lp := range l.loops[1:] {
		if lp.nconns.Load() < best.nconns.Load() {
			best = lp
		}
	}
	if from != nil {
		n := from.nconns.Load()
		if n <= best.nconns.Load()+max(loopSlack, n/4) {
			best = from
		}
	}
	best.nconns.Add(1)
	return best
}

// loopSlack is how many more connections than the least loaded loop the
// accepting loop always keeps.
const loopSlack = 4

// tcpListener is one frontend bind: one or more listening sockets, which
// the event loops accept on.
type tcpListener struct {
	key  string
	addr net.Addr  // where it listens (the port the kernel chose for port 0)
	at   boundAddr // addr, for the port check
	fds  []int     // the listening sockets, owned by the relay
	fe   atomic.Pointer[frontend]
	stop chan struct{}
	l    *LB // set by start
}

func (l *LB) listenTCP(key string, b lbconfig.Bind, queue int) (*tcpListener, error) {
	network, address, v6only := bindNetwork(b)
	n := max(l.opts.ListenersPerBind, 1)
	if b.Addr.Port() == 0 || !relay.ReusePortSupported {
		n = 1
	}
	lc := listenConfig(b, v6only, queue)
	lc.KeepAlive = -1
	t := &tcpListener{key: key, stop: make(chan struct{})}
	for range n {
		ln, err := lc.Listen(context.Background(), network, address)
		if err == nil {
			err = setBacklog(ln, b, queue)
		}
		if err == nil {
			var fd int
			fd, err = relay.AcceptFD(ln.(*net.TCPListener))
			if t.addr == nil {
				t.addr = ln.Addr()
				t.at = boundOf(b, t.addr)
			}
			// The socket lives on in fd. Closing ln takes it out of Go's
			// poller, which would otherwise wake a thread for every new
			// client only to find nobody waiting on it.
			ln.Close()
			if err == nil {
				t.fds = append(t.fds, fd)
				continue
			}
		}
		for _, fd := range t.fds {
			closeFD(fd)
		}
		return nil, err
	}
	return t, nil
}

// bindNetwork maps a bind to Go's network and address: IPv4 binds are
// IPv4 only; `:::PORT v4v6` is one dual-stack socket (IPV6_V6ONLY off); an
// IPv6 wildcard without v4v6 follows the kernel default, like haproxy. A
// host name the reader resolved (Host "localhost", Addr 127.0.0.1) listens
// on Addr; one it did not is resolved by the listener.
func bindNetwork(b lbconfig.Bind) (network, address string, v6only int) {
	if b.Abstract != "" {
		return "unix", lbconfig.AbstractPath(b.Abstract), -1
	}
	port := strconv.Itoa(int(b.Addr.Port()))
	a := b.Addr.Addr()
	if !a.IsValid() {
		return "tcp", net.JoinHostPort(b.Host, port), -1
	}
	switch {
	case a.Is4() || a.Is4In6():
		return "tcp4", net.JoinHostPort(a.Unmap().String(), port), -1
	case a.IsUnspecified() && b.V4V6:
		return "tcp", net.JoinHostPort("::", port), -1
	case a.IsUnspecified() && b.V6Only:
		return "tcp6", net.JoinHostPort("::", port), 1
	case a.IsUnspecified():
		return "tcp6", net.JoinHostPort("::", port), relay.SystemV6Only()
	}
	return "tcp6", net.JoinHostPort(a.String(), port), -1
}

// start has the event loops accept on t's sockets.
func (t *tcpListener) start(l *LB) {
	t.l = l
	l.watchListener(t)
}

// close stops accepting and closes t's sockets.
func (t *tcpListener) close() {
	select {
	case <-t.stop:
		return
	default:
	}
	close(t.stop)
	if t.l != nil {
		t.l.unwatchListener(t)
	}
	for _, fd := range t.fds {
		closeFD(fd)
	}
}

// globalWait returns nil while the global maxconn allows another
// connection, or a channel closed when it does again.
func (l *LB) globalWait() <-chan struct{} {
	gmax := l.gmax.Load()
	if gmax == 0 || l.gcount.Load() < gmax {
		return nil
	}
	l.gmu.Lock()
	defer l.gmu.Unlock()
	// Announce the wait before checking again, so a connection ending
	// between the two either sees the flag or leaves room we see.
	l.gwaiting.Store(true)
	if gmax = l.gmax.Load(); gmax == 0 || l.gcount.Load() < gmax {
		return nil
	}
	if l.gspace == nil {
		l.gspace = make(chan struct{})
	}
	return l.gspace
}

// globalDone counts a connection's end against the global maxconn.
func (l *LB) globalDone() {
	l.gcount.Add(-1)
	if l.gwaiting.Load() {
		l.globalChanged()
	}
}

// globalChanged wakes the accept loops if there is room.
func (l *LB) globalChanged() {
	l.gmu.Lock()
	defer l.gmu.Unlock()
	if gmax := l.gmax.Load(); l.gspace != nil && (gmax == 0 || l.gcount.Load() < gmax) {
		close(l.gspace)
		l.gspace = nil
		l.gwaiting.Store(false)
	}
}

func (l *LB) listenHTTP(key string, b lbconfig.Bind, to lbconfig.Timeouts, queue int) (*httpListener, error) {
	network, address, v6only := bindNetwork(b)
	lc := listenConfig(b, v6only, queue)
	ln, err := lc.Listen(context.Background(), network, address)
	if err == nil {
		if err = setBacklog(ln, b, queue); err != nil {
			ln.Close()
		}
	}
	if err != nil {
		return nil, err
	}
	return &httpListener{key: key, at: boundOf(b, ln.Addr()), Listener: web.NewListener(ln, to)}, nil
}

// httpListener is a monitor or stats section's listener.
type httpListener struct {
	key string
	at  boundAddr // where it listens
	*web.Listener
}

// webCore is what the monitor and stats pages need of the LB.
type webCore struct{ l *LB }

func (c webCore) Healthy() bool            { return c.l.Healthy() }
func (c webCore) Snapshot() stats.Snapshot { return c.l.Snapshot() }

func (c webCore) PageHealth() (unconfirmed, held, draining bool) {
	_, unconfirmed, held = c.l.health()
	return unconfirmed, held, c.l.draining.Load()
}
