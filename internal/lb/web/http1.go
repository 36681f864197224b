package web

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// The monitor and stats listeners speak HTTP/1.x as haproxy 2.6 does, not
// as Go's net/http does: a request without Host is answered, slow headers
// get haproxy's 408, and malformed or oversized requests get haproxy's
// 400, with haproxy's fixed bodies. Every answer below was measured
// against haproxy 2.6.12 (Debian 12) with `printf | nc`-style raw
// requests; lb's web_test.go holds them as a table and
// TestWebAnswersMatchHaproxy compares both servers on the same requests.

// Limits of haproxy 2.6's request parser. The buffer's (tune.bufsize and
// tune.maxrewrite: Limits, from lbconfig.Config.HeadLimits) are the
// listener's; with haproxy's defaults the head must fit in 16384 bytes
// raw and in 15291 bytes as haproxy stores it (HTX): the request line's
// three parts, every header's name and value, and 8 bytes per block (the
// request line, each header, the end of headers). Measured: `GET
// /haproxy_ready HTTP/1.1` with one header `X` of 15241 bytes is
// answered, of 15242 refused with 400; with 10 more headers of 5 bytes
// each, 130 bytes (10×(5+8)) less fit.
const (
	// maxWebHeaders is the number of header lines haproxy takes
	// (measured: 100 answered, 101 refused with 400).
	maxWebHeaders = 100
	// webWriteTimeout bounds an answer's write to a client that does not
	// read.
	webWriteTimeout = 30 * time.Second
)

// haproxy's error answers: its built-in errorfiles, byte for byte
// (measured), each ends the connection.
const (
	answer400 = "HTTP/1.1 400 Bad request\r\nContent-length: 90\r\nCache-Control: no-cache\r\nConnection: close\r\nContent-Type: text/html\r\n\r\n" +
		"<html><body><h1>400 Bad request</h1>\nYour browser sent an invalid request.\n</body></html>\n"
	answer408 = "HTTP/1.1 408 Request Time-out\r\nContent-length: 110\r\nCache-Control: no-cache\r\nConnection: close\r\nContent-Type: text/html\r\n\r\n" +
		"<html><body><h1>408 Request Time-out</h1>\nYour browser didn't send a complete request in time.\n</body></html>\n"
	answer413 = "HTTP/1.1 413 Payload Too Large\r\nContent-length: 106\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n" +
		"<html><body><h1>413 Payload Too Large</h1>\nThe request entity exceeds the maximum allowed.\n</body></html>\n"
	answer422 = "HTTP/1.1 422 Unprocessable Content\r\nContent-length: 116\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n" +
		"<html><body><h1>422 Unprocessable Content</h1>\nThe server cannot process the contained instructions.\n</body></html>\n"
)

// A requestError is a request haproxy refuses: answer is what it sends
// before it closes the connection.
type requestError struct {
	answer string
	reason string
}

func (e *requestError) Error() string { return "bad request: " + e.reason }

func badRequest(format string, args ...any) *requestError {
	return &requestError{answer: answer400, reason: fmt.Sprintf(format, args...)}
}

// field is one header line, its name as sent (Field, which ParseHead
// hands out as is).
type field = Field

// request is the head of an HTTP/1.x request.
type request struct {
	method, uri string
	// major, minor: the version, "HTTP/major.minor".
	major, minor int
	header       []field
	// keepAlive: the client asked for the connection to stay open
	// (HTTP/1.1 without `Connection: close`, HTTP/1.0 with
	// `Connection: keep-alive`).
	keepAlive bool
	// closeAsked: `Connection: close` (haproxy then says close in its
	// answer), keepAliveAsked: an HTTP/1.0 `Connection: keep-alive`
	// (haproxy then says keep-alive).
	closeAsked, keepAliveAsked bool
	// contentLength is -1 without Content-Length; chunked with
	// Transfer-Encoding: chunked (then contentLength is ignored).
	contentLength int64
	chunked       bool
	// framingConflict: both Content-Length and Transfer-Encoding. haproxy
	// takes the request (chunked) but closes after its answer (measured).
	framingConflict bool
	// form is the body when it came whole with the head (a stats admin
	// form), and loopback says the client's address is a loopback one;
	// both only for HTTP/1.
	form     []byte
	loopback bool
}

