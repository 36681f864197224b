package agent

import (
	"net/netip"

	"github.com/prometheus/client_golang/prometheus"
)

// announcedDesc is MetalLB's metallb_speaker_announced for vipstack: which
// node holds (answers ARP / NDP for) a Service's address. The Service is
// one label, NAMESPACE/NAME as MetalLB's: a label "namespace" would
// replace the scrape target's (the release namespace) under the
// monitors' honorLabels, and the dashboard and rules select by that.
var announcedDesc = prometheus.NewDesc("vipstack_agent_announced",
	"1 for each LoadBalancer Service address this node holds now (it is VRRP master of the address's instance and the address is on its interface); absent on the other nodes.",
	[]string{"service", "ip", "node"}, nil)

// servicesOf maps each address of views to its Service.
func servicesOf(views []GroupView) map[netip.Addr]string {
	out := map[netip.Addr]string{}
	for _, g := range views {
		for _, v := range g.VIPs {
			out[v.Addr] = v.Service
		}
	}
	return out
}

// announcedCollector exports vipstack_agent_announced from the engine's
// status at each scrape.
type announcedCollector struct{ a *Agent }

func (c announcedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- announcedDesc }

func (c announcedCollector) Collect(ch chan<- prometheus.Metric) {
	a := c.a
	a.mu.Lock()
	eng, services, node := a.eng, a.services, a.opts.Node
	a.mu.Unlock()
	if eng == nil {
		return
	}
	seen := map[netip.Addr]bool{}
	for _, s := range eng.Status() {
		for _, v := range s.Held() {
			p, err := netip.ParsePrefix(v)
			if err != nil || seen[p.Addr()] {
				continue
			}
			svc, ok := services[p.Addr()]
			if !ok {
				continue // an address of no Service (none today)
			}
			seen[p.Addr()] = true
			ch <- prometheus.MustNewConstMetric(announcedDesc, prometheus.GaugeValue, 1, svc, p.Addr().String(), node)
		}
	}
}
