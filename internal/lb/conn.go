package lb

import (
	"net/netip"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
)

// connState is where a connection is in its life. It changes only under
// its loop's lock.
type connState uint8

const (
	stNew        connState = iota // admitted, not yet on its loop
	stConnecting                  // a connect to a server is in progress
	stRelaying                    // relaying both ways
	stClosed                      // both sockets closed, slot released
)

// conn is one client connection, from admission to close. The frontend
// owns the queue fields; everything from state on belongs to the loop
// that relays it (loop_linux.go) and is guarded by that loop's lock.
type conn struct {
	fe   *frontend
	cfd  int            // the client's socket
	peer netip.AddrPort // the client's address

	// queue links, guarded by fe.mu
	prev, next *conn
	queued     bool
	qtimer     clock.Timer
	lp         *loop // set when admitted (not while queued)

	state   connState
	cfg     *feConfig // the configuration the connection started with
	srv     *server   // the server connected or being connected to
	picked  *server   // the server of the last attempt, connected or not
	tried   uint64    // servers tried, as pool bits
	attempt int       // connect attempts made
	ctimer  *time.Timer

	relay relayState // the sockets and both directions (per OS)

	// idle timeout, guarded by the loop's lock too
	moved      uint64 // bytes relayed both ways
	last       uint8  // the direction that moved bytes last: lastUp, lastDown
	timer      clock.Timer
	every      time.Duration // how often checkIdle runs
	lastSeen   uint64
	lastActive time.Time

	// The connection log (connlog.go), when the frontend keeps one: set
	// at accept, then guarded by the loop's lock.
	log      *connLog
	acceptAt time.Time      // accepted
	startAt  time.Time      // left the queue, started to connect
	connAt   time.Time      // connected
	local    netip.AddrPort // the address the client connected to, if the format shows it
	up, down uint64         // bytes from the client, from the server
	term     [2]byte        // termination state, when something else than an end of file ended it
	timedOut bool           // the last connect attempt timed out
}

// checkIdle runs every cn.every (half the smallest timeout that may
// apply) while the connection is open, and closes it when no byte has
// moved for the timeout that applies to the side expected to speak next
// (feConfig.idleFor).
func (cn *conn) checkIdle() {
	lp := cn.lp
	lp.mu.Lock()
	if cn.state != stRelaying {
		lp.mu.Unlock()
		return
	}
	now := cn.fe.lb.clk.Now()
	if cn.moved != cn.lastSeen {
		cn.lastSeen, cn.lastActive = cn.moved, now
	} else if idle := cn.cfg.idleFor(cn.last); idle > 0 && now.Sub(cn.lastActive) >= idle {
		cn.fe.lb.log.Debug("closing an idle connection", "frontend", cn.fe.name, "client", cn.peer.String(), "idle", idle)
		cn.fe.lb.idleCloses.Add(1)
		cn.term = [2]byte{'c', 'D'} // the client was to speak next
		if cn.last == lastUp {
			cn.term[0] = 's'
		}
		lp.closeLocked(cn)
		lp.unlock()
		return
	}
	cn.timer.Reset(cn.every)
	lp.mu.Unlock()
}
