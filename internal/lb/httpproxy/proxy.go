package httpproxy

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vipstack/vipstack/internal/lb/tlsconf"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// tlsKey tells servers' TLS settings apart, for their transports.
func tlsKey(s lbconfig.Server) string {
	t := s.TLS
	if t == nil {
		t = &lbconfig.ServerTLS{}
	}
	return fmt.Sprintf("%v|%s|%x|%s|%q|%v", s.Verify, t.CAFile, sha256.Sum256(t.CA), t.SNI, t.ALPN, t.TLSOptions)
}

// Core is what the proxy needs of the load balancer: its servers' state
// and balancing.
type Core interface {
	// Pick chooses a usable server of backend not in skip (a bit per
	// server index) by the backend's balance: client for source, hash
	// for uri and hdr (useHash false when the request has no such
	// header: roundrobin then). It returns the server's index or -1.
	Pick(backend string, client netip.Addr, hash uint32, useHash bool, skip uint64) int
	// Usable reports whether server i of backend may take a request.
	Usable(backend string, i int) bool
	// Begin counts a request on server i of backend; end counts its end,
	// failed when no answer came.
	Begin(backend string, i int) (end func(failed bool))
	// Opened counts a client connection of the frontend; closed counts
	// its end.
	Opened(frontend string) (closed func())
}

// Config is one HTTP frontend with the backends it may use, as the
// configuration in force has them.
type Config struct {
	Frontend lbconfig.Frontend
	Backends map[string]*lbconfig.Backend
	Timeouts lbconfig.Timeouts
	Retries  int
	// Stats serve the stats page of the frontend ("frontend NAME") or a
	// backend ("backend NAME") with `stats enable`: true when they
	// answered the request.
	Stats map[string]func(http.ResponseWriter, *http.Request) bool
	// Monitor answers the frontend's monitor-uri: true when it answered.
	Monitor func(http.ResponseWriter, *http.Request) bool
	// Prometheus answers the requests an `http-request use-service
	// prometheus-exporter` rule of the frontend or a backend takes, with
	// haproxy's exporter's figures (nil: 503).
	Prometheus func(http.ResponseWriter, *http.Request)
	// Log writes a request's log line, when the frontend logs (nil: no
	// lines).
	Log func(Entry)
	// Accepted, when set, is called for each client connection accepted,
	// with the client's and the listener's address.
	Accepted func(client, local netip.AddrPort)
	// HeadRaw and HeadHTX are the request head's limits (tune.bufsize
	// and tune.maxrewrite, lbconfig.Config.HeadLimits), which the loop
	// engine (lb/httploop) applies; net/http has its own.
	HeadRaw, HeadHTX int
	// ListenerID is the place of the bind served in its frontend, from 1
	// (haproxy's listener id, which its logs show as the port of a
	// client of a UNIX socket).
	ListenerID int
}

// Entry is what a request's log line says.
type Entry struct {
	Client, Frontend netip.AddrPort
	TLS              bool // the request came over an ssl bind
	Accept           time.Time
	FrontendName     string
	Backend, Server  string
	ServerAddr       netip.AddrPort
	// UnixClient is the listener id when the client came over a UNIX
	// socket (abns@ bind), 0 otherwise; UnixServer: the server is one.
	UnixClient     int
	UnixServer     bool
	Request        string // "GET /path HTTP/1.1"
	Method, URI    string
	Version        string
	Status         int
	Bytes          int64
	TR, Tw, Tc, Tr time.Duration // -1: not reached
	Ta             time.Duration
	Term           string // termination state, "--" when normal
	Retries        int
	// BadRequest: no request was read (Request is "<BADREQ>").
	BadRequest bool
	// Nth is the request's place on its client connection: 1 for the
	// first (0 when unknown: HTTP/2, or no request).
	Nth int64
	// ReqCaps and ResCaps are the frontend's captured request and
	// answer headers, one per capture line (nil without such lines; an
	// entry is nil when the header was absent or no answer came).
	ReqCaps, ResCaps []*string
	// CookieReq and CookieRes are the captured cookie of the request
	// and of the answer, "name=value" ("" when none).
	CookieReq, CookieRes string
}

// compiled is a Config ready to serve.
type compiled struct {
	cfg     Config
	feACLs  acls
	beACLs  map[string]acls
	servers map[string][]serverRef // by backend
	samples map[string]*lbconfig.SampleExpr
}

type serverRef struct {
	name, cookie string
	addr         netip.AddrPort
	abstract     string // abns@NAME: addr unset
	// tls is the server's `ssl` (nil: plain HTTP), tlsKey what it was
	// built from, for the transport's key.
	tls    *tls.Config
	tlsKey string
	// key names the server's transport: backend, server, address,
	// connection mode and TLS settings (the same key across reloads
	// keeps its pool).
	key string
	// host is addr as text when it has an IP and a port ("": the
	// client's destination fills them in per request).
	host string
}

