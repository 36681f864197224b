package lb

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// The relay is a set of event loops, one per processor, each with its own
// epoll instance holding the listening sockets and the sockets of the
// connections it relays. A loop is one goroutine: it waits in epoll_wait,
// takes batches of events, accepts clients and moves bytes for each
// connection that can make progress. No goroutine is started per
// connection and the sockets never enter Go's net package, so a
// connection costs its two sockets, one conn and the system calls of its
// traffic.
//
// Sockets are edge-triggered. Each side remembers what the kernel last
// said (readable, writable, peer finished) and is read or written only
// while that holds; a read that returns less than the buffer means the
// socket is drained, unless the peer's FIN was reported: the FIN may have
// been consumed by that read (it leaves no later event), so the side is
// read on, before anything is written, to see the end; the last bytes
// then leave with the FIN in one segment (see flush). Anything that
// arrives after the batch was taken raises a new event.
//
// Everything about a connection changes under its loop's lock, held while
// a batch is handled. Other goroutines (timers, health checks, a
// frontend's queue, Shutdown) take the lock to start, time out or close a
// connection. Finished connections give their slot back to their
// frontend (which may start a queued one) after the lock is released.

// loop is one event loop.
type loop struct {
	lb   *LB
	epfd int
	wake int // an eventfd that stop and post write to
	done chan struct{}

	mu       sync.Mutex   // guards everything below and every conn on this loop
	conns    []*conn      // by slot
	free     []int32      // free slots
	gen      uint32       // tells a slot's successive conns apart in events
	released []*conn      // closed under the lock, to release after it
	handoff  []*conn      // accepted here for another loop, to post after it
	nconns   atomic.Int32 // connections given to this loop and not closed
	lns      []*lnReg     // the listening sockets it accepts on
	stopping bool
	events   [128]unix.EpollEvent
	// now is read once per batch of events, when run takes the lock: a
	// connection that moves bytes stores it as its last activity.
	now time.Time
	// inBatch: the lock is held by run for a batch, so now is current;
	// otherwise (a timer, the runtime API, a queued client started after
	// another's close) it may be old (see stamp).
	inBatch bool

	inboxMu sync.Mutex // guards inbox only, never held long
	inbox   []*conn    // handed over by other loops, to start here
	posted  atomic.Bool
	// waiting is set while the loop may block in epoll_wait: only then
	// does a post need the wake descriptor (see post and run).
	waiting atomic.Bool
}

// relayState is a connection's sockets and its two directions.
type relayState struct {
	slot     int32
	gen      uint32
	c, s     side      // client and server sockets
	up, down relay.Dir // client to server, server to client
}

// side is one socket of a connection, what epoll last said about it, and
// whether it is in the loop's epoll set.
type side struct {
	relay.Side
	registered, closed bool
}

// An event's 64 bits of data say what it is about: a connection's socket
// (Fd: slot<<1 | side, Pad: the connection's generation, positive), a
// listening socket (Fd: its index in lns, Pad: tagListener) or the wake
// descriptor (Pad: tagWake).
const (
	tagListener = -1
	tagWake     = -2
)

const (
	sideClient = 0
	sideServer = 1
	evMask     = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET
)

var errServerDown = errors.New("the server went DOWN")

// newLoops starts n event loops.
func newLoops(l *LB, n int) ([]*loop, error) {
	var lps []*loop
	for range n {
		lp, err := newLoop(l)
		if err != nil {
			for _, o := range lps {
				o.stop()
			}
			return nil, err
		}
		lps = append(lps, lp)
	}
	return lps, nil
}

func newLoop(l *LB) (*loop, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Pad: tagWake}
	if err := unix.EpollCtl(fd, unix.EPOLL_CTL_ADD, wake, &ev); err != nil {
		unix.Close(fd)
		unix.Close(wake)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	lp := &loop{lb: l, epfd: fd, wake: wake, done: make(chan struct{})}
	go lp.run()
	return lp, nil
}

// stop ends the loop; its connections must be gone.
func (lp *loop) stop() {
	lp.mu.Lock()
	lp.stopping = true
	lp.mu.Unlock()
	var one = [8]byte{1}
	unix.Write(lp.wake, one[:])
	<-lp.done
	unix.Close(lp.epfd)
	unix.Close(lp.wake)
}

