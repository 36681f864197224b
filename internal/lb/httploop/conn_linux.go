package httploop

import (
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lb/web"
)

// A client connection goes through these states for each request; idle
// between requests it is stHead with no transaction and no buffer.
type state uint8

const (
	stHead    state = iota // reading a request head
	stConnect              // connecting to a server
	stSend                 // writing the request (head, then body) to the server
	stAnswer               // reading the answer's head
	stBody                 // relaying the answer's body
	stClosing              // writing a last answer, then closing
	stLocal                // writing an answer of the rules (redirect), then the next request
)

// conn is a client connection: about 200 bytes while idle.
type conn struct {
	lp          *loop
	fd          int
	st          state
	rd, wr, hup bool // what epoll last said of the socket (edge-triggered)
	got         bool // a byte was ever read
	client      netip.AddrPort
	local       netip.AddrPort // read when first needed
	accepted    time.Time
	closed      func() // the frontend's count
	nth         int64  // requests read
	in          []byte // lent while a request is read or bytes wait
	inR, inW    int
	deadline    time.Time
	hkey        time.Time
	hidx        int
	tx          *txn // the request in flight
}

// txn is a request in flight and its answer.
type txn struct {
	cfg        *compiled
	be         *backendInfo // where the request goes (nil: none)
	head       web.Head
	version    string
	start      time.Time // the request's first byte
	headAt     time.Time
	keep       bool // the client connection stays after the answer
	reqLeft    int64
	reqChunked bool
	reqChunk   chunkScan
	reqDone    bool
	out        []byte // the head for the server, and the body's first bytes
	spend      []byte // bytes to write to the server
	spendIn    bool   // spend lies in the client's buffer
	replay     bool   // out holds the whole request
	early      bool   // the answer began before the request was sent whole
	lastRead   int    // srvRecvOK's count
	resume     bool   // a 1xx answer came early: the request goes on after it
	srv        *srvConn
	server     int
	last       int
	skip       uint64
	retries    int
	end        func(failed bool)
	connStart  time.Time
	connected  time.Time
	sent       time.Time
	firstByte  time.Time
	sin        []byte // the server's bytes
	sinR, sinW int
	resp       respHead
	mode       bodyMode
	respLeft   int64
	respChunk  chunkScan
	bodyDone   bool
	closing    bool   // the client connection closes after the answer
	cout       []byte // the answer head for the client
	pend       []byte // bytes to write to the client
	status     int
	bytes      int64
	term       string
}

type bodyMode uint8

const (
	bodyNone bodyMode = iota
	bodyLength
	bodyChunked
	bodyToClose
)

// srvConn is a server connection: in a transaction, or kept alive in
// its loop's idle set.
type srvConn struct {
	fd          int
	addr        netip.AddrPort
	rd, wr, hup bool
	reused      bool
	owner       *conn // nil while idle
}

func (s *srvConn) event(lp *loop, ev uint32) {
	if ev&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP|unix.EPOLLRDHUP) != 0 {
		s.rd = true
	}
	if ev&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
		s.wr = true
	}
	if ev&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		s.hup = true
	}
	if s.owner == nil {
		if ev&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP|unix.EPOLLRDHUP) == 0 {
			return // writable: nothing to do while idle
		}
		// Idle: the server closed it or sent what no request asked.
		lp.takeIdle(s)
		s.close(lp)
		return
	}
	s.owner.drive()
}

func (s *srvConn) close(lp *loop) {
	lp.forget(s.fd)
	relay.Close(s.fd)
	s.fd = -1
}

// maxIdlePerServer bounds the kept-alive connections a loop keeps to
// one server.
const maxIdlePerServer = 256

// takeIdle takes s out of the idle set.
func (lp *loop) takeIdle(s *srvConn) {
	ss := lp.idle[s.addr]
	for i, o := range ss {
		if o == s {
			ss[i] = ss[len(ss)-1]
			ss = ss[:len(ss)-1]
			break
		}
	}
	if len(ss) == 0 {
		delete(lp.idle, s.addr)
	} else {
		lp.idle[s.addr] = ss
	}
}

