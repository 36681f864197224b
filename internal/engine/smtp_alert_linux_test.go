package engine_test

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/smtpalert/smtpsink"
	"github.com/vipstack/vipstack/internal/testnet"
)

var updateSMTPGolden = flag.Bool("update-smtp-golden", false, "rewrite "+engine.SMTPAlertGolden+" from keepalived's mails")

// TestSMTPAlertKeepalived: with smtp_alert, keepalived 2.2.7 alone in a
// namespace with an SMTP sink on its loopback sends the mails recorded in
// engine.SMTPAlertGolden: BACKUP at start, MASTER when no one else is
// heard, and none on SIGTERM (it connects to send "Stopping" but exits
// before it says a word). TestSMTPAlert holds vipstack's mails to the same
// file, on the simulated segment.
func TestSMTPAlertKeepalived(t *testing.T) {
	testnet.RequireRoot(t)
	h := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vska"}).Hosts[0]
	var sink *smtpsink.Sink
	if err := h.Do(func() error {
		if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
			return fmt.Errorf("ip link set lo up: %w: %s", err, out)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		sink = smtpsink.Serve(ln)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	n, err := peers.Start(h, peers.Keepalived, fmt.Sprintf(engine.SMTPAlertConf, sink.Addr().Port), filepath.Join(t.TempDir(), "ka"), "")
	if err != nil {
		t.Fatal(err)
	}
	logOnFailure(t, n)
	// Polls the sink; the bound only ends a test that would hang.
	for deadline := time.Now().Add(20 * time.Second); len(sink.Conversations()) < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("keepalived sent %d mails in 20 s, want BACKUP and MASTER", len(sink.Conversations()))
		}
	}
	if err := n.Term(); err != nil {
		t.Fatal(err)
	}
	sink.Close()
	got, err := engine.SMTPAlertMails(sink.Conversations())
	if err != nil {
		t.Fatal(err)
	}
	if *updateSMTPGolden {
		if err := os.WriteFile(engine.SMTPAlertGolden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(engine.SMTPAlertGolden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("keepalived's mails differ from %s (-golden +keepalived):\n%s", engine.SMTPAlertGolden, diff)
	}
}
