package engine_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestLinkBackWaitsForDAD: h1 (priority 100) holds an IPv6 VIP over h2
// (90); h1's link goes down, h2 takes the VIP, and h1's link comes back
// with duplicate address detection on (the host default the lab turns off),
// so its link-local source is tentative for about a second and every
// advertisement from it fails. h1 waits in FAULT until the source is
// usable, then preempts: never do both hold the VIP. Without the wait h1
// preempted while still unheard and both held it (1.4 s in an audit).
func TestLinkBackWaitsForDAD(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsS"})
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	if out, err := h1.Run("sysctl", "-w", "net.ipv6.conf."+h1.Link+".accept_dad=1"); err != nil {
		t.Fatalf("sysctl: %v\n%s", err, out)
	}
	vip := netip.MustParseAddr("fd00:bb::200")
	var nodes []*peers.Node
	for i, h := range []*testnet.Host{h1, h2} {
		nodes = append(nodes, startVipstack(t, bin, h, peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 55,
			Priority: 100 - 10*i, VIP: netip.PrefixFrom(vip, 64)}))
	}
	if _, err := peers.WaitSoleHolder(topo.Hosts, vip, h1, time.Second, 30*time.Second); err != nil {
		t.Fatalf("h1 did not become the only holder: %v", err)
	}
	if err := h1.SetLink(false); err != nil {
		t.Fatal(err)
	}
	if _, err := peers.WaitSoleHolder(topo.Hosts, vip, h2, 500*time.Millisecond, 10*time.Second); err != nil {
		t.Fatalf("h2 did not take over while h1's link was down: %v", err)
	}
	if err := h1.SetLink(true); err != nil {
		t.Fatal(err)
	}
	// Sample who holds the VIP until h1 alone has held it for a while.
	since := time.Time{}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("h1 did not take the VIP back after its link came up")
		}
		hs, err := peers.Holders(topo.Hosts, vip)
		if err != nil {
			t.Fatal(err)
		}
		if len(hs) > 1 {
			t.Fatalf("h1 and h2 both hold %s after h1's link came back", vip)
		}
		if len(hs) == 1 && hs[0] == h1 {
			if since.IsZero() {
				since = time.Now()
			}
			if time.Since(since) > time.Second {
				break
			}
		} else {
			since = time.Time{}
		}
	}
	if log := nodes[0].Log(); !strings.Contains(log, "IPv6 source still tentative") || !strings.Contains(log, "duplicate address detection finished") {
		t.Errorf("h1's log does not show the wait for duplicate address detection:\n%s", tail(log, 20))
	}
}