// run handles events until stop, on a thread of its own
// (LockOSThread): a loop that moved between threads whenever it waited
// cost a hand-off and a cold cache each time.
//
// It waits in three steps. It takes what is pending with an epoll_wait(2)
// that does not wait. When nothing is, it waits up to busyWaitMsec in a
// raw epoll_wait that keeps the loop's processor (P): under load the next
// event comes well within that, and the runtime's monitor, which takes a
// processor back from a thread blocked in a system call after 20 us, has
// nothing to take back and stays asleep (while loops waited in ordinary
// system calls, it woke about once per request of a Connection: close
// load). Only a loop idle that long waits in an ordinary blocking
// epoll_wait, which gives its processor up. The runtime's preemption
// signal ends a raw wait with EINTR. A processor a loop holds while it
// waits is why the LB runs one more than it has loops (see loopCount).
func (lp *loop) run() {
	defer close(lp.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for {
		n, err := relay.EpollPoll(lp.epfd, lp.events[:])
		if n == 0 && err == nil {
			// Announce the wait, then look for posts once more: a post
			// either lands before this look or sees waiting and wakes
			// the loop (both are sequentially consistent atomics).
			lp.waiting.Store(true)
			if !lp.posted.Load() {
				n, err = relay.EpollWait(lp.epfd, lp.events[:], busyWaitMsec)
				if n == 0 && err == nil {
					n, err = unix.EpollWait(lp.epfd, lp.events[:], -1)
				}
			}
			lp.waiting.Store(false)
		}
		if err != nil && err != unix.EINTR {
			lp.lb.log.Error("relay event loop: epoll_wait failed", "err", err)
			return
		}
		lp.mu.Lock()
		lp.now = lp.lb.clk.Now()
		lp.inBatch = true
		// Clear the wake-up before taking the inbox: a post after the
		// read wakes the loop again, one before it is in the inbox.
		for i := 0; i < n; i++ {
			if lp.events[i].Pad == tagWake {
				var b [8]byte
				relay.Read(lp.wake, b[:])
				break
			}
		}
		if lp.posted.Load() {
			lp.takeInbox()
		}
		for i := 0; i < n; i++ {
			switch ev := &lp.events[i]; ev.Pad {
			case tagWake:
			case tagListener:
				if r := lp.lns[ev.Fd]; r != nil && r.watched {
					lp.acceptOn(r)
				}
			default:
				lp.handle(ev)
			}
		}
		stop := lp.stopping
		lp.inBatch = false
		lp.unlock()
		if stop {
			return
		}
	}
}

// unlock releases the loop's lock, then gives the slots of the
// connections closed meanwhile back to their frontends and posts the ones
// accepted here for other loops.
func (lp *loop) unlock() {
	rel, hand := lp.released, lp.handoff
	lp.released, lp.handoff = nil, nil
	lp.mu.Unlock()
	for _, cn := range rel {
		cn.fe.release(cn)
	}
	for _, cn := range hand {
		cn.lp.post(cn)
	}
}

// post hands cn to lp, which starts it at its next turn: the poster does
// not wait for lp's lock, which lp holds while it handles a batch.
func (lp *loop) post(cn *conn) {
	lp.inboxMu.Lock()
	lp.inbox = append(lp.inbox, cn)
	lp.posted.Store(true)
	lp.inboxMu.Unlock()
	if lp.waiting.Load() {
		// Only a loop that may be blocked needs waking; a busy one
		// takes the inbox at its next turn.
		var one = [8]byte{1}
		relay.Write(lp.wake, one[:])
	}
}

// takeInbox starts the connections other loops posted. lp.mu is held.
func (lp *loop) takeInbox() {
	lp.inboxMu.Lock()
	in := lp.inbox
	lp.inbox = nil
	lp.posted.Store(false)
	lp.inboxMu.Unlock()
	for _, cn := range in {
		if cn.srvQueued {
			lp.resumeQueued(cn)
			continue
		}
		lp.startLocked(cn)
	}
}

func token(slot int32, gen uint32, which int) (int32, int32) {
	return slot<<1 | int32(which), int32(gen)
}

// start takes a newly admitted connection: it watches the client's socket
// and connects to a server.
func (lp *loop) start(cn *conn) {
	lp.mu.Lock()
	defer lp.unlock()
	lp.startLocked(cn)
}

func (lp *loop) startLocked(cn *conn) {
	r := &cn.relay
	r.c = side{Side: relay.Side{FD: cn.cfd}}
	r.s = side{Side: relay.Side{FD: -1}}
	if cn.fe.aborting.Load() { // Shutdown closed its frontend's connections meanwhile
		relay.Close(cn.cfd)
		cn.state = stClosed
		lp.nconns.Add(-1)
		lp.released = append(lp.released, cn)
		return
	}
	cn.cfg = cn.fe.cfg.Load()
	if cn.cfg.cliKeepAlive {
		relay.SetKeepAlive(cn.cfd)
	}
	cn.startAt = lp.stamp(cn)
	if len(lp.free) > 0 {
		r.slot = lp.free[len(lp.free)-1]
		lp.free = lp.free[:len(lp.free)-1]
		lp.conns[r.slot] = cn
	} else {
		r.slot = int32(len(lp.conns))
		lp.conns = append(lp.conns, cn)
	}
	lp.gen++
	if lp.gen > 1<<31-1 {
		lp.gen = 1 // generations stay positive: negative ones tag other events
	}
	r.gen = lp.gen
	cn.state = stConnecting
	if err := lp.watch(cn, &r.c, sideClient); err != nil {
		lp.lb.log.Warn("relay: cannot watch a client socket", "frontend", cn.fe.name, "err", err)
		lp.closeLocked(cn)
		return
	}
	if tcpContentRejects(cn) { // tcprequest.go
		// haproxy closes it (an end of file, not a reset: what the
		// client sent is read first) and logs "PR" (a proxy's
		// condition, at the request) without a backend or server.
		cn.fe.deniedReq.Add(1)
		cn.term = termDenied
		discardInput(cn.cfd)
		lp.closeLocked(cn)
		return
	}
	lp.connectNext(cn)
}

func (lp *loop) watch(cn *conn, s *side, which int) error {
	ev := unix.EpollEvent{Events: evMask}
	ev.Fd, ev.Pad = token(cn.relay.slot, cn.relay.gen, which)
	if err := relay.EpollCtl(lp.epfd, unix.EPOLL_CTL_ADD, s.FD, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	s.registered = true
	return nil
}

// connectNext starts a connect to the next server: the first pick, then
// up to retries more, each on another UP server while there is one this
// client has not tried. When no attempt is left or no server is UP, the
// client is closed.
func (lp *loop) connectNext(cn *conn) {
	cfg := cn.cfg
	p := cfg.pool
	var now time.Time
	if p != nil {
		now = lp.stamp(cn)
		if cn.attempt == 0 {
			// The backend's session: each client once, those that no
			// server takes too (haproxy's be_sess_per_sec, last_sess).
			p.be.rate.Add(now)
			p.be.last.Set(now)
		}
	}
	for p != nil && cn.attempt <= cfg.retries {
		var client netip.Addr
		if p.balance == lbconfig.Source {
			client = cn.peer.Addr()
		}
		i := p.stickyPick(cn.peer.Addr(), cn.tried, now) // stick.go
		if i < 0 {
			i = p.pick(client, cn.tried)
		}
		if i < 0 && cn.tried != 0 {
			cn.tried = 0 // every UP server failed once: go round again
			i = p.pick(client, cn.tried)
		}
		p.stickStore(cn.peer.Addr(), i, now)
		if i < 0 {
			if lp.queue(cn) {
				return
			}
			break
		}
		cn.tried |= bit(i)
		cn.attempt++
		s := p.servers[i]
		if s != cn.picked {
			// A selection, as haproxy's lbtot counts it: a retry on the
			// same server is not a new one (measured, 2.6.12: one client,
			// one refusing server, retries 2: lbtot 1).
			s.lbtot.Add(1)
			// The server's session rate and last session count the
			// selections too, not the retries (measured: a client that
			// tried one refusing server 4 times gave stot 4, rate_max 1).
			s.rate.Add(now)
			s.last.Set(now)
			p.be.picked.Add(1)
			cn.picked = s
		}
		// Counted while connecting, so leastconn sees it; haproxy's smax
		// counts a session that never connected too (measured: 1 above).
		stats.StoreMax(&s.smax, s.cur.Add(1))
		fd, err := relay.DialStart(lp.serverAddr(cn, s))
		if err == nil && cfg.srvKeepAlive {
			relay.SetKeepAlive(fd)
		}
		if err == nil {
			cn.srv = s
			cn.relay.s = side{Side: relay.Side{FD: fd}}
			if err = lp.watch(cn, &cn.relay.s, sideServer); err == nil {
				if cfg.connectTimeout > 0 {
					attempt := cn.attempt
					cn.ctimer = time.AfterFunc(cfg.connectTimeout, func() { lp.connectTimedOut(cn, attempt) })
				}
				return
			}
			relay.Close(fd)
			cn.relay.s = side{Side: relay.Side{FD: -1}}
			cn.srv = nil
		}
		lp.countFailure(cn, s, err)
	}
	cn.fe.noServer.Add(1)
	if p != nil && cn.attempt <= cfg.retries {
		// Not failed on its last attempt (that one counts in the
		// server's errors, not its retries): no UP server was left.
		p.noSrv.Add(1)
	}
	discardClient(cn)
	cn.term = [2]byte{'S', 'C'}
	if cn.timedOut {
		cn.term[0] = 's'
	}
	lp.closeLocked(cn)
}

// discardClient reads and drops what the client of a connection that
// never reached its server sent, before its close, so that it sees the
// end of the connection rather than a reset (closing a socket with unread
// input resets it), as haproxy's clients do: it reads what arrives while
// it connects. It counts as bytes in there (measured).
func discardClient(cn *conn) {
	if n := discardInput(cn.relay.c.FD); n > 0 {
		cn.fe.bin.Add(n)
		cn.up += n
		if cn.picked != nil {
			cn.picked.bin.Add(n)
		}
	}
}

func (lp *loop) countFailure(cn *conn, s *server, err error) {
	s.cur.Add(-1)
	if s.params.maxconn.Load() > 0 {
		defer lp.lb.slotFreed(cn.cfg.pool)
	}
	s.econ.Add(1)
	if cn.attempt <= cn.cfg.retries {
		s.wretr.Add(1)
	}
	lp.lb.log.Debug("connect to server failed", "frontend", cn.fe.name, "backend", cn.cfg.pool.name, "server", s.name, "addr", s.addr.String(), "attempt", cn.attempt, "err", err)
}

// connectFailed ends the connect in progress and tries the next server.
func (lp *loop) connectFailed(cn *conn, err error) {
	if cn.ctimer != nil {
		cn.ctimer.Stop()
		cn.ctimer = nil
	}
	s := cn.srv
	if cn.log != nil && cn.log.NeedSource {
		cn.source = relay.LocalAddr(cn.relay.s.FD) // haproxy shows the failed attempt's (measured)
	}
	relay.Close(cn.relay.s.FD) // leaves the epoll set with it
	cn.relay.s = side{Side: relay.Side{FD: -1}}
	cn.srv = nil
	lp.countFailure(cn, s, err)
	lp.connectNext(cn)
}

func (lp *loop) connectTimedOut(cn *conn, attempt int) {
	lp.mu.Lock()
	defer lp.unlock()
	if cn.state == stConnecting && cn.attempt == attempt && cn.srv != nil {
		cn.ctimer = nil
		cn.timedOut = true
		lp.connectFailed(cn, fmt.Errorf("connect: timed out after %v", cn.cfg.connectTimeout))
	}
}

// failConnects ends every connect in progress to s (it went DOWN, or a
// forced shutdown): those clients try another server at once.
func (l *LB) failConnects(s *server) {
	for _, lp := range l.loops {
		lp.mu.Lock()
		for _, cn := range lp.conns {
			if cn != nil && cn.state == stConnecting && cn.srv == s {
				cn.timedOut = false
				lp.connectFailed(cn, errServerDown)
			}
		}
		lp.unlock()
	}
}

// moveConns hands the connections relayed or connecting to old, a server
// a reload renamed, to s, its successor at the same address, with their
// current sessions: from then on they count on s. A retry picks from the
// pool a connection started with (its configuration), where old stays.
func (l *LB) moveConns(old, s *server) {
	for _, lp := range l.loops {
		lp.mu.Lock()
		for _, cn := range lp.conns {
			if cn == nil || cn.state == stClosed {
				continue
			}
			if cn.picked == old {
				cn.picked = s
			}
			if cn.srv == old {
				cn.srv = s
				if cn.relay.s.FD >= 0 { // counted in cur while it has its socket
					old.cur.Add(-1)
					stats.StoreMax(&s.smax, s.cur.Add(1))
				}
			}
		}
		lp.unlock()
	}
}

// sessions describes every connection the loops relay or connect, with
// the addresses of its sockets (the runtime API's show sess).
func (l *LB) sessions() []Session {
	var ss []Session
	for _, lp := range l.loops {
		lp.mu.Lock()
		now := l.clk.Now()
		for _, cn := range lp.conns {
			if cn == nil || cn.state == stClosed {
				continue
			}
			s := sessionOf(cn, now)
			s.Listener = cn.local // an ssl bind's client: the TLS socket's
			if !s.Listener.IsValid() {
				s.Listener = relay.LocalAddr(cn.relay.c.FD)
			}
			if cn.relay.s.FD >= 0 {
				s.Local = relay.LocalAddr(cn.relay.s.FD)
			}
			ss = append(ss, s)
		}
		lp.unlock()
	}
	return ss
}

// handle applies one event.
func (lp *loop) handle(ev *unix.EpollEvent) {
	slot, which := ev.Fd>>1, ev.Fd&1
	if int(slot) >= len(lp.conns) {
		return
	}
	cn := lp.conns[slot]
	if cn == nil || cn.relay.gen != uint32(ev.Pad) {
		return // the event of a connection closed earlier in this batch
	}
	r := &cn.relay
	s := &r.c
	if which == sideServer {
		s = &r.s
	}
	e := ev.Events
	if e&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		s.CanRead = true
	}
	if e&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		s.CanWrite = true
	}
	if e&(unix.EPOLLRDHUP|unix.EPOLLHUP) != 0 {
		s.RDHUP = true
	}
	if e&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) == unix.EPOLLRDHUP {
		s.FIN = true
	}
	switch cn.state {
	case stConnecting:
		if which == sideClient {
			lp.clientWhileConnecting(cn, e)
			return
		}
		if e&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) == 0 {
			return
		}
		if e&(unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			err := errors.New("connect: connection closed")
			if v, gerr := relay.GetsockoptInt(r.s.FD, unix.SOL_SOCKET, unix.SO_ERROR); gerr == nil && v != 0 {
				err = os.NewSyscallError("connect", syscall.Errno(v))
			}
			cn.timedOut = false
			lp.connectFailed(cn, err)
			return
		}
		lp.connected(cn)
	case stRelaying:
		lp.progress(cn)
	}
}

