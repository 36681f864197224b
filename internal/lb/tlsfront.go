package lb

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vipstack/vipstack/internal/lb/tlsconf"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// tlsListener is a mode tcp frontend's ssl bind. The event loops relay
// raw sockets and cannot carry TLS, so a Go listener accepts its
// clients; a goroutine per client completes the handshake, then hands
// the plaintext to the event loops over a socketpair, as if the loop had
// accepted it (frontend.admitFrom): admission, balancing, retries,
// timeouts, counters and logs are the TCP relay's. Two goroutines copy
// between the TLS connection and the socketpair, passing each end of
// file on. See docs/design/lb.md for the cost.
type tlsListener struct {
	key  string
	at   boundAddr
	ln   net.Listener
	live tlsconf.Live
	conf *tls.Config // live's, for tls.Server
	fe   atomic.Pointer[frontend]
	stop chan struct{}
	l    *LB // set by start

	mu    sync.Mutex
	conns map[net.Conn]struct{} // clients in their handshake

	// full is closed once the frontend's queue has room again, after an
	// admission found it full (frontend.admit's channel); nil: room.
	full atomic.Pointer[<-chan struct{}]
}

func (l *LB) listenTLS(key string, b lbconfig.Bind, queue int) (*tlsListener, error) {
	conf, err := tlsconf.Bind(b.TLS)
	if err != nil {
		return nil, err
	}
	network, address, v6only := bindNetwork(b)
	lc := listenConfig(b, v6only, queue)
	lc.KeepAlive = -1
	ln, err := lc.Listen(context.Background(), network, address)
	if err == nil {
		if err = setBacklog(ln, b, queue); err != nil {
			ln.Close()
		}
	}
	if err != nil {
		return nil, err
	}
	t := &tlsListener{key: key, at: boundOf(b, ln.Addr()), ln: ln, stop: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	t.live.Set(conf)
	t.conf = t.live.Config()
	return t, nil
}

// start accepts clients until close.
func (t *tlsListener) start(l *LB) {
	t.l = l
	go t.accept()
}

func (t *tlsListener) accept() {
	var backoff time.Duration
	for {
		// As the event loops do: no accept while the global maxconn is
		// reached or the frontend's queue is full; further clients
		// wait in the kernel's backlog.
		if !t.waitForRoom() {
			return
		}
		c, err := t.ln.Accept()
		if err != nil {
			select {
			case <-t.stop:
				return
			default:
			}
			// Out of file descriptors and the like: wait a little, as
			// the event loops do.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			t.l.log.Warn("accept failed", "listener", t.key, "err", err, "retry_in", backoff)
			select {
			case <-t.stop:
				return
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		go t.serve(c)
	}
}

// serve terminates c's TLS and relays its plaintext through the loops.
func (t *tlsListener) serve(c net.Conn) {
	fe := t.fe.Load()
	if fe == nil || fe.draining.Load() {
		c.Close()
		return
	}
	peer, local := tcpAddrPort(c.RemoteAddr()), tcpAddrPort(c.LocalAddr())
	if tr := fe.cfg.Load().tcpReq; tr != nil && len(tr.Connection) > 0 {
		var ok bool
		if peer, local, ok = fe.tcpConnRulesConn(tr, c); !ok { // tcprequest.go
			return
		}
	}
	t.mu.Lock()
	select {
	case <-t.stop:
		t.mu.Unlock()
		c.Close()
		return
	default:
	}
	t.conns[c] = struct{}{}
	t.mu.Unlock()
	// A client accepted just before the limit was reached waits for
	// room before its handshake (the accept loop checked before it).
	if !t.waitForRoom() {
		c.Close()
		return
	}
	if tcp, ok := c.(*net.TCPConn); ok && fe.cfg.Load().cliKeepAlive {
		// option clitcpka: on the client's own socket (the loop's end of
		// the socketpair has none to set).
		tcp.SetKeepAlive(true)
	}
	tc := tls.Server(c, t.conf)
	// The handshake is bounded by timeout client, as haproxy's.
	if d := fe.cfg.Load().client; d > 0 {
		tc.SetDeadline(time.Now().Add(d))
	}
	err := tc.Handshake()
	tc.SetDeadline(time.Time{})
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
	if err != nil {
		c.Close()
		return
	}
	loopFD, pc, err := socketPair()
	if err != nil {
		t.l.log.Warn("tls: cannot hand a client to the relay", "listener", t.key, "err", err)
		tc.Close()
		return
	}
	lp := t.l.pickLoop(nil)
	lp.nconns.Add(-1) // pickLoop's count is the admission's to take
	lp.mu.Lock()
	if w := fe.admitFrom(loopFD, peer, local, true, lp); w != nil {
		t.full.Store(&w)
	}
	lp.unlock()
	bridge(tc, c, pc, fe)
}

// bridge copies between the client's TLS connection and the loop's end
// of the socketpair until both directions are done: an end of file from
// one side half-closes the other (a TLS close_notify and a FIN towards
// the client), an error ends both.
func bridge(tc *tls.Conn, raw net.Conn, pc *net.UnixConn, fe *frontend) {
	var wg sync.WaitGroup
	abort := func() {
		tc.Close()
		pc.Close()
	}
	wg.Go(func() {
		if _, err := io.Copy(pc, tc); err != nil && !errors.Is(err, io.EOF) {
			abort()
			return
		}
		pc.CloseWrite()
	})
	_, err := io.Copy(tc, pc)
	switch {
	case err != nil:
		abort()
	case peerClosed(pc):
		// The loop closed the connection (both ways done, a timeout,
		// an error): the client's side ends too.
		abort()
	default:
		// The server's end of file: on to the client, which may still
		// send, within timeout client-fin (or client).
		tc.CloseWrite()
		if w, ok := raw.(interface{ CloseWrite() error }); ok {
			w.CloseWrite()
		}
		cfg := fe.cfg.Load()
		if d := minNonZero(cfg.clientFin, cfg.client); d > 0 {
			tc.SetReadDeadline(time.Now().Add(d))
		}
	}
	wg.Wait()
	abort()
}

// waitForRoom waits while the global maxconn is reached or the
// frontend's queue is full; false when the listener closed meanwhile.
func (t *tlsListener) waitForRoom() bool {
	for {
		w := t.l.globalWait()
		if w == nil {
			w = t.waitRoom()
		}
		if w == nil {
			return true
		}
		select {
		case <-w:
		case <-t.stop:
			return false
		}
	}
}

// waitRoom is the channel to wait on while the frontend's queue is full,
// nil when it has room.
func (t *tlsListener) waitRoom() <-chan struct{} {
	p := t.full.Load()
	if p == nil {
		return nil
	}
	select {
	case <-*p:
		t.full.CompareAndSwap(p, nil)
		return nil
	default:
		return *p
	}
}

// close stops accepting and ends the handshakes in progress; relayed
// clients stay with their loops, as a TCP listener's.
func (t *tlsListener) close() {
	t.mu.Lock()
	select {
	case <-t.stop:
		t.mu.Unlock()
		return
	default:
	}
	close(t.stop)
	for c := range t.conns {
		c.Close()
	}
	t.mu.Unlock()
	t.ln.Close()
}

func tcpAddrPort(a net.Addr) netip.AddrPort {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.AddrPort()
	}
	return netip.AddrPort{}
}

// socketPairFile wraps fd, this side's end, for Go's poller.
func socketPairFile(fd int) (*net.UnixConn, error) {
	f := os.NewFile(uintptr(fd), "tls-bridge")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("socketpair: not a unix socket")
	}
	return uc, nil
}