// get is the value of the first header called name (case-insensitive).
func (r *request) get(name string) string {
	for _, f := range r.header {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// headEnd is the length of the request's head in b, through its empty
// line, or -1 if b does not hold all of it. Lines end in LF, with or
// without CR, as haproxy takes them.
func headEnd(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		switch {
		case i+1 < len(b) && b[i+1] == '\n':
			return i + 2
		case i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n':
			return i + 3
		}
	}
	return -1
}

// parseRequest parses a request's head (through its empty line, leading
// empty lines removed) as haproxy 2.6 does; a refused head returns a
// *requestError with haproxy's answer.
func parseRequest(head []byte, maxHTX int) (*request, error) {
	// The lines and the request line's words point into one copy of the
	// head; their slices stay on the stack for a usual head (no
	// allocation per line: the loop engine parses every request here).
	var lineBuf [maxStackLines]string
	lines := appendLines(lineBuf[:0], strings.TrimSuffix(string(head), "\n"))
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
		if strings.IndexByte(lines[i], '\r') >= 0 {
			return nil, badRequest("CR inside line %d", i+1)
		}
	}
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return nil, badRequest("no request line")
	}
	// Request line: method, URI and version, separated by runs of spaces
	// or tabs (measured: "GET  /x" and tabs are taken, a fourth word is
	// refused, and so is a space or tab before the method or after the
	// version).
	if l := lines[0]; l != "" && (l[0] == ' ' || l[0] == '\t' || l[len(l)-1] == ' ' || l[len(l)-1] == '\t') {
		return nil, badRequest("request line %q: space before the method or after the version", l)
	}
	parts, n := requestWords(lines[0])
	if n != 3 {
		return nil, badRequest("request line %q: want METHOD URI HTTP/x.y", lines[0])
	}
	r := &request{method: parts[0], uri: parts[1], contentLength: -1, header: make([]field, 0, min(len(lines)-1, maxWebHeaders))}
	if !isToken(r.method) {
		return nil, badRequest("method %q is not a token", r.method)
	}
	for i := 0; i < len(r.uri); i++ {
		// haproxy refuses control characters, DEL and 8-bit bytes in
		// the URI (measured: "/é" and "/x\x7f" get 400).
		if c := r.uri[i]; c <= ' ' || c >= 0x7f {
			return nil, badRequest("URI byte %#x at %d", c, i)
		}
	}
	v := parts[2]
	// Exactly "HTTP/" digit "." digit (measured: "HTTP/1", "http/1.1"
	// and "HTTP/1.10" get 400; "HTTP/2.0" and "HTTP/3.0" are answered as
	// 1.1, "HTTP/0.9" as 1.0).
	if len(v) != 8 || v[:5] != "HTTP/" || !isDigit(v[5]) || v[6] != '.' || !isDigit(v[7]) {
		return nil, badRequest("version %q: want HTTP/x.y", v)
	}
	r.major, r.minor = int(v[5]-'0'), int(v[7]-'0')
	old := r.major == 0 || (r.major == 1 && r.minor == 0)

	size := len(r.method) + len(r.uri) + len(v) + 8*2 // the request line and end-of-headers blocks
	var host, te string
	hostSeen, teSeen := false, false
	for _, l := range lines[1:] {
		if l != "" && (l[0] == ' ' || l[0] == '\t') {
			return nil, badRequest("folded header line %q", l)
		}
		name, value, ok := strings.Cut(l, ":")
		if !ok || !isToken(name) {
			// No colon, an empty name, or a space before the colon
			// (measured: "X : y" gets 400).
			return nil, badRequest("header line %q: want NAME: VALUE", l)
		}
		value = strings.Trim(value, " \t")
		if len(r.header) == maxWebHeaders {
			return nil, badRequest("more than %d header lines", maxWebHeaders)
		}
		r.header = append(r.header, field{Name: name, Value: value})
		size += len(name) + len(value) + 8
		switch {
		case strings.EqualFold(name, "host"):
			// The same Host twice is taken, also in another case, two
			// different ones refused (measured: "a" and "A" are taken).
			if hostSeen && !strings.EqualFold(value, host) {
				return nil, badRequest("two Host headers, %q and %q", host, value)
			}
			host, hostSeen = value, true
		case strings.EqualFold(name, "content-length"):
			// A list of equal values, or equal repeated headers, is
			// one length (measured: "5,5" and two "5" are taken; 5 and
			// 6, "abc" and a length past int64 get 400).
			for _, s := range strings.Split(value, ",") {
				s = strings.Trim(s, " \t")
				n, err := strconv.ParseInt(s, 10, 64)
				if err != nil || n < 0 || !allDigits(s) {
					return nil, badRequest("Content-Length %q: want a number", value)
				}
				if r.contentLength >= 0 && n != r.contentLength {
					return nil, badRequest("Content-Length %d and %d", r.contentLength, n)
				}
				r.contentLength = n
			}
		case strings.EqualFold(name, "transfer-encoding"):
			if teSeen {
				te += ","
			}
			te += value
			teSeen = true
		case strings.EqualFold(name, "connection"):
			for _, t := range strings.Split(value, ",") {
				switch strings.ToLower(strings.Trim(t, " \t")) {
				case "close":
					r.closeAsked = true
				case "keep-alive":
					r.keepAliveAsked = true
				}
			}
		}
	}
	if size > maxHTX {
		return nil, badRequest("request head of %d bytes as haproxy stores it, past its %d", size, maxHTX)
	}
	if teSeen {
		// measured: HTTP/1.0 with Transfer-Encoding gets 413; a last
		// coding other than chunked, or chunked twice, 400; another
		// coding before chunked, 422.
		if old {
			return nil, &requestError{answer: answer413, reason: "Transfer-Encoding in an HTTP/1.0 request"}
		}
		codings := strings.Split(te, ",")
		chunked := 0
		for i, c := range codings {
			c = strings.ToLower(strings.Trim(c, " \t"))
			codings[i] = c
			if c == "chunked" {
				chunked++
			}
		}
		if codings[len(codings)-1] != "chunked" || chunked > 1 {
			return nil, badRequest("Transfer-Encoding %q: want chunked last, once", te)
		}
		if chunked != len(codings) {
			return nil, &requestError{answer: answer422, reason: fmt.Sprintf("Transfer-Encoding %q: only chunked is supported", te)}
		}
		r.chunked = true
		r.framingConflict = r.contentLength >= 0
	}
	if old {
		r.keepAlive = r.keepAliveAsked && !r.closeAsked
	} else {
		r.keepAlive = !r.closeAsked
		r.keepAliveAsked = false // said only to HTTP/1.0 clients
	}
	return r, nil
}

