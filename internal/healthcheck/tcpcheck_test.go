package healthcheck

import (
	"bufio"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// redisLike answers "PING\r\n" with "+PONG\r\n" (split in two writes),
// anything else with "-ERR\r\n", and closes after one line.
func redisLike(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				if line == "PING\r\n" {
					c.Write([]byte("+PO"))
					time.Sleep(10 * time.Millisecond) // a second segment
					c.Write([]byte("NG\r\n"))
					return
				}
				if line != "" {
					c.Write([]byte("-ERR\r\n"))
				}
			}()
		}
	}()
	return ln
}

func TestTCPScript(t *testing.T) {
	ln := redisLike(t)
	defer ln.Close()
	addr := addrOf(t, ln.Addr())
	closed := closedPort(t)
	send := func(s string) Step { return Step{Send: []byte(s)} }
	expect := func(s string) Step { return Step{Expect: []byte(s)} }
	tests := []struct {
		name  string
		probe TCPScript
		want  Result
	}{
		{"connect only", TCPScript{Addr: addr}, Result{OK: true, Status: L4OK}},
		{"ping pong across segments", TCPScript{Addr: addr, Steps: []Step{send("PING\r\n"), expect("+PONG")}},
			Result{OK: true, Status: L7OK, Info: "(tcp-check)"}},
		{"wrong answer", TCPScript{Addr: addr, Steps: []Step{send("INFO\r\n"), expect("+PONG")}},
			Result{Status: L7RSP, Info: "TCPCHK did not match content '+PONG' at step 2"}},
		{"two expects in order", TCPScript{Addr: addr, Steps: []Step{send("PING\r\n"), expect("+PO"), expect("NG")}},
			Result{OK: true, Status: L7OK, Info: "(tcp-check)"}},
		{"an expect does not match what an earlier one consumed", TCPScript{Addr: addr, Steps: []Step{send("PING\r\n"), expect("PONG"), expect("PO")}},
			Result{Status: L7RSP, Info: "TCPCHK did not match content 'PO' at step 3"}},
		{"refused", TCPScript{Addr: closed, Steps: []Step{send("PING\r\n")}}, Result{Status: L4CON, Info: "Connection refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if diff := cmp.Diff(tt.want, tt.probe.Probe(ctx)); diff != "" {
				t.Errorf("Probe (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHTTPExpectStatus: http-check expect status replaces the 2xx/3xx
// rule.
func TestHTTPExpectStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/moved"):
			http.Redirect(w, r, "/", http.StatusFound)
		case r.URL.Path == "/missing":
			http.NotFound(w, r)
		default:
			w.Write([]byte("ok"))
		}
	}))
	defer srv.Close()
	addr := addrOf(t, srv.Listener.Addr())
	for _, tt := range []struct {
		uri    string
		expect [][2]int
		ok     bool
	}{
		{"/", [][2]int{{200, 200}}, true},
		{"/moved", nil, true},
		{"/moved", [][2]int{{200, 200}}, false},
		{"/missing", [][2]int{{200, 200}, {400, 404}}, true},
		{"/missing", nil, false},
	} {
		got := HTTP{Addr: addr, Method: "GET", URI: tt.uri, ExpectStatus: tt.expect}.Probe(context.Background())
		if got.OK != tt.ok {
			t.Errorf("GET %s expecting %v: %+v, want OK %v", tt.uri, tt.expect, got, tt.ok)
		}
	}
}

// TestSSLHello: a TLS server passes, a plain one that answers in clear
// or closes fails.
func TestSSLHello(t *testing.T) {
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the probe leaves mid-handshake
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	// A plain server that greets in clear text, as SSH does.
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	go func() {
		for {
			c, err := plain.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("SSH-2.0-test\r\n"))
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if got := (SSLHello{Addr: addrOf(t, tlsSrv.Listener.Addr())}).Probe(ctx); !got.OK || got.Status != L6OK {
		t.Errorf("TLS server: %+v, want L6OK", got)
	}
	if got := (SSLHello{Addr: addrOf(t, plain.Addr())}).Probe(ctx); got.OK || got.Status != L6RSP {
		t.Errorf("plain server: %+v, want L6RSP", got)
	}
}
