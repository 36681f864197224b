package httpproxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
)

// serverPool is the RoundTripper of one server: its kept-alive
// connections, and the http.Transport for what they do not take.
//
// A plain HTTP/1.1 request without a body or an Expect or Upgrade header
// (the common GET) is written and its answer read on the handler's own
// goroutine over an idle connection of the pool: the Transport would hand
// it to a write loop and take the answer from a read loop, two more
// goroutines and their hand-offs per request, most of a request's
// scheduling cost (docs/design/httpproxy.md). Everything else goes
// through the Transport as before: bodies (100-continue), upgrades, TLS,
// and the close modes.
type serverPool struct {
	t *http.Transport
	// direct: the pool may take requests (plain HTTP, keep-alive).
	direct bool
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	// idleTimeout closes a connection idle for longer (the Transport's
	// IdleConnTimeout).
	idleTimeout time.Duration

	mu     sync.Mutex
	idle   []*serverConn // most recently used last
	sweep  *time.Timer   // armed while connections are idle
	closed bool
}

// maxIdlePerServer bounds the idle connections kept per server, as the
// Transport's MaxIdleConnsPerHost does.
const maxIdlePerServer = 1024

// max1xx bounds the informational answers read before the final one
// (the Transport allows 5 without a Got1xxResponse hook; the
// ReverseProxy always has one).
const max1xx = 16

type serverConn struct {
	c     net.Conn
	br    *bufio.Reader
	bw    *bufio.Writer
	since time.Time // idle since
}

// errNoAnswer: a reused connection ended before any byte of an answer
// (the server had closed it while idle); the request goes again on
// another.
var errNoAnswer = errors.New("httpproxy: server connection closed before an answer")

// RoundTrip sends req to the server and returns its answer.
func (p *serverPool) RoundTrip(req *http.Request) (*http.Response, error) {
	if !p.direct || !plainRequest(req) {
		return p.t.RoundTrip(req)
	}
	ctx := req.Context()
	trace := httptrace.ContextClientTrace(ctx)
	for {
		sc, reused, err := p.get(ctx, req.URL.Host)
		if err != nil {
			return nil, err
		}
		if trace != nil && trace.GotConn != nil {
			var idle time.Duration
			if reused {
				idle = time.Since(sc.since)
			}
			trace.GotConn(httptrace.GotConnInfo{Conn: sc.c, Reused: reused, WasIdle: reused, IdleTime: idle})
		}
		resp, err := p.exchange(ctx, sc, req, trace)
		if err == nil {
			return resp, nil
		}
		sc.c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !(reused && errors.Is(err, errNoAnswer)) {
			return nil, err
		}
	}
}

// plainRequest reports whether req may go over the pool: no body to
// send, no 100-continue or upgrade to negotiate, and header fields the
// Transport would send (it refuses the others, and so does the pool,
// through it).
func plainRequest(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody || req.URL.Scheme != "http" || req.Close {
		return false
	}
	for k, vs := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return false
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return false
			}
		}
		switch k {
		case "Expect", "Upgrade", "Connection":
			return false
		}
	}
	return true
}

// get takes the most recently used idle connection, or dials addr.
func (p *serverPool) get(ctx context.Context, addr string) (*serverConn, bool, error) {
	now := time.Now()
	var stale []*serverConn
	p.mu.Lock()
	var sc *serverConn
	for len(p.idle) > 0 && sc == nil {
		last := p.idle[len(p.idle)-1]
		p.idle[len(p.idle)-1] = nil
		p.idle = p.idle[:len(p.idle)-1]
		if p.idleTimeout > 0 && now.Sub(last.since) > p.idleTimeout {
			stale = append(stale, last)
			continue
		}
		sc = last
	}
	p.mu.Unlock()
	for _, s := range stale {
		s.c.Close()
	}
	if sc != nil {
		return sc, true, nil
	}
	c, err := p.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, false, err
	}
	return &serverConn{c: c, br: bufio.NewReaderSize(c, 4<<10), bw: bufio.NewWriterSize(c, 4<<10)}, false, nil
}

// put keeps sc for another request, or closes it.
func (p *serverPool) put(sc *serverConn) {
	sc.since = time.Now()
	p.mu.Lock()
	if p.closed || len(p.idle) >= maxIdlePerServer {
		p.mu.Unlock()
		sc.c.Close()
		return
	}
	p.idle = append(p.idle, sc)
	if p.idleTimeout > 0 && p.sweep == nil {
		p.sweep = time.AfterFunc(p.idleTimeout, p.closeStale)
	}
	p.mu.Unlock()
}