// maxStackLines is how many lines of a head parseRequest splits without
// allocating; a longer head is split on the heap.
const maxStackLines = 32

// appendLines appends the lines of s, split at each "\n", to lines: as
// strings.Split(s, "\n") does, one more line than s has "\n".
func appendLines(lines []string, s string) []string {
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return append(lines, s)
		}
		lines = append(lines, s[:i])
		s = s[i+1:]
	}
}

// requestWords splits a request line at runs of spaces and tabs, as
// strings.FieldsFunc would, into its first three words; n counts the
// words, up to 4 (more than three).
func requestWords(l string) (w [3]string, n int) {
	for l != "" && n < 4 {
		l = strings.TrimLeft(l, " \t")
		if l == "" {
			break
		}
		end := strings.IndexAny(l, " \t")
		if end < 0 {
			end = len(l)
		}
		if n < 3 {
			w[n] = l[:end]
		}
		n++
		l = l[end:]
	}
	return w, n
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// isToken: RFC 9110's token, what a method or a header name may be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// skipBody discards a request's body if it is already read (haproxy
// answers the monitor and stats at once, with what its buffer holds):
// false if it is not all there, and the connection must then close
// after the answer (measured: a Content-Length of 3 with 2 bytes sent is
// answered with "connection: close"). A chunked body that is malformed
// as far as it was read is refused with haproxy's 400 (measured: a chunk
// size "zz", "+5", " 5" or past 52 bits, and a chunk longer than its
// size, get 400 and no other answer).
func skipBody(br *bufio.Reader, r *request) (bool, error) {
	if r.chunked {
		b, _ := br.Peek(br.Buffered())
		n := chunkedLen(b)
		switch {
		case n == chunkedMalformed:
			return false, badRequest("malformed chunked body")
		case n < 0:
			return false, nil
		}
		br.Discard(n)
		return true, nil
	}
	if r.contentLength <= 0 {
		return true, nil
	}
	if int64(br.Buffered()) < r.contentLength {
		return false, nil
	}
	br.Discard(int(r.contentLength))
	return true, nil
}

// chunkedMalformed is chunkedLen's answer for a body that cannot be
// chunked whatever follows.
const chunkedMalformed = -2

// maxChunkBits bounds a chunk's size as haproxy 2.6 does (measured: a
// size of 13 hex digits F is taken, of 14 refused; leading zeros do not
// count).
const maxChunkBits = 52

// chunkedLen is the length of a whole chunked body at the start of b
// (trailers included), -1 if b does not hold all of it, or
// chunkedMalformed. A chunk's size line is hex digits, then optional
// spaces or tabs and a ";" extension; each trailer is a header line.
func chunkedLen(b []byte) int {
	off := 0
	for {
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			if len(b)-off > 0 && !isHexDigit(b[off]) {
				return chunkedMalformed
			}
			return -1
		}
		line := strings.TrimSuffix(string(b[off:off+i]), "\r")
		line, _, _ = strings.Cut(line, ";")
		line = strings.TrimRight(line, " \t")
		if line == "" || !isHexDigit(line[0]) {
			return chunkedMalformed
		}
		n, err := strconv.ParseUint(line, 16, maxChunkBits)
		if err != nil {
			return chunkedMalformed
		}
		off += i + 1
		if n == 0 {
			// Trailers, up to an empty line.
			for {
				j := bytes.IndexByte(b[off:], '\n')
				if j < 0 {
					return -1
				}
				empty := j == 0 || (j == 1 && b[off] == '\r')
				if !empty {
					l := strings.TrimSuffix(string(b[off:off+j]), "\r")
					if name, _, ok := strings.Cut(l, ":"); !ok || !isToken(name) {
						return chunkedMalformed
					}
				}
				off += j + 1
				if empty {
					return off
				}
			}
		}
		if n > uint64(len(b)-off) {
			return -1
		}
		off += int(n)
		switch {
		case off+1 <= len(b) && b[off] == '\n':
			off++
		case off+2 <= len(b) && b[off] == '\r' && b[off+1] == '\n':
			off += 2
		case off < len(b) && b[off] != '\r', off+1 < len(b):
			// Not a line end after the chunk's data (measured:
			// "5\r\nhelloXX" and "5\r\nhello\r0" get 400).
			return chunkedMalformed
		default:
			return -1
		}
	}
}

