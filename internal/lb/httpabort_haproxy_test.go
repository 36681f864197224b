package lb

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/syncbuf"
)

// TestHTTPAbortOnCloseMatchesHaproxy: an HTTP client that sends its
// request and closes its side (FIN) before the answer. Without `option
// abortonclose` haproxy 2.6.12 serves it the server's answer; with it,
// the request having reached the server, haproxy answers 400 and logs
// "CH". vipstack does the same (before, it ended the request whatever the
// option and its client got an empty 200).
func TestHTTPAbortOnCloseMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	// A server that answers after a while, so that the client's FIN
	// comes first.
	srvLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, "ok")
	})}
	go hs.Serve(srvLn)
	t.Cleanup(func() { hs.Close() })

	for _, tc := range []struct {
		name, option string
		wantStatus   string
		wantLine     string
	}{
		{name: "served", wantStatus: "HTTP/1.1 200 OK", wantLine: "be/s1 200 ----"},
		{name: "abortonclose", option: "  option abortonclose\n", wantStatus: "HTTP/1.1 400 Bad Request", wantLine: "be/s1 400 CH--"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := freePorts(t, 1)[0]
			conf := "defaults\n  mode http\n  log stdout format raw local0\n" + tc.option +
				"  timeout connect 2s\n  timeout client 5s\n  timeout server 5s\n" +
				"  log-format \"%b/%s %ST %tsc\"\n" +
				"frontend fe\n  bind 127.0.0.1:" + port + "\n  default_backend be\n" +
				"backend be\n  server s1 " + srvLn.Addr().String() + "\n"
			hout := peers.HAProxy(t, conf)
			var vout syncbuf.Buffer
			l := newLBOpts(t, Options{Stdout: &vout}, parseOnLoopback(t, conf))
			waitListening(t, "tcp", "127.0.0.1:"+port)
			got := map[string][]string{}
			for _, b := range []struct {
				who  string
				addr string
				out  *syncbuf.Buffer
			}{
				{"haproxy", "127.0.0.1:" + port, hout},
				{"vipstack", l.Addrs("fe")[0].String(), &vout},
			} {
				c, err := net.DialTimeout("tcp", b.addr, bound)
				if err != nil {
					t.Fatal(err)
				}
				c.SetDeadline(time.Now().Add(bound))
				io.WriteString(c, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
				c.(*net.TCPConn).CloseWrite()
				status, _ := bufio.NewReader(c).ReadString('\n')
				c.Close()
				eventually(t, b.who+"'s log line", func() bool { return strings.Contains(b.out.String(), "be/s1 ") })
				line := b.out.String()[strings.Index(b.out.String(), "be/s1 "):]
				line, _, _ = strings.Cut(line, "\n")
				// haproxy writes the reason "Bad request", Go "Bad Request".
				got[b.who] = []string{strings.ToLower(strings.TrimSpace(status)), line}
			}
			if diff := cmp.Diff(got["haproxy"], got["vipstack"]); diff != "" {
				t.Errorf("status line and log line (-haproxy +vipstack):\n%s", diff)
			}
			if diff := cmp.Diff([]string{strings.ToLower(tc.wantStatus), tc.wantLine}, got["vipstack"]); diff != "" {
				t.Errorf("vipstack (-want +got):\n%s", diff)
			}
		})
	}
}
