package web

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Listener serves a monitor or stats section on one socket.
type Listener struct {
	ln   net.Listener
	to   atomic.Pointer[Timeouts]
	lim  atomic.Pointer[Limits]
	site atomic.Pointer[Site]

	// slots holds a token per client being served, MaxConns at most:
	// past them, clients wait in the accept queue.
	slots chan struct{}

	// gate admits clients under a section's own maxconn (maxconn.go);
	// done is closed by Close.
	gate *gate
	done chan struct{}

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
}

// NewListener serves ln, with the timeouts of to (TimeoutsOf), once it
// has a site (SetSite) and is started.
func NewListener(ln net.Listener, to lbconfig.Timeouts) *Listener {
	h := &Listener{ln: ln, conns: map[net.Conn]struct{}{}, slots: make(chan struct{}, MaxConns), gate: newGate(), done: make(chan struct{})}
	h.SetTimeouts(TimeoutsOf(to))
	h.SetLimits(LimitsOf(&lbconfig.Config{}))
	return h
}

// Limits bound a request's head: Raw bytes as it arrives, HTX bytes as
// haproxy stores it (http1.go).
type Limits struct{ Raw, HTX int }

// LimitsOf are cfg's limits, from its tune.bufsize and tune.maxrewrite.
func LimitsOf(cfg *lbconfig.Config) Limits {
	raw, htx := cfg.HeadLimits()
	return Limits{Raw: raw, HTX: htx}
}

// SetLimits applies to the connections accepted after it.
func (h *Listener) SetLimits(l Limits) { h.lim.Store(&l) }

// Limits are the limits in force.
func (h *Listener) Limits() Limits { return *h.lim.Load() }

// Addr is the listening socket's address.
func (h *Listener) Addr() net.Addr { return h.ln.Addr() }

// Timeouts are the timeouts of a monitor or stats listener: `timeout
// http-request` for the request's headers (ReadHeader), `timeout
// http-keep-alive` for an idle connection between requests (Idle), and
// the bound of an answer's write to a client that does not read
// (Write, webWriteTimeout).
type Timeouts struct {
	ReadHeader, Idle, Write time.Duration
}

// TimeoutsOf falls back as haproxy 2.6 does where the configuration
// sets no timeout: `timeout http-keep-alive` to `timeout http-request`, and
// that to `timeout client` (measured: with `timeout http-request 3s` and no
// keep-alive timeout haproxy closes an idle connection 3 s after its
// answer). Where none of them is set haproxy never times out; lb then
// takes 30 s for the headers and 10 s between requests, so that a
// slowloris cannot hold the listener.
func TimeoutsOf(to lbconfig.Timeouts) Timeouts {
	w := Timeouts{ReadHeader: to.HTTPRequest, Idle: to.HTTPKeepAlive, Write: webWriteTimeout}
	if w.ReadHeader == 0 {
		w.ReadHeader = to.Client
	}
	if w.Idle == 0 {
		w.Idle = w.ReadHeader
	}
	if w.ReadHeader == 0 {
		w.ReadHeader = 30 * time.Second
	}
	if w.Idle == 0 {
		w.Idle = 10 * time.Second
	}
	return w
}

// SetTimeouts applies to the next requests.
func (h *Listener) SetTimeouts(to Timeouts) { h.to.Store(&to) }

// Timeouts are the timeouts in force.
func (h *Listener) Timeouts() Timeouts { return *h.to.Load() }

// SetSite makes the listener serve site from the next request on (a
// reload keeps the listener and its clients).
func (h *Listener) SetSite(site *Site) {
	h.site.Store(site)
	h.gate.kick() // its maxconn may have changed
}

// Clients is the number of client connections being served.
func (h *Listener) Clients() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// MaxConns bounds the monitor and stats listeners' clients: a monitor
// is polled by a few check scripts and the stats page read by people, so a
// few hundred connections are plenty (more wait in the accept queue).
// http1.go has the request limits.
const MaxConns = stats.ListenMaxConn

// Start serves clients in a goroutine until Close.
func (h *Listener) Start() {
	go h.serve()
}

// Close stops serving: the socket, then every client's connection. It
// closes the socket itself, not through serve, which runs in a goroutine
// that may not have started yet: a socket left open would stay in the
// port's SO_REUSEPORT group, taking connections nobody answers.
func (h *Listener) Close() {
	h.mu.Lock()
	if !h.closed {
		close(h.done)
	}
	h.closed = true
	conns := h.conns
	h.conns = map[net.Conn]struct{}{}
	h.mu.Unlock()
	h.ln.Close()
	for c := range conns {
		c.Close()
	}
}
