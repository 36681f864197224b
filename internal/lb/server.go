package lb

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vipstack/vipstack/internal/healthcheck"
	"github.com/vipstack/vipstack/internal/lb/logging"
	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lb/tlsconf"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// checkConf is everything a server's health check depends on; a server
// whose checkConf changes on reload gets a new checker that starts in the
// old one's state.
type checkConf struct {
	enabled      bool
	ssl, verify  bool
	inter        time.Duration
	timeout      time.Duration // 0: inter
	rise, fall   int
	http         string // lbconfig.Backend.Check as JSON: comparable (httpcheck.go)
	tcpCheck     string // lbconfig.Backend.TCPCheck as JSON: comparable
	sslHello     bool
	logHealthChk bool
	// port replaces the server's port for checks (`port`); fastInter,
	// downInter and spread are haproxy's (healthcheck.Spec).
	port                 int
	fastInter, downInter time.Duration
	spread               int
	bufSize              int // tune.bufsize: what an answer's check reads
	mysql                lbconfig.MySQLCheck
	mysqlOn              bool
	redis                bool   // option redis-check
	pgsqlUser            string // option pgsql-check's user
	// srvTLS is the server's TLS settings (ssl, ca-file, sni, ...) for
	// its checks over TLS, as JSON: comparable; "" without.
	srvTLS string
	// sendProxy is the PROXY header version the checks send first
	// (checkProxy); 0: none.
	sendProxy int
	// ext is the external check (`option external-check`, extcheck.go);
	// its command is "" without one.
	ext extCheck
}

func checkConfOf(b lbconfig.Backend, s lbconfig.Server) checkConf {
	if !s.Check {
		return checkConf{}
	}
	var srvTLS string
	if s.TLS != nil {
		b, _ := json.Marshal(s.TLS)
		srvTLS = string(b)
	}
	return checkConf{enabled: true, ssl: s.CheckSSL || s.SSL, verify: s.Verify, srvTLS: srvTLS, inter: s.Inter, timeout: s.CheckTimeout, rise: s.Rise, fall: s.Fall, http: httpCheckKey(b.Check), tcpCheck: tcpCheckKey(b.TCPCheck), sslHello: b.SSLHelloCheck, logHealthChk: b.LogHealthChecks,
		port: s.CheckPort, fastInter: s.FastInter, downInter: s.DownInter, mysqlOn: b.MySQLCheck != nil, mysql: mysqlOf(b), redis: b.RedisCheck, pgsqlUser: b.PgSQLUser, sendProxy: checkProxy(b, s)}
}

func tcpCheckKey(rules []lbconfig.TCPCheckRule) string {
	if len(rules) == 0 {
		return ""
	}
	b, _ := json.Marshal(rules)
	return string(b)
}

// tcpScript is the prober for `option tcp-check` rules.
func tcpScript(conf checkConf, addr netip.AddrPort, tlsConf *tls.Config) healthcheck.TCPScript {
	var rules []lbconfig.TCPCheckRule
	_ = json.Unmarshal([]byte(conf.tcpCheck), &rules) // written by tcpCheckKey
	p := healthcheck.TCPScript{Addr: addr, TLS: tlsConf, SendProxy: conf.sendProxy, BufSize: conf.bufSize}
	for _, r := range rules {
		switch {
		case r.Connect && r.Port != 0:
			p.Addr = netip.AddrPortFrom(addr.Addr(), uint16(r.Port))
		case r.Send != "":
			p.Steps = append(p.Steps, healthcheck.Step{Send: []byte(r.Send)})
		case r.Expect != "":
			p.Steps = append(p.Steps, healthcheck.Step{Expect: []byte(r.Expect)})
		}
	}
	return p
}

// statusIndex maps a check status to its slot in server.results.
func statusIndex(status string) int {
	for i, s := range healthcheck.Statuses() {
		if s == status {
			return i
		}
	}
	return -1
}

var nStatuses = len(healthcheck.Statuses())

