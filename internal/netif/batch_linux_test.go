package netif

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vipstack/vipstack/internal/testnet"
)

// manyVIPs returns n /32 VIPs on eth0 from 198.18.<third>.1 on.
func manyVIPs(third, n int) []VIP {
	var out []VIP
	for i := 0; i < n; i++ {
		a := netip.AddrFrom4([4]byte{198, 18, byte(third + i/250), byte(1 + i%250)})
		out = append(out, VIP{Prefix: netip.PrefixFrom(a, 32), Dev: "eth0"})
	}
	return out
}

func TestAddVIPs(t *testing.T) {
	h, nh := setup(t)
	// DAD on, so an IPv6 VIP added without NODAD would show "tentative".
	if _, err := h.Run("sysctl", "-qw", "net.ipv6.conf.eth0.accept_dad=1"); err != nil {
		t.Fatal(err)
	}
	cases := vipCases()
	bulk := manyVIPs(40, 3*addBatch+5) // several writes, the last one short
	there := bulk[addBatch+1]
	if err := nh.AddVIP(there); err != nil {
		t.Fatal(err)
	}
	var vips []VIP
	for _, c := range cases {
		vips = append(vips, c.vip)
	}
	vips = append(vips, bulk[:addBatch]...)
	missing := VIP{Prefix: netip.MustParsePrefix("198.18.9.9/32"), Dev: "nosuch0"}
	invalid := VIP{Prefix: netip.MustParsePrefix("198.18.9.10/32"), Dev: "eth0", Scope: "galaxy"}
	vips = append(vips, missing, invalid)
	vips = append(vips, bulk[addBatch:]...)

	var order []int
	errs := map[int]error{}
	nh.AddVIPs(vips, func(i int, err error) {
		order = append(order, i)
		if err != nil {
			errs[i] = err
		}
	})
	var want []int
	for i := range vips {
		want = append(want, i)
	}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("done calls, one per VIP in order (-want +got):\n%s", diff)
	}
	iMissing, iInvalid := len(cases)+addBatch, len(cases)+addBatch+1
	for i, err := range errs {
		if i != iMissing && i != iInvalid {
			t.Errorf("VIP %s: %v; want added (already there is not an error)", vips[i], err)
		}
	}
	if err := errs[iMissing]; err == nil || !strings.Contains(err.Error(), "198.18.9.9") || !strings.Contains(err.Error(), "nosuch0") {
		t.Errorf("VIP on a missing interface: %v; want an error naming the address and the interface", err)
	}
	if err := errs[iInvalid]; err == nil || !strings.Contains(err.Error(), "galaxy") {
		t.Errorf("VIP with a bad scope: %v; want the validation error naming the scope", err)
	}
	for _, c := range cases {
		line := addrLine(t, h, c.vip.Prefix.Addr())
		for _, w := range c.wantWords {
			if !strings.Contains(line, w) {
				t.Errorf("%s: ip addr line %q lacks %q", c.name, line, w)
			}
		}
		for _, w := range c.notWords {
			if strings.Contains(line, w) {
				t.Errorf("%s: ip addr line %q has %q", c.name, line, w)
			}
		}
	}
	present, err := nh.Present(bulk)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range present {
		if !ok {
			t.Errorf("%s not on eth0 after AddVIPs", bulk[i].Prefix)
		}
	}
	// A second time, everything is there already: no error at all.
	nh.AddVIPs(bulk, func(i int, err error) {
		if err != nil {
			t.Errorf("adding %s again: %v; want nil", bulk[i].Prefix, err)
		}
	})
}

// TestAddVIPsRecreatedLink: the interface's index is cached; after the
// interface is deleted and made again, the adds still land on it.
func TestAddVIPsRecreatedLink(t *testing.T) {
	h, nh := setup(t)
	mk := [][]string{{"link", "add", "vsCd0", "type", "veth", "peer", "name", "vsCd1"}, {"link", "set", "vsCd0", "up"}, {"link", "set", "vsCd1", "up"}}
	for _, args := range mk {
		if _, err := h.Run("ip", args...); err != nil {
			t.Fatal(err)
		}
	}
	vips := manyVIPs(60, 3)
	for i := range vips {
		vips[i].Dev = "vsCd0"
	}
	addAll := func() {
		t.Helper()
		nh.AddVIPs(vips, func(i int, err error) {
			if err != nil {
				t.Errorf("adding %s: %v", vips[i].Prefix, err)
			}
		})
	}
	addAll()
	for _, args := range append([][]string{{"link", "del", "vsCd0"}}, mk...) {
		if _, err := h.Run("ip", args...); err != nil {
			t.Fatal(err)
		}
	}
	addAll()
	out, err := h.Run("ip", "-o", "addr", "show", "dev", "vsCd0")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vips {
		if !strings.Contains(out, " "+v.Prefix.String()+" ") {
			t.Errorf("%s not on the recreated vsCd0: %q", v.Prefix, out)
		}
	}
}

// BenchmarkAddVIPs compares one round trip per VIP with AddVIPs, adding
// 1,667 VIPs (a third of 10,000 split in two groups: what a survivor
// takes over in bench/ipfailover) to an interface that holds 3,333
// already. Timings are printed, never asserted.
func BenchmarkAddVIPs(b *testing.B) {
	testnet.RequireRoot(b)
	topo := testnet.New(b, testnet.Options{Hosts: 1, Prefix: "vsC"})
	h := topo.Hosts[0]
	var nh *Handle
	if err := h.Do(func() (err error) { nh, err = Open(); return err }); err != nil {
		b.Fatal(err)
	}
	defer nh.Close()
	held := manyVIPs(16, 3333)
	nh.AddVIPs(held, func(i int, err error) {
		if err != nil {
			b.Fatal(err)
		}
	})
	moved := manyVIPs(40, 1667)
	for _, mode := range []string{"one-by-one", "batched"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				var failed error
				if mode == "batched" {
					nh.AddVIPs(moved, func(i int, err error) { failed = errors.Join(failed, err) })
				} else {
					for _, v := range moved {
						failed = errors.Join(failed, nh.AddVIP(v))
					}
				}
				b.StopTimer()
				if failed != nil {
					b.Fatal(failed)
				}
				for _, v := range moved {
					if err := nh.DelVIP(v); err != nil {
						b.Fatal(fmt.Errorf("cleanup: %w", err))
					}
				}
				b.StartTimer()
			}
		})
	}
}
