package healthcheck

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// pgServer reads each startup message, sends it to got, answers with
// answer and closes (after keep, when set, holds the connection open).
func pgServer(t *testing.T, answer []byte, keep bool, got chan<- []byte) net.Listener {
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
				head := make([]byte, 4)
				if _, err := io.ReadFull(c, head); err != nil {
					return
				}
				rest := make([]byte, binary.BigEndian.Uint32(head)-4)
				if _, err := io.ReadFull(c, rest); err != nil {
					return
				}
				select {
				case got <- append(head, rest...):
				default:
				}
				c.Write(answer)
				if keep {
					io.Copy(io.Discard, c)
				}
			}()
		}
	}()
	return ln
}

// TestPgSQL checks option pgsql-check's outcomes, measured from haproxy
// 2.6.12 against the same answers (check_status and last_chk).
func TestPgSQL(t *testing.T) {
	auth := func(code byte) []byte { return []byte{'R', 0, 0, 0, 8, 0, 0, 0, code} }
	fatal := append([]byte{'E', 0, 0, 0, 40}, "SFATAL\x00VFATAL\x00C28000\x00Mno pg_hba.conf entry\x00\x00"...)
	ok := Result{OK: true, Status: L7OK, Info: "PostgreSQL server is ok"}
	unknown := Result{Status: L7STS, Info: "PostgreSQL unknown error"}
	tests := []struct {
		name    string
		answer  []byte
		keep    bool
		timeout time.Duration
		want    Result
	}{
		{name: "authentication ok", answer: auth(0), want: ok},
		{name: "md5 password asked", answer: append([]byte{'R', 0, 0, 0, 12, 0, 0, 0, 5}, "salt"...), want: ok},
		{name: "ok on an open connection", answer: auth(0), keep: true, want: ok},
		{name: "an authentication code haproxy does not take", answer: auth(1), want: unknown},
		{name: "an error", answer: fatal, want: Result{Status: L7RSP, Info: "FATAL"}},
		{name: "an error cut short", answer: []byte{'E', 0, 0}, want: Result{Status: L7RSP}},
		{name: "not PostgreSQL", answer: []byte("HTTP/1.0 400 Bad\r\n\r\n"), want: unknown},
		{name: "two bytes, then closed", answer: []byte{'R', 0}, want: unknown},
		{name: "nothing, then closed", answer: nil, want: Result{Status: L7RSP, Info: "TCPCHK got an empty response at step 3"}},
		{name: "two bytes on an open connection", answer: []byte{'R', 0}, keep: true, timeout: 300 * time.Millisecond,
			want: Result{Status: L7TOUT, Info: "timeout at step 3 of the tcp-check"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan []byte, 1)
			ln := pgServer(t, tt.answer, tt.keep, got)
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			if diff := cmp.Diff(tt.want, PgSQL{Addr: addrOf(t, ln.Addr()), User: "postgres"}.Probe(ctx)); diff != "" {
				t.Errorf("Probe (-want +got):\n%s", diff)
			}
			// haproxy 2.6.12's bytes for user postgres
			want := []byte("\x00\x00\x00\x17\x00\x03\x00\x00user\x00postgres\x00\x00")
			select {
			case req := <-got:
				if string(req) != string(want) {
					t.Errorf("startup message %q, want %q", req, want)
				}
			default:
				t.Errorf("the server read no startup message")
			}
		})
	}
}
