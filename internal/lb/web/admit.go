package web

import (
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
)

// Admission to the monitor and stats listeners.
//
// Each listener serves MaxConns clients at once. haproxy 2.6 has no
// such small cap: a monitor-uri frontend takes clients up to its maxconn,
// by default the global one (9986 with the 20000 open files of these
// hosts), and only past it does a new client wait for a slot, that is for
// `timeout http-request` to end a silent client (measured: with 300, then
// 2000, silent connections from 127.0.0.2, curl from 127.0.0.1 gets its
// 200 at once; with `maxconn 10` on the frontend and 10 silent
// connections, it gets it 3.5 s later, when the silent ones get their
// 408 at `timeout http-request 4s`). With the seeds' `timeout
// http-request 1m` and keepalived polling the monitor every few seconds,
// a cap that made new clients wait would let a few hundred silent
// connections (a slowloris) fail the VIP's check: the node would lose its
// VIP. So, at the cap, a new client takes the place of one that is
// waiting for a request: not sent yet, sent in part, or idle between
// keep-alive requests, never one being answered. The one evicted is, of
// the source address holding the most connections, the oldest; it is
// closed without an answer. A flood from one address so evicts its own
// connections first, and a check script polling with a new connection
// every few seconds is answered as long as the flood does not open
// MaxConns connections between its connect and its request.

// States of a webConn.
const (
	webWaiting   int32 = iota // waiting for a request's head: evictable
	webAnswering              // its request is being answered
	webEvicted                // closed for a newer client
)

// webConn is a monitor or stats client as its listener tracks it (the
// listener's conns map holds *webConn).
type webConn struct {
	net.Conn
	seq   uint64     // accept order
	src   netip.Addr // the client's address, zero if not TCP
	state atomic.Int32
	// released: its slot was given back, by its goroutine's end or by its
	// eviction (then to the client that evicted it).
	released atomic.Bool
	// gated: admitted under the section's maxconn (maxconn.go), holding
	// a place of the gate rather than a slot; never evicted.
	gated bool
}

func newWebConn(c net.Conn, seq uint64) *webConn {
	wc := &webConn{Conn: c, seq: seq}
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		wc.src = a.AddrPort().Addr().Unmap()
	}
	return wc
}

// answering marks the connection as being answered; false if it was
// evicted.
func (c *webConn) answering() bool {
	return c.state.CompareAndSwap(webWaiting, webAnswering)
}

// waiting marks the connection as waiting for a request again (its answer
// is written).
func (c *webConn) waiting() {
	c.state.CompareAndSwap(webAnswering, webWaiting)
}

// admit takes a slot for c, evicting a waiting client if every slot is
// taken, and tracks it; false once the listener is closed. If every slot
// holds a client being answered, it waits for one to finish.
func (h *Listener) admit(c *webConn) bool {
	select {
	case h.slots <- struct{}{}:
	default:
		if !h.evict() {
			h.slots <- struct{}{}
		}
	}
	if !h.track(c, true) {
		h.release(c)
		return false
	}
	return true
}

// evict closes the waiting client chosen as above; true if its slot is
// now the caller's.
func (h *Listener) evict() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		perSrc := map[netip.Addr]int{}
		for c := range h.conns {
			perSrc[c.(*webConn).src]++
		}
		var victim *webConn
		for c := range h.conns {
			wc := c.(*webConn)
			if wc.gated || wc.state.Load() != webWaiting {
				continue
			}
			if victim == nil || perSrc[wc.src] > perSrc[victim.src] ||
				perSrc[wc.src] == perSrc[victim.src] && wc.seq < victim.seq {
				victim = wc
			}
		}
		if victim == nil {
			return false
		}
		if !victim.state.CompareAndSwap(webWaiting, webEvicted) {
			continue // it has just sent a request: choose again
		}
		delete(h.conns, victim)
		victim.Close()
		// Its goroutine may have ended and given its slot back already.
		return victim.released.CompareAndSwap(false, true)
	}
}

// release gives c's slot back, unless its eviction gave it away, and
// stops tracking it.
func (h *Listener) release(c *webConn) {
	h.track(c, false)
	if c.gated {
		if c.released.CompareAndSwap(false, true) {
			h.gate.release()
		}
		return
	}
	if c.released.CompareAndSwap(false, true) {
		<-h.slots
	}
}

// CloseWrite shuts the sending side, for lingerClose.
func (c *webConn) CloseWrite() error {
	cw, ok := c.Conn.(interface{ CloseWrite() error })
	if !ok {
		return errors.ErrUnsupported
	}
	return cw.CloseWrite()
}
