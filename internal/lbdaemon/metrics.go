package lbdaemon

import "github.com/prometheus/client_golang/prometheus"

// reloadMetrics count the reloads of `vipstack lb`: a refused one leaves
// an older configuration in force, which only the log said.
type reloadMetrics struct {
	total  *prometheus.CounterVec
	lastOK prometheus.Gauge
}

func newReloadMetrics(reg prometheus.Registerer) (*reloadMetrics, error) {
	m := &reloadMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vipstack_lb_reloads_total",
			Help: "Configuration reloads (SIGHUP or a changed file) by result: applied, or refused (the running configuration stays in force).",
		}, []string{"result"}),
		lastOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vipstack_lb_config_last_reload_successful",
			Help: "1 when the last reload was applied (or none was tried), 0 when it was refused and the file on disk is not the configuration in force.",
		}),
	}
	m.total.WithLabelValues("applied")
	m.total.WithLabelValues("refused")
	m.lastOK.Set(1)
	for _, c := range []prometheus.Collector{m.total, m.lastOK} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *reloadMetrics) applied() {
	m.total.WithLabelValues("applied").Inc()
	m.lastOK.Set(1)
}

func (m *reloadMetrics) refused() {
	m.total.WithLabelValues("refused").Inc()
	m.lastOK.Set(0)
}
