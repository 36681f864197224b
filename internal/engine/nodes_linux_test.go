package engine_test

import (
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// startVipstack renders c for h, runs vipstack (bin) on it with extra flags,
// and prints its log if the test fails.
func startVipstack(t *testing.T, bin string, h *testnet.Host, c peers.Conf, extra ...string) *peers.Node {
	t.Helper()
	text, err := c.Render(h.Name)
	if err != nil {
		t.Fatal(err)
	}
	n, err := peers.Start(h, peers.Vipstack, text, t.TempDir(), bin, extra...)
	if err != nil {
		t.Fatal(err)
	}
	logOnFailure(t, n)
	return n
}

// startOverKeepalived runs vipstack on high at priority 100 and keepalived
// on low at 90, both with conf, and waits (up to 20 s) until vipstack alone
// holds conf's VIP among hosts.
func startOverKeepalived(t *testing.T, bin string, hosts []*testnet.Host, high, low *testnet.Host, conf peers.Conf) *peers.Node {
	t.Helper()
	c := conf
	c.Priority = 100
	n := startVipstack(t, bin, high, c)
	c.Priority = 90
	text, err := c.Render(low.Name)
	if err != nil {
		t.Fatal(err)
	}
	startText(t, low, peers.Keepalived, text)
	if _, err := peers.WaitSoleHolder(hosts, conf.VIP.Addr(), high, 500*time.Millisecond, 20*time.Second); err != nil {
		t.Fatalf("at start: %v", err)
	}
	return n
}