// clientWhileConnecting looks at what the client did while its server
// connect is in progress. A client that reset, or that ended without
// sending a byte, has nothing left to relay: its connect is abandoned at
// once and the connection closed, as haproxy 2.6.12 does (measured
// against a server that drops SYNs, `retries 2`, `timeout connect 1s`: a
// reset 300 ms in gives "CD" and a FIN with nothing sent "CC", both with
// Tc -1 and Tt 300, no retry, the server's stot 1 and econ 0; vipstack
// went on connecting for 3 s and logged "sC"). A client that sent bytes
// before its FIN waits for the connect, which delivers them (haproxy
// too: "sC" after its retries against that server). With `option
// abortonclose` that client is dropped too, its bytes unsent, as haproxy
// 2.6.12 drops it ("CC" while connecting, "CQ" in the queue; measured in
// TestAbortOnCloseMatchesHaproxy). Data alone does nothing here: it is
// read once connected.
func (lp *loop) clientWhileConnecting(cn *conn, e uint32) {
	switch {
	case e&(unix.EPOLLHUP|unix.EPOLLERR) != 0:
		cn.term = [2]byte{'C', 'D'}
	case e&unix.EPOLLRDHUP != 0 && (cn.cfg.abortOnClose || !pendingInput(cn.relay.c.FD)):
		cn.term = [2]byte{'C', 'C'}
		// What an aborted client sent counts as received (haproxy's %U
		// and bin), as haproxy reads it before it drops the client.
		discardClient(cn)
	default:
		return
	}
	if cn.srvQueued {
		// It left while waiting for a server slot: haproxy's "CQ",
		// the phase being the queue.
		lp.queuedClientLeft(cn, [2]byte{cn.term[0], 'Q'})
		return
	}
	lp.lb.log.Debug("relay: the client left while its server was connecting", "frontend", cn.fe.name, "client", cn.peer.String(), "server", cn.srv.name)
	// The attempt counts as the server's session, not as its error
	// (haproxy: stot 1, econ 0, wretr 0).
	cn.srv.tot.Add(1)
	if cn.log != nil && cn.log.NeedSource {
		cn.source = relay.LocalAddr(cn.relay.s.FD)
	}
	lp.closeLocked(cn)
}

