package node

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vipstack/vipstack/internal/metrics/metricstest"
)

// TestBGPMetrics: the speaker's status becomes its series, peers by
// address (BFD only where configured), VIPs by address without the
// prefix length; a node without a speaker exports none; the series pass
// the lint and are documented.
func TestBGPMetrics(t *testing.T) {
	var st *BGPStatus
	reg := prometheus.NewRegistry()
	reg.MustRegister(bgpCollector{func() *BGPStatus { return st }})
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Fatalf("without a speaker: %d series (%v), want none", n, err)
	}
	st = &BGPStatus{ASN: 64512, RouterID: "198.18.1.11", Announces: 3, Withdrawals: 1,
		Peers: []BGPPeerStatus{
			{Address: "198.18.1.1", ASN: 64500, Session: "established", BFD: "up", Advertised: 2, UpdatesSent: 4},
			{Address: "198.18.2.1", ASN: 64501, Session: "active", BFD: "waiting for BGP"},
			{Address: "fd00::1", ASN: 64502, Session: "established", Advertised: 0, UpdatesSent: 1},
		},
		Routes: []BGPRouteStatus{
			{Prefix: "198.19.0.5/32", Role: "api", Announced: true},
			{Prefix: "198.19.0.7/32", Role: "ingress", Announced: false, Reason: "chk_ingress failing"},
			{Prefix: "198.19.0.8/32", Role: "ingress", Announced: true, Demoted: true, Reason: "demoted: chk_ingress failing"},
		}}
	want := `
# HELP vipstack_bgp_bfd_up 1 while the BFD session to the peer is Up, 0 while it is not; only for peers with BFD.
# TYPE vipstack_bgp_bfd_up gauge
vipstack_bgp_bfd_up{peer="198.18.1.1"} 1
vipstack_bgp_bfd_up{peer="198.18.2.1"} 0
# HELP vipstack_bgp_route_announcements_total Host routes the speaker announced since it started (each goes to every established peer).
# TYPE vipstack_bgp_route_announcements_total counter
vipstack_bgp_route_announcements_total 3
# HELP vipstack_bgp_route_withdrawals_total Host routes the speaker withdrew since it started (a check failed, the VIP left the cluster file, or the node stopped).
# TYPE vipstack_bgp_route_withdrawals_total counter
vipstack_bgp_route_withdrawals_total 1
# HELP vipstack_bgp_routes_advertised Routes the node advertises to the peer (its Adj-RIB-Out).
# TYPE vipstack_bgp_routes_advertised gauge
vipstack_bgp_routes_advertised{peer="198.18.1.1"} 2
vipstack_bgp_routes_advertised{peer="198.18.2.1"} 0
vipstack_bgp_routes_advertised{peer="fd00::1"} 0
# HELP vipstack_bgp_session_up 1 while the BGP session to the peer is established, 0 while it is not (vipstack status gives its state and why it is held down).
# TYPE vipstack_bgp_session_up gauge
vipstack_bgp_session_up{peer="198.18.1.1",peer_asn="64500"} 1
vipstack_bgp_session_up{peer="198.18.2.1",peer_asn="64501"} 0
vipstack_bgp_session_up{peer="fd00::1",peer_asn="64502"} 1
# HELP vipstack_bgp_updates_sent_total UPDATE messages (announcements and withdrawals) sent to the peer since the peer was added to the speaker.
# TYPE vipstack_bgp_updates_sent_total counter
vipstack_bgp_updates_sent_total{peer="198.18.1.1"} 4
vipstack_bgp_updates_sent_total{peer="198.18.2.1"} 0
vipstack_bgp_updates_sent_total{peer="fd00::1"} 1
# HELP vipstack_bgp_vip_announced 1 while the node announces the VIP's host route, 0 while it does not (a check fails; vipstack status says which).
# TYPE vipstack_bgp_vip_announced gauge
vipstack_bgp_vip_announced{role="api",vip="198.19.0.5"} 1
vipstack_bgp_vip_announced{role="ingress",vip="198.19.0.7"} 0
vipstack_bgp_vip_announced{role="ingress",vip="198.19.0.8"} 1
# HELP vipstack_bgp_vip_demoted 1 while the node announces the VIP's host route demoted (worse path attributes: a weighted check fails, so routers use it only when no node whose checks pass announces it), 0 otherwise.
# TYPE vipstack_bgp_vip_demoted gauge
vipstack_bgp_vip_demoted{role="api",vip="198.19.0.5"} 0
vipstack_bgp_vip_demoted{role="ingress",vip="198.19.0.7"} 0
vipstack_bgp_vip_demoted{role="ingress",vip="198.19.0.8"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	metricstest.Lint(t, reg)
}
