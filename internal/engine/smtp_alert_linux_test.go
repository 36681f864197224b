package engine_test

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/smtpalert/smtpsink"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestSMTPAlertLikeKeepalived: with smtp_alert, keepalived 2.2.7 and
// vipstack, each alone in a namespace with an SMTP sink on its loopback,
// send the same mails for the same life: BACKUP at start, MASTER when no
// one else is heard, and none on SIGTERM (keepalived connects to send
// "Stopping" but exits before it says a word). Compared line by line,
// except the Date and X-Mailer headers.
func TestSMTPAlertLikeKeepalived(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vska"})
	const conf = `global_defs {
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
	run := func(h *testnet.Host, impl peers.Impl) [][]string {
		var sink *smtpsink.Sink
		if err := h.Do(func() error {
			if err := exec0(h, "ip", "link", "set", "lo", "up"); err != nil {
				return err
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
		n, err := peers.Start(h, impl, fmt.Sprintf(conf, sink.Addr().Port), filepath.Join(t.TempDir(), string(impl)), bin)
		if err != nil {
			t.Fatal(err)
		}
		logOnFailure(t, n)
		// Polls the sink; the bound only ends a test that would hang.
		for deadline := time.Now().Add(20 * time.Second); len(sink.Conversations()) < 2; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s sent %d mails in 20 s, want BACKUP and MASTER", impl, len(sink.Conversations()))
			}
		}
		if err := n.Term(); err != nil {
			t.Fatal(err)
		}
		sink.Close()
		var out [][]string
		for _, c := range sink.Conversations() {
			if len(c) == 0 {
				continue // keepalived's "Stopping" connection
			}
			out = append(out, slicesFilter(c, func(l string) bool {
				return !strings.HasPrefix(l, "Date: ") && !strings.HasPrefix(l, "X-Mailer: ")
			}))
		}
		return out
	}
	ka := run(topo.Hosts[0], peers.Keepalived)
	vs := run(topo.Hosts[1], peers.Vipstack)
	if len(ka) < 2 || !strings.Contains(strings.Join(ka[1], "\n"), "Entering MASTER state") {
		t.Fatalf("keepalived's mails: %q; want BACKUP then MASTER at least", ka)
	}
	if diff := cmp.Diff(ka, vs); diff != "" {
		t.Errorf("vipstack's mails differ from keepalived's (-keepalived +vipstack):\n%s", diff)
	}
}

func exec0(h *testnet.Host, name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %v: %w: %s", name, args, err, out)
	}
	return nil
}

func slicesFilter(in []string, keep func(string) bool) []string {
	var out []string
	for _, s := range in {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}