// reuse returns an idle connection to addr, or nil.
func (lp *loop) reuse(addr netip.AddrPort) *srvConn {
	ss := lp.idle[addr]
	if len(ss) == 0 {
		return nil
	}
	s := ss[len(ss)-1]
	lp.takeIdle(s)
	return s
}

func (c *conn) event(_ *loop, ev uint32) {
	if ev&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP|unix.EPOLLRDHUP) != 0 {
		c.rd = true
	}
	if ev&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
		c.wr = true
	}
	if ev&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		c.hup = true
	}
	c.drive()
}

// drive makes what progress the sockets allow.
func (c *conn) drive() {
	for c.fd >= 0 {
		var more bool
		switch c.st {
		case stHead:
			more = c.readHead()
		case stConnect:
			more = c.connecting()
		case stSend:
			more = c.send()
		case stAnswer:
			more = c.answer()
		case stBody:
			more = c.body()
		case stClosing:
			more = c.closingStep()
		case stLocal:
			more = c.localStep()
		}
		if !more {
			break
		}
	}
	c.settle()
}

// settle gives the loop's scratch buffer back before the loop turns to
// another connection: bytes left in it move to a buffer of the
// connection's own (a request's body streamed from it included).
func (c *conn) settle() {
	lp := c.lp
	if c.in == nil || !lp.isScratch(c.in) {
		if tx := c.tx; tx != nil {
			c.settleSin()
		}
		return
	}
	if c.inR == c.inW || c.fd < 0 {
		c.in, c.inR, c.inW = nil, 0, 0
	} else {
		b := lp.getBuf()
		n := copy(b, c.in[c.inR:c.inW])
		if tx := c.tx; tx != nil && tx.spendIn && len(tx.spend) > 0 {
			tx.spend = b[:len(tx.spend)] // spend starts at inR
		}
		c.in, c.inR, c.inW = b, 0, n
	}
	if c.tx != nil {
		c.settleSin()
	}
}

// settleSin is settle for the server's bytes (read into the loop's
// other scratch buffer while an answer's head is awaited).
func (c *conn) settleSin() {
	tx := c.tx
	if tx.sin == nil || !c.lp.isScratch(tx.sin) {
		return
	}
	if tx.sinR == tx.sinW {
		tx.sin, tx.sinR, tx.sinW = nil, 0, 0
		return
	}
	b := c.lp.getBuf()
	n := copy(b, tx.sin[tx.sinR:tx.sinW])
	tx.sin, tx.sinR, tx.sinW = b, 0, n
}

// armIdle sets the timer of a connection waiting for a request.
func (c *conn) armIdle(cfg *compiled) {
	to := cfg.idleTO
	if c.nth == 0 {
		to = cfg.reqTO
	}
	c.arm(to)
}

// arm sets an inactivity deadline of d from now (0: none).
func (c *conn) arm(d time.Duration) {
	if d <= 0 {
		c.lp.heap.arm(c, time.Time{})
		return
	}
	c.lp.heap.arm(c, c.lp.now.Add(d))
}

// recv reads the client into its buffer: false when nothing came now
// (EAGAIN) or the connection ended (then it is closed or answered).
func (c *conn) recv() (n int, ok bool) {
	if c.in == nil {
		c.in = c.lp.scratchIn // until settle
	}
	if c.inR == c.inW {
		c.inR, c.inW = 0, 0
	} else if c.inW == len(c.in) && c.inR > 0 {
		c.inW = copy(c.in, c.in[c.inR:c.inW])
		c.inR = 0
	}
	if c.inW == len(c.in) {
		return 0, true // full: the caller decides
	}
	space := len(c.in) - c.inW
	n, err := relay.Recv(c.fd, c.in[c.inW:])
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		c.rd = false
		return 0, false
	case err != nil || n == 0:
		return 0, true
	}
	// A short read drained the socket: edge-triggered epoll reports
	// what comes next. Unless the peer's FIN was reported, which this
	// read may have left for the next one.
	if n < space && !c.hup {
		c.rd = false
	}
	c.inW += n
	c.got = true
	return n, true
}

