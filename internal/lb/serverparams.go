package lb

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// serverParams are a server's settings beyond its checks (haproxy's
// backup, maxconn, maxqueue, slowstart, on-marked-down, id), set by each
// Apply.
type serverParams struct {
	backup         atomic.Bool
	maxconn        atomic.Int64
	maxqueue       atomic.Int64
	slowstart      atomic.Int64 // nanoseconds
	shutdownOnDown atomic.Bool
	id             atomic.Int64
	sendProxy      atomic.Int32 // PROXY protocol version, 0 for none (proxy_linux.go)
	// upAt is when the server last came UP after being DOWN (unix
	// nanoseconds), 0 when it has been UP since it was created: haproxy
	// applies slowstart to a server coming back, not at start.
	upAt atomic.Int64
}

func (s *server) configure(sc lbconfig.Server) {
	p := &s.params
	p.backup.Store(sc.Backup)
	p.maxconn.Store(int64(sc.MaxConn))
	p.maxqueue.Store(int64(sc.MaxQueue))
	p.slowstart.Store(int64(sc.SlowStart))
	p.shutdownOnDown.Store(sc.ShutdownOnDown)
	p.id.Store(int64(sc.ID))
	p.sendProxy.Store(int32(sc.SendProxy))
	if sc.Unresolved {
		// init-addr none: in maintenance until its resolvers find an
		// address (resolve.go), as haproxy's "MAINT (resolution)".
		s.admin.Store(int32(stats.AdminMaint))
	}
}

// full reports whether s has as many connections as its maxconn.
func (s *server) full() bool {
	m := s.params.maxconn.Load()
	return m > 0 && s.cur.Load() >= m
}

// slowWeight is weight w as slowstart ramps it at now: w times the part
// of slowstart elapsed since the server came UP, rounded up, as haproxy's
// server_recalc_eweight does.
func (s *server) slowWeight(w int, now time.Time) int {
	ss := s.params.slowstart.Load()
	at := s.params.upAt.Load()
	if ss <= 0 || at == 0 || w <= 0 {
		return w
	}
	elapsed := now.UnixNano() - at
	if elapsed >= ss {
		return w
	}
	if elapsed < 0 {
		elapsed = 0
	}
	return int((int64(w)*elapsed + ss - 1) / ss)
}

// cameUp records, for slowstart, that s came UP after being DOWN.
func (s *server) cameUp(now time.Time) { s.params.upAt.Store(now.UnixNano()) }

// tierSkip adds to skip the servers that may not take a connection now
// because of `backup`: the backup servers while any other server is
// usable; otherwise the other servers, and, without `option allbackups`,
// every backup server but the first usable one.
func (p *pool) tierSkip(skip uint64) uint64 {
	if !p.hasBackup.Load() {
		return skip
	}
	var backups, actives uint64
	activeUp := false
	first := -1
	for i, s := range p.servers {
		if s.params.backup.Load() {
			backups |= bit(i)
			if first < 0 && s.usable() {
				first = i
			}
			continue
		}
		actives |= bit(i)
		activeUp = activeUp || s.usable()
	}
	switch {
	case activeUp:
		return skip | backups
	case p.allBackups.Load() || first < 0:
		return skip | actives
	}
	return skip | actives | (backups &^ bit(first))
}

// setTiers records whether the pool has backup servers.
func (p *pool) setTiers(b lbconfig.Backend) {
	has := slices.ContainsFunc(b.Servers, func(s lbconfig.Server) bool { return s.Backup })
	p.hasBackup.Store(has)
	p.allBackups.Store(b.AllBackups)
}

// waitQueue holds the clients of a backend waiting for a server below
// its maxconn, first come first served, as haproxy's backend queue.
type waitQueue struct {
	mu    sync.Mutex
	conns []*conn
}

// add queues cn unless the queue holds limit clients already (limit 0:
// no cap).
func (q *waitQueue) add(cn *conn, limit int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if limit > 0 && len(q.conns) >= limit {
		return false
	}
	q.conns = append(q.conns, cn)
	return true
}

// remove takes cn out of the queue; false when it was not there (a freed
// slot took it meanwhile).
func (q *waitQueue) remove(cn *conn) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.Index(q.conns, cn)
	if i < 0 {
		return false
	}
	q.conns = slices.Delete(q.conns, i, i+1)
	return true
}

// pop takes the first client, nil when none waits.
func (q *waitQueue) pop() *conn {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.conns) == 0 {
		return nil
	}
	cn := q.conns[0]
	q.conns = slices.Delete(q.conns, 0, 1)
	return cn
}

// len is how many clients wait.
func (q *waitQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.conns)
}

// fullOnly reports whether the pool has a server that would take a
// connection but for its maxconn: then a client waits rather than fails.
// limit is the queue's cap: the sum of the full servers' maxqueue, 0 (no
// cap) when one of them has none.
func (p *pool) fullOnly(skip uint64) (bool, int) {
	skip = p.tierSkip(skip)
	any, limit := false, 0
	for i, s := range p.servers {
		if skip&bit(i) != 0 || !s.usable() || !s.full() {
			continue
		}
		if !any {
			any = true
		}
		if mq := int(s.params.maxqueue.Load()); mq > 0 && limit >= 0 {
			limit += mq
		} else {
			limit = -1
		}
	}
	return any, max(limit, 0)
}

// mysqlOf is b's mysql-check, its zero value when b has none.
func mysqlOf(b lbconfig.Backend) lbconfig.MySQLCheck {
	if b.MySQLCheck == nil {
		return lbconfig.MySQLCheck{}
	}
	return *b.MySQLCheck
}
