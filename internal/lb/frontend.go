package lb

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// feConfig is what a connection needs from the configuration; a
// connection keeps the one it started with.
type feConfig struct {
	pool         *pool // nil: no backend, connections are closed
	retries      int
	idle         time.Duration // tunnel idle timeout; 0: none
	queueTimeout time.Duration // 0: wait for a slot forever
	// connectTimeout bounds each connect attempt; 0: none.
	connectTimeout time.Duration
}

// frontend admits connections, up to maxconn at once, and queues the
// rest. It outlives reloads while its name stays.
type frontend struct {
	lb   *LB
	name string
	cfg  atomic.Pointer[feConfig]

	mu       sync.Mutex // guards the fields below
	maxconn  int        // 0: unlimited
	active   int        // admitted and not finished
	queue    connList   // waiting for a slot, oldest first
	live     connList   // admitted
	space    chan struct{}
	draining bool
	drained  chan struct{} // closed when draining and nothing is left

	cur, qcur, smax, qmax                atomic.Int64
	tot, bin, bout, noServer, queueDrops atomic.Uint64
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

func (q *connList) pop() *conn {
	c := q.head
	if c != nil {
		q.remove(c)
	}
	return c
}

// queueLimit bounds the queue: as many waiting clients as maxconn.
func (f *frontend) queueLimit() int { return max(f.maxconn, 1) }

// admit takes a new client connection: it starts serving it at once when
// a slot is free, or queues it. When the queue is full it returns a
// channel that is closed once there is room again; the accept loop waits
// on it, so further clients wait in the kernel's backlog.
//
// An event loop that accepted the client passes itself (lp, whose lock it
// holds): the client is relayed there unless pickLoop finds lp too loaded
// next to another. Otherwise (nil) the least loaded loop relays it.
func (f *frontend) admit(fd int, peer netip.AddrPort, lp *loop) <-chan struct{} {
	cn := &conn{fe: f, cfd: fd, peer: peer}
	f.mu.Lock()
	if f.draining {
		f.mu.Unlock()
		closeFD(fd)
		return nil
	}
	f.lb.gcount.Add(1)
	f.tot.Add(1)
	if f.maxconn <= 0 || f.active < f.maxconn {
		f.startLocked(cn, lp)
		f.mu.Unlock()
		switch {
		case lp == nil:
			cn.lp.start(cn)
		case cn.lp == lp:
			lp.startLocked(cn)
		default: // another loop's, posted once lp's lock is released
			lp.handoff = append(lp.handoff, cn)
		}
		return nil
	}
	cn.queued = true
	f.queue.push(cn)
	f.qcur.Store(int64(f.queue.n))
	if int64(f.queue.n) > f.qmax.Load() {
		f.qmax.Store(int64(f.queue.n))
	}
	if t := f.cfg.Load().queueTimeout; t > 0 {
		cn.qtimer = f.lb.clk.AfterFunc(t, cn.queueExpired)
	}
	var wait chan struct{}
	if f.queue.n >= f.queueLimit() {
		if f.space == nil {
			f.space = make(chan struct{})
		}
		wait = f.space
	}
	f.mu.Unlock()
	if wait == nil {
		return nil
	}
	return wait
}

// startLocked counts cn as active and gives it an event loop; the
// caller starts it there once f.mu is released.
func (f *frontend) startLocked(cn *conn, lp *loop) {
	lp = f.lb.pickLoop(lp)
	cn.lp = lp
	f.active++
	f.live.push(cn)
	f.cur.Store(int64(f.active))
	if int64(f.active) > f.smax.Load() {
		f.smax.Store(int64(f.active))
	}
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
	closeFD(cn.cfd)
	f.lb.globalDone()
	f.lb.log.Debug("closed a client that waited too long for a slot", "frontend", f.name, "client", cn.peer.String())
	if done {
		f.closeDrained()
	}
}

// release ends cn's slot; the oldest queued client takes it, if any.
// It must be called without any loop's lock held.
func (f *frontend) release(cn *conn) {
	f.mu.Lock()
	f.live.remove(cn)
	f.active--
	var next []*conn
	for (f.maxconn <= 0 || f.active < f.maxconn) && f.queue.n > 0 {
		n := f.queue.head
		f.dequeueLocked(n)
		if n.qtimer != nil {
			n.qtimer.Stop()
		}
		f.startLocked(n, nil)
		next = append(next, n)
	}
	f.cur.Store(int64(f.active))
	done := f.doneLocked()
	f.mu.Unlock()
	f.lb.globalDone()
	if done {
		f.closeDrained()
	}
	for _, n := range next {
		n.lp.start(n)
	}
}

// setMaxconn changes the limit and lets queued clients in if it grew.
func (f *frontend) setMaxconn(n int) {
	f.mu.Lock()
	f.maxconn = n
	var next []*conn
	for (f.maxconn <= 0 || f.active < f.maxconn) && f.queue.n > 0 {
		c := f.queue.head
		f.dequeueLocked(c)
		if c.qtimer != nil {
			c.qtimer.Stop()
		}
		f.startLocked(c, nil)
		next = append(next, c)
	}
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
	return f.draining && f.active == 0 && f.queue.n == 0
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
	f.draining = true
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

// closeAll closes every queued and live connection (end of a drain).
func (f *frontend) closeAll() {
	f.mu.Lock()
	var live, queued []*conn
	for c := f.live.head; c != nil; c = c.next {
		live = append(live, c)
	}
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
		f.lb.globalDone()
	}
	for _, c := range live {
		c.lp.abort(c)
	}
	if done {
		f.closeDrained()
	}
}
