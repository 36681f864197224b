package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/clusterstatus"
	"github.com/vipstack/vipstack/internal/node"
)

// serveClusterStatus serves the node's status, read-only, on its own
// addresses at the cluster file's ports.status (when set) to the file's
// nodes, for `vipstack status --cluster` on any of them.
func serveClusterStatus(ctx context.Context, agent *node.Agent, name string, log *slog.Logger) {
	addrs := clusterstatus.ListenAddrs(agent.Cluster(), name)
	h := clusterstatus.Handler(func() any { return agent.Status() },
		func(a netip.Addr) bool { return clusterstatus.Allowed(agent.Cluster(), a) })
	clusterstatus.Serve(ctx, addrs, h, 2*time.Second, log)
}

// runClusterStatus is `vipstack status --cluster --config FILE`: every
// node of the cluster file asked at once, one view. Exit 0 when every VIP
// has one holder and every node answered, 1 when not, 2 when the file
// cannot be used.
func runClusterStatus(ctx context.Context, cfgPath, format string, timeout time.Duration, stdout, stderr io.Writer) int {
	c, err := cluster.Load(cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack status --cluster: %v\n", err)
		return 2
	}
	if c.Ports.Status == 0 {
		fmt.Fprintf(stderr, "vipstack status --cluster: %s: ports.status is not set, so the nodes serve their status on loopback only; "+
			"set it (e.g. ports: {status: 9652}) for the nodes to serve it to each other\n", cfgPath)
		return 2
	}
	expected, err := clusterstatus.ExpectedFor(c)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack status --cluster: %s: %v\n", cfgPath, err)
		return 2
	}
	reports := clusterstatus.Ask(ctx, &http.Client{Timeout: timeout}, c)
	v := clusterstatus.Merge(fmt.Sprintf("cluster %s (cluster file %s)", c.Name, cfgPath), expected, reports)
	return printView(v, format, stdout, stderr)
}

// printView prints v as a table or JSON and returns the exit code: 0 when
// nothing is wrong, 1 when something is.
func printView(v clusterstatus.View, format string, stdout, stderr io.Writer) int {
	write := clusterstatus.WriteTable
	if format == "json" {
		write = clusterstatus.WriteJSON
	}
	if err := write(stdout, v); err != nil {
		fmt.Fprintf(stderr, "vipstack status --cluster: %v\n", err)
		return 1
	}
	if !v.OK() {
		return 1
	}
	return 0
}
