package engine_test

import (
	"testing"

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
