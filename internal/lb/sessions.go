package lb

import (
	"cmp"
	"net/netip"
	"slices"
	"time"
	"unsafe"
)

// Session is a client connection being relayed, as the runtime API's
// `show sess` lists it: what the balancer knows of it, nothing made up.
type Session struct {
	// ID names the connection while it lasts: the address of its state
	// in memory, as haproxy names its sessions by the address of theirs.
	// Once the connection ends the ID may name a later one.
	ID uintptr
	// Frontend is the section that accepted the client.
	Frontend string
	// Backend is the frontend's backend, "" when it has none.
	Backend string
	// Server is the server connected to, or being connected to; "" when
	// none is picked yet.
	Server string
	// Connected: the server's connect has completed and bytes are
	// relayed both ways; false while the connect is in progress.
	Connected bool
	// Client is the client's address and port.
	Client netip.AddrPort
	// Listener is the address the client connected to.
	Listener netip.AddrPort
	// ServerAddr is Server's address; Local the address and port of the
	// balancer's socket to it (zero before the socket exists).
	ServerAddr, Local netip.AddrPort
	// Accepted is when the client was accepted, Age how long ago (on the
	// balancer's clock): the accepting loop's clock reading for its batch
	// of events, or the connection log's own reading where the frontend
	// keeps one. Both are zero when unknown (a client no event loop
	// accepted).
	Accepted time.Time
	Age      time.Duration
}

// Sessions lists the connections being relayed, in accept order where it
// is known (then by ID). Clients waiting in a frontend's queue are not
// listed (they have no server yet; haproxy leaves such clients in the
// kernel's accept queue and lists none, measured), nor the monitor's and
// the stats page's clients (haproxy lists one only while its request is
// answered, measured: not while idle or with a partial request).
func (l *LB) Sessions() []Session {
	ss := l.sessions()
	slices.SortFunc(ss, func(a, b Session) int {
		if c := a.Accepted.Compare(b.Accepted); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return ss
}

// ShutdownSession closes the connection whose Session.ID is id, both its
// sockets, as haproxy's `shutdown session` does; false when no connection
// being relayed or connecting has that ID. Its connection log line says
// "K-" (killed), "KC" while it connected to its server, and its bytes
// count as those of a connection that ended: no error or abort counter
// moves (haproxy 2.6, measured). A connecting client reads what it sent
// first, so that it sees the end of the connection, not a reset, as
// haproxy's does; haproxy 2.6.12 ends such a stream only once its connect
// attempts are spent (measured: timeout connect times retries + 1, each
// counted as a connect error or retry), vipstack at once.
func (l *LB) ShutdownSession(id uintptr) bool {
	return id != 0 && l.closeSession(id)
}

// sessionID is cn's Session.ID.
func sessionID(cn *conn) uintptr { return uintptr(unsafe.Pointer(cn)) }

// sessionOf describes cn; its loop's lock is held. now is the balancer's
// clock.
func sessionOf(cn *conn, now time.Time) Session {
	s := Session{ID: sessionID(cn), Frontend: cn.fe.name, Client: cn.peer, Connected: cn.state == stRelaying}
	if cn.cfg != nil && cn.cfg.pool != nil {
		s.Backend = cn.cfg.pool.name
	}
	if cn.srv != nil {
		s.Server, s.ServerAddr = cn.srv.name, cn.srv.addr
	}
	if !cn.acceptAt.IsZero() {
		s.Accepted, s.Age = cn.acceptAt, now.Sub(cn.acceptAt)
	}
	return s
}
