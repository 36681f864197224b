package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/chart"
	"github.com/vipstack/vipstack/internal/cleanup"
	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/daemon"
	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/filewatch"
	"github.com/vipstack/vipstack/internal/kadump"
	"github.com/vipstack/vipstack/internal/lbkernel"
	"github.com/vipstack/vipstack/internal/metrics"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/node"
	"github.com/vipstack/vipstack/internal/serve"
	"github.com/vipstack/vipstack/internal/supervise"
	"github.com/vipstack/vipstack/internal/version"
)

// The node agent's default endpoints: the ports cluster validation keeps
// free of the file's services.
var (
	defaultStatusAddr  = loopback(cluster.DefaultStatusPort)
	defaultMetricsAddr = loopback(cluster.DefaultMetricsPort)
)

// loopback is 127.0.0.1:port.
func loopback(port uint16) string {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), port).String()
}

// nodeFlags are the flags of `vipstack node`.
type nodeFlags struct {
	cfgPath, nodeName, metricsAddr, statusAddr, stateDir, lbSocket string
	kubeconfig, role                                               string
	watch                                                          time.Duration
	noSuper, check, bgpKeep                                        bool
	datapath                                                       lbkernel.Mode
	endpoints                                                      []cluster.ServicePort
	log                                                            *slog.Logger
	logFlags                                                       *daemon.LogFlags
	kaCompat                                                       *kadump.Flags
}

// releaseNode releases what a crashed agent held: its VIPs (the ledgers:
// VRRP's, and BGP's on lo) and the API VIP redirects.
func releaseNode(log *slog.Logger, ledgers ...netif.Ledger) {
	for _, l := range ledgers {
		cleanup.Ledger(log, l)
	}
	cleanup.Redirects(log)
}

func runNode(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseNodeFlags(args, stderr)
	if !ok {
		return code
	}
	log := f.log
	ledger, err := netif.LedgerIn(f.stateDir, "vrrp")
	if err != nil {
		fmt.Fprintf(stderr, "vipstack node: %v\n", err)
		return 1
	}
	bgpLedger, err := netif.LedgerIn(f.stateDir, "bgp")
	if err != nil {
		fmt.Fprintf(stderr, "vipstack node: %v\n", err)
		return 1
	}
	onCrash := func() { releaseNode(log, ledger, bgpLedger) }
	if supervise.IsCleanup() {
		// A small supervisor's clean-up after its agent died: the ledger
		// and the redirects, whatever the cluster file now says.
		onCrash()
		return 0
	}
	daemon.HeapSamplingAtRest(false) // vipstack node serves no profiles
	reg := metrics.NewRegistry()
	agent, err := node.New(node.Options{ClusterPath: f.cfgPath, Node: f.nodeName, Logger: log, Registry: reg,
		Ledger: ledger, BGPLedger: bgpLedger, DNSLog: stderr, Endpoints: f.endpoints, LBSocket: f.lbSocket, Version: version.String(), Datapath: f.datapath,
		Live: node.LiveOptions{Kubeconfig: f.kubeconfig, Role: cluster.Role(f.role)}, BGPStopKeepsRoutes: f.bgpKeep})
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	if f.check {
		fmt.Fprintf(stdout, "%s: valid for node %s\n", f.cfgPath, f.nodeName)
		return 0
	}
	if supervising(f.noSuper) {
		agent = nil // built to check the configuration; the child serves it
		// The supervisor runs before the packages the agent uses
		// initialise (docs/design/memory.md); this returns only if it
		// cannot, and this process supervises instead.
		spec := f.logFlags.Spec("node", f.nodeName)
		// A clean-up after a crash releases these from the
		// initialisation (package cleanup/early), not after it.
		spec.Ledgers, spec.Redirects = []string{ledger.Path, bgpLedger.Path}, true
		if err := supervise.ExecSupervisor(spec); err != nil {
			log.Warn("supervisor: cannot run as a small process; supervising from this one", "err", err)
		}
	}
	if code, ran := superviseSelf(ctx, log, stderr, "node", args, f.noSuper, onCrash); ran {
		return code
	}
	// CoreDNS's plugins register on Prometheus's default registry.
	stopEndpoints, ok := daemon.StartEndpoints("vipstack node", stderr, f.metricsAddr, metrics.Merge(reg, prometheus.DefaultGatherer), f.statusAddr, func() any { return agent.Status() })
	if !ok {
		return 1
	}
	defer stopEndpoints()
	stopKACompat, err := f.kaCompat.Start(log, func() []engine.InstanceStatus { return agent.Status().VRRP }, nil, reg)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack node: --keepalived-exporter-compat: %v\n", err)
		return 1
	}
	defer stopKACompat()
	serveClusterStatus(ctx, agent, f.nodeName, log)
	hup := make(chan os.Signal, 1)
	daemon.NotifyReload(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go reloadClusterFile(ctx, f.cfgPath, f.watch, hup, log, func() { _ = agent.Reload() })
	daemon.TrimAtRest(ctx, log, agent.Ready(), false) // vipstack node serves no profiles
	if err := agent.Run(ctx); err != nil {
		log.Error("node agent failed", "err", err)
		return 1
	}
	return 0
}