// readHead reads and parses the next request head.
func (c *conn) readHead() bool {
	cfg := c.lp.e.cfg.Load()
	for {
		if c.inR < c.inW {
			c.inR += web.SkipEmptyLines(c.in[c.inR:c.inW])
			if c.tx == nil && c.inR < c.inW {
				c.begin(cfg)
			}
			if hl := web.HeadEnd(c.in[c.inR:c.inW]); hl >= 0 {
				return c.request(hl)
			}
			if c.inW-c.inR >= min(cfg.maxRaw, bufSize) {
				// Past tune.bufsize, or past the loop's buffer, which
				// is haproxy's default tune.bufsize.
				return c.refuse(web.Answer400, "PR")
			}
		}
		if !c.rd {
			if c.inR == c.inW && c.tx == nil {
				c.release()
			}
			return false
		}
		n, ok := c.recv()
		if !ok {
			if c.inR == c.inW && c.tx == nil {
				c.release()
			}
			return false
		}
		if n == 0 {
			// The client left (or the buffer is full, which the
			// limit above refuses first).
			if c.tx != nil {
				c.tx.term = "CR"
				c.tx.status = 400
				c.logTx()
			} else if !c.got && c.nth == 0 && cfg.logNull {
				c.logEmpty(cfg)
			}
			c.close()
			return false
		}
		if c.tx == nil {
			c.arm(cfg.reqTO)
		}
	}
}

// begin starts a transaction at a request's first byte.
func (c *conn) begin(cfg *compiled) {
	tx := c.lp.newTxn()
	tx.cfg, tx.start, tx.server, tx.last = cfg, c.lp.now, -1, -1
	if c.nth == 0 {
		tx.start = c.accepted
	}
	c.tx = tx
	c.arm(cfg.reqTO)
}

func (lp *loop) newTxn() *txn {
	if n := len(lp.txns); n > 0 {
		tx := lp.txns[n-1]
		lp.txns = lp.txns[:n-1]
		return tx
	}
	return &txn{}
}

// maxFreeTxns bounds the transactions a loop keeps for reuse.
const maxFreeTxns = 256

// release gives back what an idle connection need not keep.
func (c *conn) release() {
	if c.inR == c.inW && c.in != nil {
		c.lp.putBuf(c.in)
		c.in, c.inR, c.inW = nil, 0, 0
	}
}

// request handles a whole head of hl bytes at c.in[c.inR:].
func (c *conn) request(hl int) bool {
	tx := c.tx
	cfg := tx.cfg
	tx.headAt = c.lp.now
	c.nth++
	h, err := web.ParseHead(c.in[c.inR:c.inR+hl], cfg.maxHTX)
	if err != nil {
		return c.refuse(web.RefusalAnswer(err), "PR")
	}
	if h.Method == "PRI" && h.URI == "*" && h.Major == 2 {
		// HTTP/2's connection preface: the loop speaks HTTP/1 only
		// (std serves HTTP/2 with prior knowledge, as haproxy does).
		return c.refuse(web.Answer400, "PR")
	}
	c.inR += hl
	tx.head = h
	tx.version = version(h.Major, h.Minor)
	tx.keep = h.KeepAlive && !h.FramingConflict
	switch {
	case h.Chunked:
		tx.reqChunked = true
	case h.ContentLength > 0:
		tx.reqLeft = h.ContentLength
	default:
		tx.reqDone = true
	}
	out := c.lp.getSmall()
	if hl+smallSlack > cap(out) {
		c.lp.putBuf(out)
		out = c.lp.getBuf()
	}
	tx.be = cfg.backend
	if cfg.rules != nil {
		if answered, more := c.ruled(out); answered {
			return more
		}
	} else {
		var ff *forwardFor
		if tx.be != nil {
			ff = tx.be.ff
		}
		tx.out = appendRequest(out[:0], &tx.head, ff, c.client.Addr())
	}
	c.takeBody()
	tx.replay = tx.reqDone
	tx.spend, tx.spendIn = tx.out, false
	c.release()
	return c.pickServer()
}

