package lb

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/vipstack/vipstack/internal/healthcheck"
)

// AdminState is a server's administrative state, set by an operator (the
// runtime API's `set server ... state`), apart from what its health check
// says.
type AdminState int32

const (
	// AdminReady: the server takes connections while it is UP.
	AdminReady AdminState = iota
	// AdminDrain: the server takes no new connection; its established
	// ones run to their end, and its health check goes on (haproxy's
	// DRAIN).
	AdminDrain
	// AdminMaint: the server takes no new connection and its health
	// check is paused; its established connections run to their end
	// (haproxy's MAINT). Leaving it, the server is UP at once and the
	// check starts again at the edge of UP, as in haproxy: its first
	// failure starts it on the way down.
	AdminMaint
)

func (a AdminState) String() string {
	switch a {
	case AdminReady:
		return "ready"
	case AdminDrain:
		return "drain"
	case AdminMaint:
		return "maint"
	}
	return "AdminState(" + strconv.Itoa(int(a)) + ")"
}

// MarshalText writes the state as its name ("ready", "drain", "maint").
func (a AdminState) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads a state's name, so that a status written as JSON
// (vipstack node's /status) reads back.
func (a *AdminState) UnmarshalText(b []byte) error {
	for st := AdminReady; st <= AdminMaint; st++ {
		if string(b) == st.String() {
			*a = st
			return nil
		}
	}
	return fmt.Errorf("admin state %q: expected ready, drain or maint", b)
}

// Errors of SetServerAdmin.
var (
	ErrNoBackend = errors.New("no such backend")
	ErrNoServer  = errors.New("no such server")
)

// SetServerAdmin sets the administrative state of server name of backend
// in the configuration in force. The next connection sees it. A server
// keeps its state over reloads while its backend, name and address stay
// (haproxy forgets it on reload unless it is told to load a server-state
// file).
func (l *LB) SetServerAdmin(backend, name string, st AdminState) error {
	if st < AdminReady || st > AdminMaint {
		return fmt.Errorf("admin state %d: expected ready, drain or maint", st)
	}
	v := l.view.Load()
	for _, p := range v.pools {
		if p.name != backend {
			continue
		}
		for _, s := range p.servers {
			if s.name == name {
				s.setAdmin(st)
				l.recomputeHealth()
				return nil
			}
		}
		return fmt.Errorf("server %s/%s: %w", backend, name, ErrNoServer)
	}
	return fmt.Errorf("backend %s: %w", backend, ErrNoBackend)
}

// setAdmin moves the server to st: into MAINT its check stops and it
// counts as DOWN (one more down in chkdown, as haproxy counts it); out of
// MAINT it is UP at once and its check starts again.
func (s *server) setAdmin(st AdminState) {
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	old := AdminState(s.admin.Load())
	if old == st {
		return
	}
	s.admin.Store(int32(st))
	switch {
	case st == AdminMaint:
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
	case old == AdminMaint:
		s.mu.Lock()
		if s.paused != nil {
			s.downsBase.Add(s.paused.Downs)
			s.paused = nil
		}
		s.setUpLocked(true)
		conf := s.check
		s.mu.Unlock()
		s.startCheck(conf)
	}
	s.lb.log.Info("server administrative state changed", "backend", s.backend, "server", s.name,
		"from", old.String(), "to", st.String())
}

// usable reports whether the server may take a new connection: UP and
// ready.
func (s *server) usable() bool {
	return s.up.Load() && AdminState(s.admin.Load()) == AdminReady
}

// ProxyID is haproxy's id of the section (frontend, backend or listen)
// called name, as the stats number it; 0 when there is none.
func (snap Snapshot) ProxyID(name string) int {
	for _, p := range snap.proxyOrder() {
		if p.name == name {
			return p.iid
		}
	}
	return 0
}

// StatFilter selects the stats lines of haproxy's `show stat` arguments.
type StatFilter struct {
	ProxyID  int  // -1 or 0: every section
	Types    int  // bit mask: 1 frontends, 2 backends, 4 servers; -1: all
	ServerID int  // -1 or 0: every server
	UpOnly   bool // servers UP (or going down) only, haproxy's "up"
	NoMaint  bool // no server in MAINT, haproxy's "no-maint"
}

// Filter returns snap with its stats lines (CSV and JSON) limited to f.
func (snap Snapshot) Filter(f StatFilter) Snapshot {
	snap.filter = &f
	if f.UpOnly {
		snap.hideDown = true
	}
	return snap
}

// keeps reports whether a stats line of section iid, of type bit typ
// (1, 2, 4) and server id sid passes the filter.
func (f *StatFilter) keeps(iid, typ, sid int) bool {
	if f == nil {
		return true
	}
	if f.ProxyID > 0 && iid != f.ProxyID {
		return false
	}
	if f.Types != -1 && f.Types&typ == 0 {
		return false
	}
	if typ == 4 && f.ServerID > 0 && sid != f.ServerID {
		return false
	}
	return true
}
