package lb

import (
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// connLog is a frontend's connection log: where its lines go, and its
// compiled format, or none for haproxy's "Connect from" line at accept.
type connLog struct {
	to          *logDests
	connect     bool // no format: the "Connect from" line at accept
	items       []lbconfig.LogItem
	dontLogNull bool
	needLocal   bool // the line shows the address the client connected to
	// needSource: the line shows the balancer's address on the server
	// connection (%bi, %bp), which costs a getsockname per connection;
	// without them the relay does not pay it.
	needSource bool
}

// newConnLog compiles a frontend's connection log; nil (no log) when it
// has no targets.
func newConnLog(c *lbconfig.ConnLog, to *logDests) (*connLog, error) {
	if to == nil || len(*to) == 0 {
		return nil, nil
	}
	if c == nil {
		return &connLog{to: to, connect: true, needLocal: true}, nil
	}
	items, err := lbconfig.ParseLogFormat(c.Format)
	if err != nil {
		return nil, err
	}
	cl := &connLog{to: to, items: items, dontLogNull: c.DontLogNull}
	for _, it := range items {
		switch it.Var {
		case "ci", "fi", "fp":
			// %ci too: an IPv4 client of an IPv6 listener is
			// written IPv4-mapped (client), which the listener's
			// address tells.
			cl.needLocal = true
		case "bi", "bp":
			cl.needSource = true
		}
	}
	return cl, nil
}

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

// accessLog hands the log messages (connection lines, health checks,
// server state changes) to a goroutine of its own that sends them to
// their targets, so that a slow or blocked target (a full log socket, a
// standard output piped to a container runtime) never holds up the
// relay's loops: haproxy sends its lines as datagrams that the kernel
// drops when the log socket is full, and counts them (show info's
// DroppedLogs). Messages wait in a buffer of up to maxPendingLog bytes; a
// message that does not fit is dropped and counted, as is one a target
// could not take.
type accessLog struct {
	mu      sync.Mutex
	pending []byte   // the messages' bytes, guarded by mu
	recs    []logRec // one per message in pending, guarded by mu
	spare   []byte   // the writer's buffers, swapped with pending and recs
	spareR  []logRec
	writing bool // the writer goroutine runs (guarded by mu)
	idle    sync.Cond
	dropped atomic.Uint64
	warned  atomic.Bool
	log     func(dropped uint64)
	pid     int
}

// logRec is one queued message: n bytes of pending, for to's targets.
type logRec struct {
	to    *logDests
	level int
	at    time.Time
	n     int
}

// maxPendingLog bounds the messages waiting for the writer.
const maxPendingLog = 1 << 20

// add queues msg (without its newline) and makes sure a writer runs.
func (al *accessLog) add(to *logDests, level int, at time.Time, msg []byte) {
	al.mu.Lock()
	if len(al.pending)+len(msg) > maxPendingLog {
		al.mu.Unlock()
		al.drop(1)
		return
	}
	al.pending = append(al.pending, msg...)
	al.recs = append(al.recs, logRec{to: to, level: level, at: at, n: len(msg)})
	start := !al.writing
	al.writing = true
	al.mu.Unlock()
	if start {
		go al.drain()
	}
}

func (al *accessLog) drop(n int) {
	if c := al.dropped.Add(uint64(n)); al.warned.CompareAndSwap(false, true) && al.log != nil {
		al.log(c)
	}
}

// drain sends what is pending until nothing is, then ends.
func (al *accessLog) drain() {
	var scratch []byte
	al.mu.Lock()
	for len(al.recs) > 0 {
		b, recs := al.pending, al.recs
		al.pending, al.spare = al.spare[:0], nil
		al.recs, al.spareR = al.spareR[:0], nil
		al.mu.Unlock()
		off, failed := 0, 0
		for _, r := range recs {
			var f int
			scratch, f = deliver(r.to, r.level, r.at, b[off:off+r.n], al.pid, scratch)
			failed += f
			off += r.n
		}
		if failed > 0 {
			al.drop(failed)
		}
		clear(recs) // let go of the targets
		al.mu.Lock()
		if cap(b) <= 64<<10 {
			al.spare = b[:0]
		}
		if cap(recs) <= 1024 {
			al.spareR = recs[:0]
		}
	}
	al.writing = false
	if al.idle.L != nil {
		al.idle.Broadcast()
	}
	al.mu.Unlock()
}

// flush waits until the messages queued so far are sent.
func (al *accessLog) flush() {
	al.mu.Lock()
	if al.idle.L == nil {
		al.idle.L = &al.mu
	}
	for al.writing {
		al.idle.Wait()
	}
	al.mu.Unlock()
}

var hostname = sync.OnceValue(func() string {
	h, err := os.Hostname()
	if err != nil {
		return "-"
	}
	return h
})

// logConn writes cn's line, when its frontend logs connections. It runs
// when the connection has ended, before its slot is given back (so %fc
// and %ac count it, as haproxy's do).
func (f *frontend) logConn(cn *conn) {
	cl := cn.log
	if cl == nil || (cl.dontLogNull && cn.up == 0) {
		return
	}
	var buf [512]byte
	now := f.lb.clk.Now()
	f.lb.sendLog(cl.to, lbconfig.LevelInfo, cn.appendLine(buf[:0], cl, now))
}

// ms is d in whole milliseconds.
func ms(d time.Duration) int64 { return d.Milliseconds() }

func (cn *conn) appendLine(b []byte, cl *connLog, end time.Time) []byte {
	f := cn.fe
	var s *server
	if cn.picked != nil {
		s = cn.picked
	}
	backend := "-"
	if cn.cfg != nil && cn.cfg.pool != nil {
		backend = cn.cfg.pool.name
	}
	addr := func(b []byte, a netip.Addr) []byte {
		if !a.IsValid() {
			return append(b, '-')
		}
		return a.AppendTo(b)
	}
	for _, it := range cl.items {
		if it.Var == "" {
			b = append(b, it.Lit...)
			continue
		}
		q := it.Quote && quotedVar(it.Var)
		if q {
			b = append(b, '"')
		}
		start := len(b)
		switch it.Var {
		case "ci":
			b = addr(b, cn.client().Addr())
		case "cp":
			b = strconv.AppendUint(b, uint64(cn.peer.Port()), 10)
		case "fi":
			b = addr(b, cn.local.Addr())
		case "fp":
			b = strconv.AppendUint(b, uint64(cn.local.Port()), 10)
		case "si":
			if s == nil {
				b = append(b, '-')
			} else {
				b = addr(b, s.addr.Addr())
			}
		case "sp":
			if s == nil {
				b = append(b, '-')
			} else {
				b = strconv.AppendUint(b, uint64(s.addr.Port()), 10)
			}
		case "bi":
			if cn.source.IsValid() {
				b = addr(b, cn.source.Addr())
			} else {
				b = append(b, '-')
			}
		case "bp":
			if cn.source.IsValid() {
				b = strconv.AppendUint(b, uint64(cn.source.Port()), 10)
			} else {
				b = append(b, '-')
			}
		case "f", "ft":
			b = append(b, f.name...)
		case "b":
			b = append(b, backend...)
		case "s":
			if s == nil {
				b = append(b, "<NOSRV>"...)
			} else {
				b = append(b, s.name...)
			}
		case "t":
			b = cn.acceptAt.AppendFormat(b, "02/Jan/2006:15:04:05.000")
		case "T":
			b = cn.acceptAt.UTC().AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
		case "Tl":
			b = cn.acceptAt.AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
		case "Ts":
			b = strconv.AppendInt(b, cn.acceptAt.Unix(), 10)
		case "ms":
			b = appendMillis(b, cn.acceptAt)
		case "Th":
			b = append(b, '0')
		case "Tw":
			tw := int64(0)
			if !cn.startAt.IsZero() && cn.picked == nil {
				// Left the queue and found no server to wait for:
				// haproxy 2.6's "-1/-1/0 0 SC" (measured).
				tw = -1
			} else if !cn.startAt.IsZero() {
				tw = ms(cn.startAt.Sub(cn.acceptAt))
			} else {
				tw = ms(end.Sub(cn.acceptAt)) // still queued
			}
			b = strconv.AppendInt(b, tw, 10)
		case "Tc":
			tc := int64(-1)
			if !cn.connAt.IsZero() {
				tc = ms(cn.connAt.Sub(cn.startAt))
			}
			b = strconv.AppendInt(b, tc, 10)
		case "Tt":
			b = strconv.AppendInt(b, ms(end.Sub(cn.acceptAt)), 10)
		case "B":
			b = strconv.AppendUint(b, cn.down, 10)
		case "U":
			b = strconv.AppendUint(b, cn.up, 10)
		case "ts":
			ts := cn.termState()
			b = append(b, ts[0], ts[1])
		case "ac":
			b = strconv.AppendInt(b, f.lb.gcount.Load(), 10)
		case "fc":
			b = strconv.AppendInt(b, f.cur.Load(), 10)
		case "bc":
			var n int64
			if cn.cfg != nil && cn.cfg.pool != nil {
				for _, ps := range cn.cfg.pool.servers {
					n += ps.cur.Load()
				}
			}
			b = strconv.AppendInt(b, n, 10)
		case "sc":
			var n int64
			if s != nil {
				n = s.cur.Load()
			}
			b = strconv.AppendInt(b, n, 10)
		case "rc":
			b = strconv.AppendInt(b, int64(max(cn.attempt-1, 0)), 10)
		case "sq", "bq":
			b = append(b, '0')
		case "pid":
			b = strconv.AppendInt(b, int64(os.Getpid()), 10)
		case "H":
			b = append(b, hostname()...)
		}
		if it.Quote && string(b[start:]) == "-" && emptyQuotedVar(it.Var) {
			// haproxy writes an absent address or port as "" under
			// +Q (measured).
			b = b[:start]
			if !q {
				b = append(b, '"')
			}
			q = true
		}
		if q {
			b = append(b, '"')
		}
	}
	return b
}

// quotedVar reports whether +Q quotes v: haproxy 2.6.12 quotes names and
// addresses, not numbers, ports, dates nor the termination state
// (measured: %{+Q}ci "127.0.0.1", %{+Q}cp 46602, %{+Q}s "s1", %{+Q}B 1251,
// %{+Q}t 23/Nov/2026:21:39:18.908, %{+Q}ts --, %{+Q}H "vm").
func quotedVar(v string) bool {
	switch v {
	case "ci", "fi", "si", "bi", "f", "ft", "b", "s", "H":
		return true
	}
	return false
}

// emptyQuotedVar reports whether v, absent ("-"), is written "" under +Q
// (measured, haproxy 2.6.12, no server tried: %{+Q}si %{+Q}sp %{+Q}bi
// %{+Q}bp give "" "" "" "").
func emptyQuotedVar(v string) bool {
	switch v {
	case "si", "sp", "bi", "bp":
		return true
	}
	return false
}

func appendMillis(b []byte, t time.Time) []byte {
	m := t.Nanosecond() / 1e6
	return append(b, byte('0'+m/100), byte('0'+m/10%10), byte('0'+m%10))
}