// pendingInput says whether the socket fd has bytes to read: it peeks at
// one without taking it.
func pendingInput(fd int) bool {
	var b [1]byte
	for {
		n, err := relay.RecvFlags(fd, b[:], unix.MSG_PEEK)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0
	}
}

// connected starts relaying.
func (lp *loop) connected(cn *conn) {
	if cn.ctimer != nil {
		cn.ctimer.Stop()
		cn.ctimer = nil
	}
	if err := lp.sendProxy(cn); err != nil {
		lp.lb.log.Debug("relay: PROXY header not sent", "frontend", cn.fe.name, "server", cn.srv.name, "err", err)
		lp.connectFailed(cn, err)
		return
	}
	cn.srv.tot.Add(1)
	cn.state = stRelaying
	cn.connAt = lp.stamp(cn)
	if cn.log != nil {
		if cn.log.NeedSource { // only then: a syscall per connection
			cn.source = relay.LocalAddr(cn.relay.s.FD)
		}
	}
	if every := cn.cfg.idleEvery(); every > 0 {
		cn.every = every
		cn.lastActive = lp.now
		cn.timer = lp.lb.clk.AfterFunc(every, cn.checkIdle)
	}
	lp.progress(cn)
}

// progress moves what it can both ways, passes ends of file on, and
// closes the connection when both directions are done or on an error.
func (lp *loop) progress(cn *conn) {
	r := &cn.relay
	s := cn.srv
	var err error
	if !r.up.Done {
		err = lp.pump(cn, &r.up, &r.c, &r.s, r.down.Done, &s.bin, &cn.fe.bin)
	}
	if err == nil && !r.down.Done {
		err = lp.pump(cn, &r.down, &r.s, &r.c, r.up.Done, &s.bout, &cn.fe.bout)
	}
	if err != nil {
		lp.lb.log.Debug("relay: connection aborted", "frontend", cn.fe.name, "client", cn.peer.String(), "server", s.name, "err", err)
		lp.closeLocked(cn)
		return
	}
	if r.up.Done && r.down.Done {
		lp.closeLocked(cn)
	}
}

