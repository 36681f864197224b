package httploop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/lb/httpproxy"
	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Engine serves one mode http frontend's binds on its event loops. Each
// loop is a goroutine on a locked thread with its own epoll set, timers,
// buffers and idle server connections; a client connection belongs to
// the loop that accepted it for its whole life, so nothing about it is
// locked.
type Engine struct {
	core httpproxy.Core
	log  *slog.Logger
	cfg  atomic.Pointer[compiled]

	loops []*loop

	mu     sync.Mutex
	lnfds  []int // the listening sockets' duplicates the loops accept on
	closed bool

	draining atomic.Bool  // Shutdown: no new clients, none kept alive
	open     atomic.Int64 // client connections open
}

// compiled is a Config ready for the loops.
type compiled struct {
	cfg      httpproxy.Config
	backend  *backendInfo // default_backend (nil: none, 503)
	backends map[string]*backendInfo
	// rules are the frontend's and backends' request rules, nil when
	// they have none: a request then needs no *http.Request.
	rules    *httpproxy.Rules
	maxRaw   int
	maxHTX   int
	reqTO    time.Duration // timeout http-request, else client
	idleTO   time.Duration // timeout http-keep-alive, else http-request, else client
	connTO   time.Duration
	serverTO time.Duration
	clientTO time.Duration
	retries  int
	logNull  bool // log a connection closed without a byte
}

// backendInfo is a backend as the loop uses it.
type backendInfo struct {
	name    string
	servers []lbconfig.Server
	ff      *forwardFor // option forwardfor, the backend's else the frontend's
}

// hasRules reports whether a section has request rules the loop runs
// through httpproxy.Rules.
func hasRules(p *lbconfig.HTTPProxy) bool {
	return len(p.ACLs) > 0 || len(p.Rules) > 0 || len(p.Redirects) > 0
}

// bufSize is a buffer's size: haproxy's tune.bufsize.
const bufSize = 16 << 10

// New starts an engine with cfg in force: one loop per processor the
// runtime uses.
func New(core httpproxy.Core, cfg httpproxy.Config, log *slog.Logger) (*Engine, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Engine{core: core, log: log}
	e.Set(cfg)
	for range max(runtime.GOMAXPROCS(0), 1) {
		lp, err := newLoop(e)
		if err != nil {
			e.Close()
			return nil, err
		}
		e.loops = append(e.loops, lp)
	}
	return e, nil
}

// Set puts cfg in force for the requests that start from now on.
func (e *Engine) Set(cfg httpproxy.Config) {
	c := &compiled{cfg: cfg, maxRaw: cfg.HeadRaw, maxHTX: cfg.HeadHTX, retries: max(cfg.Retries, 0)}
	if c.maxRaw <= 0 {
		c.maxRaw = bufSize
	}
	if c.maxHTX <= 0 {
		c.maxHTX = c.maxRaw
	}
	to := cfg.Timeouts
	c.reqTO = firstSet(to.HTTPRequest, to.Client)
	c.idleTO = firstSet(to.HTTPKeepAlive, to.HTTPRequest, to.Client)
	c.connTO, c.serverTO, c.clientTO = to.Connect, to.Server, to.Client
	c.backends = map[string]*backendInfo{}
	fe := cfg.Frontend.HTTP
	var feFF *lbconfig.ForwardFor
	if fe != nil {
		c.logNull = !fe.DontLogNull
		feFF = fe.ForwardFor
		if hasRules(&fe.HTTPProxy) || len(fe.UseBackends) > 0 {
			c.rules = httpproxy.NewRules(cfg)
		}
	}
	for name, b := range cfg.Backends {
		bi := &backendInfo{name: name, servers: b.Servers}
		ff := feFF
		if b.HTTP != nil && b.HTTP.ForwardFor != nil {
			ff = b.HTTP.ForwardFor
		}
		if ff != nil {
			bi.ff = &forwardFor{header: ff.Header, except: ff.Except, ifNone: ff.IfNone}
			if bi.ff.header == "" {
				bi.ff.header = "X-Forwarded-For"
			}
		}
		if b.HTTP != nil && hasRules(&b.HTTP.HTTPProxy) && c.rules == nil {
			c.rules = httpproxy.NewRules(cfg)
		}
		c.backends[name] = bi
	}
	c.backend = c.backends[cfg.Frontend.Backend]
	e.cfg.Store(c)
}