// closeStale closes the connections idle for longer than idleTimeout, as
// the Transport's IdleConnTimeout does (a connection the server closed
// meanwhile is otherwise only found when next used), and sweeps again
// later while some are left.
func (p *serverPool) closeStale() {
	now := time.Now()
	p.mu.Lock()
	n := 0
	for n < len(p.idle) && now.Sub(p.idle[n].since) >= p.idleTimeout {
		n++
	}
	stale := slices.Clone(p.idle[:n])
	p.idle = slices.Delete(p.idle, 0, n)
	p.sweep = nil
	if len(p.idle) > 0 && !p.closed {
		p.sweep = time.AfterFunc(p.idle[0].since.Add(p.idleTimeout).Sub(now), p.closeStale)
	}
	p.mu.Unlock()
	for _, sc := range stale {
		sc.c.Close()
	}
}

// closeIdle closes the idle connections, and with stop every one
// returned from now on.
func (p *serverPool) closeIdle(stop bool) {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	if stop {
		p.closed = true
	}
	if p.sweep != nil {
		p.sweep.Stop()
		p.sweep = nil
	}
	p.mu.Unlock()
	for _, sc := range idle {
		sc.c.Close()
	}
	p.t.CloseIdleConnections()
}

// aLongTimeAgo is a deadline that ends a blocked read or write at once.
var aLongTimeAgo = time.Unix(1, 0)

// exchange writes req on sc and reads the answer's head. The body is
// read by the caller; sc goes back to the pool once it has been read to
// its end.
func (p *serverPool) exchange(ctx context.Context, sc *serverConn, req *http.Request, trace *httptrace.ClientTrace) (*http.Response, error) {
	// The request's end (abortonclose, the proxy's own cancel) ends a
	// blocked read or write: the connection is not used again.
	stop := context.AfterFunc(ctx, func() { sc.c.SetDeadline(aLongTimeAgo) })
	fail := func(err error) (*http.Response, error) {
		stop()
		return nil, err
	}
	err := req.Write(sc.bw)
	if err == nil {
		err = sc.bw.Flush()
	}
	if err != nil {
		if isTimeout(err) {
			return fail(err)
		}
		return fail(errNoAnswer) // the server closed it: broken pipe, reset
	}
	if _, err := sc.br.Peek(1); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
			return fail(errNoAnswer)
		}
		return fail(err)
	}
	if trace != nil && trace.GotFirstResponseByte != nil {
		trace.GotFirstResponseByte()
	}
	var resp *http.Response
	for n := 0; ; n++ {
		if resp, err = http.ReadResponse(sc.br, req); err != nil {
			return fail(err)
		}
		if resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		if n == max1xx {
			return fail(errors.New("httpproxy: too many 1xx informational answers"))
		}
		if trace != nil && trace.Got1xxResponse != nil {
			if err := trace.Got1xxResponse(resp.StatusCode, map[string][]string(resp.Header)); err != nil {
				return fail(err)
			}
		}
	}
	keep := !resp.Close && resp.StatusCode != http.StatusSwitchingProtocols
	if resp.Body == http.NoBody || resp.Body == nil {
		if stop() && keep {
			p.put(sc)
		} else {
			sc.c.Close()
		}
		return resp, nil
	}
	resp.Body = &pooledBody{rc: resp.Body, sc: sc, pool: p, keep: keep, stop: stop}
	return resp, nil
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "read" && !op.Timeout()
}

// pooledBody is an answer's body read over a pooled connection: read to
// its end, it gives the connection back; closed before, it closes it.
type pooledBody struct {
	rc   io.ReadCloser
	sc   *serverConn
	pool *serverPool
	keep bool
	stop func() bool
	mu   sync.Mutex
	done bool
}

func (b *pooledBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil {
		b.finish(err == io.EOF)
	}
	return n, err
}

func (b *pooledBody) Close() error {
	b.finish(false)
	return nil
}

func (b *pooledBody) finish(whole bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	// Stopped in time: the connection's deadline is still its own.
	if b.stop() && whole && b.keep {
		b.pool.put(b.sc)
		return
	}
	b.sc.c.Close()
}
