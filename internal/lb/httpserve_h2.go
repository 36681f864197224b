package lb

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/http2"
)

// HTTP/2 on the monitor and stats listeners. haproxy 2.6 answers a client
// that opens a mode http connection with HTTP/2's connection preface
// ("prior knowledge", as `curl --http2-prior-knowledge` does) in HTTP/2,
// with the same status, header fields and body as in HTTP/1.1, and sends
// one "Connect from" line per stream (measured with haproxy 2.6.12: the
// monitor URI's 200 with content-length 58, cache-control and
// content-type; another URI's 503; the stats page and its CSV with
// refresh and no length; 401 with www-authenticate; three streams on one
// connection, three lines). A request that asks to upgrade (`Upgrade:
// h2c`) is answered in HTTP/1.1, by both (measured).
//
// The streams are served by golang.org/x/net/http2's server. Two things
// differ from haproxy, neither of which a client may rely on: the header
// fields go out in the order that server writes them (alphabetical, the
// length last when it adds it), not haproxy's; and a 401 leaves the
// connection open (an HTTP/1.1 401 closes it, as haproxy's does), since
// closing would end the connection's other streams.

// h2Preface opens every HTTP/2 connection (RFC 9113, section 3.4).
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// h2MaxStreams is haproxy 2.6's default tune.h2.max-concurrent-streams.
const h2MaxStreams = 100

// h2Window is HTTP/2's initial flow-control window (RFC 9113, section
// 6.9.2), haproxy 2.6's receive window.
const h2Window = 65535

// startsH2 reports whether the connection opens with HTTP/2's preface.
// It waits for more bytes only while those in br could still be the
// preface, so an HTTP/1.x request shorter than the preface is not held
// (the read deadline bounds the wait). A read error reports false, for
// the HTTP/1.x path to meet it again and answer as it does.
func startsH2(br *bufio.Reader) bool {
	for n := 1; ; n++ {
		b, err := br.Peek(n)
		if len(b) < n || err != nil {
			return false
		}
		if b[n-1] != h2Preface[n-1] {
			return false
		}
		if n == len(h2Preface) {
			return true
		}
	}
}

// serveH2 serves c, whose preface is in br, as an HTTP/2 connection until
// it ends: by the client, at `timeout http-keep-alive` without a stream,
// by its eviction for a newer client while no stream is being answered,
// or by the listener's close.
func (h *httpListener) serveH2(c *webConn, br *bufio.Reader) {
	c.SetDeadline(time.Time{}) // the HTTP/2 server keeps its own
	to := h.to.Load()
	srv := &http2.Server{
		MaxConcurrentStreams: h2MaxStreams,
		IdleTimeout:          to.idle,
		WriteByteTimeout:     to.write,
		// The protocol's initial windows, as haproxy 2.6.12 keeps them
		// (measured: no INITIAL_WINDOW_SIZE, no connection
		// WINDOW_UPDATE): the answers take no body, so a connection
		// buffers at most 64 KiB a client sends (x/net's default is 1
		// MiB, per stream and per connection).
		MaxUploadBufferPerConnection: h2Window,
		MaxUploadBufferPerStream:     h2Window,
	}
	var streams h2Streams
	srv.ServeConn(&prereadConn{Conn: c, r: br}, &http2.ServeConnOpts{
		// WriteTimeout bounds each stream's answer, as the write
		// deadline bounds an HTTP/1 answer: a client that never opens
		// its flow-control window would otherwise hold the stream's
		// handler, and so its connection's slot (the connection counts
		// as being answered, not evictable), for good. The stream is
		// reset when it passes; the connection goes on.
		BaseConfig: &http.Server{MaxHeaderBytes: maxWebHeader, WriteTimeout: to.write},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !streams.start(c) {
				panic(http.ErrAbortHandler) // evicted: the stream is reset
			}
			defer streams.end(c)
			h.serveH2Stream(c, w, r)
		}),
	})
}

// serveH2Stream answers one stream as serveConn answers a request.
func (h *httpListener) serveH2Stream(c *webConn, w http.ResponseWriter, r *http.Request) {
	req := &request{method: r.Method, uri: r.RequestURI, major: 2, keepAlive: true, contentLength: r.ContentLength}
	if r.Host != "" {
		req.header = append(req.header, field{"host", r.Host})
	}
	for name, values := range r.Header {
		for _, v := range values {
			req.header = append(req.header, field{name, v})
		}
	}
	if st := h.site.Load(); st.logs != nil {
		st.lb.logHTTPConnect(st.logs, st.name(), c.Conn)
	}
	resp := h.respond(req)
	hdr := w.Header()
	hdr["Date"] = nil // haproxy sends none
	if !resp.chunked && !resp.noLength {
		hdr["Content-Length"] = []string{strconv.Itoa(len(resp.body))}
	}
	for _, f := range resp.header {
		name := http.CanonicalHeaderKey(f.name)
		hdr[name] = append(hdr[name], f.value)
	}
	w.WriteHeader(resp.code)
	if resp.chunked || resp.noLength {
		// Out now, before the body: the server would otherwise add
		// the length of a body written whole.
		w.(http.Flusher).Flush()
	}
	if r.Method != http.MethodHead {
		w.Write(resp.body)
	}
}

// h2Streams counts an HTTP/2 connection's streams being answered: the
// connection is being answered (not evictable) while one is.
type h2Streams struct {
	mu sync.Mutex
	n  int
}

// start counts a stream in; false if the connection was evicted.
func (s *h2Streams) start(c *webConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 && !c.answering() {
		return false
	}
	s.n++
	return true
}

func (s *h2Streams) end(c *webConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n--; s.n == 0 {
		c.waiting()
	}
}

// prereadConn is a connection whose first bytes were read into r.
type prereadConn struct {
	net.Conn
	r io.Reader
}

func (c *prereadConn) Read(p []byte) (int, error) { return c.r.Read(p) }
