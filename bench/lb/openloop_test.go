package main

import (
	"bufio"
	"strings"
	"testing"
)

// TestReadAnswer: the open loop's reader takes a 200 with a
// Content-Length body, leaves the next answer in the buffer, and refuses
// what would end the keep-alive connection or leave its framing unknown.
func TestReadAnswer(t *testing.T) {
	const ok = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\ncontent-length: 3\r\nDate: x\r\n\r\nb1\n"
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{name: "ok, twice", in: ok + ok},
		{name: "not 200", in: "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n", wantErr: `status line "HTTP/1.1 503 Service Unavailable"`},
		{name: "closes", in: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\nb1\n", wantErr: "closes the connection"},
		{name: "no length", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nb1\n\r\n0\r\n\r\n", wantErr: "without Content-Length"},
		{name: "bad length", in: "HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", wantErr: `Content-Length "-3"`},
		{name: "bad header", in: "HTTP/1.1 200 OK\r\nnocolon\r\n\r\n", wantErr: `header line "nocolon"`},
		{name: "cut short", in: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nb", wantErr: "EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bufio.NewReader(strings.NewReader(tt.in))
			err := readAnswer(r)
			if tt.wantErr == "" && err == nil {
				err = readAnswer(r) // the second answer
				if err == nil && r.Buffered() != 0 {
					t.Errorf("%d bytes left after two answers", r.Buffered())
				}
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("readAnswer() = %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("readAnswer() = %v, want an error with %q", err, tt.wantErr)
			}
		})
	}
}
