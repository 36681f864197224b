package lb

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// conn is one client connection, from admission to close.
type conn struct {
	fe     *frontend
	client *net.TCPConn
	server atomic.Pointer[net.TCPConn]
	srv    *server

	// list links, guarded by fe.mu: the queue while queued, then live
	prev, next *conn
	queued     bool
	qtimer     clock.Timer

	aborted atomic.Bool
	pending atomic.Int32  // relay directions still running
	moved   atomic.Uint64 // bytes relayed both ways, for the idle timer

	tmu        sync.Mutex // guards the idle timer fields
	timer      clock.Timer
	ended      bool
	idle       time.Duration
	lastSeen   uint64
	lastActive time.Time
}

// serve connects cn to a server and relays until both sides are done.
func (cn *conn) serve() {
	f := cn.fe
	cfg := f.cfg.Load()
	srv, sc := cn.connect(cfg)
	if sc == nil {
		f.noServer.Add(1)
		cn.client.Close()
		f.release(cn)
		return
	}
	cn.srv = srv
	cn.server.Store(sc)
	if cn.aborted.Load() { // Shutdown gave up on us while we connected
		cn.abort()
	}
	cn.relay(cfg)
}

// connect tries servers until one accepts: the first pick, then up to
// retries more, each on another UP server while there is one this client
// has not tried. It returns nil when every attempt failed or no server is
// UP.
func (cn *conn) connect(cfg *feConfig) (*server, *net.TCPConn) {
	p := cfg.pool
	if p == nil {
		return nil, nil
	}
	var client netip.Addr
	if p.balance == lbconfig.Source {
		if a, ok := cn.client.RemoteAddr().(*net.TCPAddr); ok {
			client = a.AddrPort().Addr()
		}
	}
	var tried uint64
	for attempt := 0; attempt <= cfg.retries; attempt++ {
		if cn.aborted.Load() { // a forced shutdown closed the client
			return nil, nil
		}
		i := p.pick(client, tried)
		if i < 0 && tried != 0 {
			tried = 0 // every UP server failed once: go round again
			i = p.pick(client, tried)
		}
		if i < 0 {
			return nil, nil
		}
		tried |= bit(i)
		s := p.servers[i]
		s.lbtot.Add(1)
		cur := s.cur.Add(1) // counted while connecting, so leastconn sees it
		// DialContext with the address as text: Dialer.DialTCP with a zero
		// local address would bind(2) to port 0 before each connect, an
		// extra system call and an early ephemeral port allocation.
		c, err := cfg.dialer.DialContext(s.dials.Load().ctx, "tcp", s.addrText)
		if err == nil {
			sc := c.(*net.TCPConn)
			s.tot.Add(1)
			if cur > s.smax.Load() {
				s.smax.Store(cur)
			}
			return s, sc
		}
		s.cur.Add(-1)
		s.econ.Add(1)
		if attempt < cfg.retries {
			s.wretr.Add(1)
		}
		cn.fe.lb.log.Debug("connect to server failed", "frontend", cn.fe.name, "backend", p.name, "server", s.name, "addr", s.addr.String(), "attempt", attempt+1, "err", err)
	}
	return nil, nil
}

// relay runs both directions, client to server on a new goroutine and
// server to client on this one; the last to finish closes the connection.
func (cn *conn) relay(cfg *feConfig) {
	sc := cn.server.Load()
	cn.pending.Store(2)
	if cfg.idle > 0 {
		cn.tmu.Lock()
		cn.idle = cfg.idle
		cn.lastActive = cn.fe.lb.clk.Now()
		cn.timer = cn.fe.lb.clk.AfterFunc(cfg.idle/2, cn.checkIdle)
		cn.tmu.Unlock()
	}
	l := cn.fe.lb
	go cn.direction(l, sc, cn.client, &cn.srv.bin, &cn.fe.bin)
	cn.direction(l, cn.client, sc, &cn.srv.bout, &cn.fe.bout)
}

// direction relays src to dst. At end of file it half-closes dst; on an
// error it aborts the whole connection.
func (cn *conn) direction(l *LB, dst, src *net.TCPConn, c1, c2 *atomic.Uint64) {
	if err := l.copyConn(dst, src, c1, c2, &cn.moved); err != nil {
		cn.abort()
	} else if cn.pending.Load() == 2 {
		// The other direction still runs: pass the end of file on. When
		// it is done too, finish closes both sockets, which sends the FIN
		// without a separate shutdown(2).
		dst.CloseWrite()
	}
	if cn.pending.Add(-1) == 0 {
		cn.finish()
	}
}

// abort closes both sockets, which ends both directions. It first sets
// both sockets' deadlines in the past: that wakes every wait on them, and
// a relay direction waiting to read one socket holds the other's write
// side (relay_linux.go), which Close would wait for.
func (cn *conn) abort() {
	cn.aborted.Store(true)
	sc := cn.server.Load()
	cn.client.SetDeadline(aLongTimeAgo)
	if sc != nil {
		sc.SetDeadline(aLongTimeAgo)
	}
	cn.client.Close()
	if sc != nil {
		sc.Close()
	}
}

// aLongTimeAgo is a deadline that has passed.
var aLongTimeAgo = time.Unix(1, 0)

func (cn *conn) finish() {
	cn.tmu.Lock()
	cn.ended = true
	if cn.timer != nil {
		cn.timer.Stop()
	}
	cn.tmu.Unlock()
	cn.client.Close()
	cn.server.Load().Close()
	cn.srv.cur.Add(-1)
	cn.fe.release(cn)
}

// checkIdle runs every half idle timeout while the connection is open
// and closes it when no byte has moved for the idle timeout.
func (cn *conn) checkIdle() {
	cn.tmu.Lock()
	defer cn.tmu.Unlock()
	if cn.ended {
		return
	}
	now := cn.fe.lb.clk.Now()
	if m := cn.moved.Load(); m != cn.lastSeen {
		cn.lastSeen, cn.lastActive = m, now
	} else if now.Sub(cn.lastActive) >= cn.idle {
		cn.ended = true
		cn.fe.lb.log.Debug("closing an idle connection", "frontend", cn.fe.name, "client", cn.client.RemoteAddr().String(), "idle", cn.idle)
		cn.fe.lb.idleCloses.Add(1)
		cn.abort()
		return
	}
	cn.timer.Reset(cn.idle / 2)
}
