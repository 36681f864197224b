package engine_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestSendFailuresLoggedOnce: a master whose advertisements cannot leave
// (an nftables rule drops them on output: sendmsg fails with EPERM) logs
// the failure once, not once per advertisement (an audit counted 508 lines
// in 10 s at 100 ms adverts), and logs when sending works again.
func TestSendFailuresLoggedOnce(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsR"})
	node := topo.Hosts[0]
	vip := netip.MustParseAddr("198.18.0.100")
	const metricsAddr = "127.0.0.1:9650"
	n := startVipstack(t, bin, node, peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 53, Priority: 100,
		VIP: netip.PrefixFrom(vip, 32)}, "--metrics-addr", metricsAddr)
	if _, err := peers.WaitSoleHolder(topo.Hosts, vip, node, time.Second, 20*time.Second); err != nil {
		t.Fatalf("vipstack did not become master: %v", err)
	}
	const table = "vsr_drop_vrrp"
	if out, err := node.Run("nft", "add table inet "+table+
		" { chain out { type filter hook output priority 0; ip protocol vrrp drop; }; }"); err != nil {
		t.Fatalf("nft: %v\n%s", err, out)
	}
	dropped := true
	defer func() {
		if dropped {
			node.Run("nft", "delete table inet "+table)
		}
	}()
	failed := func() int { return strings.Count(n.Log(), `msg="sending advertisement failed"`) }
	poll(t, 10*time.Second, "a failed send is logged", func() (bool, error) { return failed() > 0, nil })
	// Twenty failed advertisements, as the engine counts them.
	poll(t, 20*time.Second, "20 failed sends counted", func() (bool, error) {
		m, err := httpGet(node, metricsAddr, "/metrics")
		if err != nil {
			return false, err
		}
		errs := metricSum(m, "vipstack_vrrp_advert_send_errors_total", "instance")
		total := 0.0
		for _, v := range errs {
			total += v
		}
		return total >= 20, nil
	})
	if got := failed(); got != 1 {
		t.Fatalf("%d lines for 20 or more failed sends, want 1:\n%s", got, tail(n.Log(), 10))
	}
	if out, err := node.Run("nft", "delete table inet "+table); err != nil {
		t.Fatalf("nft: %v\n%s", err, out)
	}
	dropped = false
	poll(t, 10*time.Second, "sending again is logged", func() (bool, error) {
		return strings.Contains(n.Log(), `msg="sending advertisements again"`), nil
	})
}