func firstSet(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}

// Serve has the loops accept on ln (a TCP listener) until Shutdown or
// Close; it returns at once. ln stays the caller's: the loops accept on
// a duplicate of its socket.
func (e *Engine) Serve(ln net.Listener) error {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return fmt.Errorf("httploop: listener %s is a %T (accepted: a TCP listener)", ln.Addr(), ln)
	}
	fd, err := relay.AcceptFD(tl)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		relay.Close(fd)
		return errors.New("httploop: engine closed")
	}
	for _, lp := range e.loops {
		lp.call(func() { lp.addListener(fd) })
	}
	e.lnfds = append(e.lnfds, fd)
	return nil
}

// StopAccepting takes the listening sockets out of the loops and closes
// them (the caller's listeners stay open); Shutdown starts with it.
func (e *Engine) StopAccepting() {
	e.mu.Lock()
	fds := e.lnfds
	e.lnfds = nil
	e.mu.Unlock()
	for _, fd := range fds {
		for _, lp := range e.loops {
			lp.call(func() { lp.removeListener(fd) })
		}
		relay.Close(fd)
	}
}

// Shutdown stops accepting, closes the idle client connections, lets
// the requests in flight finish (their answers say Connection: close)
// until ctx ends, then closes every connection.
func (e *Engine) Shutdown(ctx context.Context) {
	// Accepting stops first: a client the loops took while draining
	// would be closed unanswered, where std (on the same socket, after a
	// move) would serve it.
	e.StopAccepting()
	e.draining.Store(true)
	for _, lp := range e.loops {
		lp.call(lp.closeIdle)
	}
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for e.open.Load() > 0 {
		select {
		case <-ctx.Done():
			e.Close()
			return
		case <-t.C:
		}
	}
	e.Close()
}

// Close stops the listeners and closes every connection.
func (e *Engine) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	e.mu.Unlock()
	e.StopAccepting()
	for _, lp := range e.loops {
		lp.stop()
	}
}

// loop is one event loop.
type loop struct {
	e      *Engine
	epfd   int
	wake   int // eventfd: call writes it
	done   chan struct{}
	events [128]unix.EpollEvent
	now    time.Time // read once per batch of events

	objs   []slot // by descriptor
	gen    int32
	heap   timerHeap
	bufs   [][]byte // free buffers of bufSize
	smalls [][]byte // free buffers of smallSize
	// scratchIn and scratchSin take what a client or a server sends
	// while a connection is handled; what is left at the end moves to
	// a buffer of the connection's (settle). A request and an answer
	// that come whole so hold no buffer between events.
	scratchIn, scratchSin []byte
	idle                  map[netip.AddrPort][]*srvConn // kept-alive server connections by address
	txns                  []*txn                        // free transactions
	lnfds                 map[int]bool                  // listening sockets registered here

	cmdMu   sync.Mutex
	cmds    []func()
	stopped bool
}

// slot is what a descriptor is in this loop, and the generation of its
// registration (an event of a closed descriptor's predecessor is
// dropped).
type slot struct {
	obj handler
	gen int32
}

type handler interface {
	event(lp *loop, ev uint32)
}

// listener is a listening socket's slot.
type listener struct{ fd int }

func newLoop(e *Engine) (*loop, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("httploop: epoll_create1: %w", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("httploop: eventfd: %w", err)
	}
	lp := &loop{e: e, epfd: fd, wake: wake, done: make(chan struct{}), idle: map[netip.AddrPort][]*srvConn{}, lnfds: map[int]bool{},
		scratchIn: make([]byte, bufSize), scratchSin: make([]byte, bufSize)}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wake), Pad: -1}
	if err := unix.EpollCtl(fd, unix.EPOLL_CTL_ADD, wake, &ev); err != nil {
		unix.Close(fd)
		unix.Close(wake)
		return nil, fmt.Errorf("httploop: epoll_ctl: %w", err)
	}
	go lp.run()
	return lp, nil
}