// pump relays src to dst while both can: it writes what is pending, then
// reads more, until src is drained, dst is full or src has ended. At end
// of file it shuts dst down for writing, unless the other direction is
// done too (closing both sockets sends the FIN then).
func (lp *loop) pump(cn *conn, d *relay.Dir, src, dst *side, otherDone bool, c1, c2 interface{ Add(uint64) uint64 }) error {
	for {
		if d.Pending() {
			if !dst.CanWrite {
				return nil
			}
			n, err := d.Flush(&lp.lb.pools, &dst.Side, d.EOF)
			if n > 0 {
				c1.Add(uint64(n))
				c2.Add(uint64(n))
				cn.lastActive = lp.now
				if d == &cn.relay.up {
					cn.last = lastUp
					cn.up += uint64(n)
				} else {
					cn.last = lastDown
					cn.down += uint64(n)
				}
			}
			if err != nil {
				cn.endedBy(dst)
				return err
			}
			if d.Pending() {
				return nil
			}
		}
		if d.EOF {
			d.Done = true
			if !otherDone {
				if err := relay.Shutdown(dst.FD, unix.SHUT_WR); err != nil && err != unix.ENOTCONN {
					cn.endedBy(dst)
					return os.NewSyscallError("shutdown", err)
				}
			}
			return nil
		}
		if !src.CanRead {
			return nil
		}
		if err := d.Fill(&lp.lb.pools, &src.Side); err != nil {
			cn.endedBy(src)
			return err
		}
		if !d.EOF && !d.Pending() {
			return nil // src is drained
		}
	}
}

