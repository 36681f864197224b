// net/http serves HTTP/2 per listener; the monitor and stats binds hand
// it connections whose first bytes the HTTP/1 / HTTP/2 dispatch has read,
// which only x/net/http2's ServeConn takes.
//
//lint:file-ignore SA1019 ServeConn has no replacement for a connection already read from

package web

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
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
// The streams are served by golang.org/x/net/http2's server, with
// haproxy's header fields in haproxy's order (the length first, then
// the others as in HTTP/1: h2Keys), a 303 or HEAD answer ending its
// stream on its HEADERS, and a 401 that leaves the connection open for
// its next streams, as haproxy 2.6.12 does over HTTP/2 (measured: no
// GOAWAY, no RST_STREAM, the next stream answered; its HTTP/1.1 401
// closes the connection, and so does vipstack's).
//
// Across a reload a connection keeps the `timeout http-keep-alive` it
// started with, and each stream is answered with the configuration of
// the moment. haproxy differs (measured, 2.6.12, old keep-alive 8 s, new
// 2 s, reload with -sf): its old process sends a GOAWAY at once (last
// stream 2^31-1, NO_ERROR: go elsewhere for new streams), still answers
// the connection's further streams with the old configuration (its
// monitor-uri, which the new one had changed), and closes it neither at
// 8 s nor at 2 s but when the client does (or at `timeout client`).
// vipstack keeps its way on purpose: answering with the new
// configuration is what the reload is for (the monitor's verdict), an
// idle connection stays bounded, so it cannot hold one of the
// listener's slots for a day, and x/net's server has no GOAWAY without
// closing the connection a second later.

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
func (h *Listener) serveH2(c *webConn, br *bufio.Reader) {
	c.SetDeadline(time.Time{}) // the HTTP/2 server keeps its own
	to := h.to.Load()
	srv := &http2.Server{
		MaxConcurrentStreams: h2MaxStreams,
		IdleTimeout:          to.Idle,
		WriteByteTimeout:     to.Write,
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
		BaseConfig: &http.Server{MaxHeaderBytes: h.Limits().Raw, WriteTimeout: to.Write},
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
func (h *Listener) serveH2Stream(c *webConn, w http.ResponseWriter, r *http.Request) {
	req := &request{method: r.Method, uri: r.RequestURI, major: 2, keepAlive: true, contentLength: r.ContentLength}
	if r.Host != "" {
		req.header = append(req.header, field{"host", r.Host})
	}
	for name, values := range r.Header {
		for _, v := range values {
			req.header = append(req.header, field{name, v})
		}
	}
	if st := h.site.Load(); st.Log != nil {
		st.Log(st.name(), c.Conn)
	}
	resp := h.answer(req, max(r.ContentLength, 0))
	fields := resp.header
	if !resp.chunked && !resp.noLength {
		// haproxy's HTTP/2 answers give the length first, as its
		// HTTP/1 answers do (measured, 2.6.12).
		fields = append([]field{{"content-length", strconv.Itoa(len(resp.body))}}, fields...)
	}
	hdr := w.Header()
	keys, ordered := h2Keys(fields)
	if !ordered {
		keys = nil // out of haproxy's order, alphabetical
	}
	for i, f := range fields {
		k := http.CanonicalHeaderKey(f.Name)
		if keys != nil {
			k = keys[i]
		}
		hdr[k] = append(hdr[k], f.Value)
	}
	// The server looks these keys up in their canonical spelling, and
	// would otherwise add a date, a sniffed content type or the length
	// of a body written whole, or move a length it finds to the end.
	// Present with no value, they are written as nothing.
	for _, k := range []string{"Date", "Content-Type", "Content-Length"} {
		if _, ok := hdr[k]; !ok {
			hdr[k] = nil
		}
	}
	w.WriteHeader(resp.code)
	if r.Method != http.MethodHead {
		w.Write(resp.body)
	}
}

// h2Keys spells each field's name so that golang.org/x/net/http2's
// server, which writes a response's header fields sorted by their keys
// (bytewise; lowercased on the wire), writes them in the order of
// fields, as haproxy does. A name's spelling is free, its case being
// lost on the wire: each key is the lowest case-spelling of its name
// above the key before it (content-length, cache-control, content-type
// are keyed "CONTENT-LENGTH", "CaCHE-CONTROL", "CoNTENT-TYPE"). A
// canonical spelling the
// server treats specially (Content-Length, Content-Type, Date) is never
// picked. ordered is false when no spelling follows the key before (a
// name sorting below its predecessor whatever their cases, or a
// repeated name): the caller writes canonical keys then.
func h2Keys(fields []field) (keys []string, ordered bool) {
	prev := ""
	for _, f := range fields {
		k, ok := caseAbove(strings.ToLower(f.Name), prev)
		if !ok {
			return nil, false
		}
		keys = append(keys, k)
		prev = k
	}
	return keys, true
}

// caseAbove returns the bytewise lowest spelling of name (lowercase),
// changing only the case of its letters, that sorts above prev and is
// not a canonical key the HTTP/2 server reads itself.
func caseAbove(name, prev string) (string, bool) {
	variants := func(c byte) []byte { // ascending
		if c >= 'a' && c <= 'z' {
			return []byte{c - 'a' + 'A', c}
		}
		return []byte{c}
	}
	special := map[string]bool{"Content-Length": true, "Content-Type": true, "Date": true}
	// The answer shares prev's first i bytes and exceeds it at byte i
	// (or is longer than prev, i == len(prev)), its other bytes as low
	// as they go; the longest shared prefix gives the lowest answer.
	// Try them from the longest down, skipping a special spelling.
	for i := min(len(name), len(prev)); i >= 0; i-- {
		shared := true
		for j := range i {
			if !bytes.ContainsRune(variants(name[j]), rune(prev[j])) {
				shared = false
				break
			}
		}
		if !shared {
			continue
		}
		if i == len(name) {
			continue // name spelled as prev's prefix is not above it
		}
		for _, c := range variants(name[i]) {
			if i < len(prev) && c <= prev[i] {
				continue
			}
			b := []byte(prev[:i] + string(c))
			for j := i + 1; j < len(name); j++ {
				b = append(b, variants(name[j])[0])
			}
			if k := string(b); !special[k] {
				return k, true
			}
		}
	}
	return "", false
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