func isHexDigit(c byte) bool {
	return isDigit(c) || 'a' <= c|0x20 && c|0x20 <= 'f'
}

// response is an answer to a request. The head's header lines are in
// haproxy's order; serveConn adds the framing and connection lines.
type response struct {
	// proto is the status line's protocol, "" for HTTP/1.1 (an
	// errorfile's own).
	proto  string
	code   int
	reason string
	header []field
	body   []byte
	// chunked: the body goes out as chunks, as haproxy sends its stats
	// (to HTTP/1.0 clients too, measured); otherwise with
	// content-length.
	chunked bool
	// noLength: no content-length line either (haproxy's 303 and HEAD
	// answers on the stats page).
	noLength bool
	// close ends the connection after the answer (haproxy's 401).
	close bool
	// backend: the answer of the section's backend (it has no server),
	// not one the section intercepted (Count).
	backend bool
}

// htxStartLine is the size haproxy 2.6 adds to a start line's three parts
// as it stores it (struct htx_sl), and htxEnd the end of headers block.
// Measured: "GET /haproxy_ready HTTP/1.0" without headers counts bin 46
// (3+14+8+20+1), with headers "A: b" and "Cc: dd" 52.
const (
	htxStartLine = 20
	htxEnd       = 1
)

// htxSize is the request's head as haproxy 2.6 stores it and counts it in
// bin: the start line, each header's name and value, but a Connection
// header that says only close or keep-alive, which haproxy's HTTP/1
// parser removes (measured: adding "Connection: close" leaves bin as it
// is).
func (r *request) htxSize() uint64 {
	n := len(r.method) + len(r.uri) + len("HTTP/1.1") + htxStartLine + htxEnd
	for _, f := range r.header {
		if strings.EqualFold(f.Name, "connection") && connectionOnly(f.Value) {
			continue
		}
		n += len(f.Name) + len(f.Value)
	}
	return uint64(n)
}

