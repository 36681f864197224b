package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/handoff"
	"github.com/vipstack/vipstack/internal/k8s/agent"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/serve"
	"github.com/vipstack/vipstack/internal/version"
)

// runAgent runs the Kubernetes node agent: this node's share of every
// VIPGroup it belongs to, with the VRRP engine.
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vipstack agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		kubeconfig   = fs.String("kubeconfig", "", "kubeconfig file; empty: $KUBECONFIG, else the in-cluster ServiceAccount")
		nodeName     = fs.String("node-name", os.Getenv("NODE_NAME"), "this node's Node name (default $NODE_NAME)")
		metricsAddr  = fs.String("metrics-addr", loopback(cluster.DefaultAgentMetricsPort), "Prometheus metrics address (loopback unless told otherwise, e.g. :9654); empty: off")
		statusAddr   = fs.String("status-addr", loopback(cluster.DefaultAgentStatusPort), "JSON status address (loopback only); empty: off")
		healthAddr   = fs.String("health-addr", loopback(cluster.DefaultAgentHealthPort), "address for /healthz (the VRRP engine's loop answers) and /readyz (it runs with the first plan); loopback unless told otherwise, e.g. :9655 for the kubelet's probes; empty: off")
		stateDir     = fs.String("state-dir", "/run/vipstack", "directory for the ledger of held VIPs")
		announceRate = fs.Int("announce-rate", 500, "gratuitous ARP / unsolicited NA per second and instance (0: unlimited)")
		noSuper      = fs.Bool("no-supervisor", false, "run without the supervisor that removes VIPs at once if the agent crashes")
		handoffSock  = fs.String("handoff-socket", handoff.AgentSocket, "abstract Unix socket (on the node's network) by which the agent serving the node hands it to a successor started beside it, so that a rolling update moves no address; empty: off (every stop releases the addresses)")
	)
	logLevel := addLogLevel(fs, "vipstack agent", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vipstack agent: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *nodeName == "" {
		fmt.Fprintln(stderr, "vipstack agent: --node-name is required (or $NODE_NAME, from the pod's spec.nodeName)")
		return 2
	}
	if *statusAddr != "" {
		if err := requireLoopback(*statusAddr); err != nil {
			fmt.Fprintf(stderr, "vipstack agent: --status-addr %q: %v\n", *statusAddr, err)
			return 2
		}
	}
	log, ok := kubeLogger(stderr, logLevel)
	if !ok {
		return 2
	}
	log = log.With("node", *nodeName)
	ledger, err := agentLedger(*stateDir)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack agent: %v\n", err)
		return 1
	}
	cfg, err := kubeConfig(*kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack agent: %v\n", err)
		return 1
	}
	if code, ran := superviseSelf(ctx, log, stderr, "agent", args, *noSuper, func() {
		if *handoffSock != "" && handoff.Held(*handoffSock) {
			// The agent died before it took over from the one that still
			// serves the node: the ledger lists that one's addresses.
			log.Info("supervisor: another agent serves this node; leaving its addresses", "socket", *handoffSock)
			return
		}
		sweepLedger(log, netif.Ledger{Path: ledger})
	}); ran {
		return code
	}
	mgr, err := agent.NewManager(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack agent: %v\n", err)
		return 1
	}
	reg := prometheus.NewRegistry()
	a, err := agent.New(mgr, agent.Options{Node: *nodeName, Logger: log, Registry: reg,
		Ledger: netif.Ledger{Path: ledger}, AnnounceRate: *announceRate, Handoff: *handoffSock, Version: version.String()})
	if err != nil {
		fmt.Fprintf(stderr, "vipstack agent: %v\n", err)
		return 1
	}
	// A successor started beside this agent (a rolling update with surge)
	// listens on the same ports until this one stops: SO_REUSEPORT.
	stopEndpoints, ok := startEndpoints("vipstack agent", stderr, *metricsAddr, reg, *statusAddr, func() any { return a.Status() }, serve.ReusePort())
	if !ok {
		return 1
	}
	defer stopEndpoints()
	if *healthAddr != "" {
		hs, err := serve.Handler(*healthAddr, a.Health(), serve.ReusePort())
		if err != nil {
			fmt.Fprintf(stderr, "vipstack agent: --health-addr: %v\n", err)
			return 1
		}
		defer hs.Close()
	}
	log.Info("vipstack agent starting", "version", version.String(), "api", cfg.Host, "ledger", ledger)
	if err := mgr.Start(ctx); err != nil {
		log.Error("vipstack agent failed", "err", err)
		return 1
	}
	log.Info("vipstack agent stopped")
	return 0
}

// agentLedger names the agent's ledger after the network namespace, apart
// from vipstack vrrp's and vipstack node's, so that they never sweep each
// other's addresses.
func agentLedger(dir string) (string, error) {
	ns, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		ns = "net"
	}
	ns = strings.NewReplacer(":", "", "[", "-", "]", "").Replace(ns)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("state directory: %w", err)
	}
	return filepath.Join(dir, "k8s-agent-"+ns+".vips"), nil
}