func parseNodeFlags(args []string, stderr io.Writer) (f nodeFlags, code int, ok bool) {
	fs := flag.NewFlagSet("vipstack node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.cfgPath, "config", "/etc/vipstack/cluster.yaml", "the cluster file")
	fs.StringVar(&f.nodeName, "node", "", "this node's name in the cluster file (default: the short host name)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", defaultMetricsAddr, "Prometheus metrics address; empty: off")
	fs.StringVar(&f.statusAddr, "status-addr", defaultStatusAddr, "JSON status address (loopback only); empty: off")
	fs.StringVar(&f.stateDir, "state-dir", "/run/vipstack", "directory for the ledger of held VIPs")
	fs.DurationVar(&f.watch, "watch-interval", time.Second, "how often to look for a changed cluster file; 0: only on SIGHUP")
	fs.BoolVar(&f.noSuper, "no-supervisor", false, "run without the supervisor that removes VIPs at once if the agent crashes")
	fs.BoolVar(&f.check, "check", false, "validate the cluster file for this node and exit")
	fs.StringVar(&f.kubeconfig, "kubeconfig", node.DefaultKubeconfig, "the kubeconfig to read the Node list through, when the cluster file sets membership.kubernetes (the kubelet's, as OpenShift's runtimecfg)")
	fs.StringVar(&f.role, "role", "", "this node's role (bootstrap, master or worker) when the cluster file does not list it (default: from its Node object with membership.kubernetes)")
	fs.StringVar(&f.lbSocket, "lb-socket", "", "on a master, serve the load balancer's runtime API (haproxy's stats socket commands: show stat, show servers state, set server B/S state ready|drain|maint) on this Unix socket, level admin, mode 0600; empty: off")
	fs.BoolVar(&f.bgpKeep, "bgp-stop-keeps-routes", false, "on SIGTERM, leave the BGP routes announced and the VIPs on lo instead of withdrawing them, for a restart or an upgrade: routers with graceful restart (the peers' gracefulRestart) keep the routes until the next agent is up; a node stopped for good then draws traffic until that time passes")
	datapath := fs.String("datapath", "relay", "how a master's load balancer carries the API VIPs' connections: relay (redirect to the user-space relay, the default), kernel (nftables DNAT from VIP:ports.api to the masters, health checks in user space; refused when it cannot serve as the relay would) or auto (kernel where possible); see docs/lb-kernel.md")
	f.kaCompat = kadump.AddFlags(fs)
	f.logFlags = daemon.AddLogFlags(fs, "vipstack node", "")
	if err := fs.Parse(args); err != nil {
		return f, daemon.ParseExit(err), false
	}
	var err error
	if f.datapath, err = lbkernel.ParseMode(*datapath); err != nil {
		fmt.Fprintf(stderr, "vipstack node: --%v\n", err)
		return f, 2, false
	}
	if f.nodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			fmt.Fprintf(stderr, "vipstack node: --node not given and no host name: %v\n", err)
			return f, 2, false
		}
		f.nodeName, _, _ = strings.Cut(h, ".")
	}
	if f.log, ok = f.logFlags.Logger(stderr); !ok {
		return f, 2, false
	}
	f.log = f.log.With("node", f.nodeName)
	if f.statusAddr != "" {
		if err := daemon.RequireLoopback(f.statusAddr); err != nil {
			fmt.Fprintf(stderr, "vipstack node: --status-addr %q: %v\n", f.statusAddr, err)
			return f, 2, false
		}
	}
	for _, ep := range []struct{ flag, addr string }{{"--metrics-addr", f.metricsAddr}, {"--status-addr", f.statusAddr}} {
		if ep.addr == "" {
			continue
		}
		_, port, err := net.SplitHostPort(ep.addr)
		n, perr := strconv.Atoi(port)
		if err != nil || perr != nil || n < 0 || n > 65535 {
			fmt.Fprintf(stderr, "vipstack node: %s %q: want HOST:PORT with a port 0..65535 (0: any free port), or empty for off\n", ep.flag, ep.addr)
			return f, 2, false
		}
		if n != 0 {
			f.endpoints = append(f.endpoints, cluster.ServicePort{Owner: "vipstack node's " + ep.flag + " " + ep.addr, Port: n})
		}
	}
	return f, 0, true
}