// server is one backend server. Its counters outlive reloads while its
// backend, name and address stay.
type server struct {
	lb      *LB
	backend string
	name    string
	addr    netip.AddrPort
	// abstract is the abstract UNIX socket the server is (abns@), addr
	// then unset.
	abstract string

	up atomic.Bool
	// confirmed: the server has shown it serves: a check of it passed
	// since it was created, or it has no check. A server starts UP (as
	// in haproxy, so traffic flows from the start), but the monitor and
	// the redirect count it only once confirmed. A server that had no
	// check and gets one on reload stays confirmed: it was serving, and
	// its first failed check takes it DOWN (a checker starts at the edge
	// of UP, as haproxy's does).
	confirmed atomic.Bool
	// checked: a check of the server has ended (passed or failed) since
	// it was created. Until then a reload's new server holds the LB's
	// previous verdict (LB.health).
	checked atomic.Bool

	cur, smax                          atomic.Int64
	tot, lbtot, bin, bout, econ, wretr atomic.Uint64
	// The connections that ended in an abort (aborts.go): cliAbrt by the
	// client (CD, cD), srvAbrt by the server (SD, sD), eresp the server's
	// errors among those (SD).
	cliAbrt, srvAbrt, eresp atomic.Uint64
	// rate and last count the times it was picked, as lbtot does, times
	// the sessions that connected (rates.go).
	rate  stats.RateCounter
	last  stats.LastSession
	times stats.SessionTimes
	// chkfail counts failed checks of the server while it was UP (or on
	// its way down), as haproxy's chkfail does: the checks that keep
	// failing once it is DOWN are not counted.
	chkfail atomic.Uint64
	results []atomic.Uint64 // by statusIndex

	// admin is the server's AdminState (admin.go), changed under adminMu;
	// downsBase counts the DOWN transitions of its earlier checkers (a
	// server taken into MAINT loses its checker).
	admin   atomic.Int32
	adminMu sync.Mutex
	// retired: a reload took the server out of the configuration (or
	// gave its state to a renamed server). Set under adminMu and
	// weight.mu: a runtime API call that found the server before the
	// reload then gets ErrNoServer instead of changing a server nobody
	// sees, and its check cannot start again.
	retired   atomic.Bool
	weight    serverWeight // the configured and the runtime weight (admin.go)
	params    serverParams // backup, maxconn, slowstart, ... (serverparams.go)
	downsBase atomic.Uint64
	// paused is the check state the server had when it went into MAINT
	// (guarded by mu): its stats keep showing the last result, as
	// haproxy's do.
	paused *healthcheck.State

	// checkMu serializes starting and stopping the check, and is taken
	// before mu: a reload restarting the check and the runtime API taking
	// the server out of MAINT at once each stopped the checker it saw,
	// then each started one, and the first started ran on unstopped.
	checkMu sync.Mutex

	mu         sync.Mutex // guards the fields below
	check      checkConf
	checker    *healthcheck.Checker
	stopCheck  context.CancelFunc
	checkDone  chan struct{}
	since      time.Time     // last UP/DOWN change, or creation
	downSince  time.Time     // when it went DOWN; zero while UP
	downtime   time.Duration // total time DOWN before downSince
	lastStatus string        // last check status, for log-health-checks
	lastState  string        // last healthcheck.State.String(), for log-health-checks
	changed    bool          // onChange ran for the result onResult is about to get
	// left is the backend's usable servers right after that change, and
	// emptied says the change took its last one: counted with the change
	// under lb.usableMu, so that of two changes at once (a check's DOWN,
	// the runtime API's MAINT) only one announces the empty backend.
	left    int
	emptied bool
	checkUp bool // UP as of the last check result (or the checker's start), for chkfail
}

func (l *LB) newServer(backend string, s lbconfig.Server) *server {
	srv := &server{lb: l, backend: backend, name: s.Name, addr: s.Addr, abstract: s.Abstract, results: make([]atomic.Uint64, nStatuses), since: l.clk.Now()}
	srv.up.Store(true)
	srv.confirmed.Store(!s.Check)
	return srv
}

