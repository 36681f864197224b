package httploop

import "errors"

// errChunked is a chunked body whose framing is broken: haproxy answers
// 400 to such a request and drops such an answer (502).
var errChunked = errors.New("malformed chunked body")

// maxChunkBits bounds a chunk's size as haproxy 2.6 does (lb/web measured
// it: 13 significant hex digits are taken, 14 refused).
const maxChunkBits = 52

// chunkScan follows a chunked body's framing (RFC 9112 section 7.1) as
// its bytes pass through, unchanged, to find where it ends: the loop
// relays chunks as they come and never decodes them.
type chunkScan struct {
	state chunkState
	left  uint64 // data bytes left in the chunk, or the size read so far
	bits  int    // significant bits of the size read so far
	any   bool   // a size digit was read
}

type chunkState uint8

const (
	csSize      chunkState = iota // size digits
	csExt                         // after the size: spaces, ";" extensions, to LF
	csData                        // the chunk's data
	csDataCR                      // the CRLF after the data
	csDataLF                      //
	csTrailer                     // start of a trailer line, or of the final empty line
	csTrailerIn                   // inside a trailer line, to LF
	csLastLF                      // the LF of the final empty line
	csDone
)

// feed takes the next bytes of the body: n of them belong to it (all of
// b unless it ended inside b), done once the last byte of the body
// (the final CRLF) passed.
func (s *chunkScan) feed(b []byte) (n int, done bool, err error) {
	for n < len(b) {
		c := b[n]
		switch s.state {
		case csSize:
			switch d := hexValue(c); {
			case d >= 0:
				if s.left != 0 || d != 0 {
					if s.bits == 0 {
						s.bits = bitLen(d)
					} else {
						s.bits += 4
					}
				}
				if s.bits > maxChunkBits {
					return n, false, errChunked
				}
				s.left = s.left<<4 | uint64(d)
				s.any = true
			case !s.any:
				return n, false, errChunked
			case c == ';' || c == ' ' || c == '\t' || c == '\r':
				s.state = csExt
			case c == '\n':
				s.endSize()
			default:
				return n, false, errChunked
			}
		case csExt:
			if c == '\n' {
				s.endSize()
			}
		case csData:
			k := uint64(len(b) - n)
			if k > s.left {
				k = s.left
			}
			n += int(k)
			s.left -= k
			if s.left == 0 {
				s.state = csDataCR
			}
			continue
		case csDataCR:
			switch c {
			case '\r':
				s.state = csDataLF
			case '\n':
				s.state = csSize
			default:
				return n, false, errChunked
			}
		case csDataLF:
			if c != '\n' {
				return n, false, errChunked
			}
			s.state = csSize
		case csTrailer:
			switch c {
			case '\r':
				s.state = csLastLF
			case '\n':
				s.state = csDone
				return n + 1, true, nil
			default:
				s.state = csTrailerIn
			}
		case csTrailerIn:
			if c == '\n' {
				s.state = csTrailer
			}
		case csLastLF:
			if c != '\n' {
				return n, false, errChunked
			}
			s.state = csDone
			return n + 1, true, nil
		case csDone:
			return n, true, nil
		}
		n++
	}
	return n, s.state == csDone, nil
}

// endSize ends a size line: the chunk's data next, or the trailers after
// the last (empty) chunk.
func (s *chunkScan) endSize() {
	if s.left == 0 {
		s.state = csTrailer
	} else {
		s.state = csData
	}
	s.bits, s.any = 0, false
}

func hexValue(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func bitLen(d int) int {
	n := 0
	for ; d > 0; d >>= 1 {
		n++
	}
	return n
}