// reloadClusterFile calls reload on each signal from hup and, checking
// every watch (0: never), when the file at path changed; one reload at a
// time, until ctx is done.
func reloadClusterFile(ctx context.Context, path string, watch time.Duration, hup <-chan os.Signal, log *slog.Logger, reload func()) {
	changed := make(chan struct{}, 1)
	if watch > 0 {
		go filewatch.Watch(ctx, clock.Real{}, path, watch, func() {
			select {
			case changed <- struct{}{}:
			default: // one is already pending; it will read the newest file
			}
		}, log)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			log.Info("SIGHUP: reloading the cluster file")
		case <-changed:
			log.Info("the cluster file changed: reloading")
		}
		reload()
	}
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vipstack status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", defaultStatusAddr, "the status address of vipstack node (default), or of vipstack vrrp, ipfailover or agent (their --status-addr)")
	out := fs.String("o", "table", "output: table or json")
	all := fs.Bool("cluster", false, "every node of the cluster file (--config) in one view: exit 1 when a VIP has no or two holders or a node does not answer")
	cfgPath := fs.String("config", "/etc/vipstack/cluster.yaml", "with --cluster: the cluster file, whose ports.status the nodes serve their status on")
	kubeconfig := fs.String("kubeconfig", "", "with --cluster: Kubernetes mode, the agents' status Leases and the LoadBalancer Services (kubectl vipstack status sets it)")
	namespace := fs.String("namespace", chart.Namespace, "with --kubeconfig: the agents' namespace")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for each node (or the API server)")
	if err := fs.Parse(args); err != nil {
		return daemon.ParseExit(err)
	}
	if *out != "table" && *out != "json" {
		fmt.Fprintf(stderr, "vipstack status: -o %q: want table or json\n", *out)
		return 2
	}
	if *all && *kubeconfig != "" {
		return runKubeClusterStatus(ctx, *kubeconfig, *namespace, *out, *timeout, stdout, stderr)
	}
	if *all {
		return runClusterStatus(ctx, *cfgPath, *out, *timeout, stdout, stderr)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+*addr+"/status", nil)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack status: %v\n", err)
		return 2
	}
	resp, err := (&http.Client{Timeout: *timeout}).Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack status: no node agent answers on %s: %v\n", *addr, err)
		return 1
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err == nil {
		err = printStatus(stdout, body, *out, time.Now())
	}
	if err != nil {
		fmt.Fprintf(stderr, "vipstack status: bad answer from %s: %v\n", *addr, err)
		return 1
	}
	if resp.StatusCode != http.StatusOK {
		why := resp.Header.Get(serve.NotLiveHeader)
		if why == "" {
			why = "(the answer does not say why)"
		}
		fmt.Fprintf(stderr, "vipstack status: %s answers %s: not live: %s\n", *addr, resp.Status, why)
		return 1
	}
	return 0
}
