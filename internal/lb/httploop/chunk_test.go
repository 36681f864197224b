package httploop

import (
	"bytes"
	"net/http/httputil"
	"testing"
)

// TestChunkScan feeds chunked bodies whole and byte by byte: where the
// body ends (what follows is the next message), or that it is refused.
func TestChunkScan(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		n       int // bytes of the body; -1: not ended within in
		refused bool
	}{
		{name: "two chunks", in: "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\nNEXT", n: 26},
		{name: "LF only", in: "5\nhello\n0\n\nNEXT", n: 11},
		{name: "extension", in: "5;name=v\r\nhello\r\n0\r\n\r\n", n: 22},
		{name: "trailers", in: "1\r\na\r\n0\r\nX-T: 1\r\nX-U: 2\r\n\r\nNEXT", n: 27},
		{name: "uppercase hex", in: "A\r\n0123456789\r\n0\r\n\r\n", n: 20},
		{name: "not ended", in: "5\r\nhel", n: -1},
		{name: "no size", in: "\r\nhello", refused: true},
		{name: "bad size", in: "zz\r\n", refused: true},
		{name: "data longer than its size", in: "2\r\nabc\r\n", refused: true},
		{name: "13 significant digits", in: "FFFFFFFFFFFFF\r\n", n: -1},
		{name: "14 significant digits", in: "FFFFFFFFFFFFFF\r\n", refused: true},
		{name: "leading zeros do not count", in: "00000000000000001\r\na\r\n0\r\n\r\n", n: 27},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, bytewise := range []bool{false, true} {
				var s chunkScan
				n, done, err := 0, false, error(nil)
				if bytewise {
					for i := 0; i < len(tt.in) && !done && err == nil; i++ {
						var k int
						k, done, err = s.feed([]byte{tt.in[i]})
						n += k
					}
				} else {
					n, done, err = s.feed([]byte(tt.in))
				}
				switch {
				case tt.refused:
					if err == nil {
						t.Errorf("bytewise %v: taken (%d bytes, done %v), want refused", bytewise, n, done)
					}
				case err != nil:
					t.Errorf("bytewise %v: %v", bytewise, err)
				case tt.n < 0 && done:
					t.Errorf("bytewise %v: ended after %d bytes, want not ended", bytewise, n)
				case tt.n >= 0 && (!done || n != tt.n):
					t.Errorf("bytewise %v: %d bytes, done %v; want %d, done", bytewise, n, done, tt.n)
				}
			}
		})
	}
}

// FuzzChunkScan: a body Go's chunked writer made ends where it ends,
// whatever the split of the bytes; and the scan never takes more bytes
// than it is given, nor panics, on anything.
func FuzzChunkScan(f *testing.F) {
	f.Add([]byte("hello world"), []byte("5\r\nhello\r\n0\r\n\r\n"), uint8(3))
	f.Add([]byte{}, []byte("zz\r\n"), uint8(1))
	f.Fuzz(func(t *testing.T, data, raw []byte, split uint8) {
		var buf bytes.Buffer
		w := httputil.NewChunkedWriter(&buf)
		w.Write(data)
		w.Close()
		buf.WriteString("\r\n")
		body := buf.Bytes()
		var s chunkScan
		k := int(split)%len(body) + 1
		n1, done, err := s.feed(body[:k])
		if err != nil {
			t.Fatalf("Go's chunked body %q refused: %v", body, err)
		}
		n2 := 0
		if !done {
			n2, done, err = s.feed(append(body[k:], "NEXT"...))
		}
		if err != nil || !done || n1+n2 != len(body) {
			t.Fatalf("Go's chunked body %q: %d+%d bytes, done %v, err %v; want %d", body, n1, n2, done, err, len(body))
		}
		var r chunkScan
		n, _, _ := r.feed(raw)
		if n > len(raw) {
			t.Fatalf("took %d of %d bytes", n, len(raw))
		}
	})
}
