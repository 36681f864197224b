package engine_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestVIPRemovedFromMaster: something else (an `ip addr del`, a network
// manager) removes the VIP from the master's interface. keepalived 2.2.7
// steps down with priority 0 and, when no backup takes over, is master again
// after its Skew_Time with the VIP back (measured alone in a namespace:
// BACKUP 8 ms after the removal, MASTER 0.63 s later, advert 1 s, priority
// 100). vipstack went on advertising as master without the VIP: no node
// answered for it, and the backup (keepalived here) never took it. Now the
// VIP is back on exactly one node, the higher one, and the log says why.
// Bounded: two removals, each waited for at most 10 s.
func TestVIPRemovedFromMaster(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsz"})
	high, low := topo.Hosts[0], topo.Hosts[1]
	vip := netip.MustParseAddr("198.18.0.100")
	conf := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 63, VIP: netip.PrefixFrom(vip, 24)}
	n := startOverKeepalived(t, bin, topo.Hosts, high, low, conf)
	for i := range 2 {
		if out, err := high.Run("ip", "addr", "del", conf.VIP.String(), "dev", "eth0"); err != nil {
			t.Fatalf("removing the VIP behind the master's back: %v: %s", err, out)
		}
		if _, err := peers.WaitSoleHolder(topo.Hosts, vip, high, 500*time.Millisecond, 10*time.Second); err != nil {
			t.Fatalf("removal %d: the VIP must be back on exactly one node, the higher one: %v", i+1, err)
		}
	}
	if log := n.Log(); !strings.Contains(log, "removed from eth0 behind our back") {
		t.Errorf("the master's log must say why it stepped down; it does not")
	}
}
