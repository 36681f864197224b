package lb

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/vipstack/vipstack/internal/healthcheck"
	"github.com/vipstack/vipstack/internal/lb/logging"
	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Errors of SetServerAdmin, SetServerWeight and ShutdownServerSessions.
var (
	ErrNoBackend = errors.New("no such backend")
	ErrNoServer  = errors.New("no such server")
	// ErrStaticWeight: the backend balances by source or static-rr,
	// whose slot map is built from the configured weights (haproxy's
	// static algorithms); a server's weight can only go to 0 or back to
	// its configured weight.
	ErrStaticWeight = errors.New("the backend's balance (source or static-rr) is a static algorithm: a server's weight may only be 0 or its configured weight")
)

// MaxWeight is the largest server weight, haproxy's.
const MaxWeight = 256

// serverWeight is a server's weight: the configuration's (haproxy's
// initial weight, iweight) and the one in force (uweight), which the
// runtime API changes.
type serverWeight struct {
	mu      sync.Mutex // guards set and initial
	set     bool       // configure ran once
	initial int
	cur     atomic.Int32
}

// configure sets the configuration's weight w. A server new to the LB
// starts at w; a server kept over a reload keeps a weight set at runtime
// unless its configured weight changed: the new file's word wins then.
// It reports whether a runtime weight was dropped.
func (w *serverWeight) configure(n int) (dropped bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.set && w.initial == n {
		return false
	}
	dropped = w.set && int(w.cur.Load()) != w.initial
	w.set, w.initial = true, n
	w.cur.Store(int32(n))
	return dropped
}

// inherit copies old's weights (a renamed server at the same address)
// and sets retired, old's, under old's lock: a weight set on old after
// the copy is refused, not lost.
func (w *serverWeight) inherit(old *serverWeight, retired *atomic.Bool) {
	old.mu.Lock()
	set, initial, cur := old.set, old.initial, old.cur.Load()
	retired.Store(true)
	old.mu.Unlock()
	w.mu.Lock()
	w.set, w.initial = set, initial
	w.cur.Store(cur)
	w.mu.Unlock()
}

// get returns the weight in force and the configured one.
func (w *serverWeight) get() (cur, initial int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return int(w.cur.Load()), w.initial
}

// findServer returns the pool and server name of backend in the
// configuration in force.
func (l *LB) findServer(backend, name string) (*pool, *server, error) {
	v := l.view.Load()
	for _, p := range v.pools {
		if p.name != backend {
			continue
		}
		for _, s := range p.servers {
			if s.name == name {
				return p, s, nil
			}
		}
		return nil, nil, fmt.Errorf("server %s/%s: %w", backend, name, ErrNoServer)
	}
	return nil, nil, fmt.Errorf("backend %s: %w", backend, ErrNoBackend)
}

// SetServerWeight sets the weight in force of server name of backend to
// w (0 to MaxWeight): the next connection is balanced by it, in every
// algorithm. Weight 0 takes the server out of new selections, as in
// haproxy; its established connections go on. In a backend balanced by
// source only 0 and the configured weight are accepted (ErrStaticWeight),
// as haproxy accepts for its static algorithms. A reload keeps the weight
// while the server keeps its backend, name and address and the file's
// weight for it does not change (haproxy forgets it on every reload).
func (l *LB) SetServerWeight(backend, name string, w int) error {
	if w < 0 || w > MaxWeight {
		return fmt.Errorf("weight %d: expected 0 to %d", w, MaxWeight)
	}
	p, s, err := l.findServer(backend, name)
	if err != nil {
		return err
	}
	return s.setWeight(p.balance, w)
}

// setWeight is SetServerWeight for s, a server of a backend balanced by
// balance. A server a reload retired meanwhile gets ErrNoServer.
func (s *server) setWeight(balance lbconfig.Balance, w int) error {
	s.weight.mu.Lock()
	if s.retired.Load() {
		s.weight.mu.Unlock()
		return fmt.Errorf("server %s: %w", s.id(), ErrNoServer)
	}
	if (balance == lbconfig.Source || balance == lbconfig.StaticRR) && w != 0 && w != s.weight.initial {
		s.weight.mu.Unlock()
		return fmt.Errorf("server %s: weight %d: %w", s.id(), w, ErrStaticWeight)
	}
	// The change and the backend's usable servers before and after it
	// are counted under usableMu, as setAdmin and a check's verdict count
	// theirs (see server.left): of two changes at once, only the one that
	// takes the last usable server says so.
	l := s.lb
	l.usableMu.Lock()
	before := l.usableServers(s.backend)
	old := s.weight.cur.Swap(int32(w))
	after := l.usableServers(s.backend)
	l.noteUsable(s.backend, after)
	l.usableMu.Unlock()
	s.weight.mu.Unlock()
	if int(old) != w {
		l.log.Info("server weight changed", "backend", s.backend, "server", s.name, "from", old, "to", w)
	}
	// haproxy 2.6.12 sends "backend be has no server available!" (emerg)
	// when `set weight` to 0 takes the last usable server, and nothing
	// for a weight change otherwise (measured).
	if before > 0 && after == 0 {
		if to := l.backendLog(s.backend); to != nil {
			l.sendLog(to, lbconfig.LevelEmerg, logging.NoServerLine(s.backend))
		}
	}
	l.recomputeHealth()
	return nil
}