// Proxy serves one HTTP frontend's listeners.
type Proxy struct {
	core Core
	log  *slog.Logger
	cfg  atomic.Pointer[compiled]

	mu         sync.Mutex
	transports map[string]*serverPool // by serverRef.key
	servers    []*http.Server
	hijacked   map[net.Conn]bool // upgraded connections (WebSocket), which http.Server no longer tracks
	closed     bool

	bufs bufferPool // the ReverseProxy's copy buffers
}

// bufferPool lends the buffers an answer's body is copied through: the
// ReverseProxy's own would allocate (and clear) 32 KiB per request.
type bufferPool struct{ p sync.Pool }

// copyBuffer is the size of a copy buffer, the ReverseProxy's own.
const copyBuffer = 32 << 10

// flushAfter bounds how long an answer's bytes wait in net/http's
// buffer for more before they go to the client. A negative interval
// (flush after each write) cost a write(2) for the head alone, another
// for the body and a goroutine per answer; with this one, an answer
// whose body the server sent whole leaves in one write when the handler
// returns, and a slow body is still passed on within a millisecond.
// Answers without a length (chunked) and event streams are flushed at
// each write all the same (httputil.ReverseProxy does so).
const flushAfter = time.Millisecond

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, copyBuffer)
}

func (b *bufferPool) Put(buf []byte) {
	if cap(buf) < copyBuffer {
		return
	}
	buf = buf[:copyBuffer]
	b.p.Put(&buf)
}

// New returns a Proxy with cfg in force.
func New(core Core, cfg Config, log *slog.Logger) *Proxy {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{core: core, log: log, transports: map[string]*serverPool{}, hijacked: map[net.Conn]bool{}}
	p.Set(cfg)
	return p
}

// Set puts cfg in force for the requests that start from now on.
func (p *Proxy) Set(cfg Config) { p.cfg.Store(compile(cfg)) }

// compile makes cfg ready to serve.
func compile(cfg Config) *compiled {
	c := &compiled{cfg: cfg, beACLs: map[string]acls{}, servers: map[string][]serverRef{}, samples: compileSamples(cfg)}
	if cfg.Frontend.HTTP != nil {
		c.feACLs = cfg.Frontend.HTTP.ACLs
	}
	for name, b := range cfg.Backends {
		var refs []serverRef
		conn := connMode(cfg.Frontend.HTTP, b.HTTP)
		for _, s := range b.Servers {
			r := serverRef{name: s.Name, addr: s.Addr, abstract: s.Abstract}
			if s.SSL {
				r.tls = tlsconf.Server(s)
				r.tlsKey = "/ssl" + tlsKey(s)
			}
			r.key = name + "/" + s.Name + "@" + s.Addr.String() + s.Abstract + "/" + conn + r.tlsKey
			if !s.Addr.Addr().IsUnspecified() && s.Addr.Port() != 0 {
				r.host = s.Addr.String()
			}
			if b.HTTP != nil {
				r.cookie = b.HTTP.ServerCookies[s.Name]
			}
			refs = append(refs, r)
		}
		c.servers[name] = refs
		if b.HTTP != nil {
			c.beACLs[name] = b.HTTP.ACLs
		}
	}
	return c
}

// Serve accepts HTTP/1.x and HTTP/2 (prior knowledge) clients on ln
// until Close.
func (p *Proxy) Serve(ln net.Listener) error { return p.ServeTLS(ln, nil) }

// ServeTLS is Serve for a bind that terminates TLS with conf (nil:
// none): HTTP/1.x, and HTTP/2 where ALPN chose h2.
func (p *Proxy) ServeTLS(ln net.Listener, conf *tls.Config) error {
	c := p.cfg.Load()
	to := c.cfg.Timeouts
	reqTimeout := firstSet(to.HTTPRequest, to.Client)
	idle := firstSet(to.HTTPKeepAlive, to.HTTPRequest, to.Client)
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: reqTimeout,
		IdleTimeout:       idle,
		ErrorLog:          nil,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		ConnState: func(c net.Conn, st http.ConnState) {
			if st == http.StateHijacked {
				if tc, ok := c.(*tls.Conn); ok {
					// The TLS connection's own socket: the one
					// trackedConn.Close takes out of the set.
					c = tc.NetConn()
				}
				if tc, ok := c.(*trackedConn); ok && to.Tunnel > 0 {
					tc.idle.Store(int64(to.Tunnel))
				}
				p.mu.Lock()
				closed := p.closed
				if !closed {
					p.hijacked[c] = true
				}
				p.mu.Unlock()
				if closed {
					c.Close()
				}
			}
		},
	}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	srv.Protocols.SetHTTP2(conf != nil)
	if conf != nil {
		// A client's failed handshake is not vipstack's error: haproxy
		// logs it only with a log format.
		srv.ErrorLog = log.New(io.Discard, "", 0)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		ln.Close()
		return nil
	}
	p.servers = append(p.servers, srv)
	p.mu.Unlock()
	var sl net.Listener = trackingListener{ln, p}
	if conf != nil {
		sl = tls.NewListener(sl, conf)
	}
	err := srv.Serve(sl)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

