package engine_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestRemovesPresentVIPsAtStart: a configured VIP already on the interface
// when vipstack starts (left by a keepalived or a vipstack killed together
// with its ledger) is removed before the instance runs, as keepalived does
// at start, so a backup does not hold it beside the master.
func TestRemovesPresentVIPsAtStart(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsZp"})
	master, backup := topo.Hosts[0], topo.Hosts[1]
	vip := netip.MustParseAddr("198.18.0.100")
	conf := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 61, VIP: netip.PrefixFrom(vip, 32)}

	// What a killed keepalived left on the backup.
	if out, err := backup.Run("ip", "addr", "add", "198.18.0.100/32", "dev", backup.Link); err != nil {
		t.Fatalf("ip addr add: %v\n%s", err, out)
	}
	mc := conf
	mc.Priority = 200
	startVipstack(t, bin, master, mc)
	if _, err := peers.WaitSoleHolder([]*testnet.Host{master}, vip, master, time.Second, 20*time.Second); err != nil {
		t.Fatalf("the master did not take the VIP: %v", err)
	}
	bc := conf
	bc.Priority = 100
	n := startVipstack(t, bin, backup, bc)
	if _, err := peers.WaitSoleHolder(topo.Hosts, vip, master, time.Second, 20*time.Second); err != nil {
		t.Fatalf("the VIP left on the backup before its start: %v", err)
	}
	if !strings.Contains(n.Log(), "removed a configured VIP present at start") {
		t.Errorf("the backup's log does not say it removed the VIP:\n%s", tail(n.Log(), 20))
	}
	out, err := backup.Run("ip", "-4", "-o", "addr", "show", "dev", backup.Link)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, backup.IPv4.String()) {
		t.Errorf("the backup's own address %s is gone:\n%s", backup.IPv4, out)
	}
}
