package testnet

import (
	"strings"
	"testing"
)

// TestImpair: 100 % loss with the nftables rule (the path a kernel without
// netem takes) stops the host's traffic, and zero loss removes the table;
// a delay without netem is refused. With netem, the same loss through tc.
func TestImpair(t *testing.T) {
	RequireRoot(t)
	topo, err := Build(Options{Hosts: 2, Prefix: "vsti"})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	reach := func() bool {
		_, err := h1.Run("ping", "-c1", "-W1", h2.IPv4.Addr().String())
		return err == nil
	}
	if !reach() {
		t.Fatal("h2 unreachable before any impairment")
	}
	netems := []bool{false}
	if h1.ProbeNetem() {
		netems = append(netems, true)
	} else {
		t.Log("no tc netem in this kernel: only the nftables path is tested")
	}
	for _, netem := range netems {
		if err := h1.Impair(100, 0, netem); err != nil {
			t.Fatalf("netem %v: %v", netem, err)
		}
		if reach() {
			t.Errorf("netem %v: h2 reachable through 100%% loss", netem)
		}
		if err := h1.Impair(0, 0, netem); err != nil {
			t.Fatalf("netem %v: removing: %v", netem, err)
		}
		if !reach() {
			t.Errorf("netem %v: h2 unreachable after the impairment was removed", netem)
		}
	}
	if out, _ := h1.Run("nft", "list", "tables"); strings.Contains(out, ImpairTable) {
		t.Errorf("%s left behind:\n%s", ImpairTable, out)
	}
	if err := h1.Impair(0, 5e6, false); err == nil || !strings.Contains(err.Error(), "needs tc netem") {
		t.Errorf("a delay without netem: %v, want an error naming netem", err)
	}
	if err := h1.Impair(101, 0, false); err == nil || !strings.Contains(err.Error(), "want 0..100%") {
		t.Errorf("101%% loss: %v, want an error naming the range", err)
	}
}
