package lb

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vipstack/vipstack/internal/lb/logging"
	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// feConfig is what a connection needs from the configuration; a
// connection keeps the one it started with.
type feConfig struct {
	pool    *pool // nil: no backend, connections are closed
	retries int
	// Inactivity timeouts of a relayed connection (see idleFor); 0: none.
	tunnel, client, server time.Duration
	queueTimeout           time.Duration // 0: wait for a slot forever
	// connectTimeout bounds each connect attempt; 0: none.
	connectTimeout time.Duration
	// log is the connection log; nil: none.
	log *logging.ConnLog
	// clientFin and serverFin replace client and server once that side
	// has closed its half (see idleFor); 0: none.
	clientFin, serverFin time.Duration
	// cliKeepAlive and srvKeepAlive turn SO_KEEPALIVE on for the
	// client's and the server's socket.
	cliKeepAlive, srvKeepAlive bool
	// abortOnClose drops a client that ended its side while queued or
	// connecting even when it sent bytes (`option abortonclose`).
	abortOnClose bool
	// tcpReq are the frontend's tcp-request rules (tcprequest.go); nil:
	// none.
	tcpReq *lbconfig.TCPRequest
}

// Which direction last moved bytes on a connection: the side that spoke
// last, whose peer is expected to answer.
const (
	lastNone uint8 = iota
	lastUp         // client to server: waiting for the server
	lastDown       // server to client: waiting for the client
)

// idleFor is the inactivity timeout of a connection whose last bytes
// went last (lastNone, lastUp, lastDown), as haproxy 2.6 applies them in
// mode tcp: `timeout tunnel` for any silence when set; otherwise `timeout
// server` while the client spoke last (its answer may take that long),
// `timeout client` while the server spoke last, and the smaller of the two
// before any byte. 0: none.
func (c *feConfig) idleFor(last uint8) time.Duration {
	switch {
	case c.tunnel > 0:
		return c.tunnel
	case last == lastUp:
		return c.server
	case last == lastDown:
		return c.client
	}
	return minNonZero(c.client, c.server)
}

// idleEvery is how often a relayed connection's inactivity is checked:
// half the smallest timeout that may apply to it; 0 when none does.
func (c *feConfig) idleEvery() time.Duration {
	if c.tunnel > 0 {
		return minNonZero(minNonZero(c.tunnel, c.clientFin), c.serverFin) / 2
	}
	return minNonZero(minNonZero(c.client, c.server), minNonZero(c.clientFin, c.serverFin)) / 2
}

// frontend admits connections, up to maxconn at once, and queues the
// rest. It outlives reloads while its name stays.
//
// A connection takes and gives back its slot with atomics alone while
// nobody waits in the queue and the frontend is not draining: both event
// loops admit and release on every new connection, and a lock they
// shared there made one loop's thread sleep whenever the other held it.
// The queue and the drain are under mu. The two meet like this: a client
// that is queued is counted in qcur before the queue is served once more
// (serveQueueLocked), and a release gives its slot back before it looks
// at qcur; with sequentially consistent atomics at least one of the two
// sees the other, so a free slot and a waiting client never both stay.
// drain and a fast admit meet the same way over draining and cur.
type frontend struct {
	lb   *LB
	name string
	cfg  atomic.Pointer[feConfig]

	cur      atomic.Int64 // slots taken: admitted and not finished
	maxconn  atomic.Int64 // 0: unlimited; stored under mu
	qcur     atomic.Int64 // queue length, stored under mu
	draining atomic.Bool  // no new clients; set under mu
	// aborting tells loops to close any connection of the frontend
	// they are handed from now on (closeAll).
	aborting atomic.Bool

	mu      sync.Mutex    // guards the fields below
	queue   connList      // waiting for a slot, oldest first
	space   chan struct{} // closed when the full queue has room again
	drained chan struct{} // closed when draining and nothing is left

	smax, qmax                           atomic.Int64
	tot, bin, bout, noServer, queueDrops atomic.Uint64
	// deniedConn, silentDrops and deniedReq count the clients
	// tcp-request connection rules rejected and dropped, and content
	// rules rejected (stats.FrontendStats).
	deniedConn, silentDrops, deniedReq atomic.Uint64
	// rate counts the clients taken, with tot: haproxy's session and
	// connection rates (rates.go).
	rate stats.RateCounter
}

func newFrontend(l *LB, name string) *frontend {
	return &frontend{lb: l, name: name, drained: make(chan struct{})}
}

// connList is an intrusive doubly linked list of connections.
type connList struct {
	head, tail *conn
	n          int
}

func (q *connList) push(c *conn) {
	c.prev, c.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = c
	} else {
		q.head = c
	}
	q.tail = c
	q.n++
}

func (q *connList) remove(c *conn) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		q.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		q.tail = c.prev
	}
	c.prev, c.next = nil, nil
	q.n--
}

// queueLimit bounds the queue: as many waiting clients as maxconn.
func (f *frontend) queueLimit() int { return int(max(f.maxconn.Load(), 1)) }