// takeBody moves the request body's bytes waiting in the client's buffer
// to out when they fit, so that head and body leave in one write.
func (c *conn) takeBody() {
	tx := c.tx
	if tx.reqDone || c.inR == c.inW {
		return
	}
	avail := c.in[c.inR:c.inW]
	if room := cap(tx.out) - len(tx.out); len(avail) > room {
		avail = avail[:room] // bodyPart counts only what it is given
	}
	k, done := c.bodyPart(avail)
	tx.out = append(tx.out, avail[:k]...)
	c.inR += k
	tx.reqDone = done
}

// bodyPart is how many bytes of b belong to the request body, and
// whether they end it; a malformed chunked body is cut where it breaks
// (the server then sees what haproxy would refuse: the loop closes).
func (c *conn) bodyPart(b []byte) (int, bool) {
	tx := c.tx
	if tx.reqChunked {
		n, done, err := tx.reqChunk.feed(b)
		if err != nil {
			tx.keep = false
			return n, true
		}
		return n, done
	}
	k := int64(len(b))
	if k > tx.reqLeft {
		k = tx.reqLeft
	}
	tx.reqLeft -= k
	return int(k), tx.reqLeft == 0
}

// pickServer chooses a server (another one on a retry) and connects to
// it, or answers 503.
func (c *conn) pickServer() bool {
	tx := c.tx
	cfg := tx.cfg
	be := tx.be
	if be == nil {
		return c.fail(503, "SC")
	}
	i := c.lp.e.core.Pick(be.name, c.client.Addr(), 0, false, tx.skip)
	if i < 0 && tx.retries > 0 && tx.last >= 0 {
		i = tx.last // every usable server tried: the last one again, as haproxy
	}
	if i < 0 || i >= len(be.servers) {
		return c.fail(503, "SC")
	}
	tx.server, tx.last = i, i
	s := be.servers[i]
	addr := s.Addr
	if addr.Addr().IsUnspecified() || addr.Port() == 0 {
		if !c.local.IsValid() {
			c.local = relay.LocalAddr(c.fd)
		}
		addr = serverTarget(addr, c.local)
	}
	tx.end = c.lp.e.core.Begin(be.name, i)
	tx.connStart = c.lp.now
	if sc := c.lp.reuse(addr); sc != nil {
		sc.owner, sc.reused = c, true
		tx.srv, tx.connected = sc, c.lp.now
		c.st = stSend
		c.arm(cfg.serverTO)
		return true
	}
	fd, err := relay.DialStart(addr)
	if err != nil {
		return c.connectFailed()
	}
	sc := &srvConn{fd: fd, addr: addr, owner: c}
	if err := c.lp.register(fd, sc, 0); err != nil {
		relay.Close(fd)
		return c.connectFailed()
	}
	tx.srv = sc
	c.st = stConnect
	c.arm(cfg.connTO)
	return true
}

func serverTarget(addr, local netip.AddrPort) netip.AddrPort {
	ip, port := addr.Addr(), addr.Port()
	if ip.IsUnspecified() {
		ip = local.Addr()
	}
	if port == 0 {
		port = local.Port()
	}
	return netip.AddrPortFrom(ip, port)
}

