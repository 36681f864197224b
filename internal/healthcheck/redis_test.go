package healthcheck

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// redisServer answers each connection's request with answer (in two
// segments when it is longer than one byte), then closes unless keep;
// it sends got each request it read.
func redisServer(t *testing.T, answer string, keep bool, got chan<- string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, len(RedisPing))
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				select {
				case got <- string(buf):
				default:
				}
				if len(answer) > 1 {
					c.Write([]byte(answer[:1]))
					time.Sleep(10 * time.Millisecond) // a second segment
					c.Write([]byte(answer[1:]))
				} else {
					c.Write([]byte(answer))
				}
				if keep {
					io.Copy(io.Discard, c) // until the probe closes
				}
			}()
		}
	}()
	return ln
}

// TestRedis checks option redis-check's outcomes, measured from haproxy
// 2.6.12 against the same answers (check_status and last_chk of its
// `show stat`).
func TestRedis(t *testing.T) {
	tests := []struct {
		name    string
		answer  string
		keep    bool
		timeout time.Duration
		want    Result
	}{
		{name: "pong", answer: "+PONG\r\n", want: Result{OK: true, Status: L7OK, Info: "Redis server is ok"}},
		{name: "pong after other bytes", answer: "junk\n+PONG\r\n", want: Result{OK: true, Status: L7OK, Info: "Redis server is ok"}},
		{name: "pong on an open connection", answer: "+PONG\r\n", keep: true, want: Result{OK: true, Status: L7OK, Info: "Redis server is ok"}},
		{name: "error, then closed", answer: "-NOAUTH Authentication required.\r\n", want: Result{Status: L7STS, Info: "-NOAUTH Authentication required."}},
		{name: "part of a pong, then closed", answer: "+PO", want: Result{Status: L7STS, Info: "+PO"}},
		{name: "nothing, then closed", answer: "", want: Result{Status: L7STS, Info: "TCPCHK got an empty response at step 2"}},
		{name: "error on an open connection", answer: "-ERR x\r\n", keep: true, timeout: 300 * time.Millisecond,
			want: Result{Status: L7TOUT, Info: "timeout at step 2 of the tcp-check"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan string, 1)
			ln := redisServer(t, tt.answer, tt.keep, got)
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			if diff := cmp.Diff(tt.want, Redis{Addr: addrOf(t, ln.Addr())}.Probe(ctx)); diff != "" {
				t.Errorf("Probe (-want +got):\n%s", diff)
			}
			select {
			case req := <-got:
				if req != RedisPing {
					t.Errorf("request %q, want %q", req, RedisPing)
				}
			default:
				t.Errorf("the server read no request")
			}
		})
	}
	closed := closedPort(t)
	if got := (Redis{Addr: closed}).Probe(context.Background()); got.Status != L4CON {
		t.Errorf("closed port: %+v, want L4CON", got)
	}
}
