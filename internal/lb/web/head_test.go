package web

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseHead: what the HTTP proxy's loop reads of a head.
func TestParseHead(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want Head
		// refused: the start of haproxy's answer ("" when taken).
		refused string
	}{
		{name: "HTTP/1.1 keeps", raw: "GET /a?b HTTP/1.1\r\nHost: x\r\n\r\n",
			want: Head{Method: "GET", URI: "/a?b", Major: 1, Minor: 1, Fields: []Field{{"Host", "x"}}, KeepAlive: true, ContentLength: -1}},
		{name: "Connection: close", raw: "GET / HTTP/1.1\r\nConnection: close\r\n\r\n",
			want: Head{Method: "GET", URI: "/", Major: 1, Minor: 1, Fields: []Field{{"Connection", "close"}}, ContentLength: -1}},
		{name: "HTTP/1.0 closes", raw: "GET / HTTP/1.0\r\n\r\n",
			want: Head{Method: "GET", URI: "/", Major: 1, Minor: 0, Fields: []Field{}, ContentLength: -1}},
		{name: "HTTP/1.0 keep-alive", raw: "GET / HTTP/1.0\nConnection: Keep-Alive\n\n",
			want: Head{Method: "GET", URI: "/", Major: 1, Minor: 0, Fields: []Field{{"Connection", "Keep-Alive"}}, KeepAlive: true, ContentLength: -1}},
		{name: "length", raw: "POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n",
			want: Head{Method: "POST", URI: "/", Major: 1, Minor: 1, Fields: []Field{{"Content-Length", "5, 5"}}, KeepAlive: true, ContentLength: 5}},
		{name: "chunked and a length: chunked, then close", raw: "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
			want: Head{Method: "POST", URI: "/", Major: 1, Minor: 1, Fields: []Field{{"Content-Length", "5"}, {"Transfer-Encoding", "chunked"}}, KeepAlive: true,
				ContentLength: 5, Chunked: true, FramingConflict: true}},
		{name: "two lengths", raw: "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", refused: "HTTP/1.1 400 "},
		{name: "HTTP/1.0 chunked", raw: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", refused: "HTTP/1.1 413 "},
		{name: "gzip, chunked", raw: "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", refused: "HTTP/1.1 422 "},
		{name: "space before the colon", raw: "GET / HTTP/1.1\r\nX : y\r\n\r\n", refused: "HTTP/1.1 400 "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseHead([]byte(tt.raw), 15291)
			if tt.refused != "" {
				if a := RefusalAnswer(err); !strings.HasPrefix(a, tt.refused) {
					t.Fatalf("answer %q, want %q...; err %v", a, tt.refused, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// FuzzHeadMatchesNetHTTP: on a head both ParseHead and net/http's
// ReadRequest take, both read the same method, target, version, body
// framing and keep-alive.
func FuzzHeadMatchesNetHTTP(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /a?b=c HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
		"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n",
		"POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
		"PUT /p HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
		"GET / HTTP/1.1\nHost: x\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		n := HeadEnd(raw)
		if n < 0 {
			return
		}
		head := raw[:n]
		h, err := ParseHead(head, 15291)
		if err != nil {
			return
		}
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			return
		}
		if h.Method != r.Method || h.URI != r.RequestURI || h.Major != r.ProtoMajor || h.Minor != r.ProtoMinor {
			t.Fatalf("%q: ours %s %s %d.%d, net/http %s %s %d.%d", head, h.Method, h.URI, h.Major, h.Minor, r.Method, r.RequestURI, r.ProtoMajor, r.ProtoMinor)
		}
		chunked := len(r.TransferEncoding) > 0 && r.TransferEncoding[len(r.TransferEncoding)-1] == "chunked"
		if h.Chunked != chunked {
			t.Fatalf("%q: chunked: ours %v, net/http %v", head, h.Chunked, chunked)
		}
		if !h.Chunked && max(h.ContentLength, 0) != max(r.ContentLength, 0) {
			t.Fatalf("%q: length: ours %d, net/http %d", head, h.ContentLength, r.ContentLength)
		}
		if !h.FramingConflict && h.KeepAlive == r.Close {
			t.Fatalf("%q: keep-alive: ours %v, net/http closes %v", head, h.KeepAlive, r.Close)
		}
	})
}