// connecting waits for the server's connect to end.
func (c *conn) connecting() bool {
	tx := c.tx
	if !tx.srv.wr {
		return false
	}
	if e, err := relay.GetsockoptInt(tx.srv.fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || e != 0 {
		return c.connectFailed()
	}
	tx.connected = c.lp.now
	c.st = stSend
	c.arm(tx.cfg.serverTO)
	return true
}

// connectFailed retries a refused or timed out connect on another
// server while retries are left and the request can be sent again, else
// answers 503.
func (c *conn) connectFailed() bool {
	tx := c.tx
	if tx.srv != nil {
		tx.srv.close(c.lp)
		tx.srv = nil
	}
	if tx.end != nil {
		tx.end(true)
		tx.end = nil
	}
	tx.skip |= bit(tx.server)
	if tx.retries < tx.cfg.retries && tx.replay {
		tx.retries++
		tx.spend, tx.spendIn = tx.out, false
		return c.pickServer()
	}
	return c.fail(503, "SC")
}

func bit(i int) uint64 {
	if i < 0 || i >= 64 {
		return 0
	}
	return 1 << uint(i)
}

// send writes the request to the server, its body as the client sends it.
func (c *conn) send() bool {
	tx := c.tx
	for {
		if len(tx.spend) > 0 {
			if !tx.srv.wr {
				return tx.srv.rd && c.early()
			}
			n, err := relay.Send(tx.srv.fd, tx.spend, unix.MSG_NOSIGNAL)
			if err == unix.EAGAIN || err == unix.EINTR {
				tx.srv.wr = false
				return tx.srv.rd && c.early()
			}
			if err != nil {
				if tx.srv.rd {
					return c.early() // it answered, then stopped reading
				}
				return c.serverLost()
			}
			tx.spend = tx.spend[n:]
			if tx.spendIn {
				c.inR += n
			}
			c.arm(tx.cfg.serverTO)
			continue
		}
		if tx.reqDone {
			tx.sent = c.lp.now
			c.st = stAnswer
			c.release()
			return true
		}
		if c.inR == c.inW {
			if !c.rd {
				c.arm(tx.cfg.clientTO)
				return tx.srv.rd && c.early()
			}
			n, ok := c.recv()
			if !ok {
				return tx.srv.rd && c.early()
			}
			if n == 0 {
				tx.term = "CD"
				c.abort()
				return false
			}
		}
		k, done := c.bodyPart(c.in[c.inR:c.inW])
		tx.spend, tx.spendIn, tx.reqDone = c.in[c.inR:c.inR+k], true, done
	}
}

// early turns to an answer the server sent before the whole request
// was: an upload refused at once, or 100 Continue. After a 1xx answer
// the request goes on (answer); after a final one the rest of its body
// is neither read nor sent, and both connections close after the
// answer.
func (c *conn) early() bool {
	c.tx.early = true
	c.st = stAnswer
	return true
}

// serverLost handles a server connection that failed before its answer
// began: a kept-alive one the server had closed is replaced by a new
// connection when the request can be sent again; otherwise 502.
func (c *conn) serverLost() bool {
	tx := c.tx
	if tx.srv.reused && tx.replay && tx.sinW == 0 {
		tx.srv.close(c.lp)
		tx.srv = nil
		if tx.end != nil {
			tx.end(false)
			tx.end = nil
		}
		tx.spend, tx.spendIn = tx.out, false
		tx.skip = 0
		return c.redial()
	}
	return c.fail(502, "SH")
}

// redial connects anew to the same server.
func (c *conn) redial() bool {
	tx := c.tx
	cfg := tx.cfg
	tx.end = c.lp.e.core.Begin(tx.be.name, tx.server)
	addr := tx.be.servers[tx.server].Addr
	if addr.Addr().IsUnspecified() || addr.Port() == 0 {
		addr = serverTarget(addr, c.local)
	}
	fd, err := relay.DialStart(addr)
	if err != nil {
		return c.connectFailed()
	}
	sc := &srvConn{fd: fd, addr: addr, owner: c}
	if err := c.lp.register(fd, sc, 0); err != nil {
		relay.Close(fd)
		return c.connectFailed()
	}
	tx.srv, tx.connStart = sc, c.lp.now
	c.st = stConnect
	c.arm(cfg.connTO)
	return true
}

// srvRecv reads the server into the transaction's buffer.
func (c *conn) srvRecv() (n int, ok bool) {
	tx := c.tx
	if tx.sin == nil {
		if c.st == stAnswer {
			tx.sin = c.lp.scratchSin // until settleSin
		} else {
			tx.sin = c.lp.getBuf()
		}
	}
	if tx.sinR == tx.sinW {
		tx.sinR, tx.sinW = 0, 0
	} else if tx.sinW == len(tx.sin) && tx.sinR > 0 {
		tx.sinW = copy(tx.sin, tx.sin[tx.sinR:tx.sinW])
		tx.sinR = 0
	}
	if tx.sinW == len(tx.sin) {
		return 0, true
	}
	space := len(tx.sin) - tx.sinW
	n, err := relay.Recv(tx.srv.fd, tx.sin[tx.sinW:])
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		tx.srv.rd = false
		return 0, false
	case err != nil || n == 0:
		return 0, true
	}
	if n < space && !tx.srv.hup {
		tx.srv.rd = false // drained, as recv says
	}
	if tx.firstByte.IsZero() {
		tx.firstByte = c.lp.now
	}
	tx.sinW += n
	c.arm(tx.cfg.serverTO)
	return n, true
}

