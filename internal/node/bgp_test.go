package node

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/bgp"
	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/track"
)

// TestBGPVerdicts: a VIP's verdict follows its checks as VRRP's priority
// would: all pass, eligible; a failing weighted check (weight != 0),
// demoted; a failing fatal one (weight 0) or one not running, not
// eligible, whatever the others say.
func TestBGPVerdicts(t *testing.T) {
	api, dns, pool := netip.MustParseAddr("198.19.255.5"), netip.MustParseAddr("198.19.255.53"), netip.MustParseAddr("198.19.1.1")
	spec := &cluster.BGPSpec{
		Config: bgp.Config{Routes: []bgp.Route{{VIP: api}, {VIP: dns}, {VIP: pool}}},
		Checks: map[netip.Addr][]string{api: {"chk_ocp_lb", "chk_ocp_both"}, pool: {"chk_pool"}},
		Role:   map[netip.Addr]string{api: "api", dns: "dns", pool: "pool"},
	}
	weights := map[string]int{"chk_ocp_lb": 20, "chk_ocp_both": 5, "chk_pool": 0}
	ok := track.Status{OK: true}
	dnsOK := bgp.Verdict{VIP: dns, Eligible: true, Reason: "no checks for the dns VIP on this node"}
	for _, tc := range []struct {
		name   string
		status map[string]track.Status
		want   []bgp.Verdict
	}{
		{name: "checks pass", status: map[string]track.Status{"chk_ocp_lb": ok, "chk_ocp_both": ok, "chk_pool": ok}, want: []bgp.Verdict{
			{VIP: api, Eligible: true, Reason: "chk_ocp_lb ok, chk_ocp_both ok"},
			dnsOK,
			{VIP: pool, Eligible: true, Reason: "chk_pool ok"},
		}},
		{name: "weighted check fails: demoted", status: map[string]track.Status{"chk_ocp_lb": {Reason: "198.18.0.1:9445/readyz: L4CON \nconnection refused"}, "chk_ocp_both": ok, "chk_pool": ok}, want: []bgp.Verdict{
			{VIP: api, Eligible: true, Demoted: true, Reason: "chk_ocp_lb failing (198.18.0.1:9445/readyz: L4CON connection refused), weight +20, chk_ocp_both ok"},
			dnsOK,
			{VIP: pool, Eligible: true, Reason: "chk_pool ok"},
		}},
		{name: "fatal check fails: not eligible", status: map[string]track.Status{"chk_ocp_lb": ok, "chk_ocp_both": ok, "chk_pool": {Reason: "exit status 1"}}, want: []bgp.Verdict{
			{VIP: api, Eligible: true, Reason: "chk_ocp_lb ok, chk_ocp_both ok"},
			dnsOK,
			{VIP: pool, Reason: "chk_pool failing (exit status 1), fatal (weight 0)"},
		}},
		{name: "no result yet, one not running", status: map[string]track.Status{"chk_ocp_lb": {OK: true, Pending: true}}, want: []bgp.Verdict{
			{VIP: api, Reason: "chk_ocp_both not running, chk_ocp_lb has no result yet, weight +20"},
			dnsOK,
			{VIP: pool, Reason: "chk_pool not running"},
		}},
		{name: "both weighted checks fail", status: map[string]track.Status{"chk_ocp_lb": {}, "chk_ocp_both": {OK: true, Pending: true}, "chk_pool": ok}, want: []bgp.Verdict{
			{VIP: api, Eligible: true, Demoted: true, Reason: "chk_ocp_lb failing, weight +20, chk_ocp_both has no result yet, weight +5"},
			dnsOK,
			{VIP: pool, Eligible: true, Reason: "chk_pool ok"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := verdicts(spec, weights, tc.status)
			if d := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
				t.Errorf("verdicts (-want +got):\n%s", d)
			}
		})
	}
}

