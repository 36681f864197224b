package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/vipstack/vipstack/internal/cleanup"
	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/daemon"
	"github.com/vipstack/vipstack/internal/handoff"
	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/agent"
	"github.com/vipstack/vipstack/internal/metrics"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/serve"
	"github.com/vipstack/vipstack/internal/version"
)

// agentFlags are the flags of `vipstack agent`.
type agentFlags struct {
	kubeconfig, nodeName, namespace, metricsAddr, statusAddr, healthAddr, stateDir, handoffSock, publishNS string
	metrics                                                                                                metricsAuthFlags
	mem                                                                                                    kubeMemFlags
	announceRate                                                                                           int
	noSuper                                                                                                bool
	log                                                                                                    *slog.Logger
}

// runAgent runs the Kubernetes node agent: this node's share of every
// VIPGroup it belongs to, with the VRRP engine.
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseAgentFlags(args, stderr)
	if !ok {
		return code
	}
	log := f.log
	// Apart from vipstack vrrp's and vipstack node's ledger, so that they
	// never sweep each other's addresses.
	ledger, err := netif.LedgerIn(f.stateDir, "k8s-agent")
	if err != nil {
		fmt.Fprintf(stderr, "vipstack agent: %v\n", err)
		return 1
	}
	cfg, err := kubeConfig(f.kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack agent: %v\n", err)
		return 1
	}
	if code, ran := superviseSelf(ctx, log, stderr, "agent", args, f.noSuper, func() {
		if f.handoffSock != "" && handoff.Held(f.handoffSock) {
			// The agent died before it took over from the one that still
			// serves the node: the ledger lists that one's addresses.
			log.Info("supervisor: another agent serves this node; leaving its addresses", "socket", f.handoffSock)
			return
		}
		cleanup.Ledger(log, ledger)
	}); ran {
		return code
	}
	mgr, err := agent.NewManager(cfg, agent.ManagerOptions{Logger: log, PprofAddr: f.mem.pprofAddr})
	if err != nil {
		fmt.Fprintf(stderr, "vipstack agent: %v\n", err)
		return 1
	}
	reg := metrics.NewRegistry()
	a, err := agent.New(mgr, agent.Options{Node: f.nodeName, Logger: log, Registry: reg,
		Ledger: ledger, AnnounceRate: f.announceRate, Handoff: f.handoffSock, Version: version.String(), PublishNamespace: f.publishNS, Namespace: f.namespace})
	if err != nil {
		fmt.Fprintf(stderr, "vipstack agent: %v\n", err)
		return 1
	}
	// A successor started beside this agent (a rolling update with surge)
	// listens on the same ports until this one stops: SO_REUSEPORT.
	metricsAddr := f.metricsAddr
	if f.metrics.auth == "kubernetes" && metricsAddr != "" {
		ms, err := serveAuthMetrics(ctx, cfg, metricsAddr, reg, f.metrics, []string{f.nodeName}, log, serve.ReusePort())
		if err != nil {
			fmt.Fprintf(stderr, "vipstack agent: %v\n", err)
			return 1
		}
		defer ms.Close()
		metricsAddr = "" // served above
	}
	stopEndpoints, ok := daemon.StartEndpoints("vipstack agent", stderr, metricsAddr, reg, f.statusAddr, func() any { return a.Status() }, serve.ReusePort())
	if !ok {
		return 1
	}
	defer stopEndpoints()
	if f.healthAddr != "" {
		hs, err := serve.Handler(f.healthAddr, a.Health(), serve.ReusePort())
		if err != nil {
			fmt.Fprintf(stderr, "vipstack agent: --health-addr: %v\n", err)
			return 1
		}
		defer hs.Close()
	}
	log.Info("vipstack agent starting", "version", version.String(), "api", cfg.Host, "ledger", ledger.Path)
	daemon.TrimAtRest(ctx, log, synced(ctx, mgr.GetCache().WaitForCacheSync), f.mem.pprofAddr != "")
	f.mem.start(ctx, log, os.Getenv)
	if err := mgr.Start(ctx); err != nil {
		log.Error("vipstack agent failed", "err", err)
		return 1
	}
	log.Info("vipstack agent stopped")
	return 0
}