// srvRecvOK is srvRecv for answer: false when nothing came now (n in
// tx.lastRead otherwise).
func (c *conn) srvRecvOK() bool {
	n, ok := c.srvRecv()
	c.tx.lastRead = n
	return ok
}

// answer reads the answer's head.
func (c *conn) answer() bool {
	tx := c.tx
	for {
		if len(tx.pend) > 0 {
			if !c.flush() {
				return false
			}
			continue
		}
		if tx.resume {
			// A 1xx answer came before the request was whole: send
			// the rest.
			tx.resume, tx.early = false, false
			c.st = stSend
			return true
		}
		if tx.sinR < tx.sinW {
			if hl := web.HeadEnd(tx.sin[tx.sinR:tx.sinW]); hl >= 0 {
				return c.answerHead(hl)
			}
		}
		if !tx.srv.rd || !c.srvRecvOK() {
			if tx.early && !tx.reqDone && tx.sinR == tx.sinW {
				// Nothing came after all (the readiness was old):
				// back to sending the request.
				tx.early = false
				c.st = stSend
				return true
			}
			return false
		}
		n := tx.lastRead
		if n == 0 {
			if tx.sinW == len(tx.sin) {
				return c.fail(502, "PH") // a head past the buffer
			}
			return c.serverLost()
		}
	}
}

// answerHead handles a whole answer head of hl bytes.
func (c *conn) answerHead(hl int) bool {
	tx := c.tx
	head := tx.sin[tx.sinR : tx.sinR+hl]
	r, err := parseResponse(head)
	if err != nil || r.status == 101 {
		return c.fail(502, "PH")
	}
	if r.status/100 == 1 {
		// 100 Continue, 103 Early Hints: passed on as they are.
		tx.cout = append(tx.coutBuf(c.lp)[:0], head...)
		tx.pend = tx.cout
		tx.sinR += hl
		c.settleSin()
		tx.resume = tx.early && !tx.reqDone
		return true
	}
	tx.resp, tx.status = r, r.status
	if tx.early && !tx.reqDone {
		tx.keep, tx.resp.keepAlive = false, false // the rest of the request stays unread
	}
	if tx.out != nil {
		// The request can no longer be sent again: its buffer takes
		// the answer's head.
		c.lp.putBuf(tx.out[:0])
		tx.out, tx.spend = nil, nil
	}
	switch {
	case noBody(tx.head.Method, r.status):
		tx.mode = bodyNone
	case r.chunked:
		tx.mode = bodyChunked
	case r.length >= 0:
		tx.mode, tx.respLeft = bodyLength, r.length
	default:
		tx.mode = bodyToClose
	}
	tx.closing = !tx.keep || tx.mode == bodyToClose || c.lp.e.draining.Load()
	keep10 := !tx.closing && tx.head.Major == 1 && tx.head.Minor == 0
	tx.cout = appendResponse(tx.coutBuf(c.lp)[:0], head, tx.closing, keep10)
	tx.sinR += hl
	// The body's first bytes leave with the head when they fit.
	if room := cap(tx.cout) - len(tx.cout); room > 0 && tx.sinR < tx.sinW {
		k := c.answerPart(tx.sin[tx.sinR:min(tx.sinW, tx.sinR+room)])
		tx.cout = append(tx.cout, tx.sin[tx.sinR:tx.sinR+k]...)
		tx.sinR += k
	} else if tx.mode == bodyNone {
		tx.bodyDone = true
	}
	tx.pend = tx.cout
	c.settleSin()
	c.st = stBody
	return true
}

