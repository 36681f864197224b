package ipfailover_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/ipfailover"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestRouteInterface: the interface comes from the route lookup towards the
// VIPs, so VIPs on a second interface's subnet pick that interface, not
// the default route's (the image's `ip route get 8.8.8.8` would).
func TestRouteInterface(t *testing.T) {
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsL"})
	h, bare := topo.Hosts[0], topo.Hosts[1]
	for _, c := range [][]string{
		{"link", "add", "vsLa", "type", "veth", "peer", "name", "vsLb"},
		{"addr", "add", "198.19.0.1/24", "dev", "vsLa"},
		{"addr", "add", "198.19.1.7/32", "dev", "vsLb"},
		{"link", "set", "vsLa", "up"},
		{"link", "set", "vsLb", "up"},
		{"route", "add", "default", "via", "198.18.0.1", "dev", "eth0"},
	} {
		if _, err := h.Run("ip", c...); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		host    *testnet.Host
		vips    string
		want    string
		wantErr string
	}{
		{name: "VIPs on a second interface's subnet", host: h, vips: "198.19.0.100-110", want: "vsLa"},
		{name: "VIPs off every subnet: the default route", host: h, vips: "198.18.200.5-6", want: "eth0"},
		{name: "VIPs on the first interface's subnet", host: h, vips: "198.18.0.100", want: "eth0"},
		{name: "a VIP already configured: its interface", host: h, vips: "198.19.1.7", want: "vsLb"},
		{name: "VIPs towards two interfaces", host: h, vips: "198.19.0.100,198.18.200.5", wantErr: "the VIPs route to different interfaces (198.19.0.100 via vsLa, 198.18.200.5 via eth0)"},
		{name: "no route", host: bare, vips: "198.18.200.5", wantErr: "route lookup towards VIP 198.18.200.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vips, err := ipfailover.ExpandVIPs(tc.vips)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			err = tc.host.Do(func() error {
				var err error
				got, err = ipfailover.RouteInterface(vips)
				return err
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), ipfailover.EnvInterface) {
					t.Fatalf("RouteInterface(%s) = %q, %v; want an error containing %q and naming %s", tc.vips, got, err, tc.wantErr, ipfailover.EnvInterface)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("RouteInterface(%s) = %q, %v; want %q", tc.vips, got, err, tc.want)
			}
		})
	}
	t.Run("node address", func(t *testing.T) {
		var a4, a6 netip.Addr
		err := h.Do(func() error {
			var err error
			if a4, err = ipfailover.NodeAddress("eth0", 4, nil); err != nil {
				return err
			}
			a6, err = ipfailover.NodeAddress("eth0", 6, nil)
			return err
		})
		if err != nil || a4 != h.IPv4.Addr() || a6 != h.IPv6.Addr() {
			t.Errorf("NodeAddress = %v, %v, %v; want %v, %v", a4, a6, err, h.IPv4.Addr(), h.IPv6.Addr())
		}
		// A VIP of another pool that this node holds, added before the
		// node's address, is not the node's address; a VIP listed that
		// is the node's own address is an error.
		for _, args := range [][]string{
			{"link", "add", "vsd0", "type", "veth", "peer", "name", "vsd1"}, {"addr", "add", "198.18.5.7/32", "dev", "vsd0"},
			{"addr", "add", "198.18.5.1/24", "dev", "vsd0"}, {"link", "set", "vsd0", "up"},
		} {
			if out, err := h.Run("ip", args...); err != nil {
				t.Fatalf("ip %v: %v\n%s", args, err, out)
			}
		}
		var own netip.Addr
		err = h.Do(func() error { var err error; own, err = ipfailover.NodeAddress("vsd0", 4, nil); return err })
		if want := netip.MustParseAddr("198.18.5.1"); err != nil || own != want {
			t.Errorf("NodeAddress(vsd0) with a /32 first = %v, %v; want %v, the /24", own, err, want)
		}
		err = h.Do(func() error {
			_, err := ipfailover.NodeAddress("vsd0", 4, []netip.Addr{netip.MustParseAddr("198.18.5.1"), netip.MustParseAddr("198.18.5.20")})
			return err
		})
		if want := ipfailover.EnvVirtualIPs + ": 198.18.5.1 is this node's own address on vsd0 (198.18.5.1/24), not a virtual IP"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NodeAddress with the node's own address among the VIPs: %v; want an error containing %q", err, want)
		}
		err = h.Do(func() error { _, err := ipfailover.NodeAddress("nosuch0", 4, nil); return err })
		if err == nil || !strings.Contains(err.Error(), `interface "nosuch0" does not exist`) {
			t.Errorf("NodeAddress(nosuch0): %v", err)
		}
	})
}

