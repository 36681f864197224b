package daemon

import (
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/serve"
)

// StartEndpoints starts a daemon's metrics endpoint (when metricsAddr is
// set) and JSON status endpoint (when statusAddr is set). On failure it
// prints "<command>: --flag: error", closes what it opened and returns
// ok false; otherwise the caller defers stop.
func StartEndpoints(command string, stderr io.Writer, metricsAddr string, g prometheus.Gatherer, statusAddr string, status func() any, opts ...serve.Option) (stop func(), ok bool) {
	var servers []*serve.Server
	stop = func() {
		for _, s := range servers {
			s.Close()
		}
	}
	if metricsAddr != "" {
		s, err := serve.MetricsFrom(metricsAddr, g, opts...)
		if err != nil {
			fmt.Fprintf(stderr, "%s: --metrics-addr: %v\n", command, err)
			return stop, false
		}
		servers = append(servers, s)
	}
	if statusAddr != "" {
		s, err := serve.JSON(statusAddr, "/status", status, opts...)
		if err != nil {
			stop()
			fmt.Fprintf(stderr, "%s: --status-addr: %v\n", command, err)
			return func() {}, false
		}
		servers = append(servers, s)
	}
	return stop, true
}
