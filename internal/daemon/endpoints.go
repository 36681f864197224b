package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/netif"
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

// SweepLedger removes every VIP recorded in the ledger: the supervisor's
// clean-up after an engine crash.
func SweepLedger(log *slog.Logger, l netif.Ledger) {
	h, err := netif.Open()
	if err != nil {
		log.Error("supervisor: cannot open netlink to remove VIPs", "err", err)
		return
	}
	defer h.Close()
	removed, err := h.Sweep(l)
	logRemoved(log, removed)
	if err != nil {
		log.Error("supervisor: removing VIPs failed", "ledger", l.Path, "err", err)
	}
}

// sweepLogged is how many removed VIPs SweepLedger logs one by one at
// info; past it, a line for them all (with the first ones) at info, and
// each at debug: the clean-up after an engine holding 10,000 VIPs wrote
// 10,000 lines.
const sweepLogged = 16

func logRemoved(log *slog.Logger, removed []netif.VIP) {
	if len(removed) <= sweepLogged {
		for _, v := range removed {
			log.Info("supervisor: removed VIP of the crashed engine", "vip", v.Prefix, "dev", v.Dev)
		}
		return
	}
	first := make([]string, 0, sweepLogged)
	for _, v := range removed[:sweepLogged] {
		first = append(first, v.Prefix.String()+" dev "+v.Dev)
	}
	log.Info("supervisor: removed VIPs of the crashed engine", "count", len(removed), "first", strings.Join(first, ", "))
	for _, v := range removed {
		log.Debug("supervisor: removed VIP of the crashed engine", "vip", v.Prefix, "dev", v.Dev)
	}
}