// TestFirewall installs and removes the rule admitting VRRP multicast, in a
// table of its own and in a named chain (iptables-nft's ip filter INPUT and
// an inet chain for IPv6).
func TestFirewall(t *testing.T) {
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsL"})
	h := topo.Hosts[0]
	nft := func(args ...string) string {
		t.Helper()
		out, err := h.Run("nft", args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	do := func(f func() error) error { return h.Do(f) }

	t.Run("own table", func(t *testing.T) {
		fw := ipfailover.Firewall{Family: 4, ConfigName: "pool-a"}
		var where []string
		if err := do(func() (err error) { where, err = fw.Install(); return err }); err != nil {
			t.Fatal(err)
		}
		if len(where) != 1 || where[0] != "inet vipstack_ipfailover_pool_a input" {
			t.Errorf("installed in %v", where)
		}
		out := nft("list", "table", "inet", "vipstack_ipfailover_pool_a")
		for _, want := range []string{"hook input priority filter; policy accept;", "ip daddr 224.0.0.18", `comment "vipstack ipfailover pool-a"`, "accept"} {
			if !strings.Contains(out, want) {
				t.Errorf("table lacks %q:\n%s", want, out)
			}
		}
		if err := do(fw.Remove); err != nil {
			t.Fatal(err)
		}
		if out := nft("list", "tables"); strings.Contains(out, "vipstack_ipfailover_pool_a") {
			t.Errorf("table still there after Remove:\n%s", out)
		}
	})

	t.Run("named chains", func(t *testing.T) {
		nft("add", "table", "ip", "filter")
		nft("add", "chain", "ip", "filter", "INPUT", "{ type filter hook input priority 0; policy drop; }")
		nft("add", "rule", "ip", "filter", "INPUT", "iif", "lo", "accept")
		nft("add", "table", "inet", "fw")
		nft("add", "chain", "inet", "fw", "INPUT", "{ type filter hook input priority 0; policy accept; }")
		fw4 := ipfailover.Firewall{Chain: "INPUT", Family: 4, ConfigName: "p"}
		fw6 := ipfailover.Firewall{Chain: "INPUT", Family: 6, ConfigName: "p6"}
		var where4, where6 []string
		for range 2 { // a second Install replaces the first
			if err := do(func() (err error) { where4, err = fw4.Install(); return err }); err != nil {
				t.Fatal(err)
			}
		}
		if err := do(func() (err error) { where6, err = fw6.Install(); return err }); err != nil {
			t.Fatal(err)
		}
		if strings.Join(where4, ",") != "ip filter INPUT,inet fw INPUT" || strings.Join(where6, ",") != "inet fw INPUT" {
			t.Errorf("installed in %v and %v", where4, where6)
		}
		out := nft("list", "chain", "ip", "filter", "INPUT")
		if n := strings.Count(out, `comment "vipstack ipfailover p"`); n != 1 {
			t.Errorf("%d rules of ours in ip filter INPUT, want 1:\n%s", n, out)
		}
		if i, j := strings.Index(out, "224.0.0.18"), strings.Index(out, `iif "lo"`); i < 0 || j < 0 || i > j {
			t.Errorf("our rule is not first in ip filter INPUT:\n%s", out)
		}
		out = nft("list", "chain", "inet", "fw", "INPUT")
		if !strings.Contains(out, "ip6 daddr ff02::12") || !strings.Contains(out, "ip daddr 224.0.0.18") {
			t.Errorf("inet fw INPUT lacks a rule:\n%s", out)
		}
		if err := do(fw4.Remove); err != nil {
			t.Fatal(err)
		}
		if err := do(fw6.Remove); err != nil {
			t.Fatal(err)
		}
		out = nft("list", "ruleset")
		if strings.Contains(out, "vipstack") || !strings.Contains(out, `iif "lo" accept`) {
			t.Errorf("after Remove:\n%s", out)
		}
	})

	t.Run("missing chain", func(t *testing.T) {
		fw := ipfailover.Firewall{Chain: "NOSUCH", Family: 4, ConfigName: "p"}
		err := do(func() error { _, err := fw.Install(); return err })
		if !errors.Is(err, ipfailover.ErrNoChain) || !strings.Contains(err.Error(), `OPENSHIFT_HA_IPTABLES_CHAIN="NOSUCH"`) {
			t.Errorf("Install in a missing chain: %v", err)
		}
	})
}