// inherit gives s, a server new to this configuration, the state of old,
// the server it replaces under another name at the same address, and
// retires old. old's admin lock is held throughout, so a runtime API
// change of old lands whole before the copy or is refused after it
// (ErrNoServer); old's check is stopped first, so that no result is lost
// between the copy and the swap. Its counters and connections follow once
// the new configuration is in force (takeOver).
func (s *server) inherit(old *server) {
	old.adminMu.Lock()
	defer old.adminMu.Unlock()
	s.weight.inherit(&old.weight, &old.retired)
	old.stop()
	old.mu.Lock()
	defer old.mu.Unlock()
	s.up.Store(old.up.Load())
	s.admin.Store(old.admin.Load())
	s.downsBase.Store(old.downsBase.Load())
	s.confirmed.Store(old.confirmed.Load())
	s.checked.Store(old.checked.Load())
	s.chkfail.Store(old.chkfail.Load())
	for i := range s.results {
		s.results[i].Store(old.results[i].Load())
	}
	s.since, s.downSince, s.downtime = old.since, old.downSince, old.downtime
	s.lastStatus, s.lastState, s.checkUp = old.lastStatus, old.lastState, old.checkUp
	s.paused = old.paused
}

// takeOver moves to s, old's successor (inherit), the connections old
// relays or connects, with their current sessions, then adds old's
// counters to s's. It runs once the configuration that names s is in
// force: a connection that started with the previous one may have picked
// old until then. From the move on, what those connections count (bytes,
// aborts, times) counts on s, so old's counters are final when they are
// added (helper u's stress test lost 851 of 1000 sessions to renaming
// reloads before).
func (s *server) takeOver(old *server) {
	s.lb.moveConns(old, s)
	stats.StoreMax(&s.smax, old.smax.Load())
	for _, c := range []struct{ to, from *atomic.Uint64 }{
		{&s.tot, &old.tot}, {&s.lbtot, &old.lbtot}, {&s.bin, &old.bin}, {&s.bout, &old.bout},
		{&s.econ, &old.econ}, {&s.wretr, &old.wretr},
		{&s.cliAbrt, &old.cliAbrt}, {&s.srvAbrt, &old.srvAbrt}, {&s.eresp, &old.eresp},
	} {
		c.to.Add(c.from.Load())
	}
	s.rate.Inherit(&old.rate)
	s.last.Inherit(&old.last) // the later of the two last sessions
	s.times.Inherit(&old.times)
}

// retire stops the check of a server a reload removed, for good (see
// retired).
func (s *server) retire() {
	s.adminMu.Lock()
	s.weight.mu.Lock()
	s.retired.Store(true)
	s.weight.mu.Unlock()
	s.adminMu.Unlock()
	s.stop()
}

func (s *server) id() string { return s.backend + "/" + s.name }

// startCheck (re)starts the server's health check for conf; the new
// checker starts DOWN when the server is DOWN now. It must be called
// with s.mu not held.
func (s *server) startCheck(conf checkConf) {
	s.checkMu.Lock()
	defer s.checkMu.Unlock()
	s.startCheckLocked(conf)
}

// restartCheck starts the check again with the settings in force (the
// last reload's), as the server leaves MAINT.
func (s *server) restartCheck() {
	s.checkMu.Lock()
	defer s.checkMu.Unlock()
	s.mu.Lock()
	conf := s.check
	s.mu.Unlock()
	s.startCheckLocked(conf)
}