// closeLocked closes both sockets of cn, frees its slot and queues it for
// release to its frontend. It does nothing to a connection already
// closed.
func (lp *loop) closeLocked(cn *conn) {
	if cn.state == stClosed {
		return
	}
	if cn.state == stRelaying {
		lp.countTimes(cn)
	}
	cn.state = stClosed
	lp.nconns.Add(-1)
	if cn.ctimer != nil {
		cn.ctimer.Stop()
		cn.ctimer = nil
	}
	if cn.timer != nil {
		cn.timer.Stop()
	}
	r := &cn.relay
	relay.Close(r.c.FD)
	if r.s.FD >= 0 {
		relay.Close(r.s.FD)
		cn.srv.cur.Add(-1)
		cn.srv.countAbort(cn.term)
		if cn.srv.params.maxconn.Load() > 0 {
			lp.lb.slotFreed(cn.cfg.pool)
		}
	}
	if cn.srvQueued {
		cn.cfg.pool.wait.remove(cn)
		lp.leaveQueue(cn)
	}
	r.up.Release(&lp.lb.pools)
	r.down.Release(&lp.lb.pools)
	if int(r.slot) < len(lp.conns) && lp.conns[r.slot] == cn {
		lp.conns[r.slot] = nil
		lp.free = append(lp.free, r.slot)
	}
	lp.released = append(lp.released, cn)
}

// stamp is the time of a step of cn (accepted, started, connected,
// closed) for its log and the stats: the batch's clock reading, which
// costs nothing, or the clock's when cn logs (its log shows ms) or the
// loop is not in a batch (lp.now may be old then).
func (lp *loop) stamp(cn *conn) time.Time {
	if cn.log != nil || !lp.inBatch {
		return lp.lb.clk.Now()
	}
	return lp.now
}

// countTimes adds the times of cn, which connected and is closing, to its
// server's and backend's averages (rates.go): queued from its accept to
// its start, connecting from its start to the last connect, in all from
// its accept to now.
func (lp *loop) countTimes(cn *conn) {
	q, c := stats.MsBetween(cn.acceptAt, cn.startAt), stats.MsBetween(cn.startAt, cn.connAt)
	t := stats.MsBetween(cn.acceptAt, lp.stamp(cn))
	cn.srv.times.Add(cn.srv.lbtot.Load(), q, c, t)
	if p := cn.cfg.pool; p != nil {
		p.be.times.Add(p.be.picked.Load(), q, c, t)
	}
}

