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
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/node"
	"github.com/vipstack/vipstack/internal/redirect"
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

func runNode(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vipstack node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfgPath     = fs.String("config", "/etc/vipstack/cluster.yaml", "the cluster file")
		nodeName    = fs.String("node", "", "this node's name in the cluster file (default: the short host name)")
		metricsAddr = fs.String("metrics-addr", defaultMetricsAddr, "Prometheus metrics address; empty: off")
		statusAddr  = fs.String("status-addr", defaultStatusAddr, "JSON status address (loopback only); empty: off")
		stateDir    = fs.String("state-dir", "/run/vipstack", "directory for the ledger of held VIPs")
		watch       = fs.Duration("watch-interval", time.Second, "how often to look for a changed cluster file; 0: only on SIGHUP")
		noSuper     = fs.Bool("no-supervisor", false, "run without the supervisor that removes VIPs at once if the agent crashes")
		check       = fs.Bool("check", false, "validate the cluster file for this node and exit")
		kubeconfig  = fs.String("kubeconfig", node.DefaultKubeconfig, "the kubeconfig to read the Node list through, when the cluster file sets membership.kubernetes (the kubelet's, as OpenShift's runtimecfg)")
		role        = fs.String("role", "", "this node's role (bootstrap, master or worker) when the cluster file does not list it (default: from its Node object with membership.kubernetes)")
		lbSocket    = fs.String("lb-socket", "", "on a master, serve the load balancer's runtime API (haproxy's stats socket commands: show stat, show servers state, set server B/S state ready|drain|maint) on this Unix socket, level admin, mode 0600; empty: off")
	)
	logLevel := addLogLevel(fs, "vipstack node", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *nodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			fmt.Fprintf(stderr, "vipstack node: --node not given and no host name: %v\n", err)
			return 2
		}
		*nodeName = h
		for i, c := range h {
			if c == '.' {
				*nodeName = h[:i]
				break
			}
		}
	}
	level, ok := logLevel.level(stderr)
	if !ok {
		return 2
	}
	if *statusAddr != "" {
		if err := requireLoopback(*statusAddr); err != nil {
			fmt.Fprintf(stderr, "vipstack node: --status-addr %q: %v\n", *statusAddr, err)
			return 2
		}
	}
	var endpoints []cluster.ServicePort
	for _, ep := range []struct{ flag, addr string }{{"--metrics-addr", *metricsAddr}, {"--status-addr", *statusAddr}} {
		if ep.addr == "" {
			continue
		}
		_, port, err := net.SplitHostPort(ep.addr)
		n, perr := strconv.Atoi(port)
		if err != nil || perr != nil || n < 0 || n > 65535 {
			fmt.Fprintf(stderr, "vipstack node: %s %q: want HOST:PORT with a port 0..65535 (0: any free port), or empty for off\n", ep.flag, ep.addr)
			return 2
		}
		if n != 0 {
			endpoints = append(endpoints, cluster.ServicePort{Owner: "vipstack node's " + ep.flag + " " + ep.addr, Port: n})
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("node", *nodeName)
	ledger, err := ledgerPath(*stateDir)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack node: %v\n", err)
		return 1
	}
	reg := prometheus.NewRegistry()
	agent, err := node.New(node.Options{ClusterPath: *cfgPath, Node: *nodeName, Logger: log, Registry: reg,
		Ledger: netif.Ledger{Path: ledger}, DNSLog: stderr, Endpoints: endpoints, LBSocket: *lbSocket, Version: version.String(),
		Live: node.LiveOptions{Kubeconfig: *kubeconfig, Role: cluster.Role(*role)}})
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	if *check {
		fmt.Fprintf(stdout, "%s: valid for node %s\n", *cfgPath, *nodeName)
		return 0
	}
	if code, ran := superviseSelf(ctx, log, stderr, "node", args, *noSuper, func() {
		sweepLedger(log, netif.Ledger{Path: ledger})
		if names, err := redirect.Sweep(); err != nil {
			log.Error("supervisor: removing the API VIP redirects failed", "err", err)
		} else if len(names) > 0 {
			log.Info("supervisor: removed the crashed agent's redirects", "tables", names)
		}
	}); ran {
		return code
	}
	// CoreDNS's plugins register on Prometheus's default registry.
	stopEndpoints, ok := startEndpoints("vipstack node", stderr, *metricsAddr, prometheus.Gatherers{reg, prometheus.DefaultGatherer}, *statusAddr, func() any { return agent.Status() })
	if !ok {
		return 1
	}
	defer stopEndpoints()
	reload := make(chan os.Signal, 1)
	signal.Notify(reload, syscall.SIGHUP)
	defer signal.Stop(reload)
	go func() {
		var last os.FileInfo
		if st, err := os.Stat(*cfgPath); err == nil {
			last = st
		}
		var tick <-chan time.Time
		if *watch > 0 {
			t := time.NewTicker(*watch)
			defer t.Stop()
			tick = t.C
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-reload:
				log.Info("SIGHUP: reloading the cluster file")
			case <-tick:
				st, err := os.Stat(*cfgPath)
				if err != nil || (last != nil && st.ModTime().Equal(last.ModTime()) && st.Size() == last.Size()) {
					continue
				}
				last = st
				log.Info("the cluster file changed: reloading")
			}
			_ = agent.Reload()
		}
	}()
	if err := agent.Run(ctx); err != nil {
		log.Error("node agent failed", "err", err)
		return 1
	}
	return 0
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vipstack status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", defaultStatusAddr, "the status address of vipstack node (default), or of vipstack vrrp, ipfailover or agent (their --status-addr)")
	out := fs.String("o", "table", "output: table or json")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *out != "table" && *out != "json" {
		fmt.Fprintf(stderr, "vipstack status: -o %q: want table or json\n", *out)
		return 2
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+*addr+"/status", nil)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack status: %v\n", err)
		return 2
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
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
	return 0
}
