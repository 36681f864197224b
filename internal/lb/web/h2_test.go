package web

import (
	"bufio"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// bound is how long a test waits for something that should happen at
// once before failing: a guard against hangs, never a timing assertion.
const bound = 10 * time.Second

// TestStartsH2: only HTTP/2's whole preface switches a connection, and a
// request shorter than the preface is not held waiting for more bytes:
// the client's side stays open, as a client waiting for its answer does.
func TestStartsH2(t *testing.T) {
	for _, tt := range []struct {
		in     string
		closed bool // the client closes after in
		want   bool
	}{
		{h2Preface, false, true},
		{h2Preface + "\x00\x00\x00\x04", false, true},
		{"GET / HTTP/1.0\r\n\r\n", false, false}, // 18 bytes, shorter than the preface
		{"PRI * HTTP/1.1\r\n\r\n", false, false},
		{"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n", false, false},
		{"PRI * HTTP/2.0\r\n", true, false}, // a prefix of the preface, then the client's close
		{"", true, false},
	} {
		pr, pw := io.Pipe()
		go func() {
			io.WriteString(pw, tt.in)
			if tt.closed {
				pw.Close()
			}
		}()
		got := make(chan bool, 1)
		go func() { got <- startsH2(bufio.NewReader(pr)) }()
		select {
		case g := <-got:
			if g != tt.want {
				t.Errorf("startsH2(%q) = %v, want %v", tt.in, g, tt.want)
			}
		case <-time.After(bound):
			t.Errorf("startsH2(%q) still waits for bytes after %v", tt.in, bound)
		}
		pw.Close()
	}
}

// TestH2Keys: every field list the listeners answer with is written in
// its order, and a list that cannot be is reported so.
func TestH2Keys(t *testing.T) {
	for _, tt := range []struct {
		names []string
		want  []string // nil: not ordered
	}{
		{[]string{"content-length", "cache-control", "content-type"}, []string{"CONTENT-LENGTH", "CaCHE-CONTROL", "CoNTENT-TYPE"}},
		{[]string{"content-length", "cache-control", "content-type", "www-authenticate"}, []string{"CONTENT-LENGTH", "CaCHE-CONTROL", "CoNTENT-TYPE", "WWW-AUTHENTICATE"}},
		{[]string{"cache-control", "content-type", "content-length", "location"}, []string{"CACHE-CONTROL", "CONTENT-TYPE", "CONTENT-lENGTH", "LOCATION"}},
		{[]string{"cache-control", "content-type", "refresh"}, []string{"CACHE-CONTROL", "CONTENT-TYPE", "REFRESH"}},
		{[]string{"b", "a"}, []string{"B", "a"}}, // case sorts first
		{[]string{"ab", "a"}, []string{"AB", "a"}},
		{[]string{"a", "ab"}, []string{"A", "AB"}},
		{[]string{"a", "a"}, []string{"A", "a"}}, // a name twice
		{[]string{"a", "a", "a"}, nil},           // no spelling above "a"
		{[]string{"date", "x"}, []string{"DATE", "X"}},
		{[]string{"Date"}, []string{"DATE"}},
		{[]string{"content-type", "date"}, []string{"CONTENT-TYPE", "DATE"}},
	} {
		var fields []field
		for _, n := range tt.names {
			fields = append(fields, field{n, "v"})
		}
		got, ok := h2Keys(fields)
		if !ok {
			got = nil
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("h2Keys(%q) (-want +got):\n%s", tt.names, diff)
		}
		for i := 1; i < len(got); i++ {
			if got[i-1] >= got[i] {
				t.Errorf("h2Keys(%q) = %q: not ascending", tt.names, got)
			}
		}
	}
}