// connectionOnly: a Connection value of close and keep-alive tokens
// only.
func connectionOnly(v string) bool {
	for _, t := range strings.Split(v, ",") {
		switch strings.ToLower(strings.Trim(t, " \t")) {
		case "close", "keep-alive":
		default:
			return false
		}
	}
	return true
}

// htxSize is the answer as haproxy 2.6 stores it and counts it in bout:
// its status line, its header lines (the connection and framing lines
// the HTTP/1 layer adds are not stored), and its body unless head
// (measured: the monitor's 200 counts bout 150, 92 to a HEAD; the 303
// of the stats page to a POST 118).
func (resp *response) htxSize(head bool) uint64 {
	n := len("HTTP/1.1") + 3 + len(resp.reason) + htxStartLine + htxEnd
	if !resp.chunked && !resp.noLength {
		n += len("content-length") + len(strconv.Itoa(len(resp.body)))
	}
	for _, f := range resp.header {
		n += len(f.Name) + len(f.Value)
	}
	if !head {
		n += len(resp.body)
	}
	return uint64(n)
}

// chunkedData is the data of a whole chunked body (chunkedLen's) as
// haproxy stores it: the chunks' data, and the end of trailers block
// (measured: "5\r\nhello\r\n0\r\n\r\n" counts 6).
func chunkedData(b []byte) int64 {
	var n int64
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return n
		}
		line, _, _ := strings.Cut(strings.TrimSuffix(string(b[:i]), "\r"), ";")
		size, err := strconv.ParseUint(strings.TrimRight(line, " \t"), 16, maxChunkBits)
		if err != nil || size == 0 || int(size) > len(b)-i-1 {
			return n + htxEnd
		}
		n += int64(size)
		b = b[i+1+int(size):]
		if len(b) > 0 && b[0] == '\r' {
			b = b[1:]
		}
		if len(b) > 0 && b[0] == '\n' {
			b = b[1:]
		}
	}
}

// errRequestTooLarge is a head that does not fit haproxy's buffer.
var errRequestTooLarge = errors.New("request head larger than the buffer")

// readHead reads a request's head: leading empty lines (LF or CR LF) are
// skipped, as haproxy does (a lone CR is not an empty line: measured,
// "\rGET ..." gets 400, and stays for the parser to refuse); the head is
// returned through its empty line. It fails
// with errRequestTooLarge past the reader's size (Limits.Raw), or with the read's
// error (a timeout at the deadline).
func readHead(br *bufio.Reader) ([]byte, error) {
	for {
		b, err := br.Peek(1)
		if err != nil {
			return nil, err
		}
		if b[0] == '\r' {
			if b, err = br.Peek(2); err != nil {
				return nil, err
			}
			if b[1] != '\n' {
				break
			}
		} else if b[0] != '\n' {
			break
		}
		br.Discard(1)
	}
	n := 1
	for {
		_, err := br.Peek(n) // blocks until the n-th byte is in
		b, _ := br.Peek(br.Buffered())
		if i := headEnd(b); i >= 0 {
			head := bytes.Clone(b[:i])
			br.Discard(i)
			return head, nil
		}
		if len(b) >= br.Size() {
			return nil, errRequestTooLarge
		}
		if err != nil {
			return nil, err
		}
		n = br.Buffered() + 1
	}
}