func parseAgentFlags(args []string, stderr io.Writer) (f agentFlags, code int, ok bool) {
	fs := flag.NewFlagSet("vipstack agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; empty: $KUBECONFIG, else the in-cluster ServiceAccount")
	fs.StringVar(&f.nodeName, "node-name", os.Getenv("NODE_NAME"), "this node's Node name (default $NODE_NAME)")
	fs.StringVar(&f.namespace, "namespace", envOr("POD_NAMESPACE", k8s.DefaultNamespace), "the release namespace, where the controller keeps the copies of the VRRP passwords (default $POD_NAMESPACE when set)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", loopback(cluster.DefaultAgentMetricsPort), "Prometheus metrics address (loopback unless told otherwise, e.g. :9654); empty: off")
	fs.StringVar(&f.statusAddr, "status-addr", loopback(cluster.DefaultAgentStatusPort), "JSON status address (loopback only); empty: off")
	fs.StringVar(&f.healthAddr, "health-addr", loopback(cluster.DefaultAgentHealthPort), "address for /healthz (the VRRP engine's loop answers) and /readyz (it runs with the first plan); loopback unless told otherwise, e.g. :9655 for the kubelet's probes; empty: off")
	fs.StringVar(&f.stateDir, "state-dir", "/run/vipstack", "directory for the ledger of held VIPs")
	fs.IntVar(&f.announceRate, "announce-rate", 500, "gratuitous ARP / unsolicited NA per second and instance, for the repeats: the first of each address leaves at once (0: unlimited)")
	fs.BoolVar(&f.noSuper, "no-supervisor", false, "run without the supervisor that removes VIPs at once if the agent crashes")
	fs.StringVar(&f.handoffSock, "handoff-socket", handoff.AgentSocket, "abstract Unix socket (on the node's network) by which the agent serving the node hands it to a successor started beside it, so that a rolling update moves no address; empty: off (every stop releases the addresses)")
	fs.StringVar(&f.publishNS, "publish-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the agent's status Lease (vipstack-agent-NODE), read by `vipstack status --cluster --kubeconfig` (default $POD_NAMESPACE); empty: none")
	f.metrics.add(fs)
	f.mem.add(fs)
	logLevel := daemon.AddLogFlags(fs, "vipstack agent", "")
	if code, ok := daemon.ParseNoArgs(fs, args, stderr); !ok {
		return f, code, false
	}
	// The chart passes $(POD_IP):PORT, which for an IPv6 pod address
	// lacks the brackets.
	f.metricsAddr, f.healthAddr = bracketIPv6(f.metricsAddr), bracketIPv6(f.healthAddr)
	if !f.metrics.check("vipstack agent", stderr) || !f.mem.check("vipstack agent", fs, stderr) {
		return f, 2, false
	}
	if err := checkNamespace(f.namespace); err != nil {
		fmt.Fprintf(stderr, "vipstack agent: --namespace: %v\n", err)
		return f, 2, false
	}
	if f.nodeName == "" {
		fmt.Fprintln(stderr, "vipstack agent: --node-name is required (or $NODE_NAME, from the pod's spec.nodeName)")
		return f, 2, false
	}
	if f.statusAddr != "" {
		if err := daemon.RequireLoopback(f.statusAddr); err != nil {
			fmt.Fprintf(stderr, "vipstack agent: --status-addr %q: %v\n", f.statusAddr, err)
			return f, 2, false
		}
	}
	if f.log, ok = kubeLogger(stderr, logLevel); !ok {
		return f, 2, false
	}
	f.log = f.log.With("node", f.nodeName)
	return f, 0, true
}

// bracketIPv6 writes ADDR:PORT with an IPv6 ADDR and no brackets (as
// Kubernetes expands "$(POD_IP):9654") as [ADDR]:PORT; any other text it
// returns as it is, for the listener to accept or refuse.
func bracketIPv6(addr string) string {
	if _, _, err := net.SplitHostPort(addr); err == nil || addr == "" {
		return addr
	}
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return addr
	}
	if ip, err := netip.ParseAddr(addr[:i]); err == nil && ip.Is6() {
		return net.JoinHostPort(addr[:i], addr[i+1:])
	}
	return addr
}
