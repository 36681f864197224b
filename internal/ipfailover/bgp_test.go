package ipfailover

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vipstack/vipstack/internal/bgp"
	"github.com/vipstack/vipstack/internal/cluster"
)

var addrOpt = cmpopts.EquateComparable(netip.Addr{}, netip.AddrPort{})

func TestParseBGP(t *testing.T) {
	for _, tc := range []struct {
		name         string
		env          map[string]string
		want         *BGPSettings
		wantWarnings []string
	}{
		{
			name: "iBGP, defaults",
			env:  map[string]string{EnvBGPASN: "64512", EnvBGPPeers: "198.18.1.1"},
			want: &BGPSettings{ASN: 64512, PeerASN: 64512, Peers: []netip.AddrPort{netip.MustParseAddrPort("198.18.1.1:0")}},
		},
		{
			name: "eBGP with every setting, ports, VRRP variables warned about",
			env: map[string]string{EnvBGPASN: "4200000000", EnvBGPPeers: "198.18.1.1, 198.18.2.1:1179\n", EnvBGPPeerASN: "64500",
				EnvBGPPassword: "s3cret", EnvBGPHoldTime: "30", EnvBGPMultihop: "2", EnvBGPGracefulRestart: "120",
				EnvBGPBFDInterval: "100", EnvBGPBFDMultiplier: "5", EnvReplicaCount: "3", EnvVRIDOffset: "20"},
			want: &BGPSettings{ASN: 4200000000, PeerASN: 64500,
				Peers:    []netip.AddrPort{netip.MustParseAddrPort("198.18.1.1:0"), netip.MustParseAddrPort("198.18.2.1:1179")},
				Password: "s3cret", HoldTime: 30 * time.Second, Multihop: 2, GracefulRestart: 120 * time.Second,
				BFD: &bgp.BFD{Interval: 100 * time.Millisecond, Multiplier: 5, Multihop: true}},
			wantWarnings: []string{
				"OPENSHIFT_HA_BGP_BFD_INTERVAL and OPENSHIFT_HA_BGP_GRACEFUL_RESTART are both set: a router acting as graceful-restart helper (FRR does) keeps the routes of a session BFD took down as stale for 2m0s, so BFD does not remove a crashed node's routes; set one of the two",
				"OPENSHIFT_HA_VRRP_ID_OFFSET has no effect with OPENSHIFT_HA_BGP_ASN: the VIPs are announced by BGP, no VRRP runs",
			},
		},
		{
			name: "path attributes",
			env: map[string]string{EnvBGPASN: "64512", EnvBGPPeers: "198.18.1.1", EnvBGPCommunities: "64512:100, 64512:200",
				EnvBGPLargeCommunities: "4200000000:1:2", EnvBGPLocalPref: "300", EnvBGPMED: "0"},
			want: &BGPSettings{ASN: 64512, PeerASN: 64512, Peers: []netip.AddrPort{netip.MustParseAddrPort("198.18.1.1:0")},
				Attributes: bgp.Attributes{Communities: []string{"64512:100", "64512:200"}, LargeCommunities: []string{"4200000000:1:2"},
					LocalPref: new(uint32(300)), MED: new(uint32(0))}},
		},
		{
			name: "prepend over eBGP",
			env:  map[string]string{EnvBGPASN: "64512", EnvBGPPeerASN: "64500", EnvBGPPeers: "198.18.1.1", EnvBGPPrepend: "2", EnvBGPMED: "50"},
			want: &BGPSettings{ASN: 64512, PeerASN: 64500, Peers: []netip.AddrPort{netip.MustParseAddrPort("198.18.1.1:0")},
				Attributes: bgp.Attributes{MED: new(uint32(50)), Prepend: 2}},
		},
		{
			name: "BGP off",
			env:  map[string]string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{EnvVirtualIPs: "198.19.0.1-2"}
			for k, v := range tc.env {
				env[k] = v
			}
			s, err := Parse(Input{Env: env})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s.BGP, addrOpt); diff != "" {
				t.Errorf("BGP settings (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWarnings, s.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseBGPErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   map[string]string
		flags map[string]string
		want  []string // each in the error
	}{
		{name: "ASN 0", env: map[string]string{EnvBGPASN: "0", EnvBGPPeers: "198.18.1.1"},
			want: []string{`OPENSHIFT_HA_BGP_ASN="0": want an AS number from 1 to 4294967295`}},
		{name: "ASN too large, by flag", flags: map[string]string{EnvBGPASN: "4294967296", EnvBGPPeers: "198.18.1.1"},
			want: []string{`--bgp-asn="4294967296": want an AS number from 1 to 4294967295`}},
		{name: "no peers", env: map[string]string{EnvBGPASN: "64512"},
			want: []string{"OPENSHIFT_HA_BGP_PEERS is required with OPENSHIFT_HA_BGP_ASN"}},
		{name: "peer not an address", env: map[string]string{EnvBGPASN: "64512", EnvBGPPeers: "198.18.1.1,router1"},
			want: []string{`OPENSHIFT_HA_BGP_PEERS="198.18.1.1,router1": "router1" is not ADDRESS or ADDRESS:PORT`}},
		{name: "peer of the other family", env: map[string]string{EnvBGPASN: "64512", EnvBGPPeers: "fd00:1::1"},
			want: []string{`OPENSHIFT_HA_BGP_PEERS="fd00:1::1": fd00:1::1 is not of the VIPs' family (IPv4)`}},
		{name: "peer twice", env: map[string]string{EnvBGPASN: "64512", EnvBGPPeers: "198.18.1.1 198.18.1.1:179"},
			want: []string{"198.18.1.1 is listed twice"}},
		{name: "hold time", env: map[string]string{EnvBGPASN: "64512", EnvBGPPeers: "198.18.1.1", EnvBGPHoldTime: "1.5"},
			want: []string{`OPENSHIFT_HA_BGP_HOLD_TIME="1.5": want whole seconds, 0 (90) or 3..65535`}},
		{name: "hold time below 3 s, from the speaker's validation", env: map[string]string{EnvBGPASN: "64512", EnvBGPPeers: "198.18.1.1", EnvBGPHoldTime: "2"},
			want: []string{`OPENSHIFT_HA_BGP_HOLD_TIME="2": 2s; want 0 (default 90s) or whole seconds 3s..65535s`}},
		{name: "multihop on iBGP", env: map[string]string{EnvBGPASN: "64512", EnvBGPPeers: "198.18.1.1,198.18.2.1", EnvBGPMultihop: "3"},
			want: []string{`OPENSHIFT_HA_BGP_MULTIHOP="3": 3 is set on an iBGP peer (asn 64512 equals the local asn)`}},
		{name: "graceful restart", env: map[string]string{EnvBGPASN: "64512", EnvBGPPeers: "198.18.1.1", EnvBGPGracefulRestart: "5000"},
			want: []string{`OPENSHIFT_HA_BGP_GRACEFUL_RESTART="5000": want whole seconds from 1 to 4095, or 0 (off)`}},
		{name: "BFD interval", env: map[string]string{EnvBGPASN: "64512", EnvBGPPeers: "198.18.1.1", EnvBGPBFDInterval: "5"},
			want: []string{`OPENSHIFT_HA_BGP_BFD_INTERVAL="5": want milliseconds from 10 to 60000`}},
		{name: "BFD multiplier without interval", env: map[string]string{EnvBGPASN: "64512", EnvBGPPeers: "198.18.1.1", EnvBGPBFDMultiplier: "3"},
			want: []string{`OPENSHIFT_HA_BGP_BFD_MULTIPLIER="3": set without OPENSHIFT_HA_BGP_BFD_INTERVAL`}},
		{name: "password too long", env: map[string]string{EnvBGPASN: "64512", EnvBGPPeers: "198.18.1.1", EnvBGPPassword: strings.Repeat("x", 81)},
			want: []string{"OPENSHIFT_HA_BGP_PASSWORD=", "81 bytes; TCP MD5 keys are at most 80 bytes"}},
		{name: "BGP variable without the ASN", env: map[string]string{EnvBGPPeers: "198.18.1.1"},
			want: []string{`OPENSHIFT_HA_BGP_PEERS="198.18.1.1": set without OPENSHIFT_HA_BGP_ASN`}},
		{name: "notify script", env: map[string]string{EnvBGPASN: "64512", EnvBGPPeers: "198.18.1.1", EnvNotifyScript: "/bin/notify.sh"},
			want: []string{`OPENSHIFT_HA_NOTIFY_SCRIPT="/bin/notify.sh": not supported with OPENSHIFT_HA_BGP_ASN`}},
		{name: "community out of range", env: map[string]string{EnvBGPASN: "64512", EnvBGPPeers: "198.18.1.1", EnvBGPCommunities: "64512:100,64512:70000"},
			want: []string{`OPENSHIFT_HA_BGP_COMMUNITIES="64512:100,64512:70000": `, "70000"}},
		{name: "large community", env: map[string]string{EnvBGPASN: "64512", EnvBGPPeers: "198.18.1.1", EnvBGPLargeCommunities: "1:2"},
			want: []string{`OPENSHIFT_HA_BGP_LARGE_COMMUNITIES="1:2": `}},
		{name: "MED not a number", env: map[string]string{EnvBGPASN: "64512", EnvBGPPeers: "198.18.1.1", EnvBGPMED: "-1"},
			want: []string{`OPENSHIFT_HA_BGP_MED="-1": want a whole number from 0 to 4294967295`}},
		{name: "prepend too long", env: map[string]string{EnvBGPASN: "64512", EnvBGPPeerASN: "64500", EnvBGPPeers: "198.18.1.1", EnvBGPPrepend: "11"},
			want: []string{`OPENSHIFT_HA_BGP_AS_PATH_PREPEND="11": want a count from 0 to 10`}},
		{name: "prepend over iBGP", env: map[string]string{EnvBGPASN: "64512", EnvBGPPeers: "198.18.1.1", EnvBGPPrepend: "1"},
			want: []string{`OPENSHIFT_HA_BGP_AS_PATH_PREPEND="1": 1 with an iBGP peer`}},
		{name: "local preference over eBGP", env: map[string]string{EnvBGPASN: "64512", EnvBGPPeerASN: "64500", EnvBGPPeers: "198.18.1.1", EnvBGPLocalPref: "200"},
			want: []string{`OPENSHIFT_HA_BGP_LOCAL_PREF="200": the routers are eBGP peers`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{EnvVirtualIPs: "198.19.0.1-2"}
			for k, v := range tc.env {
				env[k] = v
			}
			_, err := Parse(Input{Env: env, Flags: tc.flags})
			if err == nil {
				t.Fatalf("Parse accepted %v %v", tc.env, tc.flags)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
}

func TestNodeBGP(t *testing.T) {
	pfx := func(ss ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, s := range ss {
			out = append(out, netip.MustParsePrefix(s))
		}
		return out
	}
	routes := []bgp.Route{{VIP: netip.MustParseAddr("198.19.0.1")}, {VIP: netip.MustParseAddr("198.19.0.2")}}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		subnets []netip.Prefix
		want    *cluster.BGPSpec
		wantErr string
	}{
		{
			name:    "eBGP: only the router on the node's subnet, with the node's address there",
			env:     map[string]string{EnvBGPPeers: "198.18.1.1,198.18.2.1,198.18.3.1", EnvBGPPeerASN: "64500", EnvBGPBFDInterval: "100"},
			subnets: pfx("198.18.2.10/24", "fd00:2::10/64"),
			want: &cluster.BGPSpec{
				Config: bgp.Config{ASN: 64512, RouterID: netip.MustParseAddr("198.18.2.10"), Routes: routes, Peers: []bgp.Peer{{
					Address: netip.MustParseAddr("198.18.2.1"), ASN: 64500, LocalAddress: netip.MustParseAddr("198.18.2.10"),
					BFD: &bgp.BFD{Interval: 100 * time.Millisecond, Multiplier: 3}}}},
				Checks: map[netip.Addr][]string{routes[0].VIP: {"chk_pool"}, routes[1].VIP: {"chk_pool"}},
				Role:   map[netip.Addr]string{routes[0].VIP: "pool", routes[1].VIP: "pool"},
			},
		},
		{
			name:    "iBGP: every peer, those elsewhere from the node's first address, BFD multihop to them",
			env:     map[string]string{EnvBGPPeers: "198.18.1.1,10.9.9.9", EnvBGPBFDInterval: "300", EnvMonitorPort: "0"},
			subnets: pfx("198.18.1.10/24", "198.18.50.10/24"),
			want: &cluster.BGPSpec{
				Config: bgp.Config{ASN: 64512, RouterID: netip.MustParseAddr("198.18.1.10"), Routes: routes, Peers: []bgp.Peer{
					{Address: netip.MustParseAddr("198.18.1.1"), ASN: 64512, LocalAddress: netip.MustParseAddr("198.18.1.10"),
						BFD: &bgp.BFD{Interval: 300 * time.Millisecond, Multiplier: 3}},
					{Address: netip.MustParseAddr("10.9.9.9"), ASN: 64512, LocalAddress: netip.MustParseAddr("198.18.1.10"),
						BFD: &bgp.BFD{Interval: 300 * time.Millisecond, Multiplier: 3, Multihop: true}},
				}},
				Checks: map[netip.Addr][]string{}, // monitor port 0: no check, always eligible
				Role:   map[netip.Addr]string{routes[0].VIP: "pool", routes[1].VIP: "pool"},
			},
		},
		{
			name:    "IPv6 pool: IPv6 sessions, the router ID the node's IPv4 address",
			env:     map[string]string{EnvVirtualIPs: "fd00:99::1", EnvBGPPeers: "fd00:1::1,fd00:2::1", EnvBGPPeerASN: "64500"},
			subnets: pfx("fd00:1::10/64", "198.18.1.10/24"),
			want: &cluster.BGPSpec{
				Config: bgp.Config{ASN: 64512, RouterID: netip.MustParseAddr("198.18.1.10"), Routes: []bgp.Route{{VIP: netip.MustParseAddr("fd00:99::1")}},
					Peers: []bgp.Peer{{Address: netip.MustParseAddr("fd00:1::1"), ASN: 64500, LocalAddress: netip.MustParseAddr("fd00:1::10")}}},
				Checks: map[netip.Addr][]string{netip.MustParseAddr("fd00:99::1"): {"chk_pool"}},
				Role:   map[netip.Addr]string{netip.MustParseAddr("fd00:99::1"): "pool"},
			},
		},
		{
			name:    "eBGP, no router on the node's subnets",
			env:     map[string]string{EnvBGPPeers: "198.18.1.1,198.18.2.1", EnvBGPPeerASN: "64500"},
			subnets: pfx("198.18.7.10/24"),
			wantErr: `OPENSHIFT_HA_BGP_PEERS="198.18.1.1,198.18.2.1": no peer is on this node's subnets ([198.18.7.10/24])`,
		},
		{
			name:    "no IPv4 address for the router ID",
			env:     map[string]string{EnvVirtualIPs: "fd00:99::1", EnvBGPPeers: "fd00:1::1"},
			subnets: pfx("fd00:1::10/64"),
			wantErr: "OPENSHIFT_HA_BGP_ASN: this node has no IPv4 address for its BGP router ID",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{EnvConfigName: "pool", EnvVirtualIPs: "198.19.0.1-2", EnvBGPASN: "64512"}
			for k, v := range tc.env {
				env[k] = v
			}
			s, err := Parse(Input{Env: env})
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
	s, err := Parse(Input{Env: map[string]string{EnvConfigName: "pool", EnvVirtualIPs: "198.19.0.1", EnvBGPASN: "64512",
		EnvBGPPeers: "198.18.1.1", EnvCheckInterval: "0.5"}})
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
	s, err := Parse(Input{Env: map[string]string{EnvVirtualIPs: "198.19.0.1-2", EnvBGPASN: "64512", EnvBGPPeerASN: "64500",
		EnvBGPPeers: "198.18.1.1", EnvBGPCommunities: "64512:300", EnvBGPMED: "20", EnvBGPPrepend: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := NodeBGP(s, []netip.Prefix{netip.MustParsePrefix("198.18.1.10/24")})
	if err != nil {
		t.Fatal(err)
	}
	want := bgp.Attributes{Communities: []string{"64512:300"}, MED: new(uint32(20)), Prepend: 1}
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