type connKey struct{}

// Shutdown stops the listeners, lets the requests in flight finish until
// ctx ends, then closes every connection.
func (p *Proxy) Shutdown(ctx context.Context) {
	p.mu.Lock()
	servers := slices.Clone(p.servers)
	p.mu.Unlock()
	for _, s := range servers {
		s.SetKeepAlivesEnabled(false)
	}
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() {
			if s.Shutdown(ctx) != nil {
				s.Close()
			}
		})
	}
	wg.Wait()
	p.Close()
}

// Close stops the listeners and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	hijacked := make([]net.Conn, 0, len(p.hijacked))
	for c := range p.hijacked {
		hijacked = append(hijacked, c)
	}
	servers := slices.Clone(p.servers)
	transports := make([]*serverPool, 0, len(p.transports))
	for _, t := range p.transports {
		transports = append(transports, t)
	}
	p.mu.Unlock()
	// Outside p.mu: a connection's Close takes it (trackedConn).
	for _, c := range hijacked {
		c.Close()
	}
	for _, s := range servers {
		s.Close()
	}
	for _, t := range transports {
		t.closeIdle(true)
	}
}

func firstSet(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}

// ServeHTTP runs a request through the frontend's and its backend's
// rules and forwards it.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := p.cfg.Load()
	start := time.Now()
	rq := &request{r: r, tls: r.TLS != nil, samples: c.samples}
	var nth int64
	if cn, ok := r.Context().Value(connKey{}).(net.Conn); ok {
		rq.src = addrPort(cn.RemoteAddr())
		rq.dst = addrPort(cn.LocalAddr())
		if _, ok := cn.LocalAddr().(*net.UnixAddr); ok {
			rq.unix = max(c.cfg.ListenerID, 1)
		}
		if tc, ok := cn.(*tls.Conn); ok {
			cn = tc.NetConn()
		}
		if tc, ok := cn.(*trackedConn); ok && r.ProtoMajor == 1 {
			nth = tc.requests.Add(1)
		}
	}
	e := Entry{Client: rq.src, Frontend: rq.dst, TLS: rq.tls, Accept: start, FrontendName: c.cfg.Frontend.Name, UnixClient: rq.unix,
		Backend: c.cfg.Frontend.Name, Server: "<NOSRV>", Method: r.Method, URI: r.RequestURI, Version: r.Proto,
		Tw: -1, Tc: -1, Tr: -1, Term: "--", Nth: nth}
	if fe := c.cfg.Frontend.HTTP; fe != nil {
		e.ReqCaps, e.ResCaps = captureHeaders(fe.Captures, false, r.Header, r.Host)
		if fe.CaptureCookie != nil {
			// Before the rules: a denied request's cookie is
			// captured too (measured).
			e.CookieReq = captureCookie(fe.CaptureCookie, r.Header.Values("Cookie"), false)
		}
	}
	lw := &logWriter{ResponseWriter: w}
	if r.ProtoMajor == 1 && strings.EqualFold(r.Header.Get("Expect"), "100-continue") && r.Body != nil && r.Body != http.NoBody {
		r.Body = &continueBody{ReadCloser: r.Body, w: lw}
	}
	if c.cfg.Monitor != nil && c.cfg.Monitor(w, r) {
		return // haproxy logs no monitor hit
	}
	defer func() {
		if c.cfg.Log != nil {
			e.Request = e.Method + " " + e.URI + " " + e.Version
			e.Status, e.Bytes, e.Ta = lw.status, lw.n, time.Since(start)
			if e.Server == "<STATS>" && e.Status == http.StatusUnauthorized {
				// Measured, haproxy 2.6.12: its stats page's 401
				// (stats auth) is logged as 400.
				e.Status = http.StatusBadRequest
			}
			c.cfg.Log(e)
		}
	}()
	w = lw
	fe := c.cfg.Frontend.HTTP
	if fe == nil {
		p.fail(w, r, nil, http.StatusServiceUnavailable)
		return
	}
	if fe.Conn == "close" {
		w.Header().Set("Connection", "close")
	}
	if v := apply(&fe.HTTPProxy, c.feACLs, rq); v.done() {
		p.verdict(w, r, c, &fe.HTTPProxy, v, &e)
		return
	}
	if st := c.cfg.Stats[lbconfig.FrontendKey(c.cfg.Frontend.Name)]; st != nil && st(w, r) {
		e.Term, e.Server, e.Tw, e.Tc, e.Tr = "LR", "<STATS>", 0, 0, 0
		return
	}
	backend := c.cfg.Frontend.Backend
	for _, u := range fe.UseBackends {
		if c.feACLs.cond(u.Cond, rq) {
			backend = u.Backend
			break
		}
	}
	b := c.cfg.Backends[backend]
	if b == nil {
		e.Term = "SC"
		p.fail(w, r, &fe.HTTPProxy, http.StatusServiceUnavailable)
		return
	}
	e.Backend = backend
	var bh *lbconfig.HTTPBackend
	if b.HTTP != nil {
		bh = b.HTTP
		if v := apply(&bh.HTTPProxy, c.beACLs[backend], rq); v.done() {
			p.verdict(w, r, c, &bh.HTTPProxy, v, &e)
			return
		}
		if bh.Conn == "close" {
			w.Header().Set("Connection", "close")
		}
		if st := c.cfg.Stats[lbconfig.BackendKey(backend)]; st != nil && st(w, r) {
			e.Term, e.Server, e.Tw, e.Tc, e.Tr = "LR", "<STATS>", 0, 0, 0
			return
		}
	}
	ff := fe.ForwardFor
	if bh != nil && bh.ForwardFor != nil {
		ff = bh.ForwardFor
	}
	// A client of a UNIX socket has no address: haproxy adds no header
	// (measured, abns@ bind with option forwardfor).
	if ff != nil && rq.src.IsValid() && !(ff.Except.IsValid() && ff.Except.Contains(rq.src.Addr().Unmap())) &&
		!(ff.IfNone && len(r.Header.Values(ff.Header)) > 0) {
		r.Header.Add(ff.Header, rq.src.Addr().Unmap().String())
	}
	originalTo(r, rq.dst.Addr().Unmap(), fe.OriginalTo, bh)
	p.forward(w, rq, c, backend, b, fe, &e)
}

