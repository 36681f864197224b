package lb

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestBufferRequestMatchesHaproxy sends a request with Expect:
// 100-continue, and one whose body comes late, through a backend with
// option http-buffer-request and one without, in haproxy 2.6 and in
// vipstack: each answers the 100 itself or not alike, and the same
// request arrives (Expect kept or taken out, the whole body); a body that
// does not come within timeout http-request gets a 408 from both.
func TestBufferRequestMatchesHaproxy(t *testing.T) {
	ports := startHTTPPair(t, `defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
  timeout http-request 1s
frontend fe
  bind 127.0.0.1:{{P0}}
  use_backend web if { path_beg /plain }
  default_backend api
backend api
  server a1 {{A}}
backend web
  option http-buffer-request
  server w1 {{W}}
`)
	type seen struct {
		Interim string
		Server  string
		Expect  []string
		Body    string
	}
	exchange := func(port, path string) seen {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, bound)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(bound))
		io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: a.example\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n")
		br := bufio.NewReader(c)
		status, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		var s seen
		if strings.HasPrefix(status, "HTTP/1.1 100 ") {
			s.Interim = strings.TrimSpace(status)
			for l, _ := br.ReadString('\n'); l != "\r\n"; l, _ = br.ReadString('\n') {
				if l == "" {
					t.Fatal("interim answer not ended")
				}
			}
		}
		io.WriteString(c, "hello")
		time.Sleep(50 * time.Millisecond) // the rest of the body comes late
		io.WriteString(c, "world")
		var resp *http.Response
		if s.Interim == "" {
			resp, err = http.ReadResponse(bufio.NewReader(io.MultiReader(strings.NewReader(status), br)), nil)
		} else {
			resp, err = http.ReadResponse(br, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a arrived
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			t.Fatal(err)
		}
		s.Server, s.Expect, s.Body = a.Server, a.Header.Values("Expect"), a.Body
		return s
	}
	// A body that does not come within timeout http-request: 408.
	late := func(port string) int {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, bound)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(bound))
		io.WriteString(c, "POST /plain/late HTTP/1.1\r\nHost: a.example\r\nContent-Length: 10\r\n\r\nhello")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if h, v := late(ports[0]), late(ports[1]); h != v || h != http.StatusRequestTimeout {
		t.Errorf("body too late: haproxy %d, vipstack %d; want both 408", h, v)
	}
	for _, path := range []string{"/up", "/plain/up"} {
		want, got := exchange(ports[0], path), exchange(ports[1], path)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-haproxy +vipstack):\n%s", path, diff)
		}
		if want.Body != "helloworld" {
			t.Errorf("%s: haproxy delivered %+v", path, want)
		}
	}
}