// startCheckLocked is startCheck with s.checkMu held.
func (s *server) startCheckLocked(conf checkConf) {
	s.stopLocked()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.check = conf
	if s.retired.Load() {
		return // the configuration in force no longer has it
	}
	if s.lb.checksOff.Load() {
		return // shut down: Shutdown stopped the checks for good
	}
	if stats.AdminState(s.admin.Load()) == stats.AdminMaint {
		return // checks are paused in MAINT; leaving it starts them
	}
	if !conf.enabled {
		if !s.up.Load() {
			s.setUpLocked(true)
		}
		s.confirmed.Store(true)
		return
	}
	addr := s.addr
	if conf.port != 0 {
		addr = netip.AddrPortFrom(addr.Addr(), uint16(conf.port))
	}
	tlsConf := healthcheckTLS(conf, addr)
	var prober healthcheck.Prober = healthcheck.TCP{Addr: addr, TLS: tlsConf, SendProxy: conf.sendProxy}
	switch {
	case conf.http != "":
		prober = httpProber(conf, addr, tlsConf)
	case conf.tcpCheck != "":
		prober = tcpScript(conf, addr, tlsConf)
	case conf.sslHello:
		prober = healthcheck.SSLHello{Addr: addr, SendProxy: conf.sendProxy}
	case conf.mysqlOn:
		prober = healthcheck.MySQL{Addr: addr, User: conf.mysql.User, Pre41: conf.mysql.Pre41, SendProxy: conf.sendProxy}
	case conf.pgsqlUser != "":
		prober = healthcheck.PgSQL{Addr: addr, User: conf.pgsqlUser, TLS: tlsConf, SendProxy: conf.sendProxy}
	case conf.redis:
		prober = healthcheck.Redis{Addr: addr, TLS: tlsConf, SendProxy: conf.sendProxy, BufSize: conf.bufSize}
	case conf.ext.command != "":
		prober = s.externalProber(conf.ext)
	}
	spec := healthcheck.Spec{Name: s.id(), Inter: conf.inter, Timeout: conf.timeout, Rise: conf.rise, Fall: conf.fall, StartDown: !s.up.Load(),
		FastInter: conf.fastInter, DownInter: conf.downInter, Spread: conf.spread}
	s.checkUp = s.up.Load()
	c := healthcheck.New(spec, prober, healthcheck.Options{
		Clock:    s.lb.clk,
		OnChange: s.onChange,
		OnResult: s.onResult,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.checker, s.stopCheck, s.checkDone = c, cancel, done
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
}

// healthcheckTLS is the TLS client configuration for `check-ssl`, nil
// without it.
func healthcheckTLS(conf checkConf, addr netip.AddrPort) *tls.Config {
	if !conf.ssl {
		return nil
	}
	if conf.srvTLS != "" {
		// Its ca-file, sni, versions and ciphers, as the server's
		// connections have them (tlsconf.Server).
		s := lbconfig.Server{Verify: conf.verify, TLS: &lbconfig.ServerTLS{}}
		if json.Unmarshal([]byte(conf.srvTLS), s.TLS) == nil {
			c := tlsconf.Server(s)
			c.NextProtos = nil // checks speak HTTP/1.x or TCP, without ALPN
			return c
		}
	}
	return healthcheck.TLSConfig(conf.verify, addr)
}

// stop ends the server's health check and waits for it.
func (s *server) stop() {
	s.checkMu.Lock()
	defer s.checkMu.Unlock()
	s.stopLocked()
}

// stopLocked is stop with s.checkMu held.
func (s *server) stopLocked() {
	s.mu.Lock()
	cancel, done := s.stopCheck, s.checkDone
	s.checker, s.stopCheck, s.checkDone = nil, nil, nil
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// onChange applies a checker's verdict: the next connection sees it. It
// is logged (and the LB's health recomputed) by onResult, which the
// checker calls right after, so that the log reads as haproxy's does: the
// check that failed, then the server going DOWN.
func (s *server) onChange(st healthcheck.State) {
	l := s.lb
	l.usableMu.Lock()
	before := l.usableServers(s.backend)
	s.mu.Lock()
	s.setUpLocked(st.Up)
	s.changed = true
	s.mu.Unlock()
	left := l.usableServers(s.backend)
	l.noteUsable(s.backend, left)
	l.usableMu.Unlock()
	s.mu.Lock()
	s.left, s.emptied = left, before > 0 && left == 0
	s.mu.Unlock()
	if !st.Up && s.params.shutdownOnDown.Load() {
		l.closeServerDown(s)
	}
}

// logChange logs an UP/DOWN change and recomputes the LB's health. It
// sends haproxy's line to the backend's log targets, and "backend B has
// no server available!" when the change emptied the backend; withCheck
// puts the check's account in the line (haproxy leaves it out with
// log-health-checks, whose line came just before). left is the backend's
// usable servers after the change.
func (s *server) logChange(st healthcheck.State, withCheck bool, left int, emptied bool) {
	l := s.lb
	if to := l.backendLog(s.backend); to != nil {
		// haproxy counts the usable servers ("active"), and a drained
		// server's change is a notice followed by "remains in forced
		// drain mode." (measured, haproxy 2.6.12); the backend has no
		// server left only when this one was usable.
		drained := stats.AdminState(s.admin.Load()) == stats.AdminDrain
		level := lbconfig.LevelNotice
		if !st.Up && !drained {
			level = lbconfig.LevelAlert
		}
		l.sendLog(to, level, logging.ServerStateLine(s.id(), st, withCheck, left, s.cur.Load()))
		switch {
		case drained:
			l.sendLog(to, lbconfig.LevelNotice, []byte("Server "+s.id()+" remains in forced drain mode."))
		case !st.Up && emptied:
			l.sendLog(to, lbconfig.LevelEmerg, logging.NoServerLine(s.backend))
		}
	}
	r := st.Last
	state := "DOWN"
	if st.Up {
		state = "UP"
	}
	msg := fmt.Sprintf("Server %s is %s, reason: %s", s.id(), state, healthcheck.Description(r.Status))
	args := []any{"backend", s.backend, "server", s.name, "addr", s.addrString(), "state", state, "check_status", r.Status, "check_duration", r.Duration}
	if r.Code != 0 {
		args = append(args, "code", r.Code)
	}
	if r.Info != "" {
		args = append(args, "info", r.Info)
	}
	args = append(args, "servers_up", l.upServers(s.backend))
	if st.Up {
		l.log.Info(msg, args...)
	} else {
		l.log.Warn(msg, args...)
	}
	l.recomputeHealth()
}

func (s *server) setUpLocked(up bool) {
	now := s.lb.clk.Now()
	if s.up.Load() == up {
		return
	}
	s.up.Store(up)
	s.since = now
	if up {
		s.downtime += now.Sub(s.downSince)
		s.downSince = time.Time{}
		s.cameUp(now)
	} else {
		s.downSince = now
		// Connects in progress to it end: those clients try another
		// server at once.
		s.lb.failConnects(s)
	}
}

// onResult counts a check result and, with `option log-health-checks`,
// logs it when the check status changed or the server's health moved (a
// step of fall or rise, "UP 1/2", "DOWN 2/3", or a change to UP or DOWN):
// haproxy logs every failed check unless the server is already fully DOWN
// and every passed one unless it is already fully UP, so an operator
// sees a server on its way back, check by check.
func (s *server) onResult(r healthcheck.Result, st healthcheck.State) {
	if i := statusIndex(r.Status); i >= 0 {
		s.results[i].Add(1)
	}
	first := !s.checked.Swap(true)
	if r.OK && !s.confirmed.Load() {
		s.confirmed.Store(true)
		first = true
	}
	if first {
		s.lb.recomputeHealth()
	}
	s.mu.Lock()
	if !r.OK && s.checkUp {
		s.chkfail.Add(1)
	}
	s.checkUp = st.Up
	prev, prevState, state := s.lastStatus, s.lastState, st.String()
	s.lastStatus, s.lastState = r.Status, state
	logHC := s.check.logHealthChk
	logIt := logHC && (prev != r.Status || prevState != state)
	changed, left, emptied := s.changed, s.left, s.emptied
	s.changed = false
	s.mu.Unlock()
	if changed {
		defer s.logChange(st, !logHC, left, emptied)
	}
	if !logIt {
		return
	}
	s.lb.sendLog(s.lb.backendLog(s.backend), lbconfig.LevelNotice, logging.HealthCheckLine(s.id(), r, st))
	verdict := "failed"
	if r.OK {
		verdict = "succeeded"
	}
	args := []any{"backend", s.backend, "server", s.name, "check_status", r.Status, "check_duration", r.Duration, "status", state}
	if r.Code != 0 {
		args = append(args, "code", r.Code)
	}
	if r.Info != "" {
		args = append(args, "info", r.Info)
	}
	s.lb.log.Info(fmt.Sprintf("Health check for server %s %s, reason: %s", s.id(), verdict, healthcheck.Description(r.Status)), args...)
}

// serverView is a consistent read of a server's check state.
type serverView struct {
	check     checkConf
	state     healthcheck.State
	hasState  bool
	since     time.Time
	downtime  time.Duration
	downSince time.Time
}

func (s *server) pausedState() *healthcheck.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused
}

func (s *server) view() serverView {
	s.mu.Lock()
	v := serverView{check: s.check, since: s.since, downtime: s.downtime, downSince: s.downSince}
	c := s.checker
	s.mu.Unlock()
	if c != nil {
		v.state, v.hasState = c.State(), true
	} else if p := s.pausedState(); p != nil {
		v.state, v.hasState = *p, true
	}
	return v
}

// addrString is the server's address as the status and logs show it:
// IP:PORT, or abns@NAME.
func (s *server) addrString() string {
	if s.abstract != "" {
		return "abns@" + s.abstract
	}
	return s.addr.String()
}
