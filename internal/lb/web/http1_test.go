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

// TestRequestWords: the request line's words as strings.FieldsFunc at
// spaces and tabs gives them, and how many there are, up to 4.
func TestRequestWords(t *testing.T) {
	for _, l := range []string{"", "GET", "GET /", "GET / HTTP/1.1", "GET  /\tHTTP/1.1", "GET / HTTP/1.1 x", "a b c d e", " \t ", "GET\t\t/x  HTTP/1.0"} {
		want := strings.FieldsFunc(l, func(r rune) bool { return r == ' ' || r == '\t' })
		w, n := requestWords(l)
		if wantN := min(len(want), 4); n != wantN {
			t.Errorf("requestWords(%q): %d words, want %d", l, n, wantN)
		}
		for i := range min(len(want), 3) {
			if w[i] != want[i] {
				t.Errorf("requestWords(%q): word %d = %q, want %q", l, i, w[i], want[i])
			}
		}
	}
}

// TestAppendLines: the lines strings.Split(s, "\n") gives.
func TestAppendLines(t *testing.T) {
	for _, s := range []string{"", "\n", "a", "a\nb", "a\r\nb\r\n", "\n\nx\n"} {
		if diff := cmp.Diff(strings.Split(s, "\n"), appendLines(nil, s)); diff != "" {
			t.Errorf("appendLines(%q) (-want +got):\n%s", s, diff)
		}
	}
}

// TestParseRequestAllocs: a usual request head costs the copy of the
// head, the request and its header list: the loop engine parses every
// request here, and what it allocates sets how often it collects.
func TestParseRequestAllocs(t *testing.T) {
	head := []byte("GET /index.html HTTP/1.1\r\nHost: example.com\r\nUser-Agent: wrk\r\nAccept: */*\r\n\r\n")
	htx := LimitsOf(&lbconfig.Config{}).HTX
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := parseRequest(head, htx); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 3 {
		t.Errorf("parseRequest allocated %v times per head, want at most 3 (the head's copy, the request, its headers)", allocs)
	}
}