// ServerWeight returns the weight in force of server name of backend and
// its configured weight.
func (l *LB) ServerWeight(backend, name string) (cur, initial int, err error) {
	_, s, err := l.findServer(backend, name)
	if err != nil {
		return 0, 0, err
	}
	cur, initial = s.weight.get()
	return cur, initial, nil
}

// ShutdownServerSessions closes every established connection of server
// name of backend (and every connect in progress to it), both sockets,
// and returns how many it closed. As with haproxy's `shutdown sessions
// server`, the counters move as for connections that ended by
// themselves: the current sessions drop, and no error or abort is
// counted (measured with haproxy 2.6.12: scur, bin, bout and ttime move,
// eresp, cli_abrt, srv_abrt do not).
func (l *LB) ShutdownServerSessions(backend, name string) (int, error) {
	_, s, err := l.findServer(backend, name)
	if err != nil {
		return 0, err
	}
	n := l.closeServer(s)
	if n > 0 {
		l.log.Info("server's connections shut down from the runtime API", "backend", backend, "server", name, "connections", n)
	}
	return n, nil
}

// SetServerAdmin sets the administrative state of server name of backend
// in the configuration in force. The next connection sees it. A server
// keeps its state over reloads while its backend, name and address stay
// (haproxy forgets it on reload unless it is told to load a server-state
// file).
func (l *LB) SetServerAdmin(backend, name string, st stats.AdminState) error {
	if st < stats.AdminReady || st > stats.AdminMaint {
		return fmt.Errorf("admin state %d: expected ready, drain or maint", st)
	}
	_, s, err := l.findServer(backend, name)
	if err != nil {
		return err
	}
	if !s.setAdmin(st) {
		return fmt.Errorf("server %s/%s: %w", backend, name, ErrNoServer)
	}
	l.recomputeHealth()
	return nil
}

// setAdmin moves the server to st: into MAINT its check stops and it
// counts as DOWN (one more down in chkdown, as haproxy counts it); out of
// MAINT it is UP at once and its check starts again. It reports false,
// changing nothing, for a server a reload retired meanwhile.
func (s *server) setAdmin(st stats.AdminState) bool {
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	if s.retired.Load() {
		return false
	}
	old := stats.AdminState(s.admin.Load())
	if old == st {
		return true
	}
	// The move and the backend's usable servers before and after it are
	// counted under usableMu, with a check's verdict kept out meanwhile
	// (see server.left). Into MAINT or DRAIN the server stops being
	// usable with the store; out of MAINT, with its return to UP.
	l := s.lb
	l.usableMu.Lock()
	change := logging.AdminChange{Backend: s.backend, ID: s.id(), From: old, To: st, Up: s.up.Load(),
		Before: l.usableServers(s.backend)}
	if h := l.opts.hooks; h != nil && h.adminCounted != nil {
		h.adminCounted(s)
	}
	s.admin.Store(int32(st))
	if old == stats.AdminMaint {
		s.mu.Lock()
		if s.paused != nil {
			s.downsBase.Add(s.paused.Downs)
			s.paused = nil
		}
		s.setUpLocked(true)
		s.mu.Unlock()
	}
	change.After = l.usableServers(s.backend)
	l.noteUsable(s.backend, change.After)
	l.usableMu.Unlock()
	switch {
	case st == stats.AdminMaint:
		s.mu.Lock()
		c := s.checker
		s.mu.Unlock()
		var last *healthcheck.State
		if c != nil {
			st := c.State()
			last = &st
		}
		s.stop()
		s.mu.Lock()
		s.paused = last
		if s.up.Load() {
			s.downsBase.Add(1)
		}
		s.setUpLocked(false)
		s.mu.Unlock()
	}
	s.lb.log.Info("server administrative state changed", "backend", s.backend, "server", s.name,
		"from", old.String(), "to", st.String())
	if to := s.lb.backendLog(s.backend); to != nil {
		change.Sessions = s.cur.Load()
		for _, ln := range logging.AdminLines(change) {
			s.lb.sendLog(to, ln.Level, []byte(ln.Msg))
		}
	}
	// Out of MAINT, the check starts once the move's lines are sent: its
	// first result (a DOWN line) comes after "is UP/READY (leaving forced
	// maintenance).", as haproxy logs them (a check that started first
	// could log before them: TestSyslogMatchesHaproxy saw it once).
	if old == stats.AdminMaint {
		s.restartCheck()
		if h := l.opts.hooks; h != nil && h.checkRestarted != nil {
			h.checkRestarted(s)
		}
	}
	return true
}

// usable reports whether the server may take a new connection: UP,
// ready and of a weight above 0 (haproxy's srv_is_usable).
func (s *server) usable() bool {
	return s.up.Load() && stats.AdminState(s.admin.Load()) == stats.AdminReady && s.weight.cur.Load() > 0
}
