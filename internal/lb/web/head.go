package web

import "errors"

// Head is a request head as haproxy 2.6 parses it, for the HTTP proxy's
// own HTTP/1 loop (lb/httploop): the same parser, limits and refusals
// as the monitor and stats listeners.
type Head struct {
	Method, URI  string
	Major, Minor int
	Fields       []Field
	// KeepAlive: the client wants the connection kept (HTTP/1.1 without
	// `Connection: close`, HTTP/1.0 with `Connection: keep-alive`).
	KeepAlive bool
	// ContentLength is -1 without Content-Length; Chunked with
	// Transfer-Encoding: chunked (the length then does not count).
	ContentLength int64
	Chunked       bool
	// FramingConflict: both Content-Length and Transfer-Encoding. haproxy
	// 2.6 takes the request as chunked, drops the length and closes the
	// connection after the answer (measured).
	FramingConflict bool
}

// Field is one header line, its name as sent.
type Field struct{ Name, Value string }

// HeadEnd is the length of the head at the start of b, through its
// empty line, or -1 when b does not hold all of it.
func HeadEnd(b []byte) int { return headEnd(b) }

// SkipEmptyLines is how many bytes of empty lines (CRLF or LF) start b:
// haproxy skips them before a request line.
func SkipEmptyLines(b []byte) int {
	n := 0
	for n < len(b) {
		switch {
		case b[n] == '\n':
			n++
		case b[n] == '\r' && n+1 < len(b) && b[n+1] == '\n':
			n += 2
		default:
			return n
		}
	}
	return n
}

// ParseHead parses a request head (HeadEnd bytes) as haproxy 2.6 does,
// with maxHTX its HTX limit (Limits.HTX). A refused head's error gives
// haproxy's answer through RefusalAnswer.
func ParseHead(head []byte, maxHTX int) (Head, error) {
	r, err := parseRequest(head, maxHTX)
	if err != nil {
		return Head{}, err
	}
	h := Head{Method: r.method, URI: r.uri, Major: r.major, Minor: r.minor, KeepAlive: r.keepAlive,
		ContentLength: r.contentLength, Chunked: r.chunked, FramingConflict: r.framingConflict}
	h.Fields = r.header
	if h.Fields == nil {
		h.Fields = []Field{}
	}
	return h, nil
}

// RefusalAnswer is the whole answer haproxy sends for a head ParseHead
// refused (400, 413 or 422, each closing the connection), or "" when
// err is not such a refusal.
func RefusalAnswer(err error) string {
	var re *requestError
	if errors.As(err, &re) {
		return re.answer
	}
	return ""
}

// Answer400 and Answer408 are haproxy's 400 (a head it cannot read, or
// one too large for its buffer) and 408 (`timeout http-request`).
const (
	Answer400 = answer400
	Answer408 = answer408
)
