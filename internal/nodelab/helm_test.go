//go:build linux

package nodelab_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/chart"
	"github.com/vipstack/vipstack/internal/nodelab"
	"github.com/vipstack/vipstack/internal/version"
)

// TestHelmInstallOnNodes installs the chart with helm on three real nodes:
// the agents' containers run with exactly the capabilities the chart's
// manifest declares (NET_ADMIN and NET_RAW, read from /proc), a
// LoadBalancer Service's address answers from the client namespace, and
// helm uninstall leaves no address and no vipstack nftables rule on any
// node.
func TestHelmInstallOnNodes(t *testing.T) {
	var helm chart.Helm
	helmInstall := func(t *testing.T, lab *nodelab.Lab, _ client.Client, ref string) {
		t.Helper()
		root, err := nodelab.ModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		bin, err := chart.FindHelm(t.Context(), root)
		if err != nil {
			t.Fatal(err)
		}
		helm = chart.Helm{Bin: bin, Chart: root + "/charts/vipstack"}
		repo, tag, _ := strings.Cut(ref, ":")
		if repo != version.Repository {
			t.Fatalf("image %s is not in the chart's repository %s", ref, version.Repository)
		}
		out, err := helm.Run(t.Context(), "install", chart.Release, helm.Chart, "--kubeconfig", lab.Kube.Kubeconfig,
			"--namespace", "vipstack-system", "--create-namespace",
			"--set", "image.tag="+tag, "--set", "image.pullPolicy=Never")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	lab, c, svc := installLB(t, helmInstall)
	ctx := t.Context()

	checkAgentCaps(ctx, t, lab)
	addr := waitLBAddress(t, c, svc)
	holder := waitAnswers(t, lab, addr, nil)
	t.Logf("%s answers from the client; held by %s", addr, holder.Name)

	out, err := helm.Run(ctx, "uninstall", chart.Release, "--kubeconfig", lab.Kube.Kubeconfig, "--namespace", "vipstack-system", "--wait")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	err = poll(ctx, 60*time.Second, func() (bool, string) {
		var left []string
		for _, n := range lab.Nodes {
			cs, err := n.Containers()
			if err != nil {
				return false, err.Error()
			}
			for _, c := range cs {
				if strings.HasPrefix(c.Pod, "vipstack-") {
					left = append(left, n.Name+": "+c.Pod+"/"+c.Name)
				}
			}
			if ok, err := n.Host.HasAddr(addr); err != nil || ok {
				left = append(left, fmt.Sprintf("%s holds %s (%v)", n.Name, addr, err))
			}
			rules, err := n.Host.Run("nft", "list", "ruleset")
			if err != nil || strings.Contains(rules, "vipstack") {
				left = append(left, fmt.Sprintf("%s: nftables: %v\n%s", n.Name, err, rules))
			}
		}
		return len(left) == 0, strings.Join(left, "; ")
	})
	if err != nil {
		t.Fatalf("after helm uninstall: %v", err)
	}
}
