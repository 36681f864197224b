package engine_test

import (
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestReloadMovesVIPBetweenMasters: a reload moves a VIP from one instance
// to another, both MASTER on this node (a generated configuration, such as
// ipfailover's, regroups its VIPs). The VIP must stay on the interface
// throughout. The instance that gained it added it (already there) and then
// the one that lost it, handled after it, removed it from under it: the
// VIP was gone until the address watcher made its new owner step down and
// take it again (before the watcher, for good). Sampled every 10 ms for 2 s
// after the reload.
func TestReloadMovesVIPBetweenMasters(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsz"})
	h := topo.Hosts[0]
	a, moved, b := "198.18.0.100", "198.18.0.101", "198.18.0.102"
	conf := func(va, vb string) string {
		return renderConf("",
			vrrpInstance{name: "VI_A", vrid: 51, vip: va},
			vrrpInstance{name: "VI_B", vrid: 52, vip: vb})
	}
	n, err := peers.Start(h, peers.Vipstack, conf(a, moved+"/32\n        "+b), t.TempDir(), bin)
	if err != nil {
		t.Fatal(err)
	}
	logOnFailure(t, n)
	all := []netip.Addr{netip.MustParseAddr(a), netip.MustParseAddr(moved), netip.MustParseAddr(b)}
	holds := func() (map[netip.Addr]bool, error) {
		got := map[netip.Addr]bool{}
		for _, v := range all {
			ok, err := h.HasAddr(v)
			if err != nil {
				return nil, err
			}
			got[v] = ok
		}
		return got, nil
	}
	poll(t, 20*time.Second, "both instances master with their VIPs", func() (bool, error) {
		got, err := holds()
		return got[all[0]] && got[all[1]] && got[all[2]], err
	})

	if err := os.WriteFile(n.Conf, []byte(conf(a+"/32\n        "+moved, b)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	missing := map[netip.Addr]int{}
	samples := 0
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		got, err := holds()
		if err != nil {
			t.Fatal(err)
		}
		samples++
		for _, v := range all {
			if !got[v] {
				missing[v]++
			}
		}
	}
	for _, v := range all {
		if missing[v] > 0 {
			t.Errorf("%v missing in %d of %d samples after the reload; a VIP that moves between two masters of this node must stay", v, missing[v], samples)
		}
	}
}