// verdict answers a request that the rules of section h ended: with the
// service a use-service rule named, the redirect, or the deny's status.
func (p *Proxy) verdict(w http.ResponseWriter, r *http.Request, c *compiled, h *lbconfig.HTTPProxy, v verdict, e *Entry) {
	if v.service != "" {
		// haproxy logs the exporter's answers as its applet's:
		// "<PROMEX>", like the stats page's "<STATS>".
		e.Term, e.Server, e.Tw, e.Tc, e.Tr = "LR", "<PROMEX>", 0, 0, 0
		if c.cfg.Prometheus == nil {
			p.fail(w, r, h, http.StatusServiceUnavailable)
			return
		}
		c.cfg.Prometheus(w, r)
		return
	}
	e.Term = v.term()
	if v.answer != nil {
		writeAnswer(w, r, v.status, v.answer)
		return
	}
	if v.location == "" {
		p.fail(w, r, h, v.status)
		return
	}
	w.Header().Set("Content-Length", "0")
	w.Header().Set("Location", v.location)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(v.status)
}

// forward sends the request to a server of backend b, retrying a failed
// connect on another one.
func (p *Proxy) forward(w http.ResponseWriter, rq *request, c *compiled, name string, b *lbconfig.Backend, fe *lbconfig.HTTPFrontend, e *Entry) {
	r := rq.r
	refs := c.servers[name]
	bh := b.HTTP
	// Persistence: the cookie names a usable server.
	chosen, byCookie := -1, false
	if bh != nil && bh.Cookie != nil && !ignorePersist(bh, c.beACLs[name], rq) {
		if ck, err := r.Cookie(bh.Cookie.Name); err == nil {
			val := ck.Value
			if bh.Cookie.Mode == "prefix" {
				val, _, _ = strings.Cut(val, "~")
			}
			for i, s := range refs {
				if s.cookie != "" && s.cookie == val && p.core.Usable(name, i) {
					chosen, byCookie = i, true
					break
				}
			}
		}
	}
	var hash uint32
	useHash := false
	if chosen < 0 {
		switch b.Balance {
		case lbconfig.URI:
			hash, useHash = hashString(r.URL.Path), true
		case lbconfig.Header:
			if v := r.Header.Get(bh.HashHeader); v != "" || strings.EqualFold(bh.HashHeader, "host") {
				if strings.EqualFold(bh.HashHeader, "host") {
					v = r.Host
				}
				hash, useHash = hashString(v), true
			}
		}
	}
	conn := connMode(fe, bh)
	var beProxy *lbconfig.HTTPProxy
	if bh != nil {
		beProxy = &bh.HTTPProxy
	}
	if fe.BufferRequest || bh != nil && bh.BufferRequest {
		if !bufferBody(w, r, c.cfg.Timeouts) {
			e.Term = "cR"
			p.fail(w, r, errorSection(fe, bh), http.StatusRequestTimeout)
			return
		}
	}
	algos, types, offload := compression(&fe.HTTPProxy, beProxy)
	algo := chooseAlgo(algos, r)
	if algo != "" && offload {
		r.Header.Del("Accept-Encoding")
	}
	retries := max(c.cfg.Retries, 0)
	var skip uint64
	last := -1
	replayable := r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0
	for attempt := 0; ; attempt++ {
		i := chosen
		if i < 0 || attempt > 0 {
			i = p.core.Pick(name, rq.src.Addr(), hash, useHash, skip)
			if i < 0 && attempt > 0 && last >= 0 {
				// Every usable server tried: haproxy retries the last
				// one (its %rc counts each retry).
				i = last
			}
		}
		last = i
		if i < 0 || i >= len(refs) {
			e.Term = "SC"
			p.fail(w, r, errorSection(fe, bh), http.StatusServiceUnavailable)
			return
		}
		s := refs[i]
		// A server written without an IP or a port: the address or
		// port the client connected to, as haproxy does.
		addr := lbconfig.ServerTarget(s.addr, rq.dst)
		host := s.host
		if host == "" {
			host = addr.String()
		}
		if s.abstract != "" {
			addr, host = netip.AddrPort{}, "abns.invalid" // the transport dials the socket
		}
		e.Server, e.ServerAddr, e.UnixServer = s.name, addr, s.abstract != ""
		t := p.transport(s, conn, c.cfg.Timeouts)
		end := p.core.Begin(name, i)
		dialFailed := false
		var failStatus int
		var serverConn net.Conn // the server connection, from the trace
		rp := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.Out.URL.Scheme, pr.Out.URL.Host = "http", host
				if s.tls != nil {
					pr.Out.URL.Scheme = "https"
				}
				pr.Out.Host = pr.In.Host
				// Rewrite's caller strips these; haproxy passes them on.
				for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
					if vs := pr.In.Header.Values(h); len(vs) > 0 {
						pr.Out.Header[h] = vs
					}
				}
				// insert indirect: the cookie is the balancer's alone.
				if bh != nil && bh.Cookie != nil && bh.Cookie.Indirect && bh.Cookie.Mode == "insert" {
					removeCookie(pr.Out, bh.Cookie.Name)
				}
				if bh != nil && bh.Cookie != nil && bh.Cookie.Mode == "prefix" {
					unprefixCookie(pr.Out, bh.Cookie.Name)
				}
				if pr.Out.Header.Get("User-Agent") == "" {
					pr.Out.Header["User-Agent"] = nil // not Go's
				}
			},
			Transport:     t,
			BufferPool:    &p.bufs,
			FlushInterval: flushAfter,
			ErrorLog:      nil,
			ModifyResponse: func(resp *http.Response) error {
				captureAnswer(fe, resp, e)
				if ic, ok := serverConn.(*idleConn); ok && resp.StatusCode == http.StatusSwitchingProtocols && c.cfg.Timeouts.Tunnel > 0 {
					ic.idle.Store(int64(c.cfg.Timeouts.Tunnel)) // haproxy's timeout tunnel once upgraded
				}
				if algo != "" && compressible(resp, r, types) {
					compress(resp, algo)
				}
				if bh != nil {
					applyResponse(&bh.HTTPProxy, c.beACLs[name], rq, resp)
				}
				applyResponse(&fe.HTTPProxy, c.feACLs, rq, resp)
				if bh != nil && bh.Cookie != nil {
					setCookie(resp, bh.Cookie, s.cookie, byCookie)
				}
				if conn == "close" {
					resp.Header.Set("Connection", "close")
				}
				return nil
			},
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				var op *net.OpError
				switch {
				case errors.As(err, &op) && op.Op == "dial":
					dialFailed = true
					failStatus = http.StatusServiceUnavailable
				case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
					failStatus = http.StatusGatewayTimeout
				case errors.Is(err, context.Canceled):
					failStatus = -1 // the client left
				default:
					failStatus = http.StatusBadGateway
				}
			},
		}
		e.Tw, e.Tc, e.Tr = 0, -1, -1
		// The trace's calls come from the Transport's goroutines.
		var connStart, wrote atomic.Int64 // UnixNano
		var tr atomic.Int64
		tr.Store(-1)
		trace := &httptrace.ClientTrace{
			ConnectStart: func(string, string) { connStart.Store(time.Now().UnixNano()) },
			GotConn: func(info httptrace.GotConnInfo) {
				serverConn = info.Conn
				if cs := connStart.Load(); info.Reused || cs == 0 {
					e.Tc = 0
				} else {
					e.Tc = time.Duration(time.Now().UnixNano() - cs)
				}
			},
			WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(time.Now().UnixNano()) },
			GotFirstResponseByte: func() {
				if w := wrote.Load(); w != 0 {
					tr.Store(max(time.Now().UnixNano()-w, 0))
				} else {
					tr.Store(0) // answered before the request was whole
				}
			},
		}
		// Go ends the request's context once the client has closed its
		// side; haproxy 2.6.12 sends such a request to its server all
		// the same and, without `option abortonclose`, serves it the
		// answer (an agent may half-close after its request). With the
		// option it gives up once the request is sent: a 400, "CH"
		// (measured, TestHTTPAbortOnCloseMatchesHaproxy).
		ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
		if b.AbortOnClose {
			trace.WroteRequest = func(httptrace.WroteRequestInfo) {
				wrote.Store(time.Now().UnixNano())
				go func() {
					select {
					case <-r.Context().Done():
						cancel()
					case <-ctx.Done():
					}
				}()
			}
		}
		rp.ServeHTTP(w, r.WithContext(httptrace.WithClientTrace(ctx, trace)))
		cancel()
		e.Tr = time.Duration(tr.Load())
		end(failStatus != 0)
		if failStatus == 0 {
			return
		}
		skip |= bit(i)
		if dialFailed && attempt < retries && replayable {
			e.Retries++
			continue
		}
		switch failStatus {
		case -1:
			// Only `option abortonclose` cancels, once the request is
			// sent: haproxy's 400, logged "CH".
			e.Term = "CH"
			p.fail(w, r, errorSection(fe, bh), http.StatusBadRequest)
		case http.StatusGatewayTimeout:
			e.Term = "sH"
			p.fail(w, r, errorSection(fe, bh), failStatus)
		case http.StatusServiceUnavailable:
			e.Term = "SC"
			p.fail(w, r, errorSection(fe, bh), failStatus)
		default:
			e.Term = "SH"
			p.fail(w, r, errorSection(fe, bh), failStatus)
		}
		return
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func errorSection(fe *lbconfig.HTTPFrontend, bh *lbconfig.HTTPBackend) *lbconfig.HTTPProxy {
	if bh != nil && len(bh.ErrorFiles) > 0 {
		return &bh.HTTPProxy
	}
	return &fe.HTTPProxy
}