func TestBGPChecksAndSpeaker(t *testing.T) {
	vip := netip.MustParseAddr("198.19.255.5")
	checks := []cluster.CheckSpec{{Name: "chk_ocp_lb", URLs: []string{"https://localhost:9445/readyz"}}, {Name: "chk_ingress"}}
	spec := &cluster.BGPSpec{Config: bgp.Config{ASN: 64512}, Checks: map[netip.Addr][]string{vip: {"chk_ocp_lb"}}}
	if d := cmp.Diff([]string{"chk_ocp_lb"}, names(bgpChecks(spec, checks))); d != "" {
		t.Errorf("checks of the BGP VIPs (-want +got):\n%s", d)
	}
	other := *spec
	other.Config.ASN = 64513
	moved := *spec
	moved.Config.RouterID = netip.MustParseAddr("198.18.1.11")
	peers := *spec
	peers.Config.Peers = []bgp.Peer{{Address: netip.MustParseAddr("198.18.1.1"), ASN: 64500}}
	for _, tc := range []struct {
		name string
		a, b *cluster.BGPSpec
		want string
	}{
		{name: "same", a: spec, b: spec},
		{name: "peers change in place", a: spec, b: &peers},
		{name: "ASN changed", a: spec, b: &other, want: "bgp.asn changes (64512 to 64513)"},
		{name: "router ID changed", a: spec, b: &moved, want: "the node's router ID changes (invalid IP to 198.18.1.11)"},
		{name: "BGP turned off", a: spec, b: nil, want: "the node stops announcing VIPs by BGP"},
		{name: "BGP turned on", a: nil, b: spec, want: "the node starts announcing VIPs by BGP"},
		{name: "neither"},
	} {
		if got := speakerRestart(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: speakerRestart = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func names(cs []cluster.CheckSpec) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestWriteBGP(t *testing.T) {
	var b strings.Builder
	WriteBGP(&b, &BGPStatus{ASN: 64512, RouterID: "198.18.1.11",
		Peers: []BGPPeerStatus{
			{Address: "198.18.1.1", ASN: 64500, Session: "established", BFD: "up", Advertised: 1},
			{Address: "198.18.2.1", ASN: 64512, IBGP: true, Session: "idle", BFD: "down", HeldDown: "BFD session to 198.18.2.1 went down (control detection time expired)"},
		},
		Routes: []BGPRouteStatus{
			{Prefix: "198.19.255.5/32", Role: "api", Announced: true, Reason: "eligible: chk_ocp_lb ok"},
			{Prefix: "198.19.255.7/32", Role: "ingress", Reason: "not eligible: chk_ingress failing (\x1b[31m)"},
			{Prefix: "198.19.255.8/32", Role: "ingress", Announced: true, Demoted: true, Reason: "demoted: chk_ingress failing, weight +50"},
			{Prefix: "198.19.255.9/32", Role: "dns", Announced: true, Demoted: true, Reason: "chk_dns failing"},
		}})
	want := `
bgp: AS 64512, router ID 198.18.1.11
peer 198.18.1.1 AS 64500 (eBGP): established, 1 routes sent, BFD up
peer 198.18.2.1 AS 64512 (iBGP): idle, 0 routes sent, BFD down
    held down: BFD session to 198.18.2.1 went down (control detection time expired)
route 198.19.255.5/32 (api): announced: eligible: chk_ocp_lb ok
route 198.19.255.7/32 (ingress): not announced: not eligible: chk_ingress failing (<1B>[31m)
route 198.19.255.8/32 (ingress): announced: demoted: chk_ingress failing, weight +50
route 198.19.255.9/32 (dns): announced, demoted: chk_dns failing
`
	if d := cmp.Diff(want, b.String()); d != "" {
		t.Errorf("table (-want +got):\n%s", d)
	}
}

// TestWriteBGPStoppedRetried: a speaker that stopped and is started
// again by its process (the k8s agent) is shown stopped with its next
// start, not as a liveness failure.
func TestWriteBGPStoppedRetried(t *testing.T) {
	var b strings.Builder
	WriteBGP(&b, &BGPStatus{ASN: 64512, RouterID: "198.18.1.11", Stopped: "bgp: peer 198.18.1.1: refused",
		Retry:  "at 2026-12-03T15:00:04Z",
		Routes: []BGPRouteStatus{{Prefix: "198.19.0.1/32", Role: "service ns/web", Reason: "the speaker stopped (see stopped)"}}})
	want := `
bgp: AS 64512, router ID 198.18.1.11
    stopped: bgp: peer 198.18.1.1: refused; starts again at 2026-12-03T15:00:04Z
route 198.19.0.1/32 (service ns/web): not announced: the speaker stopped (see stopped)
`
	if d := cmp.Diff(want, b.String()); d != "" {
		t.Errorf("table (-want +got):\n%s", d)
	}
}
