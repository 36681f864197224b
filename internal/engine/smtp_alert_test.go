package engine

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/smtpalert/smtpsink"
)

// SMTPAlertConf is the keepalived.conf of the smtp_alert tests, for an SMTP
// sink on 127.0.0.1 at the port to fill in: one instance that starts as
// BACKUP and, alone, becomes MASTER.
const SMTPAlertConf = `global_defs {
    router_id n1
    notification_email {
        ops@example.org
        two@example.org
    }
    notification_email_from ka@example.org
    smtp_server 127.0.0.1 %d
    smtp_connect_timeout 5
}
vrrp_instance VI_1 {
    state BACKUP
    interface eth0
    virtual_router_id 81
    priority 100
    advert_int 1
    smtp_alert
    virtual_ipaddress {
        198.18.0.100/32
    }
}
`

// SMTPAlertGolden holds the mails keepalived 2.2.7 sends for
// SMTPAlertConf's life (BACKUP at start, MASTER when no one else is heard,
// none on SIGTERM), as SMTPAlertMails writes them; TestSMTPAlertKeepalived
// checks it against keepalived, and rewrites it with -update-smtp-golden.
const SMTPAlertGolden = "testdata/smtp_alert.golden"

// SMTPAlertMails renders what an SMTP sink heard for comparison: each
// conversation (the empty ones, keepalived's "Stopping" connection that
// says nothing, left out) after a "--- conversation" line, without the
// Date and X-Mailer headers, the host name (the HELO name) as HOST.
func SMTPAlertMails(convs [][]string) (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range convs {
		if len(c) == 0 {
			continue
		}
		b.WriteString("--- conversation\n")
		for _, l := range c {
			if strings.HasPrefix(l, "Date: ") || strings.HasPrefix(l, "X-Mailer: ") {
				continue
			}
			b.WriteString(strings.ReplaceAll(l, host, "HOST") + "\n")
		}
	}
	return b.String(), nil
}

// TestSMTPAlert: with smtp_alert, an engine alone on the segment, with an
// SMTP sink on the real loopback (a TCP socket needs no root), sends the
// mails keepalived 2.2.7 sends for the same life, as recorded in
// SMTPAlertGolden: BACKUP at start, MASTER when no one else is heard, and
// none when it stops. Compared line by line, except the Date and X-Mailer
// headers.
func TestSMTPAlert(t *testing.T) {
	golden, err := os.ReadFile(SMTPAlertGolden)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sink := smtpsink.Serve(ln) // outside the bubble: its goroutines are real I/O
	defer sink.Close()
	synctest.Test(t, func(t *testing.T) {
		n := (&simSegment{}).node("n1", "198.18.0.1/24")
		e, _ := simEngine(t, n, fmt.Sprintf(SMTPAlertConf, sink.Addr().Port), nil)
		stop := simRun(t, e)
		// A goroutine in the middle of an SMTP conversation is not durably
		// blocked, so virtual time waits for it: the bound counts only the
		// engine's own timers (a master-down interval of about 3.6 s).
		for deadline := time.Now().Add(20 * time.Second); len(sink.Conversations()) < 2; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d mails in 20 s, want BACKUP and MASTER", len(sink.Conversations()))
			}
		}
		stop()
	})
	sink.Close()
	got, err := SMTPAlertMails(sink.Conversations())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(golden), got); diff != "" {
		t.Errorf("vipstack's mails differ from keepalived's in %s (-keepalived +vipstack):\n%s", SMTPAlertGolden, diff)
	}
}
