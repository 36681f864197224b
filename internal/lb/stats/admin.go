package stats

import (
	"fmt"
	"strconv"
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
