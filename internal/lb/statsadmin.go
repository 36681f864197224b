package lb

import "github.com/vipstack/vipstack/internal/lb/stats"

// The stats page's admin form (`stats admin`) drives the same server
// changes as the runtime API (web.StatsAdmin).

func (c webCore) SetServerAdmin(backend, name string, st stats.AdminState) error {
	return c.l.SetServerAdmin(backend, name, st)
}

func (c webCore) ShutdownServerSessions(backend, name string) (int, error) {
	return c.l.ShutdownServerSessions(backend, name)
}