// tryAcquire takes a slot if maxconn allows one and returns the slots
// taken with it, or 0. The caller counts a slot it keeps in smax.
func (f *frontend) tryAcquire() int64 {
	for {
		a, m := f.cur.Load(), f.maxconn.Load()
		if m > 0 && a >= m {
			return 0
		}
		if f.cur.CompareAndSwap(a, a+1) {
			return a + 1
		}
	}
}

// admit takes a new client connection, accepted by the event loop lp
// (whose lock is held): it starts serving it at once when a slot is
// free, or queues it. When the queue is full it returns a channel that
// is closed once there is room again; the accept loop waits on it, so
// further clients wait in the kernel's backlog.
//
// The client is relayed on lp unless pickLoop finds lp too loaded next to
// another loop.
//
// The frontend's tcp-request connection rules run first (tcprequest.go):
// a client they turn away is closed here.
func (f *frontend) admit(fd int, peer netip.AddrPort, lp *loop) <-chan struct{} {
	var local netip.AddrPort
	if tr := f.cfg.Load().tcpReq; tr != nil && !f.draining.Load() {
		var ok bool
		if peer, local, ok = f.tcpConnRules(tr, fd, peer); !ok {
			return nil
		}
	}
	return f.admitFrom(fd, peer, local, false, lp)
}

// admitFrom is admit after the connection rules, for a client whose
// address set-src may have changed: local is the address it connected
// to (or set-dst's); invalid: the socket's own. tls says the socket is
// an ssl bind's plaintext (tlsfront.go), local the TLS socket's.
func (f *frontend) admitFrom(fd int, peer, local netip.AddrPort, tls bool, lp *loop) <-chan struct{} {
	if f.draining.Load() {
		closeFD(fd)
		return nil
	}
	cn := &conn{fe: f, cfd: fd, peer: peer, local: local, tls: tls}
	if lp != nil && !tls {
		// The accept time, for show sess: the loop's clock reading of
		// this batch costs nothing; a connection log reads the clock
		// itself below.
		cn.acceptAt = lp.now
	}
	if cl := f.cfg.Load().log; cl != nil {
		if cl.NeedLocal && !local.IsValid() {
			cn.local = relay.LocalAddr(fd)
		}
		if cl.Connect {
			f.logConnect(cn, cl)
		} else {
			cn.log, cn.acceptAt = cl, f.lb.clk.Now()
		}
	}
	if cn.acceptAt.IsZero() { // not from a loop's batch (tests)
		cn.acceptAt = f.lb.clk.Now()
	}
	var taken int64
	if f.qcur.Load() == 0 {
		taken = f.tryAcquire()
	}
	if taken > 0 {
		if h := f.lb.opts.hooks; h != nil && h.admitted != nil {
			h.admitted(f)
		}
		if f.draining.Load() {
			// The drain began after the first look and may have
			// found no connection: give the slot back through
			// putSlot, which ends the drain if it is the last.
			closeFD(fd)
			if done := f.putSlot(); done {
				f.closeDrained()
			}
			return nil
		}
		stats.StoreMax(&f.smax, taken)
		f.lb.gcount.Add(1)
		f.tot.Add(1)
		f.rate.Add(cn.acceptAt)
		cn.lp = f.lb.pickLoop(lp)
		lp.launch(cn)
		return nil
	}
	return f.admitSlow(cn, lp)
}

// admitSlow admits or queues cn under the lock: the frontend is at
// maxconn or clients wait already.
func (f *frontend) admitSlow(cn *conn, lp *loop) <-chan struct{} {
	if h := f.lb.opts.hooks; h != nil && h.queueing != nil {
		h.queueing(f)
	}
	f.mu.Lock()
	if f.draining.Load() {
		f.mu.Unlock()
		closeFD(cn.cfd)
		return nil
	}
	f.lb.gcount.Add(1)
	f.tot.Add(1)
	f.rate.Add(cn.acceptAt)
	cn.queued = true
	f.queue.push(cn)
	f.qcur.Store(int64(f.queue.n))
	stats.StoreMax(&f.qmax, int64(f.queue.n))
	// A slot given back before qcur said cn waits was not offered to
	// the queue: look for one now.
	next := f.serveQueueLocked()
	if cn.queued {
		if t := f.cfg.Load().queueTimeout; t > 0 {
			cn.qtimer = f.lb.clk.AfterFunc(t, cn.queueExpired)
		}
	}
	var wait chan struct{}
	if f.queue.n >= f.queueLimit() {
		if f.space == nil {
			f.space = make(chan struct{})
		}
		wait = f.space
	}
	f.mu.Unlock()
	for _, n := range next {
		lp.launch(n)
	}
	return wait
}

// launch starts cn, which has its loop, from lp (whose lock is held): on
// lp itself at once, on another loop once lp's lock is released.
func (lp *loop) launch(cn *conn) {
	if cn.lp == lp {
		lp.startLocked(cn)
	} else {
		lp.handoff = append(lp.handoff, cn)
	}
}

