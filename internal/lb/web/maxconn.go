package web

import "sync"

// A section's own maxconn (lbconfig.Stats.MaxConn, Monitor.MaxConn)
// replaces the evicting cap of admit.go with haproxy's behaviour: at
// maxconn clients the listener stops accepting, so that new clients wait
// in the listening socket's queue (the kernel's backlog) until one
// leaves; none is evicted. haproxy 2.6 also sizes that queue to maxconn
// by default; vipstack's stays the system's (somaxconn), so past the
// queue a client waits for its SYN's retries with haproxy and is queued
// with vipstack.

// maxConnOf is the site's own maxconn, 0 for none.
func maxConnOf(st *Site) int {
	switch {
	case st == nil:
		return 0
	case st.Stats != nil:
		return st.Stats.MaxConn
	case st.Monitor != nil:
		return st.Monitor.MaxConn
	}
	return 0
}

// gate counts the clients admitted under a section's maxconn.
type gate struct {
	mu   sync.Mutex
	n    int
	wake chan struct{} // closed, and replaced, when a client leaves or the cap changes
}

func newGate() *gate { return &gate{wake: make(chan struct{})} }

// acquire waits until fewer than limit() clients hold the gate, and
// takes a place; false if done closes first. A limit of 0 (the section
// lost its maxconn on a reload) lets the client in.
func (g *gate) acquire(limit func() int, done <-chan struct{}) bool {
	for {
		g.mu.Lock()
		if m := limit(); m <= 0 || g.n < m {
			g.n++
			g.mu.Unlock()
			return true
		}
		w := g.wake
		g.mu.Unlock()
		select {
		case <-w:
		case <-done:
			return false
		}
	}
}

// release gives a place back and wakes a waiting acquire.
func (g *gate) release() {
	g.mu.Lock()
	g.n--
	g.kickLocked()
	g.mu.Unlock()
}

// kick wakes a waiting acquire to read the limit again.
func (g *gate) kick() {
	g.mu.Lock()
	g.kickLocked()
	g.mu.Unlock()
}

func (g *gate) kickLocked() {
	close(g.wake)
	g.wake = make(chan struct{})
}

// admitGated tracks c, a client the gate let in; false once the listener
// is closed (the place is given back).
func (h *Listener) admitGated(c *webConn) bool {
	c.gated = true
	if !h.track(c, true) {
		h.gate.release()
		return false
	}
	return true
}
