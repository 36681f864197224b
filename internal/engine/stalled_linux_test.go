package engine_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/serve"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestStalledInKernel holds a real engine's loop in a system call and
// watches its status endpoint, the liveness probe of `vipstack vrrp`.
// The engine records a VIP in its ledger before it adds the address; with
// the ledger replaced by a FIFO that nothing reads, that open blocks in
// the kernel as a write to a hung disk would. Once the backup of a second
// instance takes over (its peer stopped), the loop is held: the VIP is
// not added, and past the stall limit (10 s) the endpoint answers 503
// with vrrp_stalled and the Vipstack-Not-Live header. A reader of the
// FIFO lets the loop go on: the VIP goes on, and the endpoint answers
// 200 again.
func TestStalledInKernel(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsK"})
	node, other := topo.Hosts[0], topo.Hosts[1]
	vip1, vip2 := netip.MustParseAddr("198.18.0.101"), netip.MustParseAddr("198.18.0.102")
	const statusAddr = "127.0.0.1:9651"

	second := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 62, Priority: 200, VIP: netip.PrefixFrom(vip2, 32), Instance: "VI_2"}
	peer := startVipstack(t, bin, other, second)
	if _, err := peers.WaitSoleHolder(topo.Hosts, vip2, other, 500*time.Millisecond, 20*time.Second); err != nil {
		t.Fatalf("the peer did not take %v: %v", vip2, err)
	}
	// The node: VI_1 alone, and VI_2's backup below the peer.
	first := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 61, Priority: 100, VIP: netip.PrefixFrom(vip1, 32)}
	cfg := first.Config(node.Name)
	backup := second
	backup.Priority = 100
	cfg.Instances = append(cfg.Instances, backup.Config(node.Name).Instances...)
	text := string(keepalived.Format(cfg))
	n, err := peers.Start(node, peers.Vipstack, text, t.TempDir(), bin, "--status-addr", statusAddr)
	if err != nil {
		t.Fatal(err)
	}
	logOnFailure(t, n)
	if _, err := peers.WaitSoleHolder(topo.Hosts, vip1, node, 500*time.Millisecond, 20*time.Second); err != nil {
		t.Fatalf("the node did not take %v: %v", vip1, err)
	}
	code, body := statusOf(t, node, statusAddr)
	if code != 200 {
		t.Fatalf("status before the hold: %d\n%s", code, body)
	}

	ledgers, _ := filepath.Glob(filepath.Join(n.Dir, "*.vips"))
	if len(ledgers) != 1 {
		t.Fatalf("ledgers in %s: %v, want one", n.Dir, ledgers)
	}
	if b, err := os.ReadFile(ledgers[0]); err != nil || !strings.Contains(string(b), vip1.String()) {
		t.Fatalf("the ledger %s (%v) does not list %v:\n%s", ledgers[0], err, vip1, b)
	}
	if err := os.Remove(ledgers[0]); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(ledgers[0], 0o644); err != nil {
		t.Fatal(err)
	}
	drained := make(chan string, 1)
	t.Cleanup(func() {
		// Before the node stops: whatever happened, no open stays held
		// (a reader's open wakes a writer's, closed or not), and none
		// comes to the FIFO again (an open for writing that finds no
		// file creates one).
		select {
		case <-drained:
		default:
			if f, err := os.OpenFile(ledgers[0], os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
		if fi, err := os.Lstat(ledgers[0]); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
			os.Remove(ledgers[0])
		}
	})

	if err := peer.Term(); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "the status answers 503 with the loop stalled", func() (bool, error) {
		code, body = statusOf(t, node, statusAddr)
		var st struct {
			Stalled string `json:"vrrp_stalled"`
		}
		_ = json.Unmarshal([]byte(body), &st)
		return code == 503 && strings.Contains(st.Stalled, "has answered no status request"), fmt.Errorf("status %d, vrrp_stalled %q", code, st.Stalled)
	})
	if has, err := node.HasAddr(vip2); err != nil || has {
		t.Errorf("%v on the node while its record is held (%v), want it added only once recorded", vip2, err)
	}

	go func() {
		f, err := os.Open(ledgers[0]) // meets the engine's open
		if err != nil {
			drained <- err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		drained <- string(b)
	}()
	select {
	case got := <-drained:
		if !strings.Contains(got, vip2.String()) {
			t.Errorf("the engine wrote %q to the ledger, want %v", got, vip2)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("nothing was written to the ledger within 30 s of a reader")
	}
	poll(t, 30*time.Second, "the VIP is added and the status answers 200", func() (bool, error) {
		has, _ := node.HasAddr(vip2)
		code, body = statusOf(t, node, statusAddr)
		return has && code == 200, fmt.Errorf("%v on the node: %v; status %d: %.300s", vip2, has, code, body)
	})
}

// statusOf GETs /status from addr in h's network namespace and returns
// the status code and body; a code of 503 must carry the not-live
// header.
func statusOf(t *testing.T, h *testnet.Host, addr string) (int, string) {
	t.Helper()
	head, body, err := httpDo(h, addr, "/status")
	if err != nil {
		return 0, err.Error()
	}
	var code int
	if _, err := fmt.Sscanf(head, "HTTP/1.%d %d", new(int), &code); err != nil {
		return 0, fmt.Sprintf("status line of %q: %v", head, err)
	}
	if code == 503 && !strings.Contains(head, serve.NotLiveHeader+": ") {
		t.Errorf("503 without the %s header:\n%s", serve.NotLiveHeader, head)
	}
	return code, body
}
