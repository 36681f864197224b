package httploop

import (
	"bytes"
	"errors"
	"net/netip"
	"strconv"
	"strings"

	"github.com/vipstack/vipstack/internal/lb/web"
)

// hopByHop are the headers that concern one connection only (RFC 9110
// section 7.6.1): the loop drops them on both ways and says itself
// whether a connection stays. Upgrade goes too: the loop does not tunnel
// (an upgrade asked of it is refused by the server's ordinary answer).
func hopByHop(name string) bool {
	switch len(name) {
	case 7:
		return strings.EqualFold(name, "upgrade")
	case 10:
		return strings.EqualFold(name, "connection") || strings.EqualFold(name, "keep-alive")
	case 16:
		return strings.EqualFold(name, "proxy-connection")
	}
	return false
}

// forwardFor is option forwardfor as the loop applies it.
type forwardFor struct {
	header string
	except netip.Prefix
	ifNone bool
}

// appendRequest writes the head h goes to the server with: its request
// line, its headers but the hop-by-hop ones (and Content-Length when
// Transfer-Encoding frames the body), then ff's header with the client's
// address.
func appendRequest(dst []byte, h *web.Head, ff *forwardFor, client netip.Addr) []byte {
	dst = append(dst, h.Method...)
	dst = append(dst, ' ')
	dst = append(dst, h.URI...)
	dst = append(dst, " HTTP/"...)
	dst = append(dst, byte('0'+h.Major), '.', byte('0'+h.Minor))
	dst = append(dst, "\r\n"...)
	seen := false
	for _, f := range h.Fields {
		if hopByHop(f.Name) || h.Chunked && strings.EqualFold(f.Name, "content-length") {
			continue
		}
		if ff != nil && strings.EqualFold(f.Name, ff.header) {
			seen = true
		}
		dst = append(dst, f.Name...)
		dst = append(dst, ": "...)
		dst = append(dst, f.Value...)
		dst = append(dst, "\r\n"...)
	}
	if ff != nil && client.IsValid() && !(ff.except.IsValid() && ff.except.Contains(client)) && !(ff.ifNone && seen) {
		dst = append(dst, ff.header...)
		dst = append(dst, ": "...)
		dst = client.AppendTo(dst)
		dst = append(dst, "\r\n"...)
	}
	return append(dst, "\r\n"...)
}

// respHead is what the loop needs of a server's answer head.
type respHead struct {
	status       int
	major, minor int
	// length is -1 without Content-Length; chunked with
	// Transfer-Encoding chunked (last).
	length  int64
	chunked bool
	// keepAlive: the server keeps the connection after this answer.
	keepAlive bool
}

var errAnswer = errors.New("malformed answer head")

// maxAnswerHeaders bounds an answer's header lines, as haproxy's
// (tune.http.maxhdr, 101 with the status line).
const maxAnswerHeaders = 100

// parseResponse reads an answer head (through its empty line).
func parseResponse(head []byte) (respHead, error) {
	r := respHead{length: -1}
	line, rest, ok := cutLine(head)
	if !ok || len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/")) || line[6] != '.' || line[8] != ' ' ||
		!isDigit(line[5]) || !isDigit(line[7]) || !isDigit(line[9]) || !isDigit(line[10]) || !isDigit(line[11]) ||
		len(line) > 12 && line[12] != ' ' {
		return r, errAnswer
	}
	r.major, r.minor = int(line[5]-'0'), int(line[7]-'0')
	r.status = int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	closeSaid, keepSaid := false, false
	for n := 0; ; n++ {
		if line, rest, ok = cutLine(rest); !ok {
			return r, errAnswer
		}
		if len(line) == 0 {
			break
		}
		if n == maxAnswerHeaders {
			return r, errAnswer
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || len(name) == 0 || name[0] == ' ' || name[0] == '\t' || bytes.ContainsAny(name, " \t") {
			return r, errAnswer
		}
		value = bytes.Trim(value, " \t")
		switch {
		case equalFold(name, "content-length"):
			v, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || v < 0 || r.length >= 0 && v != r.length {
				return r, errAnswer
			}
			r.length = v
		case equalFold(name, "transfer-encoding"):
			codings := strings.Split(string(value), ",")
			r.chunked = strings.EqualFold(strings.TrimSpace(codings[len(codings)-1]), "chunked")
		case equalFold(name, "connection"):
			for _, t := range strings.Split(string(value), ",") {
				switch strings.ToLower(strings.TrimSpace(t)) {
				case "close":
					closeSaid = true
				case "keep-alive":
					keepSaid = true
				}
			}
		}
	}
	if r.major == 1 && r.minor == 0 {
		r.keepAlive = keepSaid && !closeSaid
	} else {
		r.keepAlive = !closeSaid
	}
	return r, nil
}

// noBody reports whether an answer to method with status has no body
// whatever its head says (RFC 9112 section 6.3).
func noBody(method string, status int) bool {
	return method == "HEAD" || status/100 == 1 || status == 204 || status == 304
}

// appendResponse writes an answer head for the client: head's status
// line and headers but the hop-by-hop ones, then Connection: close when
// the loop closes after it, or keep-alive to an HTTP/1.0 client it keeps.
func appendResponse(dst, head []byte, closing, keep10 bool) []byte {
	line, rest, _ := cutLine(head)
	dst = append(dst, line...)
	dst = append(dst, "\r\n"...)
	for {
		line, rest, _ = cutLine(rest)
		if len(line) == 0 {
			break
		}
		name, _, _ := bytes.Cut(line, []byte(":"))
		if hopByHop(string(name)) {
			continue
		}
		dst = append(dst, line...)
		dst = append(dst, "\r\n"...)
	}
	switch {
	case closing:
		dst = append(dst, "connection: close\r\n"...)
	case keep10:
		dst = append(dst, "connection: keep-alive\r\n"...)
	}
	return append(dst, "\r\n"...)
}

// cutLine splits the first line (LF or CRLF) from b.
func cutLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return nil, nil, false
	}
	line, rest = b[:i], b[i+1:]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, rest, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func equalFold(b []byte, s string) bool {
	return len(b) == len(s) && strings.EqualFold(string(b), s)
}
