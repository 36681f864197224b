package web

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// marshalHead writes a parsed request's head back in canonical form.
func marshalHead(r *request) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/%d.%d\r\n", r.method, r.uri, r.major, r.minor)
	for _, f := range r.header {
		b.WriteString(f.Name + ": " + f.Value + "\r\n")
	}
	b.WriteString("\r\n")
	return []byte(b.String())
}

// FuzzParseRequest: the request parser never panics; a head it takes,
// written back in canonical form, parses to the same request; a head it
// refuses gets one of haproxy's answers. The chunked-body scanner never
// reports more than it was given. Its seeds, besides the one below, are
// in testdata/fuzz/FuzzParseRequest: the requests of lb's rawCases, whose
// answers were measured against haproxy 2.6.12.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nTrailer: t\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if n := chunkedLen(b); n > len(b) || n < chunkedMalformed {
			t.Fatalf("chunkedLen = %d past the %d bytes given", n, len(b))
		}
		end := headEnd(b)
		if end < 0 {
			return
		}
		r, err := parseRequest(b[:end], LimitsOf(&lbconfig.Config{}).HTX)
		if err != nil {
			re, ok := err.(*requestError)
			if !ok || (re.answer != answer400 && re.answer != answer413 && re.answer != answer422) {
				t.Fatalf("refusal %v is not one of haproxy's answers", err)
			}
			return
		}
		again, err := parseRequest(marshalHead(r), LimitsOf(&lbconfig.Config{}).HTX)
		if err != nil {
			t.Fatalf("%q parsed, its canonical form %q does not: %v", b[:end], marshalHead(r), err)
		}
		if diff := cmp.Diff(r, again, cmp.AllowUnexported(request{}, field{})); diff != "" {
			t.Fatalf("%q: round trip (-first +again):\n%s", b[:end], diff)
		}
	})
}
