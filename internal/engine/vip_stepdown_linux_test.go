package engine_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestVIPStepDownAtStart plays the demo's start, where the API VIP was
// once left on two masters: three routers at one priority that cannot
// hear each other all take the VIP (the adverts are dropped), then hear
// each other and the two lower addresses step down at once; then a router
// of higher priority starts and the last one steps down too. After each
// step exactly one node has the VIP on its interface. (With two CPU hogs
// beside it, 55 runs in a row before the watch of released VIPs never
// left one behind.)
func TestVIPStepDownAtStart(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 4, Prefix: "vsr"})
	top, masters := topo.Hosts[0], topo.Hosts[1:]
	vip := netip.MustParseAddr("198.18.0.100")
	conf := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 61, VIP: netip.PrefixFrom(vip, 32)}

	for _, h := range masters {
		if err := h.Impair(100, 0, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range masters {
		c := conf
		c.Priority = 65
		startVipstack(t, bin, h, c)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		hs, err := peers.Holders(masters, vip)
		if err != nil {
			t.Fatal(err)
		}
		if len(hs) == len(masters) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the masters should all take the VIP while they cannot hear each other; %d of %d have it", len(hs), len(masters))
		}
		time.Sleep(20 * time.Millisecond) // polling the system, bounded above
	}
	for _, h := range masters {
		if err := h.Impair(0, 0, false); err != nil {
			t.Fatal(err)
		}
	}
	// Equal priorities: the highest address stays master.
	if _, err := peers.WaitSoleHolder(topo.Hosts, vip, masters[len(masters)-1], 500*time.Millisecond, 20*time.Second); err != nil {
		t.Fatalf("after the masters hear each other: %v", err)
	}
	c := conf
	c.Priority = 70
	startVipstack(t, bin, top, c)
	if _, err := peers.WaitSoleHolder(topo.Hosts, vip, top, 500*time.Millisecond, 20*time.Second); err != nil {
		t.Fatalf("after the higher router starts: %v", err)
	}
}
