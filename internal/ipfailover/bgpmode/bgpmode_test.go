package bgpmode

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vipstack/vipstack/internal/bgpconfig"
	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/ipfailover"
)

var addrOpt = cmpopts.EquateComparable(netip.Addr{}, netip.AddrPort{})

func TestNodeBGP(t *testing.T) {
	pfx := func(ss ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, s := range ss {
			out = append(out, netip.MustParsePrefix(s))
		}
		return out
	}
	routes := []bgpconfig.Route{{VIP: netip.MustParseAddr("198.19.0.1")}, {VIP: netip.MustParseAddr("198.19.0.2")}}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		subnets []netip.Prefix
		want    *cluster.BGPSpec
		wantErr string
	}{
		{
			name:    "eBGP: only the router on the node's subnet, with the node's address there",
			env:     map[string]string{ipfailover.EnvBGPPeers: "198.18.1.1,198.18.2.1,198.18.3.1", ipfailover.EnvBGPPeerASN: "64500", ipfailover.EnvBGPBFDInterval: "100"},
			subnets: pfx("198.18.2.10/24", "fd00:2::10/64"),
			want: &cluster.BGPSpec{
				Config: bgpconfig.Config{ASN: 64512, RouterID: netip.MustParseAddr("198.18.2.10"), Routes: routes, Peers: []bgpconfig.Peer{{
					Address: netip.MustParseAddr("198.18.2.1"), ASN: 64500, LocalAddress: netip.MustParseAddr("198.18.2.10"),
					BFD: &bgpconfig.BFD{Interval: 100 * time.Millisecond, Multiplier: 3}}}},
				Checks: map[netip.Addr][]string{routes[0].VIP: {"chk_pool"}, routes[1].VIP: {"chk_pool"}},
				Role:   map[netip.Addr]string{routes[0].VIP: "pool", routes[1].VIP: "pool"},
			},
		},
		{
			name:    "iBGP: every peer, those elsewhere from the node's first address, BFD multihop to them",
			env:     map[string]string{ipfailover.EnvBGPPeers: "198.18.1.1,10.9.9.9", ipfailover.EnvBGPBFDInterval: "300", ipfailover.EnvMonitorPort: "0"},
			subnets: pfx("198.18.1.10/24", "198.18.50.10/24"),
			want: &cluster.BGPSpec{
				Config: bgpconfig.Config{ASN: 64512, RouterID: netip.MustParseAddr("198.18.1.10"), Routes: routes, Peers: []bgpconfig.Peer{
					{Address: netip.MustParseAddr("198.18.1.1"), ASN: 64512, LocalAddress: netip.MustParseAddr("198.18.1.10"),
						BFD: &bgpconfig.BFD{Interval: 300 * time.Millisecond, Multiplier: 3}},
					{Address: netip.MustParseAddr("10.9.9.9"), ASN: 64512, LocalAddress: netip.MustParseAddr("198.18.1.10"),
						BFD: &bgpconfig.BFD{Interval: 300 * time.Millisecond, Multiplier: 3, Multihop: true}},
				}},
				Checks: map[netip.Addr][]string{}, // monitor port 0: no check, always eligible
				Role:   map[netip.Addr]string{routes[0].VIP: "pool", routes[1].VIP: "pool"},
			},
		},
		{
			name:    "IPv6 pool: IPv6 sessions, the router ID the node's IPv4 address",
			env:     map[string]string{ipfailover.EnvVirtualIPs: "fd00:99::1", ipfailover.EnvBGPPeers: "fd00:1::1,fd00:2::1", ipfailover.EnvBGPPeerASN: "64500"},
			subnets: pfx("fd00:1::10/64", "198.18.1.10/24"),
			want: &cluster.BGPSpec{
				Config: bgpconfig.Config{ASN: 64512, RouterID: netip.MustParseAddr("198.18.1.10"), Routes: []bgpconfig.Route{{VIP: netip.MustParseAddr("fd00:99::1")}},
					Peers: []bgpconfig.Peer{{Address: netip.MustParseAddr("fd00:1::1"), ASN: 64500, LocalAddress: netip.MustParseAddr("fd00:1::10")}}},
				Checks: map[netip.Addr][]string{netip.MustParseAddr("fd00:99::1"): {"chk_pool"}},
				Role:   map[netip.Addr]string{netip.MustParseAddr("fd00:99::1"): "pool"},
			},
		},
		{
			name:    "eBGP, no router on the node's subnets",
			env:     map[string]string{ipfailover.EnvBGPPeers: "198.18.1.1,198.18.2.1", ipfailover.EnvBGPPeerASN: "64500"},
			subnets: pfx("198.18.7.10/24"),
			wantErr: `OPENSHIFT_HA_BGP_PEERS="198.18.1.1,198.18.2.1": no peer is on this node's subnets ([198.18.7.10/24])`,
		},
		{
			name:    "no IPv4 address for the router ID",
			env:     map[string]string{ipfailover.EnvVirtualIPs: "fd00:99::1", ipfailover.EnvBGPPeers: "fd00:1::1"},
			subnets: pfx("fd00:1::10/64"),
			wantErr: "OPENSHIFT_HA_BGP_ASN: this node has no IPv4 address for its BGP router ID",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{ipfailover.EnvConfigName: "pool", ipfailover.EnvVirtualIPs: "198.19.0.1-2", ipfailover.EnvBGPASN: "64512"}
			for k, v := range tc.env {
				env[k] = v
			}
			s, err := ipfailover.Parse(ipfailover.Input{Env: env})
			if err != nil {
				t.Fatal(err)
			}
			got, err := NodeBGP(s, tc.subnets)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, addrOpt); diff != "" {
				t.Errorf("NodeBGP (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBGPCheck(t *testing.T) {
	s, err := ipfailover.Parse(ipfailover.Input{Env: map[string]string{ipfailover.EnvConfigName: "pool", ipfailover.EnvVirtualIPs: "198.19.0.1", ipfailover.EnvBGPASN: "64512",
		ipfailover.EnvBGPPeers: "198.18.1.1", ipfailover.EnvCheckInterval: "0.5"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []cluster.CheckSpec{{Name: "chk_pool", Interval: 500 * time.Millisecond, Timeout: 500 * time.Millisecond, Rise: 1, Fall: 1}}
	if diff := cmp.Diff(want, BGPCheck(s)); diff != "" {
		t.Errorf("BGPCheck (-want +got):\n%s", diff)
	}
}

// TestNodeBGPAttributes: every VIP's route carries the pool's path
// attributes, each route its own copy.
func TestNodeBGPAttributes(t *testing.T) {
	s, err := ipfailover.Parse(ipfailover.Input{Env: map[string]string{ipfailover.EnvVirtualIPs: "198.19.0.1-2", ipfailover.EnvBGPASN: "64512", ipfailover.EnvBGPPeerASN: "64500",
		ipfailover.EnvBGPPeers: "198.18.1.1", ipfailover.EnvBGPCommunities: "64512:300", ipfailover.EnvBGPMED: "20", ipfailover.EnvBGPPrepend: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := NodeBGP(s, []netip.Prefix{netip.MustParsePrefix("198.18.1.10/24")})
	if err != nil {
		t.Fatal(err)
	}
	want := bgpconfig.Attributes{Communities: []string{"64512:300"}, MED: new(uint32(20)), Prepend: 1}
	if len(spec.Config.Routes) != 2 {
		t.Fatalf("routes %+v, want 2", spec.Config.Routes)
	}
	for _, r := range spec.Config.Routes {
		if diff := cmp.Diff(want, r.Attributes); diff != "" {
			t.Errorf("route %v attributes (-want +got):\n%s", r.VIP, diff)
		}
	}
	spec.Config.Routes[0].Communities[0] = "1:1"
	if got := spec.Config.Routes[1].Communities[0]; got != "64512:300" {
		t.Errorf("routes share their communities: changing the first changed the second to %q", got)
	}
}