// serveConn serves one client: requests one after another on the
// connection, until one asks to close, a timeout, or a refusal. The first
// request's head must come within `timeout http-request` of the accept;
// between requests the connection waits `timeout http-keep-alive` for a
// request's first byte (then closes without a word), and its head must
// then come within `timeout http-request` (measured: a partial request
// sent 0.5 s or 2 s after an answer gets 408 3 s later, with
// http-request 3s and http-keep-alive 5s; a connection that sends nothing
// gets 408 at 3 s). A client that opens with HTTP/2's preface is served
// in HTTP/2 (h2.go).
func (h *Listener) serveConn(c *webConn) {
	defer c.Close()
	lim := h.Limits()
	br := bufio.NewReaderSize(c, lim.Raw)
	c.SetReadDeadline(time.Now().Add(h.to.Load().ReadHeader))
	if startsH2(br) {
		h.serveH2(c, br)
		return
	}
	first := true
	start := time.Now() // the stream's start, for its log line (reqlog.go)
	for {
		if !first {
			c.SetReadDeadline(time.Now().Add(h.to.Load().Idle))
			if _, err := br.Peek(1); err != nil {
				return
			}
			start = time.Now()
		}
		c.SetReadDeadline(time.Now().Add(h.to.Load().ReadHeader))
		head, err := readHead(br)
		var ne net.Error
		switch {
		case errors.Is(err, errRequestTooLarge):
			h.site.Load().countRefused()
			h.writeRaw(c, answer400)
			h.logRefused(c, start, 400, "PR", false)
			return
		case errors.As(err, &ne) && ne.Timeout():
			h.site.Load().countRefused()
			null := br.Buffered() == 0
			h.writeRaw(c, answer408)
			h.logRefused(c, start, 408, "cR", null)
			return
		case err != nil:
			// The client went away with its head unsent: haproxy
			// counts the 400 it sends to the closed connection
			// (measured, also for a client that sends nothing).
			h.site.Load().countRefused()
			h.logRefused(c, start, 400, "CR", br.Buffered() == 0)
			return
		}
		headAt := time.Now()
		first = false
		if !c.answering() {
			return // evicted for a newer client
		}
		req, err := parseRequest(head, lim.HTX)
		var re *requestError
		if errors.As(err, &re) {
			h.site.Load().countRefused()
			h.writeRaw(c, re.answer)
			h.logRefused(c, start, 400, "PR", false)
			return
		}
		if st := h.site.Load(); st.Log != nil {
			// haproxy's line comes with the stream, which a
			// request that parsed starts (measured).
			st.Log(st.name(), c.Conn)
		}
		body := int64(0)
		if req.chunked {
			b, _ := br.Peek(br.Buffered())
			body = chunkedData(b)
		} else if int64(br.Buffered()) >= req.contentLength {
			body = req.contentLength
		}
		req.loopback = remoteAddr(c.Conn).IsLoopback()
		if !req.chunked && body > 0 && body <= maxForm {
			b, _ := br.Peek(int(body))
			req.form = append([]byte(nil), b...)
		}
		complete, err := skipBody(br, req)
		if errors.As(err, &re) {
			h.site.Load().countRefused()
			h.writeRaw(c, re.answer)
			return
		}
		if !complete {
			body = 0
		}
		resp := h.answer(req, body)
		closing := !req.keepAlive || !complete || req.framingConflict || resp.close
		c.SetWriteDeadline(time.Now().Add(h.to.Load().Write))
		if _, err := c.Write(resp.encode(req, closing)); err != nil {
			return
		}
		h.logAnswered(c, start, headAt, req, resp)
		c.waiting()
		if closing {
			lingerClose(c)
			return
		}
	}
}

func (h *Listener) writeRaw(c *webConn, answer string) {
	c.SetWriteDeadline(time.Now().Add(h.to.Load().Write))
	if _, err := io.WriteString(c, answer); err == nil {
		c.waiting()
		lingerClose(c)
	}
}