func bit(i int) uint64 {
	if i >= 64 {
		return 0
	}
	return 1 << uint(i)
}

func hashString(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// connMode is the http-server-close / httpclose mode in force for a
// backend's servers: the backend's, else the frontend's ("": keep-alive).
func connMode(fe *lbconfig.HTTPFrontend, bh *lbconfig.HTTPBackend) string {
	if bh != nil && bh.Conn != "" {
		return bh.Conn
	}
	if fe != nil {
		return fe.Conn
	}
	return ""
}

// transport is the pool of connections to server s, whose connection
// mode is conn.
func (p *Proxy) transport(s serverRef, conn string, to lbconfig.Timeouts) *serverPool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := p.transports[s.key]; t != nil {
		return t
	}
	d := &net.Dialer{Timeout: to.Connect}
	t := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if s.abstract != "" {
				network, addr = "unix", lbconfig.AbstractPath(s.abstract)
			}
			c, err := d.DialContext(ctx, network, addr)
			if err != nil || to.Server <= 0 {
				return c, err
			}
			ic := &idleConn{Conn: c}
			ic.idle.Store(int64(to.Server))
			return ic, nil
		},
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       firstSet(to.Server, 90*time.Second),
		ResponseHeaderTimeout: to.Server,
		ExpectContinueTimeout: time.Second,
		DisableKeepAlives:     conn == "close" || conn == "server-close",
		DisableCompression:    true,
		TLSClientConfig:       &tls.Config{},
		ForceAttemptHTTP2:     false,
	}
	if s.tls != nil {
		// The handshake is part of connecting, as in haproxy: its
		// failure is a connection failure (503, retried elsewhere).
		conf := s.tls
		t.ForceAttemptHTTP2 = slices.Contains(conf.NextProtos, "h2")
		t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := t.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			tc := tls.Client(c, conf)
			if err := tc.HandshakeContext(ctx); err != nil {
				c.Close()
				return nil, &net.OpError{Op: "dial", Net: network, Addr: c.RemoteAddr(), Err: err}
			}
			return tc, nil
		}
	}
	sp := &serverPool{t: t, dial: t.DialContext, idleTimeout: t.IdleConnTimeout,
		// A server without an IP or a port is dialled at each client's
		// destination: the Transport keeps a pool per address.
		direct: s.tls == nil && !t.DisableKeepAlives && (s.host != "" || s.abstract != "")}
	p.transports[s.key] = sp
	return sp
}