// closeFrontend closes every connection of f this loop relays (forced
// shutdown).
func (lp *loop) closeFrontend(f *frontend) {
	lp.mu.Lock()
	for _, cn := range lp.conns {
		if cn != nil && cn.fe == f {
			// K- (KC connecting), as haproxy 2.6.12 logs the connections
			// its hard-stop-after closes (measured: K-).
			lp.kill(cn)
		}
	}
	lp.unlock()
}

// closeServer closes every connection of s, established or connecting
// (the runtime API's shutdown sessions), and returns how many.
func (l *LB) closeServer(s *server) int {
	n := 0
	for _, lp := range l.loops {
		lp.mu.Lock()
		for _, cn := range lp.conns {
			if cn != nil && cn.srv == s && (cn.state == stConnecting || cn.state == stRelaying) {
				lp.kill(cn)
				n++
			}
		}
		lp.unlock()
	}
	return n
}

// closeSession closes the connection show sess names id, established or
// connecting (the runtime API's shutdown session); false when no loop
// holds it.
func (l *LB) closeSession(id uintptr) bool {
	for _, lp := range l.loops {
		lp.mu.Lock()
		for _, cn := range lp.conns {
			if cn != nil && sessionID(cn) == id && (cn.state == stConnecting || cn.state == stRelaying) {
				lp.kill(cn)
				lp.unlock()
				return true
			}
		}
		lp.unlock()
	}
	return false
}

// kill closes cn, relayed or connecting, for the runtime API's shutdown
// session and shutdown sessions server; its loop's lock is held. haproxy
// 2.6.12's tcplog line says "K-" (killed, no phase) for a relayed
// connection and "KC" (killed while connecting) for one still connecting,
// whose client reads the end of the connection and whose bytes count as
// bytes in (measured: "be/s1 1/-1/4003 0 KC", bin 5). Its %bi and %bp
// are the address the connect in progress was given, as haproxy's are
// (measured: "127.0.0.1:51346 ... KC", TestKilledConnectingSourceMatchesHaproxy).
func (lp *loop) kill(cn *conn) {
	cn.term = [2]byte{'K', '-'}
	if cn.state == stConnecting {
		cn.term[1] = 'C'
		discardClient(cn)
		if cn.log != nil && cn.log.NeedSource && cn.relay.s.FD >= 0 {
			cn.source = relay.LocalAddr(cn.relay.s.FD)
		}
	}
	lp.closeLocked(cn)
}

// lnReg is one listening socket in one loop's epoll set. Every loop
// watches every socket, with EPOLLEXCLUSIVE: a new client wakes one loop
// that is waiting, which accepts it and relays it itself.
type lnReg struct {
	t       *tcpListener
	fd      int
	watched bool // in the epoll set (not while paused)
	gone    bool // the listener was closed
	backoff time.Duration
	// inherit says whether accepted sockets come with the listener's
	// TCP_NODELAY: 0 until the first is accepted, then 1 (yes) or -1
	// (no: the relay sets it on each).
	inherit int8
}

// busyWaitMsec is how long a loop with nothing to do waits holding its
// processor before it waits in an ordinary system call (see run).
const busyWaitMsec = 1

// acceptBatch bounds the clients one wake-up accepts, so that a stream of
// new clients does not starve the connections of the loop.
const acceptBatch = 32

func (lp *loop) watchLn(r *lnReg, idx int) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLEXCLUSIVE, Fd: int32(idx), Pad: tagListener}
	if err := unix.EpollCtl(lp.epfd, unix.EPOLL_CTL_ADD, r.fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	r.watched = true
	return nil
}

// watchListener has every loop accept on t's sockets.
func (l *LB) watchListener(t *tcpListener) {
	for _, fd := range t.fds {
		for _, lp := range l.loops {
			lp.mu.Lock()
			r := &lnReg{t: t, fd: fd}
			lp.lns = append(lp.lns, r)
			if err := lp.watchLn(r, len(lp.lns)-1); err != nil {
				l.log.Error("cannot accept on a listener", "listener", t.key, "err", err)
			}
			lp.mu.Unlock()
		}
	}
}

// unwatchListener stops every loop accepting on t's sockets.
func (l *LB) unwatchListener(t *tcpListener) {
	for _, lp := range l.loops {
		lp.mu.Lock()
		for i, r := range lp.lns {
			if r == nil || r.t != t {
				continue
			}
			if r.watched {
				unix.EpollCtl(lp.epfd, unix.EPOLL_CTL_DEL, r.fd, nil)
				r.watched = false
			}
			r.gone = true
			lp.lns[i] = nil
		}
		lp.mu.Unlock()
	}
}

