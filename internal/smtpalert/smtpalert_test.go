package smtpalert

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/smtpalert/smtpsink"
)

// TestSend: the conversation and message keepalived 2.2.7 sends (measured
// against a sink: HELO with the host name, MAIL FROM, one RCPT TO per
// address, the headers Date, From, Subject, X-Mailer, To, the body line and
// an empty line), with vipstack's X-Mailer; a body line starting with "."
// is dot-stuffed.
func TestSend(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sink := smtpsink.Serve(ln)
	m := Message{
		HeloName: "n1.example", From: "ka@example.org", To: []string{"ops@example.org", "two@example.org"},
		Subject: "[n1] VRRP Instance VI_1 - Entering MASTER state", Body: "=> VRRP Instance is now owning VRRP VIPs <=\n.dot",
		Date: time.Date(2026, 11, 28, 21, 51, 22, 0, time.UTC),
	}
	if err := Send(context.Background(), ln.Addr().String(), 5*time.Second, m); err != nil {
		t.Fatal(err)
	}
	sink.Close()
	want := [][]string{{
		"HELO n1.example",
		"MAIL FROM:<ka@example.org>",
		"RCPT TO:<ops@example.org>",
		"RCPT TO:<two@example.org>",
		"DATA",
		"Date: Sat, 28 Nov 2026 21:51:22 +0000",
		"From: ka@example.org",
		"Subject: [n1] VRRP Instance VI_1 - Entering MASTER state",
		"X-Mailer: vipstack",
		"To: ops@example.org, two@example.org",
		"",
		"=> VRRP Instance is now owning VRRP VIPs <=",
		"..dot",
		"",
		".",
		"QUIT",
	}}
	if diff := cmp.Diff(want, sink.Conversations()); diff != "" {
		t.Errorf("conversation (-want +got):\n%s", diff)
	}
}

// TestSendErrors: a refused connection, a server that refuses a recipient
// and one that never answers all end in an error naming the step.
func TestSendErrors(t *testing.T) {
	m := Message{HeloName: "h", From: "a@b", To: []string{"c@d"}, Subject: "s", Body: "b", Date: time.Unix(0, 0)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if err := Send(context.Background(), addr, time.Second, m); err == nil {
		t.Error("Send to a closed port succeeded")
	}

	for _, tc := range []struct {
		name, script, wantErr string
	}{
		{name: "recipient refused", script: "220 x\r\n250 ok\r\n250 ok\r\n550 no such user\r\n",
			wantErr: `RCPT TO c@d: server replied "550 no such user", want 250`},
		{name: "bad greeting", script: "554 go away\r\n", wantErr: `greeting: server replied "554 go away", want 220`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c1, c2 := net.Pipe()
			go func() {
				defer c2.Close()
				// The first reply is the greeting, then one reply per
				// command read.
				buf := make([]byte, 512)
				for i, l := range strings.SplitAfter(tc.script, "\r\n") {
					if l == "" {
						return
					}
					if i > 0 {
						if _, err := c2.Read(buf); err != nil {
							return
						}
					}
					if _, err := c2.Write([]byte(l)); err != nil {
						return
					}
				}
			}()
			err := Converse(c1, m)
			c1.Close()
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("Converse: %v, want %q", err, tc.wantErr)
			}
		})
	}
}
