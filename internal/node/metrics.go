package node

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// The node agent's own health, read at each scrape: whether the cluster
// file on disk is the one in force, whether each API VIP redirect is in
// effect, and whether the cluster DNS serves. (The VRRP engine's and the
// load balancer's series are theirs: see docs/metrics.md.)
var (
	configOKDesc = prometheus.NewDesc("vipstack_node_config_last_reload_successful",
		"1 when the cluster file last read is the one in force, 0 when a later version was refused (vipstack status says why) and the running configuration is older than the file.", nil, nil)
	configLoadedDesc = prometheus.NewDesc("vipstack_node_config_last_reload_success_timestamp_seconds",
		"When the cluster file in force was loaded (Unix time).", nil, nil)
	redirectDesc = prometheus.NewDesc("vipstack_node_redirect_in_effect",
		"1 while the redirect of an API VIP to the local load balancer is installed, 0 while it is not (the balancer is not healthy, or installing it failed).", []string{"vip", "to_port"}, nil)
	redirectFailDesc = prometheus.NewDesc("vipstack_node_redirect_failures",
		"Changes of the redirect that failed in a row (retried every second); 0 once one succeeds.", []string{"vip", "to_port"}, nil)
	dnsUpDesc = prometheus.NewDesc("vipstack_node_dns_up",
		"1 while the node's cluster DNS listens, 0 when it should and does not.", nil, nil)
	dnsNodesDesc = prometheus.NewDesc("vipstack_node_dns_nodes",
		"Nodes the cluster DNS knows (from the cluster file and mDNS).", nil, nil)
)

// reloadsCounter counts the cluster file's reloads by result.
func newReloads() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipstack_node_config_reloads_total",
		Help: "Reloads of the cluster file (SIGHUP or a change), by result: applied, or refused (the running configuration stays)."}, []string{"result"})
	c.WithLabelValues("applied")
	c.WithLabelValues("refused")
	return c
}

// healthCollector exports the agent's health.
type healthCollector struct{ a *Agent }

func (c healthCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{configOKDesc, configLoadedDesc, redirectDesc, redirectFailDesc, dnsUpDesc, dnsNodesDesc} {
		ch <- d
	}
}

func (c healthCollector) Collect(ch chan<- prometheus.Metric) {
	a := c.a
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	a.mu.Lock()
	ok, loaded, runDNS, srv := a.loadErr == "", a.lastLoad, a.plan.RunDNS, a.dnsSrv
	a.mu.Unlock()
	gauge(configOKDesc, b2f(ok))
	if !loaded.IsZero() {
		gauge(configLoadedDesc, float64(loaded.UnixNano())/1e9)
	}
	for _, r := range a.redirectStatus() {
		port := strconv.Itoa(int(r.ToPort))
		gauge(redirectDesc, b2f(r.InEffect), r.VIP, port)
		gauge(redirectFailDesc, float64(r.Failures), r.VIP, port)
	}
	if runDNS {
		gauge(dnsUpDesc, b2f(srv != nil && len(srv.Addrs()) > 0))
		gauge(dnsNodesDesc, float64(len(a.nodes.Nodes())))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
