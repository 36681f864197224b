package lb

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// httpCompressionConf has compression in defaults (inherited), in the
// frontend and in a backend, where the backend's algorithms win.
const httpCompressionConf = `defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
  compression algo deflate
  compression type application/json text/plain
frontend fe
  bind 127.0.0.1:{{P0}}
  compression algo gzip
  use_backend api if { path_beg /api }
  default_backend web
backend web
  server w1 {{W}}
backend api
  compression algo gzip
  compression type text/html
  compression offload
  server a1 {{A}}
`

// TestCompressionMatchesHaproxy runs compression in haproxy 2.6 and in
// vipstack: for each request both compress or not alike, with the same
// Content-Encoding, Vary and ETag, the body decompresses to the same,
// and offload takes Accept-Encoding from the request the same way.
func TestCompressionMatchesHaproxy(t *testing.T) {
	ports := startHTTPPair(t, httpCompressionConf)
	get := func(path, hdrs string) string {
		return "GET " + path + " HTTP/1.1\r\nHost: a.example\r\n" + hdrs + "\r\n"
	}
	reqs := []rawRequest{
		{"backend's inherited algorithm", get("/", "Accept-Encoding: gzip, deflate\r\n")},
		{"frontend's algorithm not used", get("/", "Accept-Encoding: gzip\r\n")},
		{"best q", get("/api/q", "Accept-Encoding: gzip;q=0.8, deflate;q=0.5\r\n")},
		{"equal q, first listed", get("/api/q", "Accept-Encoding: deflate, gzip\r\n")},
		{"star", get("/api/q", "Accept-Encoding: *\r\n")},
		{"upper case", get("/api/q", "Accept-Encoding: GZIP\r\n")},
		{"q=0", get("/api/q", "Accept-Encoding: gzip;q=0\r\n")},
		{"q with other parameters", get("/api/q", "Accept-Encoding: deflate;x=1;q=0.3, gzip;q=0.2\r\n")},
		{"several lines", get("/api/q", "Accept-Encoding: br\r\nAccept-Encoding: gzip\r\n")},
		{"no algorithm: offload keeps the header", get("/api/q", "Accept-Encoding: br\r\n")},
		{"type of the backend", get("/api/t", "Accept-Encoding: gzip\r\nX-Send: Content-Type: text/html\r\n")},
		{"type not listed", get("/", "Accept-Encoding: deflate\r\nX-Send: Content-Type: text/html\r\n")},
		{"type prefix, any case", get("/", "Accept-Encoding: deflate\r\nX-Send: Content-Type: Text/Plain; charset=utf-8\r\n")},
		{"multipart", get("/api/m", "Accept-Encoding: gzip\r\nX-Send: Content-Type: multipart/mixed\r\n")},
		{"HEAD", "HEAD / HTTP/1.1\r\nHost: a.example\r\nAccept-Encoding: deflate\r\n\r\n"},
		{"HTTP/1.0", "GET / HTTP/1.0\r\nHost: a.example\r\nAccept-Encoding: deflate\r\n\r\n"},
		{"no-transform", get("/", "Accept-Encoding: deflate\r\nX-Send: Cache-Control: public, no-transform\r\n")},
		{"strong etag made weak", get("/", "Accept-Encoding: deflate\r\nX-Send: Etag: \"v1\"\r\n")},
		{"weak etag", get("/", "Accept-Encoding: deflate\r\nX-Send: Etag: W/\"v1\"\r\n")},
		{"invalid etag", get("/", "Accept-Encoding: deflate\r\nX-Send: Etag: v1\r\n")},
		{"already encoded", get("/", "Accept-Encoding: deflate\r\nX-Send: Content-Encoding: br\r\n")},
		{"vary kept", get("/", "Accept-Encoding: deflate\r\nX-Send: Vary: Origin\r\n")},
		{"old Mozilla", get("/", "Accept-Encoding: deflate\r\nUser-Agent: Mozilla/4.0 (compatible; MSIE 5.5; Windows 98)\r\n")},
		{"MSIE 7", get("/", "Accept-Encoding: deflate\r\nUser-Agent: Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 6.0)\r\n")},
		{"status 201", get("/", "Accept-Encoding: deflate\r\nX-Status: 201\r\n")},
		{"status 404", get("/", "Accept-Encoding: deflate\r\nX-Status: 404\r\n")},
	}
	want := askBoth(t, reqs, "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1])
	if want[0].Header.Get("Content-Encoding") != "deflate" || want[2].Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("haproxy did not compress as the test expects: %+v %+v", want[0], want[2])
	}
}

// TestCompressionFramingMatchesHaproxy: a compressed answer goes out
// chunked, without Content-Length, from both; an uncompressed one keeps
// its Content-Length.
func TestCompressionFramingMatchesHaproxy(t *testing.T) {
	ports := startHTTPPair(t, httpCompressionConf)
	type framing struct {
		TE     []string
		Length int64
	}
	head := func(port, ae string) framing {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, bound)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(bound))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: a.example\r\nAccept-Encoding: "+ae+"\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return framing{TE: resp.TransferEncoding, Length: resp.ContentLength}
	}
	for _, ae := range []string{"deflate", "br"} {
		want, got := head(ports[0], ae), head(ports[1], ae)
		if want.TE == nil && want.Length < 0 || strings.Join(want.TE, ",") != strings.Join(got.TE, ",") || (want.Length < 0) != (got.Length < 0) {
			t.Errorf("Accept-Encoding %s: haproxy %+v, vipstack %+v", ae, want, got)
		}
	}
}