// acceptOn accepts clients on r and admits them to its frontend: the
// ones admitted at once are relayed by this loop. When the global or the
// frontend's queue is full, it stops watching r until there is room; the
// next clients wait in the kernel's backlog.
func (lp *loop) acceptOn(r *lnReg) {
	l := lp.lb
	for range acceptBatch {
		if w := l.globalWait(); w != nil {
			lp.pauseLn(r, w, nil)
			return
		}
		nfd, peer, err := relay.Accept4(r.fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch err {
		case nil:
		case unix.EAGAIN:
			return
		case unix.EINTR, unix.ECONNABORTED:
			continue
		default:
			// Out of file descriptors and the like: wait a little, as
			// net/http does, rather than spin.
			r.backoff = min(max(2*r.backoff, 5*time.Millisecond), time.Second)
			l.log.Warn("accept failed", "listener", r.t.key, "err", os.NewSyscallError("accept4", err), "retry_in", r.backoff)
			ready := make(chan struct{})
			tm := l.clk.AfterFunc(r.backoff, func() { close(ready) })
			lp.pauseLn(r, ready, tm)
			return
		}
		r.backoff = 0
		if r.inherit == 0 {
			r.inherit = -1
			if v, err := relay.GetsockoptInt(nfd, unix.IPPROTO_TCP, unix.TCP_NODELAY); err == nil && v != 0 {
				r.inherit = 1
			}
		}
		if r.inherit < 0 {
			relay.SetsockoptInt(nfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		}
		if w := r.t.fe.Load().admit(nfd, peer, lp); w != nil {
			lp.pauseLn(r, w, nil)
			return
		}
	}
}

// pauseLn stops watching r until ready is closed (or fires).
func (lp *loop) pauseLn(r *lnReg, ready <-chan struct{}, tm interface{ Stop() bool }) {
	if !r.watched {
		return
	}
	unix.EpollCtl(lp.epfd, unix.EPOLL_CTL_DEL, r.fd, nil)
	r.watched = false
	go func() {
		select {
		case <-ready:
		case <-r.t.stop:
			if tm != nil {
				tm.Stop()
			}
			return
		}
		lp.mu.Lock()
		defer lp.mu.Unlock()
		if r.gone || r.watched || lp.stopping {
			return
		}
		for i, o := range lp.lns {
			if o == r {
				if err := lp.watchLn(r, i); err != nil {
					lp.lb.log.Error("cannot accept on a listener", "listener", r.t.key, "err", err)
				}
			}
		}
	}()
}

// closeFD closes a socket the relay owns.
func closeFD(fd int) { relay.Close(fd) }

// resetFD and dropFD close a client's socket as a tcp-request reject
// and silent-drop do (relay.Reset, relay.SilentDrop).
func resetFD(fd int)     { relay.Reset(fd) }
func dropFD(fd int)      { relay.SilentDrop(fd) }
func prepareDrop(fd int) { relay.PrepareDrop(fd) }

// endedBy records that the side s of cn failed (a reset or another error).
func (cn *conn) endedBy(s *side) {
	if cn.term[0] != 0 {
		return
	}
	if s == &cn.relay.c {
		cn.term = [2]byte{'C', 'D'}
	} else {
		cn.term = [2]byte{'S', 'D'}
	}
}

// discardInput reads and drops what has arrived on the non-blocking
// socket fd, up to maxDiscard bytes, and says how much it read. A socket
// closed with unread input sends a reset instead of its FIN; a client
// that sent more than maxDiscard gets the reset.
func discardInput(fd int) uint64 {
	var buf [16 << 10]byte
	var n uint64
	for n < maxDiscard {
		m, err := relay.Recv(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || m <= 0 {
			break
		}
		n += uint64(m)
	}
	return n
}

// maxDiscard bounds what discardInput reads: a client's first flight.
const maxDiscard = 256 << 10

// loopCount is how many event loops an LB runs: one per processor. The
// loops block in epoll_wait holding their processor (P), so the first call
// raises GOMAXPROCS by one, which keeps a processor free for everything
// else: without it the runtime's monitor takes processors back from the
// waiting loops every 20 us, and the loops and the monitor's thread wake
// each other. A GOMAXPROCS set in the environment is left alone and the
// loops leave one of its processors free.
func loopCount() int {
	loopsOnce.Do(func() {
		n := runtime.GOMAXPROCS(0)
		if os.Getenv("GOMAXPROCS") != "" {
			loops = max(n-1, 1)
			return
		}
		loops = n
		runtime.GOMAXPROCS(n + 1)
	})
	return loops
}

var (
	loopsOnce sync.Once
	loops     int
)
