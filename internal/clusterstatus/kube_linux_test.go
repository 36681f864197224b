package clusterstatus_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/chart"
	"github.com/vipstack/vipstack/internal/clusterstatus"
	"github.com/vipstack/vipstack/internal/k8s/k8slab"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestKubernetesView runs the Kubernetes lab (a real API server, the
// controller, three agents in network namespaces, one LoadBalancer
// Service): the agents' status Leases give the view the node that holds
// the Service's address (the one whose link carries it), every agent
// answers, and `kubectl vipstack status` (the binary named
// kubectl-vipstack, kubectl's $KUBECONFIG) prints the same, exit 0.
func TestKubernetesView(t *testing.T) {
	testnet.RequireRoot(t)
	dir := t.TempDir()
	bin, err := peers.BuildVipstack(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	l := k8slab.Start(ctx, t, k8slab.Options{Nodes: 3, Services: 1, Prefix: "vo2k", Bin: bin, Advert: 200 * time.Millisecond})
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range l.Nodes {
				t.Logf("---- agent %s log (tail):\n%s", n.Name, testutil.Tail(n.Log(), 20))
			}
		}
	})
	vip := netip.PrefixFrom(l.VIPs[0], 32).String() // as the engine reports it
	var v clusterstatus.View
	var x clusterstatus.VIP
	testutil.Eventually(t, 30*time.Second, func() error {
		var holders []string
		for _, n := range l.Nodes {
			if ok, err := n.Host.HasAddr(l.VIPs[0]); err != nil {
				return err
			} else if ok {
				holders = append(holders, n.Name)
			}
		}
		if v, err = clusterstatus.FromKubernetes(ctx, l.Admin, chart.Namespace, time.Now()); err != nil {
			return err
		}
		x = clusterstatus.VIP{}
		for _, y := range v.VIPs {
			if slices.Contains(y.Addresses, vip) {
				x = y
			}
		}
		if len(holders) != 1 || !slices.Equal(x.Holders, holders) {
			return fmt.Errorf("the view says %v hold %s, the links say %v (nodes %+v, problems %q)", x.Holders, vip, holders, v.Nodes, v.Problems)
		}
		if len(v.Nodes) != 3 || !v.OK() {
			return fmt.Errorf("nodes %d, problems %q", len(v.Nodes), v.Problems)
		}
		return nil
	})
	if x.Service != k8slab.ServiceNamespace+"/"+k8slab.ServiceName(0) {
		t.Errorf("the view names Service %q for %s, want %s/%s", x.Service, vip, k8slab.ServiceNamespace, k8slab.ServiceName(0))
	}

	plugin := filepath.Join(dir, "kubectl-vipstack")
	if err := os.Symlink(bin, plugin); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, int) {
		c := exec.Command(plugin, args...)
		c.Env = append(os.Environ(), "KUBECONFIG="+l.Env.Kubeconfig)
		out, err := c.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatalf("kubectl-vipstack: %v", err)
		}
		return string(out), 0
	}
	out, code := run("status", "-o", "json")
	var pv clusterstatus.View
	if err := json.Unmarshal([]byte(out), &pv); err != nil || code != 0 {
		t.Fatalf("kubectl vipstack status -o json: exit %d, %v:\n%s", code, err, out)
	}
	for _, y := range pv.VIPs {
		if slices.Contains(y.Addresses, vip) && !slices.Equal(y.Holders, x.Holders) {
			t.Errorf("kubectl vipstack status: %s held by %v, want %v", vip, y.Holders, x.Holders)
		}
	}
	out, code = run("status")
	t.Logf("kubectl vipstack status (exit %d):\n%s", code, out)
	if code != 0 || !strings.Contains(out, x.Holders[0]) {
		t.Errorf("kubectl vipstack status: exit %d, want 0 naming %s", code, x.Holders[0])
	}
}
