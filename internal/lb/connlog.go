package lb

import (
	"net/netip"

	"github.com/vipstack/vipstack/internal/lb/logging"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// client is cn's client address as haproxy 2.6 writes it in its logs: an
// IPv4 client of an IPv6 listener (`bind :::PORT v4v6`) IPv4-mapped, as
// that socket gives it (measured: "::ffff:127.0.0.1:43206 [...] fe2 be/s1
// ..." in a tcplog line, %ci and %fi "::ffff:127.0.0.1"); the accept loop
// hands the client's address unmapped, and the listener's address (read
// when the log needs it) tells the listener's family.
func (cn *conn) client() netip.AddrPort {
	if a := cn.peer.Addr(); a.Is4() && cn.local.Addr().Is4In6() {
		return netip.AddrPortFrom(netip.AddrFrom16(a.As16()), cn.peer.Port())
	}
	return cn.peer
}

// Termination states (haproxy's %ts): the first character says what
// ended the connection, the second in which phase.
//
//	--  normal: each side ended with an end of file, whichever first
//	SD  the server reset (or failed) while data flowed
//	CD  the client reset (or failed) while data flowed
//	cD  client-side timeout: the client was expected to speak and did not
//	sD  server-side timeout: the server was expected to answer and did not
//	SC  no server could be connected (refused, down, or none UP)
//	sC  the last connect attempt timed out (timeout connect)
//	CC  the client ended without sending a byte while its server was
//	    connecting (a reset then gives CD, as in haproxy 2.6.12: measured)
//	sQ  the client waited in the frontend's queue past timeout queue
//	K-  closed by the runtime API's shutdown session or shutdown sessions
//	    server, or by a forced shutdown (haproxy 2.6 writes K-, no phase,
//	    for both commands and for the connections its hard-stop-after
//	    closes: measured)
//	KC  the same, while it connected to its server (haproxy 2.6: KC for
//	    both commands, measured)
//	KQ  closed by a forced shutdown while it waited in the queue
//
// Measured against haproxy 2.6.12 (TestConnLogMatchesHaproxy): --, SD,
// CD, cD, SC; TestClientLeavesWhileConnectingMatchesHaproxy: CC, CD and
// sC of a client that leaves while its server is connecting.
var termNormal = [2]byte{'-', '-'}

// termState is cn's termination state once it is closed.
func (cn *conn) termState() [2]byte {
	if cn.term[0] != 0 {
		return cn.term
	}
	return termNormal
}

// logConn writes cn's line, when its frontend logs connections. It runs
// when the connection has ended, before its slot is given back (so %fc
// and %ac count it, as haproxy's do).
func (f *frontend) logConn(cn *conn) {
	cl := cn.log
	if cl == nil || (cl.DontLogNull && cn.up == 0) {
		return
	}
	normal := cn.termState() == termNormal
	if normal && cl.DontLogNormal {
		return
	}
	level := lbconfig.LevelInfo
	if !normal && cl.SeparateErrors {
		level = lbconfig.LevelErr
	}
	var buf [512]byte
	now := f.lb.clk.Now()
	lf := cn.logFields()
	f.lb.sendLog(cl.To, level, cl.AppendLine(buf[:0], &lf, now))
}

// logFields are what cn's log line may show.
func (cn *conn) logFields() logging.Fields {
	lf := logging.Fields{Client: cn.client(), Local: cn.local, Source: cn.source, Frontend: cn.fe.name, TLS: cn.tls, Backend: "-",
		AcceptAt: cn.acceptAt, StartAt: cn.startAt, ConnAt: cn.connAt, Up: cn.up, Down: cn.down,
		Term: cn.termState(), Attempts: cn.attempt, Counts: logCounts{cn}}
	switch {
	case cn.term == termDenied:
		// A tcp-request content reject ends the session before it
		// has a backend: haproxy shows the frontend's name.
		lf.Backend = cn.fe.name
	case cn.cfg != nil && cn.cfg.pool != nil:
		lf.Backend = cn.cfg.pool.name
	}
	if s := cn.picked; s != nil {
		lf.Server, lf.ServerAddr, lf.HasServer = s.name, s.addr, true
	}
	return lf
}

// logCounts are the counts a connection's line may show, read as it is
// written.
type logCounts struct{ cn *conn }

func (c logCounts) Global() int64   { return c.cn.fe.lb.gcount.Load() }
func (c logCounts) Frontend() int64 { return c.cn.fe.cur.Load() }

func (c logCounts) Backend() int64 {
	var n int64
	if c.cn.cfg != nil && c.cn.cfg.pool != nil {
		for _, ps := range c.cn.cfg.pool.servers {
			n += ps.cur.Load()
		}
	}
	return n
}

func (c logCounts) Server() int64 {
	if s := c.cn.picked; s != nil {
		return s.cur.Load()
	}
	return 0
}
