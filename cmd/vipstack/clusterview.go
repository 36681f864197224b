package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// runKubeClusterStatus is `vipstack status --cluster --kubeconfig FILE`
// (and `kubectl vipstack status`): the agents' status Leases in namespace
// and the LoadBalancer Services, one view; exit codes as runClusterStatus.
func runKubeClusterStatus(ctx context.Context, kubeconfig, namespace, format string, timeout time.Duration, stdout, stderr io.Writer) int {
	cfg, err := kubeConfig(kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack status --cluster: %v\n", err)
		return 2
	}
	cfg.Timeout = timeout
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		fmt.Fprintf(stderr, "vipstack status --cluster: %v\n", err)
		return 2
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err == nil {
		var v clusterstatus.View
		if v, err = clusterstatus.FromKubernetes(ctx, c, namespace, time.Now()); err == nil {
			return printView(v, format, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "vipstack status --cluster: %v\n", err)
	return 2
}

// kubectlArgs turns the arguments of `kubectl vipstack status [flags]`
// (this binary named kubectl-vipstack) into `vipstack status --cluster
// --kubeconfig K [flags]`, K being the first file of $KUBECONFIG or
// ~/.kube/config as kubectl reads them; a --kubeconfig among flags wins.
// Other commands are vipstack's.
func kubectlArgs(args []string) []string {
	if len(args) == 0 || args[0] != "status" {
		return args
	}
	kc := ""
	if l := filepath.SplitList(os.Getenv("KUBECONFIG")); len(l) > 0 {
		kc = l[0]
	} else if home, err := os.UserHomeDir(); err == nil {
		kc = filepath.Join(home, ".kube", "config")
	}
	return append([]string{"status", "--cluster", "--kubeconfig", kc}, args[1:]...)
}
