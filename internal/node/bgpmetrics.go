package node

import (
	"net/netip"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// The speaker's series, read from its status at each scrape. A node that
// announces nothing by BGP exports none of them.
var (
	bgpSessionUpDesc = prometheus.NewDesc("vipstack_bgp_session_up",
		"1 while the BGP session to the peer is established, 0 while it is not (vipstack status gives its state and why it is held down).", []string{"peer", "peer_asn"}, nil)
	bgpBFDUpDesc = prometheus.NewDesc("vipstack_bgp_bfd_up",
		"1 while the BFD session to the peer is Up, 0 while it is not; only for peers with BFD.", []string{"peer"}, nil)
	bgpAdvertisedDesc = prometheus.NewDesc("vipstack_bgp_routes_advertised",
		"Routes the node advertises to the peer (its Adj-RIB-Out).", []string{"peer"}, nil)
	bgpUpdatesDesc = prometheus.NewDesc("vipstack_bgp_updates_sent_total",
		"UPDATE messages (announcements and withdrawals) sent to the peer since the peer was added to the speaker.", []string{"peer"}, nil)
	bgpAnnouncedDesc = prometheus.NewDesc("vipstack_bgp_vip_announced",
		"1 while the node announces the VIP's host route, 0 while it does not (a check fails; vipstack status says which).", []string{"vip", "role"}, nil)
	bgpDemotedDesc = prometheus.NewDesc("vipstack_bgp_vip_demoted",
		"1 while the node announces the VIP's host route demoted (worse path attributes: a weighted check fails, so routers use it only when no node whose checks pass announces it), 0 otherwise.", []string{"vip", "role"}, nil)
	bgpAnnouncesDesc = prometheus.NewDesc("vipstack_bgp_route_announcements_total",
		"Host routes the speaker announced since it started (each goes to every established peer).", nil, nil)
	bgpWithdrawalsDesc = prometheus.NewDesc("vipstack_bgp_route_withdrawals_total",
		"Host routes the speaker withdrew since it started (a check failed, the VIP left the cluster file, or the node stopped).", nil, nil)
)

// NewBGPCollector exports the vipstack_bgp_* series of a speaker whose
// status is read at each scrape (nil: no speaker runs), for the
// Kubernetes agent.
func NewBGPCollector(status func() *BGPStatus) prometheus.Collector { return bgpCollector{status} }

// bgpCollector exports the speaker's state; status returns nil when the
// node runs no speaker.
type bgpCollector struct{ status func() *BGPStatus }

func (c bgpCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{bgpSessionUpDesc, bgpBFDUpDesc, bgpAdvertisedDesc, bgpUpdatesDesc,
		bgpAnnouncedDesc, bgpDemotedDesc, bgpAnnouncesDesc, bgpWithdrawalsDesc} {
		ch <- d
	}
}

func (c bgpCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.status()
	if st == nil {
		return
	}
	metric := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
	}
	for _, p := range st.Peers {
		metric(bgpSessionUpDesc, prometheus.GaugeValue, b2f(p.Session == "established"), p.Address, uitoa(p.ASN))
		if p.BFD != "" {
			metric(bgpBFDUpDesc, prometheus.GaugeValue, b2f(p.BFD == "up"), p.Address)
		}
		metric(bgpAdvertisedDesc, prometheus.GaugeValue, float64(p.Advertised), p.Address)
		metric(bgpUpdatesDesc, prometheus.CounterValue, float64(p.UpdatesSent), p.Address)
	}
	for _, r := range st.Routes {
		vip := r.Prefix
		if p, err := netip.ParsePrefix(r.Prefix); err == nil {
			vip = p.Addr().String()
		}
		metric(bgpAnnouncedDesc, prometheus.GaugeValue, b2f(r.Announced), vip, r.Role)
		metric(bgpDemotedDesc, prometheus.GaugeValue, b2f(r.Announced && r.Demoted), vip, r.Role)
	}
	metric(bgpAnnouncesDesc, prometheus.CounterValue, float64(st.Announces))
	metric(bgpWithdrawalsDesc, prometheus.CounterValue, float64(st.Withdrawals))
}

func uitoa(u uint32) string { return strconv.FormatUint(uint64(u), 10) }

// bgpStatus is the speaker's status, nil while the node runs none.
func (a *Agent) bgpStatus() *BGPStatus {
	a.mu.Lock()
	r := a.bgp
	a.mu.Unlock()
	if r == nil {
		return nil
	}
	return r.Status()
}