// serveQueueLocked gives free slots to the oldest queued clients and
// returns them, with their loops picked, for the caller to start once
// f.mu is released.
func (f *frontend) serveQueueLocked() []*conn {
	var next []*conn
	for f.queue.n > 0 {
		taken := f.tryAcquire()
		if taken == 0 {
			break
		}
		stats.StoreMax(&f.smax, taken)
		n := f.queue.head
		f.dequeueLocked(n)
		if n.qtimer != nil {
			n.qtimer.Stop()
		}
		n.lp = f.lb.pickLoop(nil)
		next = append(next, n)
	}
	return next
}

// dequeueLocked removes cn from the queue and wakes a waiting accept loop.
func (f *frontend) dequeueLocked(cn *conn) {
	f.queue.remove(cn)
	cn.queued = false
	f.qcur.Store(int64(f.queue.n))
	if f.space != nil && f.queue.n < f.queueLimit() {
		close(f.space)
		f.space = nil
	}
}

// queueExpired closes a client that waited `timeout queue` for a slot.
func (cn *conn) queueExpired() {
	f := cn.fe
	f.mu.Lock()
	if !cn.queued {
		f.mu.Unlock()
		return
	}
	f.dequeueLocked(cn)
	f.queueDrops.Add(1)
	done := f.doneLocked()
	f.mu.Unlock()
	n := discardInput(cn.cfd) // an end of file, not a reset (see connectNext)
	f.bin.Add(n)
	closeFD(cn.cfd)
	if cn.log != nil {
		cn.up, cn.term = n, [2]byte{'s', 'Q'}
		f.logConn(cn)
	}
	f.lb.globalDone()
	f.lb.log.Debug("closed a client that waited too long for a slot", "frontend", f.name, "client", cn.peer.String())
	if done {
		f.closeDrained()
	}
}

// release ends cn's slot; the oldest queued client takes it, if any.
// It must be called without any loop's lock held.
func (f *frontend) release(cn *conn) {
	if cn.log != nil {
		f.logConn(cn)
	}
	done, next := f.putSlotServe()
	f.lb.globalDone()
	if done {
		f.closeDrained()
	}
	for _, n := range next {
		n.lp.start(n)
	}
}

// putSlot gives a slot back that no queued client needs to be started
// for by the caller (it holds a loop's lock): queued clients that take
// it are posted to their loops. It reports whether a drain ended.
func (f *frontend) putSlot() bool {
	done, next := f.putSlotServe()
	for _, n := range next {
		n.lp.post(n)
	}
	return done
}

// putSlotServe gives a slot back and returns the queued clients that
// took it, to start, and whether a drain ended. Without a queue or a
// drain it takes no lock.
func (f *frontend) putSlotServe() (bool, []*conn) {
	f.cur.Add(-1)
	if f.qcur.Load() == 0 && !f.draining.Load() {
		return false, nil
	}
	f.mu.Lock()
	next := f.serveQueueLocked()
	done := f.doneLocked()
	f.mu.Unlock()
	return done, next
}

// setMaxconn changes the limit and lets queued clients in if it grew.
func (f *frontend) setMaxconn(n int) {
	f.mu.Lock()
	f.maxconn.Store(int64(n))
	next := f.serveQueueLocked()
	if f.space != nil && f.queue.n < f.queueLimit() {
		close(f.space)
		f.space = nil
	}
	f.mu.Unlock()
	for _, c := range next {
		c.lp.start(c)
	}
}

func (f *frontend) doneLocked() bool {
	return f.draining.Load() && f.cur.Load() == 0 && f.queue.n == 0
}

func (f *frontend) closeDrained() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.drained:
	default:
		close(f.drained)
	}
}

// drain stops admitting new clients; queued ones are still served. The
// returned channel is closed when no connection is left.
func (f *frontend) drain() <-chan struct{} {
	f.mu.Lock()
	f.draining.Store(true)
	done := f.doneLocked()
	if f.space != nil {
		close(f.space)
		f.space = nil
	}
	f.mu.Unlock()
	if done {
		f.closeDrained()
	}
	return f.drained
}

// closeAll closes every queued and admitted connection (end of a drain).
// Admitted ones on their way to a loop are closed by the loop when it
// takes them (startLocked sees aborting).
func (f *frontend) closeAll() {
	f.mu.Lock()
	f.aborting.Store(true)
	var queued []*conn
	for f.queue.n > 0 {
		c := f.queue.head
		f.dequeueLocked(c)
		if c.qtimer != nil {
			c.qtimer.Stop()
		}
		queued = append(queued, c)
	}
	done := f.doneLocked()
	f.mu.Unlock()
	for _, c := range queued {
		closeFD(c.cfd)
		if c.log != nil {
			c.term = [2]byte{'K', 'Q'} // killed while queued
			f.logConn(c)
		}
		f.lb.globalDone()
	}
	for _, lp := range f.lb.loops {
		lp.closeFrontend(f)
	}
	if done {
		f.closeDrained()
	}
}
