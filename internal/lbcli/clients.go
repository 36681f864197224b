package lbcli

import (
	"cmp"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"
)

// Clients is the runtime API connections of a process's stats sockets.
// haproxy lists every CLI connection in show sess, on whichever socket
// it is asked (measured: a connection held open on each of three Unix
// sockets and one TCP socket, all listed from each), and `shutdown
// session` closes any of them; the Servers of one configuration share
// one Clients so that vipstack does the same.
type Clients struct {
	mu sync.Mutex
	m  map[*session]struct{}
}

// NewClients returns an empty Clients.
func NewClients() *Clients { return &Clients{m: map[*session]struct{}{}} }

func (cs *Clients) add(sess *session) {
	cs.mu.Lock()
	cs.m[sess] = struct{}{}
	cs.mu.Unlock()
}

func (cs *Clients) remove(sess *session) {
	cs.mu.Lock()
	delete(cs.m, sess)
	cs.mu.Unlock()
}

// list is the connections in accept order (then by ID).
func (cs *Clients) list() []*session {
	cs.mu.Lock()
	out := make([]*session, 0, len(cs.m))
	for sess := range cs.m {
		out = append(out, sess)
	}
	cs.mu.Unlock()
	slices.SortFunc(out, func(a, b *session) int {
		if c := a.accepted.Compare(b.accepted); c != 0 {
			return c
		}
		return cmp.Compare(a.id(), b.id())
	})
	return out
}

// find is the connection show sess names id, or nil.
func (cs *Clients) find(id uint64) *session {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for sess := range cs.m {
		if uint64(sess.id()) == id {
			return sess
		}
	}
	return nil
}

// id names a CLI connection in show sess while it lasts: the address of
// its state, as the relayed connections' IDs are.
func (sess *session) id() uintptr { return uintptr(unsafe.Pointer(sess)) }

// cliSession is what show sess writes of a CLI connection: haproxy's
// proto, src and listener address (measured: "proto=unix_stream
// src=unix:1" for a Unix socket, the number being the stats socket's
// listener id, its place among the configuration's stats socket lines;
// "proto=tcpv4 src=<client>" for a TCP one, whose listener address is
// the socket's own).
type cliSession struct {
	id         uintptr
	proto, src string
	addr       string // the stats socket's address, as haproxy writes it
	accepted   time.Time
	age        time.Duration
}

func (sess *session) describe(now time.Time) cliSession {
	lid := sess.srv.listenerID.Load()
	cs := cliSession{id: sess.id(), accepted: sess.accepted, age: now.Sub(sess.accepted)}
	ra, ok := sess.conn.RemoteAddr().(*net.TCPAddr)
	if !ok {
		cs.proto = "unix_stream"
		cs.src = "unix:" + strconv.Itoa(int(lid))
		cs.addr = cs.src
		return cs
	}
	cs.proto, cs.src = "tcpv4", unmapped(ra).String()
	if unmapped(ra).Addr().Is6() {
		cs.proto = "tcpv6"
	}
	if la, ok := sess.conn.LocalAddr().(*net.TCPAddr); ok {
		cs.addr = unmapped(la).String()
	}
	return cs
}

// unmapped is a's address and port, an IPv4 address in its 4-byte form.
func unmapped(a *net.TCPAddr) netip.AddrPort {
	ap := a.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