// call runs f on the loop and waits for it (at once when the loop is
// gone).
func (lp *loop) call(f func()) {
	ran := make(chan struct{})
	lp.cmdMu.Lock()
	if lp.stopped {
		lp.cmdMu.Unlock()
		return
	}
	lp.cmds = append(lp.cmds, func() { f(); close(ran) })
	lp.cmdMu.Unlock()
	one := [8]byte{1}
	unix.Write(lp.wake, one[:])
	select {
	case <-ran:
	case <-lp.done:
	}
}

// stop closes every connection of the loop and ends it.
func (lp *loop) stop() {
	lp.call(func() {
		lp.closeAll()
		lp.cmdMu.Lock()
		lp.stopped = true
		lp.cmdMu.Unlock()
	})
	<-lp.done
}

func (lp *loop) run() {
	defer close(lp.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func() {
		unix.Close(lp.epfd)
		unix.Close(lp.wake)
	}()
	for {
		n, err := relay.EpollPoll(lp.epfd, lp.events[:])
		if n == 0 && err == nil {
			n, err = unix.EpollWait(lp.epfd, lp.events[:], lp.heap.wait(time.Now()))
		}
		if err != nil && err != unix.EINTR {
			lp.e.log.Error("httploop: epoll_wait failed", "err", err)
			return
		}
		lp.now = time.Now()
		for i := range n {
			ev := &lp.events[i]
			if ev.Pad == -1 {
				var b [8]byte
				relay.Read(lp.wake, b[:])
				continue
			}
			fd := int(ev.Fd)
			if fd >= len(lp.objs) || lp.objs[fd].obj == nil || lp.objs[fd].gen != ev.Pad {
				continue
			}
			lp.objs[fd].obj.event(lp, ev.Events)
		}
		if lp.runCmds() {
			return
		}
		lp.expire()
	}
}

// runCmds runs what call posted; true once the loop is to end.
func (lp *loop) runCmds() bool {
	lp.cmdMu.Lock()
	cmds := lp.cmds
	lp.cmds = nil
	lp.cmdMu.Unlock()
	for _, f := range cmds {
		f()
	}
	lp.cmdMu.Lock()
	defer lp.cmdMu.Unlock()
	return lp.stopped
}

// register adds fd to the epoll set for h, edge-triggered (ev 0) or
// with the events ev.
func (lp *loop) register(fd int, h handler, ev uint32) error {
	for fd >= len(lp.objs) {
		lp.objs = append(lp.objs, make([]slot, max(len(lp.objs), 64))...)
	}
	lp.gen++
	if lp.gen < 0 {
		lp.gen = 0
	}
	if ev == 0 {
		ev = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET
	}
	e := unix.EpollEvent{Events: ev, Fd: int32(fd), Pad: lp.gen}
	if err := relay.EpollCtl(lp.epfd, unix.EPOLL_CTL_ADD, fd, &e); err != nil {
		return err
	}
	lp.objs[fd] = slot{obj: h, gen: lp.gen}
	return nil
}

// forget takes fd out of the loop's table (closing it takes it out of
// the epoll set).
func (lp *loop) forget(fd int) {
	if fd < len(lp.objs) {
		lp.objs[fd] = slot{}
	}
}

func (lp *loop) addListener(fd int) {
	if err := lp.register(fd, &listener{fd: fd}, unix.EPOLLIN|unix.EPOLLEXCLUSIVE); err != nil {
		lp.e.log.Error("httploop: cannot watch a listening socket", "err", err)
		return
	}
	lp.lnfds[fd] = true
}

func (lp *loop) removeListener(fd int) {
	if !lp.lnfds[fd] {
		return
	}
	delete(lp.lnfds, fd)
	relay.EpollCtl(lp.epfd, unix.EPOLL_CTL_DEL, fd, nil)
	lp.forget(fd)
}

// acceptBatch bounds the clients one event accepts, so that a flood of
// connections leaves the loop time for its others.
const acceptBatch = 64

func (ln *listener) event(lp *loop, _ uint32) {
	for range acceptBatch {
		fd, peer, err := relay.Accept4(ln.fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err != nil {
			if err != unix.EAGAIN && err != unix.EINTR && err != unix.ECONNABORTED {
				lp.e.log.Warn("httploop: accept failed", "err", err)
			}
			return
		}
		if lp.e.draining.Load() {
			relay.Close(fd)
			continue
		}
		lp.accept(fd, peer)
	}
}

func (lp *loop) accept(fd int, peer netip.AddrPort) {
	relay.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	cfg := lp.e.cfg.Load()
	c := &conn{lp: lp, fd: fd, client: peer, accepted: lp.now, hidx: -1}
	if err := lp.register(fd, c, 0); err != nil {
		relay.Close(fd)
		return
	}
	lp.e.open.Add(1)
	c.closed = lp.e.core.Opened(cfg.cfg.Frontend.Name)
	c.armIdle(cfg)
}

// closeIdle closes the client connections waiting for a request
// (Shutdown).
func (lp *loop) closeIdle() {
	for _, s := range lp.objs {
		// A connection that has not sent its first request yet may
		// have it in flight: it is served, with Connection: close.
		if c, ok := s.obj.(*conn); ok && c.tx == nil && c.inR == c.inW && c.nth > 0 {
			c.close()
		}
	}
	lp.dropIdleServers()
}

func (lp *loop) closeAll() {
	for _, s := range lp.objs {
		switch o := s.obj.(type) {
		case *conn:
			if o.tx != nil {
				o.tx.term = "KD"
				o.logTx()
			}
			o.close()
		case *listener:
			lp.removeListener(o.fd)
		}
	}
	lp.dropIdleServers()
}

func (lp *loop) dropIdleServers() {
	for a, ss := range lp.idle {
		for _, s := range ss {
			s.close(lp)
		}
		delete(lp.idle, a)
	}
}

// smallSize is the size of the buffers a request's head goes to the
// server in, when it fits with smallSlack to spare (forwardfor's
// header): it waits there until the answer comes, in case it must be
// sent again.
const (
	smallSize  = 2 << 10
	smallSlack = 128
)

// maxFreeSmall bounds the small buffers a loop keeps for reuse.
const maxFreeSmall = 256

func (lp *loop) getSmall() []byte {
	if n := len(lp.smalls); n > 0 {
		b := lp.smalls[n-1]
		lp.smalls = lp.smalls[:n-1]
		return b
	}
	return make([]byte, smallSize)
}

// isScratch reports whether b is one of the loop's scratch buffers.
func (lp *loop) isScratch(b []byte) bool {
	return cap(b) > 0 && (&b[:1][0] == &lp.scratchIn[0] || &b[:1][0] == &lp.scratchSin[0])
}

// getBuf lends a buffer of bufSize.
func (lp *loop) getBuf() []byte {
	if n := len(lp.bufs); n > 0 {
		b := lp.bufs[n-1]
		lp.bufs = lp.bufs[:n-1]
		return b
	}
	return make([]byte, bufSize)
}

// maxFreeBufs bounds the buffers a loop keeps for reuse.
const maxFreeBufs = 32

// putBuf takes back a buffer of getBuf's or getSmall's.
func (lp *loop) putBuf(b []byte) {
	switch {
	case lp.isScratch(b):
	case cap(b) == smallSize && len(lp.smalls) < maxFreeSmall:
		lp.smalls = append(lp.smalls, b[:smallSize])
	case cap(b) == bufSize && len(lp.bufs) < maxFreeBufs:
		lp.bufs = append(lp.bufs, b[:bufSize])
	}
}

// expire runs the timers that are due.
func (lp *loop) expire() {
	for {
		c := lp.heap.due(lp.now)
		if c == nil {
			return
		}
		c.timeout()
	}
}