// lingerClose ends the connection after an answer as haproxy does, without
// a reset: it shuts its side, then reads and drops what the client still
// sends (the rest of a refused request, pipelined requests) until the
// client closes, for at most a second and 256 KiB. A close with unread
// data would reset the connection, and the client could lose the answer
// (haproxy's 400 to a 200 KB head arrives whole, measured).
func lingerClose(c net.Conn) {
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	c.SetReadDeadline(time.Now().Add(time.Second))
	io.CopyN(io.Discard, c, 256<<10)
}

// encode writes the answer to req as haproxy does: its status line, the
// length, the response's own lines, then "connection: close" when the
// connection ends because the client asked for it or sent an incomplete
// body, or "connection: keep-alive" to an HTTP/1.0 client that asked to
// keep it.
func (resp *response) encode(req *request, closing bool) []byte {
	var b bytes.Buffer
	proto := resp.proto
	if proto == "" {
		proto = "HTTP/1.1"
	}
	fmt.Fprintf(&b, "%s %d %s\r\n", proto, resp.code, resp.reason)
	head := req.method == "HEAD"
	if !resp.chunked && !resp.noLength {
		fmt.Fprintf(&b, "content-length: %d\r\n", len(resp.body))
	}
	for _, f := range resp.header {
		b.WriteString(f.Name + ": " + f.Value + "\r\n")
	}
	var conn, te string
	switch {
	case closing && !resp.close:
		conn = "connection: close\r\n"
	case req.keepAliveAsked && !closing:
		conn = "connection: keep-alive\r\n"
	}
	if resp.chunked && !head {
		te = "transfer-encoding: chunked\r\n"
	}
	if req.major == 1 && req.minor == 1 {
		// haproxy's order (measured): the framing line first to an
		// HTTP/1.1 client, the connection line first to others.
		conn, te = te, conn
	}
	b.WriteString(conn + te)
	b.WriteString("\r\n")
	if head {
		return b.Bytes()
	}
	if resp.chunked {
		if len(resp.body) > 0 {
			fmt.Fprintf(&b, "%X\r\n", len(resp.body))
			b.Write(resp.body)
			b.WriteString("\r\n")
		}
		b.WriteString("0\r\n\r\n")
		return b.Bytes()
	}
	b.Write(resp.body)
	return b.Bytes()
}

// serve accepts clients until the listener closes. It always accepts:
// when MaxConns clients are being served, the new one takes the place
// of a client that is waiting for a request (admit), so that clients
// which connect and say nothing, or send their head a byte at a time,
// cannot keep the check script's poll in the accept queue until `timeout
// http-request` ends one of them.
func (h *Listener) serve() {
	var delay time.Duration
	var seq uint64
	for {
		// Under a section's own maxconn, a place first: the client
		// waits in the socket's queue until there is one (maxconn.go).
		gated := maxConnOf(h.site.Load()) > 0
		if gated && !h.gate.acquire(func() int { return maxConnOf(h.site.Load()) }, h.done) {
			return
		}
		c, err := h.ln.Accept()
		if err != nil && gated {
			h.gate.release()
		}
		if err != nil {
			if h.stopped() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				// Out of file descriptors and the like: back off as
				// net/http does, up to a second.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return
		}
		delay = 0
		st := h.site.Load()
		st.countConn()
		seq++
		wc := newWebConn(c, seq)
		admitted := false
		if gated {
			admitted = h.admitGated(wc)
		} else {
			admitted = h.admit(wc)
		}
		if !admitted {
			st.countClose()
			c.Close()
			return
		}
		go func() {
			defer st.countClose()
			defer h.release(wc)
			h.serveConn(wc)
		}()
	}
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// track adds (add) or removes a client connection; false once the
// listener is closed.
func (h *Listener) track(c net.Conn, add bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !add {
		delete(h.conns, c)
		return true
	}
	if h.closed {
		return false
	}
	h.conns[c] = struct{}{}
	return true
}

func (h *Listener) stopped() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}
