package ipfailover

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vipstack/vipstack/internal/bgpconfig"
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
				BFD: &bgpconfig.BFD{Interval: 100 * time.Millisecond, Multiplier: 5, Multihop: true}},
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
				Attributes: bgpconfig.Attributes{Communities: []string{"64512:100", "64512:200"}, LargeCommunities: []string{"4200000000:1:2"},
					LocalPref: new(uint32(300)), MED: new(uint32(0))}},
		},
		{
			name: "prepend over eBGP",
			env:  map[string]string{EnvBGPASN: "64512", EnvBGPPeerASN: "64500", EnvBGPPeers: "198.18.1.1", EnvBGPPrepend: "2", EnvBGPMED: "50"},
			want: &BGPSettings{ASN: 64512, PeerASN: 64500, Peers: []netip.AddrPort{netip.MustParseAddrPort("198.18.1.1:0")},
				Attributes: bgpconfig.Attributes{MED: new(uint32(50)), Prepend: 2}},
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
