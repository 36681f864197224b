package lb

import (
	"net/netip"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/lb/logging"
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
	tls  bool           // accepted on an ssl bind (tlsfront.go): the socket carries its plaintext

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
	last       uint8 // the direction that moved bytes last: lastUp, lastDown
	timer      clock.Timer
	every      time.Duration // how often checkIdle runs
	lastActive time.Time     // when bytes last moved (the loop's batch time)

	// The connection log (logging.ConnLog), when the frontend keeps one: set
	// at accept, then guarded by the loop's lock.
	log      *logging.ConnLog
	acceptAt time.Time      // accepted
	startAt  time.Time      // left the queue, started to connect
	connAt   time.Time      // connected
	local    netip.AddrPort // the address the client connected to, if the format shows it
	source   netip.AddrPort // the balancer's address on the last server connection, if the format shows it (%bi %bp)
	up, down uint64         // bytes from the client, from the server
	term     [2]byte        // termination state, when something else than an end of file ended it
	timedOut bool           // the last connect attempt timed out

	// srvQueued: waiting in the backend's queue for a server below its
	// maxconn (queue_linux.go), since srvQueuedAt, until qwait fires.
	srvQueued   bool
	srvQueuedAt time.Time
	qwait       clock.Timer
}

// checkIdle closes the connection when no byte has moved for the timeout
// that applies to the side expected to speak next (feConfig.idleFor), at
// that moment, as haproxy does. Otherwise it runs again when that timeout
// would expire, or after cn.every (half the smallest timeout that may
// apply) if that comes first: the other side may speak meanwhile, and its
// timeout may be shorter.
func (cn *conn) checkIdle() {
	lp := cn.lp
	lp.mu.Lock()
	if cn.state != stRelaying {
		lp.mu.Unlock()
		return
	}
	next := cn.every
	if idle := cn.cfg.idleOf(cn); idle > 0 {
		left := idle - cn.fe.lb.clk.Now().Sub(cn.lastActive)
		if left <= 0 {
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
		next = min(left, cn.every)
	}
	cn.timer.Reset(next)
	lp.mu.Unlock()
}
