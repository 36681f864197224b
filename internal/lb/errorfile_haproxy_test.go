package lb

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestListenErrorfileMatchesHaproxy: defaults' errorfiles over a stats
// and a monitor listen (the Patroni and kubeadm files' layout). The 503
// of another URI comes from the errorfile, as haproxy sends it (its
// status line, lower-case header names, no connection header; with a
// content-length the connection serves a second request), while
// the 400 to garbage stays haproxy's own: the bytes on the wire are
// haproxy's.
func TestListenErrorfileMatchesHaproxy(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f400 := write("400.http", "HTTP/1.0 400 Mine\r\nContent-Type: text/html\r\n\r\n<h1>my 400</h1>\n")
	f503 := write("503.http", "HTTP/1.0 503 Custom\r\nCache-Control: no-cache\r\nConnection: close\r\nContent-Type: text/html\r\nX-Mine: yes\r\n\r\n<html><body><h1>custom 503</h1></body></html>\n")
	f503len := write("503len.http", "HTTP/1.1 503 Busy\r\nContent-Length: 5\r\nX-Len: 1\r\n\r\nbusy\n")
	conf := func(f503 string) func(sock string, ports []string) string {
		return func(sock string, ports []string) string {
			return strings.NewReplacer("{{P0}}", ports[0], "{{P1}}", ports[1], "{{SOCK}}", sock, "{{F400}}", f400, "{{F503}}", f503).Replace(`defaults
  mode http
  log {{SOCK}} local0
  timeout connect 1s
  timeout client 1s
  timeout server 5s
  errorfile 400 {{F400}}
  errorfile 503 {{F503}}
listen stats
  bind 127.0.0.1:{{P0}}
  stats enable
  stats uri /st
listen mon
  bind 127.0.0.1:{{P1}}
  monitor-uri /ready
`)
		}
	}
	exchange := func(t *testing.T, port, raw string) string {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, bound)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(bound))
		// Requests one after the other, each after the answer to
		// the one before (read by its framing), on one connection.
		var got strings.Builder
		br := bufio.NewReader(io.TeeReader(c, &got))
		reqs := strings.SplitAfter(raw, "\r\n\r\n")
		for _, r := range reqs[:len(reqs)-1] {
			c.Write([]byte(r))
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				break
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		io.Copy(io.Discard, br) // to the close, if the server closes
		return got.String()
	}
	for _, file := range []string{f503, f503len} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			_, _, hports, vports := startHaproxyAndLB(t, 2, conf(file))
			for _, tc := range []struct {
				port int
				raw  string
			}{
				{0, "GET /other HTTP/1.1\r\nHost: x\r\n\r\n"},
				{0, "GET /other HTTP/1.1\r\nHost: x\r\n\r\nGET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"},
				{0, "GARBAGE\r\n\r\n"},
				{1, "GET /other HTTP/1.1\r\nHost: x\r\n\r\n"},
			} {
				waitListening(t, "tcp", "127.0.0.1:"+hports[tc.port])
				waitListening(t, "tcp", "127.0.0.1:"+vports[tc.port])
				want := exchange(t, hports[tc.port], tc.raw)
				got := exchange(t, vports[tc.port], tc.raw)
				if got != want {
					t.Errorf("%q:\nhaproxy  %q\nvipstack %q", tc.raw, want, got)
				}
			}
		})
	}
}