// coutBuf is the buffer answer heads are written into.
func (tx *txn) coutBuf(lp *loop) []byte {
	if tx.cout == nil {
		tx.cout = lp.getBuf()
	}
	return tx.cout
}

// answerPart is how many bytes of b belong to the answer body (and
// marks its end).
func (c *conn) answerPart(b []byte) int {
	tx := c.tx
	switch tx.mode {
	case bodyNone:
		tx.bodyDone = true
		return 0
	case bodyLength:
		k := int64(len(b))
		if k > tx.respLeft {
			k = tx.respLeft
		}
		tx.respLeft -= k
		tx.bodyDone = tx.respLeft == 0
		return int(k)
	case bodyChunked:
		n, done, err := tx.respChunk.feed(b)
		if err != nil {
			tx.resp.keepAlive, tx.closing = false, true
			tx.bodyDone = true
		}
		tx.bodyDone = tx.bodyDone || done
		return n
	}
	return len(b)
}

// body relays the answer's body.
func (c *conn) body() bool {
	tx := c.tx
	for {
		if len(tx.pend) > 0 {
			if !c.flush() {
				return false
			}
			continue
		}
		if tx.bodyDone {
			return c.finish()
		}
		if tx.sinR < tx.sinW {
			k := c.answerPart(tx.sin[tx.sinR:tx.sinW])
			tx.pend = tx.sin[tx.sinR : tx.sinR+k]
			tx.sinR += k
			if k == 0 && !tx.bodyDone {
				return c.fail(502, "SD")
			}
			continue
		}
		if !tx.srv.rd {
			return false
		}
		n, ok := c.srvRecv()
		if !ok {
			return false
		}
		if n == 0 {
			if tx.mode == bodyToClose {
				tx.bodyDone = true
				tx.resp.keepAlive = false
				continue
			}
			tx.term = "SD"
			c.abort()
			return false
		}
	}
}

// flush writes pend to the client: false while the socket is full.
func (c *conn) flush() bool {
	tx := c.tx
	if !c.wr {
		return false
	}
	n, err := relay.Send(c.fd, tx.pend, unix.MSG_NOSIGNAL)
	if err == unix.EAGAIN || err == unix.EINTR {
		c.wr = false
		if tx.srv != nil || c.st == stClosing {
			c.arm(tx.cfg.clientTO)
		}
		return false
	}
	if err != nil {
		tx.term = "CD"
		c.abort()
		return false
	}
	tx.pend = tx.pend[n:]
	tx.bytes += int64(n)
	return true
}

// finish ends a transaction whose answer went out whole.
func (c *conn) finish() bool {
	tx := c.tx
	if tx.term == "" {
		tx.term = "--"
	}
	if tx.end != nil {
		tx.end(false)
		tx.end = nil
	}
	if s := tx.srv; s != nil {
		tx.srv = nil
		if tx.resp.keepAlive && tx.mode != bodyToClose && tx.sinR == tx.sinW && !s.hup && len(c.lp.idle[s.addr]) < maxIdlePerServer {
			s.owner = nil
			c.lp.idle[s.addr] = append(c.lp.idle[s.addr], s)
		} else {
			s.close(c.lp)
		}
	}
	c.logTx()
	closing := tx.closing
	c.freeTx()
	if closing {
		c.close()
		return false
	}
	c.st = stHead
	c.release()
	c.armIdle(c.lp.e.cfg.Load())
	return true
}

// fail answers status with haproxy's page and closes the connection
// after it.
func (c *conn) fail(status int, term string) bool {
	tx := c.tx
	if tx.end != nil {
		tx.end(status != 504)
		tx.end = nil
	}
	if tx.srv != nil {
		tx.srv.close(c.lp)
		tx.srv = nil
	}
	tx.term, tx.status = term, status
	tx.cout = append(tx.coutBuf(c.lp)[:0], errorAnswer(status, tx.head.Method)...)
	tx.pend = tx.cout
	tx.closing = true
	c.st = stClosing
	c.arm(tx.cfg.clientTO)
	return true
}