func addrPort(a net.Addr) netip.AddrPort {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

// removeCookie takes name out of the request's Cookie headers.
func removeCookie(r *http.Request, name string) {
	editCookies(r, func(n, v string) (string, bool) { return v, n != name })
}

// unprefixCookie turns "SRV~value" back into the server's "value".
func unprefixCookie(r *http.Request, name string) {
	editCookies(r, func(n, v string) (string, bool) {
		if n != name {
			return v, true
		}
		_, rest, ok := strings.Cut(v, "~")
		if !ok {
			return v, false
		}
		return rest, true
	})
}

func editCookies(r *http.Request, f func(name, value string) (string, bool)) {
	vs := r.Header.Values("Cookie")
	if len(vs) == 0 {
		return
	}
	var out []string
	for _, v := range vs {
		var keep []string
		for _, part := range strings.Split(v, ";") {
			part = strings.TrimSpace(part)
			n, val, _ := strings.Cut(part, "=")
			if nv, ok := f(n, val); ok {
				keep = append(keep, n+"="+nv)
			}
		}
		if len(keep) > 0 {
			out = append(out, strings.Join(keep, "; "))
		}
	}
	r.Header.Del("Cookie")
	if len(out) > 0 {
		r.Header["Cookie"] = out
	}
}

// setCookie carries out the backend's cookie mode on a response from the
// server whose cookie value is value.
func setCookie(resp *http.Response, c *lbconfig.Cookie, value string, byCookie bool) {
	if value == "" {
		return
	}
	switch c.Mode {
	case "insert":
		if byCookie && c.Indirect {
			return
		}
		if byCookie {
			return
		}
		v := c.Name + "=" + value + "; path=/"
		if c.HTTPOnly {
			v += "; HttpOnly"
		}
		if c.Secure {
			v += "; Secure"
		}
		resp.Header.Add("Set-Cookie", v)
		if c.NoCache && cacheable(resp) {
			resp.Header.Add("Cache-Control", "private")
		}
	case "prefix", "rewrite":
		vs := resp.Header.Values("Set-Cookie")
		for i, sc := range vs {
			n, rest, ok := strings.Cut(sc, "=")
			if !ok || strings.TrimSpace(n) != c.Name {
				continue
			}
			val, attrs, _ := strings.Cut(rest, ";")
			if c.Mode == "prefix" {
				val = value + "~" + val
			} else {
				val = value
			}
			if attrs != "" {
				val += ";" + attrs
			}
			vs[i] = n + "=" + val
		}
		if len(vs) > 0 {
			resp.Header["Set-Cookie"] = vs
		}
	}
}

// logWriter records what was answered, for the log line.
type logWriter struct {
	http.ResponseWriter
	status int
	n      int64
	// contMu orders the two ways a client may be told "100 Continue": the
	// one net/http sends on the body's first read, and the server's own
	// relayed by the ReverseProxy (from the Transport's goroutine). The
	// Transport starts the body as soon as the server's 100 arrives,
	// before it relays it: without the lock the client could get both.
	contMu    sync.Mutex
	continued bool // the client was told 100 Continue
}

func (w *logWriter) WriteHeader(code int) {
	if code == http.StatusContinue {
		w.contMu.Lock()
		defer w.contMu.Unlock()
		if w.continued {
			return // one 100 Continue, as haproxy sends
		}
		w.continued = true
		if w.status == 0 {
			w.status = code
		}
		w.ResponseWriter.WriteHeader(code)
		return
	}
	if w.status == 0 || code >= 200 {
		if w.status == 0 || w.status < 200 {
			w.status = code
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *logWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

// continueBody is the body of an HTTP/1 request with Expect:
// 100-continue. Its first read lets net/http send the automatic 100
// Continue under the logWriter's lock, unless the server's own was relayed
// first (which turns the automatic one off): the client gets exactly one.
type continueBody struct {
	io.ReadCloser
	w    *logWriter
	once sync.Once
}

func (b *continueBody) Read(p []byte) (int, error) {
	b.once.Do(func() {
		b.w.contMu.Lock()
		defer b.w.contMu.Unlock()
		if !b.w.continued {
			b.w.continued = true
			b.ReadCloser.Read(p[:0]) // net/http writes its 100 Continue here
		}
	})
	return b.ReadCloser.Read(p)
}

// Unwrap lets http.ResponseController reach the connection (Upgrade,
// flushes).
func (w *logWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *logWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack is needed by httputil.ReverseProxy for a 101 Switching
// Protocols answer (WebSocket).
func (w *logWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// cacheable reports whether a shared cache could keep resp, as haproxy
// judges it before nocache marks it private: a GET or HEAD answered with
// a cacheable status and explicit freshness (max-age, s-maxage, public,
// Expires), not already private, no-cache or no-store.
func cacheable(resp *http.Response) bool {
	if resp.Request != nil && resp.Request.Method != http.MethodGet && resp.Request.Method != http.MethodHead {
		return false
	}
	switch resp.StatusCode {
	case 200, 203, 204, 206, 300, 301, 404, 405, 410, 414, 501:
	default:
		return false
	}
	fresh := resp.Header.Get("Expires") != ""
	for _, v := range resp.Header.Values("Cache-Control") {
		for _, d := range strings.Split(v, ",") {
			d = strings.ToLower(strings.TrimSpace(d))
			switch {
			case d == "private" || d == "no-cache" || d == "no-store" || strings.HasPrefix(d, "private="):
				return false
			case d == "public" || strings.HasPrefix(d, "max-age=") || strings.HasPrefix(d, "s-maxage="):
				fresh = true
			}
		}
	}
	return fresh
}

// trackingListener hands out connections that leave the proxy's
// hijacked set when closed.
type trackingListener struct {
	net.Listener
	p *Proxy
}

func (l trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cfg := l.p.cfg.Load().cfg
	closed := l.p.core.Opened(cfg.Frontend.Name)
	tc := &trackedConn{idleConn: idleConn{Conn: c}, p: l.p, closed: closed, accept: time.Now()}
	tc.idle.Store(int64(cfg.Timeouts.Client))
	if cfg.Accepted != nil {
		cfg.Accepted(addrPort(c.RemoteAddr()), addrPort(c.LocalAddr()))
	}
	return tc, nil
}

// trackedConn is a client connection: it leaves the proxy's hijacked set
// and the frontend's count when closed, and ends after `timeout client`
// without a byte read (`timeout tunnel` once upgraded).
type trackedConn struct {
	idleConn
	// requests counts the requests read on the connection.
	requests atomic.Int64
	p        *Proxy
	once     sync.Once
	closed   func()
	accept   time.Time
}

// idleConn fails a Read after idle without data (0: never), on top of
// the deadlines its user sets (net/http's for the request head and
// keep-alive), as haproxy's `timeout client` and `timeout server` are
// inactivity timeouts.
type idleConn struct {
	net.Conn
	idle     atomic.Int64 // time.Duration
	got      atomic.Bool  // a byte was read
	mu       sync.Mutex
	deadline time.Time // the user's read deadline
	armed    time.Time // the read deadline last set on Conn
}

// idleSlack is how late, as a part of the idle timeout, an inactivity
// timeout may end a connection: a Read moves the socket's deadline only
// when the one set is that much short of the timeout, not on every Read
// (a timer change each, a few per cent of a request's CPU). With
// haproxy's usual timeouts, 1 ms late for 1 s, 1 s for 1000 s.
const idleSlack = 1000

func (c *idleConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline, c.armed = t, t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *idleConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline, c.armed = t, t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *idleConn) Read(b []byte) (int, error) {
	if idle := time.Duration(c.idle.Load()); idle > 0 {
		c.mu.Lock()
		if d, move := nextDeadline(time.Now(), idle, c.deadline, c.armed); move {
			c.armed = d
			c.Conn.SetReadDeadline(d)
		}
		c.mu.Unlock()
	}
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.got.Store(true)
	}
	return n, err
}

// nextDeadline is the read deadline a Read at now needs on a connection
// with inactivity timeout idle, the user's deadline user (zero: none) and
// the deadline armed on the socket: the earlier of user and now+idle, at
// most idle/idleSlack later than now+idle. move is false when armed
// already is such a deadline.
func nextDeadline(now time.Time, idle time.Duration, user, armed time.Time) (d time.Time, move bool) {
	due := now.Add(idle)
	if !user.IsZero() && !user.After(due) {
		return user, !armed.Equal(user)
	}
	late := due.Add(idle / idleSlack)
	if !user.IsZero() && user.Before(late) {
		late = user
	}
	if !armed.IsZero() && !armed.Before(due) && !armed.After(late) {
		return armed, false
	}
	return late, true
}

func (c *trackedConn) Close() error {
	c.p.mu.Lock()
	delete(c.p.hijacked, c)
	c.p.mu.Unlock()
	err := c.Conn.Close()
	c.once.Do(func() {
		c.closed()
		if !c.got.Load() {
			c.p.logEmpty(c)
		}
	})
	return err
}

// logEmpty writes haproxy's line for a client that connected and closed
// without a byte (termination state CR, "<BADREQ>", status 400), unless
// the frontend has option dontlognull.
func (p *Proxy) logEmpty(c *trackedConn) {
	cfg := p.cfg.Load().cfg
	if cfg.Log == nil || cfg.Frontend.HTTP == nil || cfg.Frontend.HTTP.DontLogNull {
		return
	}
	name := cfg.Frontend.Name
	e := Entry{Client: addrPort(c.RemoteAddr()), Frontend: addrPort(c.LocalAddr()), Accept: c.accept, FrontendName: name,
		Backend: name, Server: "<NOSRV>", Request: "<BADREQ>", Status: 400, TR: -1, Tw: -1, Tc: -1, Tr: -1,
		Ta: time.Since(c.accept), Term: "CR", BadRequest: true}
	if _, ok := c.LocalAddr().(*net.UnixAddr); ok {
		e.UnixClient = max(cfg.ListenerID, 1)
	}
	// No stream, no captures: haproxy leaves %hr %hs out (measured).
	cfg.Log(e)
}

// ignorePersist reports whether one of the backend's ignore-persist
// conditions matches the request: then its cookie is not looked at.
func ignorePersist(bh *lbconfig.HTTPBackend, a acls, rq *request) bool {
	for _, cond := range bh.IgnorePersist {
		if a.cond(cond, rq) {
			return true
		}
	}
	return false
}

// originalTo adds option originalto's header, as haproxy 2.6 does: on in
// the frontend or the backend, the backend's header name if it has the
// option, none when either's except network holds the address.
func originalTo(r *http.Request, dst netip.Addr, fe *lbconfig.OriginalTo, bh *lbconfig.HTTPBackend) {
	var be *lbconfig.OriginalTo
	if bh != nil {
		be = bh.OriginalTo
	}
	if fe == nil && be == nil || !dst.IsValid() {
		return // a UNIX socket's client has no destination address
	}
	name := ""
	for _, o := range []*lbconfig.OriginalTo{fe, be} {
		if o == nil {
			continue
		}
		if o.Except.IsValid() && o.Except.Contains(dst) {
			return
		}
		name = o.Header
	}
	r.Header.Add(name, dst.String())
}
