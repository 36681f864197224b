// Command vipstack is the on-premise cluster networking stack: VRRP virtual
// IPs, and (in later subcommands) load balancing, DNS and discovery.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	// The small supervisor of `vipstack node`, `vrrp` and `ipfailover`
	// runs from its initialisation, and so does the engine of `vrrp` and
	// `ipfailover` (VRRP mode) under it, and the clean-up after a crash
	// (docs/design/memory.md).
	_ "github.com/vipstack/vipstack/internal/cleanup/early"
	_ "github.com/vipstack/vipstack/internal/ipfailoverd/early"
	_ "github.com/vipstack/vipstack/internal/supervise/early"
	"github.com/vipstack/vipstack/internal/version"
	_ "github.com/vipstack/vipstack/internal/vrrpd/early"
)

func main() {
	args := os.Args[1:]
	if filepath.Base(os.Args[0]) == "kubectl-vipstack" { // kubectl's plugin: `kubectl vipstack status`
		args = kubectlArgs(args)
	}
	os.Exit(run(args, os.Stdout, os.Stderr))
}

const usage = `vipstack: virtual IPs, load balancing and DNS for on-premise clusters.

Usage:
  vipstack vrrp -f /etc/keepalived/keepalived.conf [--check] [--metrics-addr ADDR] [--status-addr ADDR]
  vipstack lb -f haproxy.cfg [--check] [--metrics-addr ADDR] [--redirect VIP:PORT] [--datapath relay|kernel|auto] [--http-engine std|loop|auto]
  vipstack dns -conf Corefile [-check] [-plugins] [-mdns-cluster NAME -node-name N -node-role R -node-addr A [-mdns-openshift=false]]
  vipstack demo [--keep]
  vipstack node --config cluster.yaml --node NAME [--status-addr ADDR] [--metrics-addr ADDR] [--datapath relay|kernel|auto]
  vipstack status [--addr 127.0.0.1:9651] [-o table|json]
  vipstack status --cluster [--config cluster.yaml] [-o table|json]   (every node and VIP; exit 1 when something is wrong)
  vipstack status --cluster --kubeconfig FILE [--namespace vipstack-system]   (or kubectl vipstack status: Services and agents)
  vipstack render --config cluster.yaml --node NAME --out DIR [--interface IF]
  vipstack manifest ipfailover [NAME] --virtual-ips VIPS [--replicas N] [--selector K=V] ...   (the Deployment oc adm ipfailover creates)
  vipstack redirect --vip VIP:PORT --to-port PORT --monitor URL   (haproxy-monitor: VIP to the local balancer while it is healthy)
  vipstack ipfailover [flags]   (or the OPENSHIFT_HA_* environment of OpenShift's ipfailover image)
  vipstack controller --kubeconfig FILE   (LoadBalancer Services: IP pools, VRIDs; leader-elected)
  vipstack agent --kubeconfig FILE --node-name NAME   (serves the node's VIP groups)
  vipstack version

Run "vipstack COMMAND -h" for a command's flags.
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	switch args[0] {
	case "vrrp":
		return runVRRP(ctx, args[1:], stdout, stderr)
	case "lb":
		return runLB(ctx, args[1:], stdout, stderr)
	case "dns":
		return runDNS(ctx, args[1:], stdout, stderr)
	case "ipfailover":
		return runIPFailover(ctx, args[1:], stdout, stderr)
	case "demo":
		return runDemo(ctx, args[1:], stdout, stderr)
	case "controller":
		return runController(ctx, args[1:], stdout, stderr)
	case "agent":
		return runAgent(ctx, args[1:], stdout, stderr)
	case "node":
		return runNode(ctx, args[1:], stdout, stderr)
	case "status":
		return runStatus(ctx, args[1:], stdout, stderr)
	case "render":
		return runRender(ctx, args[1:], stdout, stderr)
	case "manifest":
		return runManifest(ctx, args[1:], stdout, stderr)
	case "redirect":
		return runRedirect(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, version.Get())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "vipstack: unknown command %q\n\n%s", args[0], usage)
	return 2
}