// refuse answers a head haproxy refuses with its answer, then closes.
func (c *conn) refuse(answer, term string) bool {
	tx := c.tx
	tx.status = 400
	if len(answer) > 13 {
		tx.status = int(answer[9]-'0')*100 + int(answer[10]-'0')*10 + int(answer[11]-'0')
	}
	tx.term = term
	tx.cout = append(tx.coutBuf(c.lp)[:0], answer...)
	tx.pend = tx.cout
	tx.closing = true
	c.st = stClosing
	c.arm(tx.cfg.clientTO)
	return true
}

// closingStep writes the last answer, then closes.
func (c *conn) closingStep() bool {
	tx := c.tx
	if len(tx.pend) > 0 && !c.flush() {
		return false
	}
	if c.fd < 0 {
		return false
	}
	c.logTx()
	c.freeTx()
	c.close()
	return false
}

// abort ends the transaction and both connections at once.
func (c *conn) abort() {
	tx := c.tx
	if tx.end != nil {
		tx.end(tx.firstByte.IsZero())
		tx.end = nil
	}
	if tx.srv != nil {
		tx.srv.close(c.lp)
		tx.srv = nil
	}
	c.logTx()
	c.freeTx()
	c.close()
}

// timeout handles the deadline of the connection's state.
func (c *conn) timeout() {
	tx := c.tx
	switch {
	case tx == nil:
		c.close() // idle: timeout http-keep-alive or http-request
	case c.st == stHead:
		tx.status = 408
		c.refuse(web.Answer408, "cR")
		c.drive()
	case c.st == stConnect:
		if c.connectFailed() {
			c.drive()
		}
	case c.st == stSend && len(tx.spend) == 0:
		tx.term = "cD" // the client's body stopped coming
		c.abort()
	case c.st == stSend || c.st == stAnswer:
		c.fail(504, "sH")
		c.drive()
	case c.st == stBody && len(tx.pend) > 0:
		tx.term = "cD"
		c.abort()
	case c.st == stBody:
		tx.term = "sD"
		c.abort()
	default:
		tx.term = "cD"
		c.abort()
	}
}

// freeTx gives the transaction's buffers back.
func (c *conn) freeTx() {
	tx := c.tx
	if tx == nil {
		return
	}
	c.tx = nil
	lp := c.lp
	if tx.out != nil {
		lp.putBuf(tx.out[:0])
	}
	if tx.sin != nil {
		lp.putBuf(tx.sin)
	}
	if tx.cout != nil {
		lp.putBuf(tx.cout[:0])
	}
	*tx = txn{}
	if len(lp.txns) < maxFreeTxns {
		lp.txns = append(lp.txns, tx)
	}
}

// close closes the client connection and what it holds.
func (c *conn) close() {
	if c.fd < 0 {
		return
	}
	if c.tx != nil {
		if c.tx.end != nil {
			c.tx.end(true)
			c.tx.end = nil
		}
		if c.tx.srv != nil {
			c.tx.srv.close(c.lp)
		}
		c.freeTx()
	}
	c.lp.heap.remove(c)
	c.lp.forget(c.fd)
	relay.Close(c.fd)
	c.fd = -1
	if c.in != nil {
		c.lp.putBuf(c.in)
		c.in = nil
	}
	c.lp.e.open.Add(-1)
	if c.closed != nil {
		c.closed()
	}
}

func localAddr(fd int) netip.AddrPort {
	a := relay.LocalAddr(fd)
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// version is "HTTP/major.minor".
func version(major, minor int) string {
	switch {
	case major == 1 && minor == 1:
		return "HTTP/1.1"
	case major == 1 && minor == 0:
		return "HTTP/1.0"
	}
	return string([]byte{'H', 'T', 'T', 'P', '/', byte('0' + major), '.', byte('0' + minor)})
}
