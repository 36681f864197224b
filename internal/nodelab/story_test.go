//go:build linux

package nodelab_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/demo"
	"github.com/vipstack/vipstack/internal/nodelab"
	"github.com/vipstack/vipstack/internal/render"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
)

const (
	stepTimeout = 60 * time.Second
	holdFor     = 2 * time.Second
)

// TestStaticPodStory plays the seeds' story with vipstack as they run it:
// `vipstack render` writes each node's static pod, a real kubelet on each
// of three masters runs it under containerd and runc, and the checks are
// the demo's: the API VIP is held by one master, the API is balanced across
// the masters' (stand-in) API servers through the VIP and the load
// balancers, the cluster DNS answers the cluster's names, and when the
// holder's kubelet, runtime and containers are killed (and its cable
// pulled, as the node is gone) another master takes the VIP.
func TestStaticPodStory(t *testing.T) {
	testnet.RequireRoot(t)
	nodelab.Require(t)
	spec := demo.Spec{Masters: 3}
	dir := t.TempDir()
	// The image as shipped (go run ./hack/image); the manifests name it.
	archive, ref, err := nodelab.BuildVipstackImage(dir, "lab")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := nodelab.BuildStatic(dir, "vipstack", "./cmd/vipstack")
	if err != nil {
		t.Fatal(err)
	}
	var nodes []nodelab.NodeSpec
	for _, n := range spec.Nodes() {
		nodes = append(nodes, nodelab.NodeSpec{Name: n.Name})
	}
	lab := nodelab.Start(t, nodelab.Options{Nodes: nodes, Client: true, Images: []string{archive}})
	removeLedgers(t, lab)
	ctx := t.Context()

	// Each node's manifest, rendered by the CLI as an operator would.
	for _, n := range lab.Nodes {
		cfg := filepath.Join(n.Dir, "cluster.yaml")
		if err := os.WriteFile(cfg, []byte(spec.ClusterYAML()), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(n.Dir, "rendered")
		cmd := exec.Command(bin, "render", "--config", cfg, "--node", n.Name, "--out", out,
			"--no-upstream", "--cluster-path", cfg, "--image", ref)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("vipstack render for %s: %v\n%s", n.Name, err, b)
		}
		pod, err := os.ReadFile(filepath.Join(out, render.VipstackPodPath))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(n.StaticPodDir, "vipstack-node.yaml"), pod, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	view := &syncbuf.Buffer{}
	c, err := demo.Start(ctx, spec, demo.Options{Topology: lab.Topology, NoAgents: true, Out: view})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			t.Logf("---- live view:\n%s", view.String())
			for _, n := range lab.Nodes {
				if log, err := n.ContainerLog("vipstack-node", "vipstack"); err == nil {
					t.Logf("---- %s's vipstack container, last lines:\n%s", n.Name, lastLines(log, 20))
				}
			}
		}
	})

	// The kubelets start the pods; each runs with exactly the capabilities
	// its manifest adds.
	ctrs := map[string]nodelab.Container{}
	for _, n := range lab.Nodes {
		ctr, err := n.WaitContainer(ctx, "vipstack-node", "vipstack", stepTimeout)
		if err != nil {
			t.Fatal(err)
		}
		ctrs[n.Name] = ctr
		pid := ctr.PID
		_, prm, eff, bnd, _, err := testnet.Caps(pid)
		if err != nil {
			t.Fatal(err)
		}
		want := testnet.CapMask(testnet.CapNetBindService, testnet.CapNetAdmin, testnet.CapNetRaw)
		if prm != want || eff != want || bnd != want {
			t.Errorf("%s: vipstack container (pid %d): permitted %s, effective %s, bounding %s; want %s each", n.Name, pid, prm, eff, bnd, want)
		}
	}

	masters := append([]*demo.Node(nil), c.Nodes...)
	if err := c.WaitLBs(ctx, masters, masters, stepTimeout); err != nil {
		t.Fatal(err)
	}
	api, dns := vipOf(t, demo.KindAPI), vipOf(t, demo.KindDNS)
	holder, err := c.WaitHolder(ctx, api, func(*demo.Node) bool { return true }, holdFor, stepTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the API VIP %s is on %s", api, holder.Name)
	// vipstack status in the holder's container says so.
	out, err := lab.Node(holder.Name).Exec(ctrs[holder.Name], "vipstack", "status")
	if err != nil || !strings.Contains(out, "MASTER") {
		t.Errorf("vipstack status in %s's container: %v\n%s", holder.Name, err, out)
	}

	checkDNS(t, c, dns)
	checkBalanced(t, c, dns, masters)

	// The holder's kubelet, runtime and containers die at once; the node
	// is gone.
	if err := lab.KillNode(holder.Name); err != nil {
		t.Fatal(err)
	}
	if err := c.Node(holder.Name).Crash(); err != nil {
		t.Fatal(err)
	}
	next, err := c.WaitHolder(ctx, api, func(n *demo.Node) bool { return n != holder }, holdFor, stepTimeout)
	if err != nil {
		t.Fatalf("after %s was killed: %v", holder.Name, err)
	}
	t.Logf("after %s was killed, the API VIP is on %s", holder.Name, next.Name)
	var alive []*demo.Node
	for _, m := range masters {
		if m != holder {
			alive = append(alive, m)
		}
	}
	checkBalanced(t, c, dns, alive)
}

// removeLedgers removes, once the lab's pods are dead, the VIP ledgers they
// leave in the machine's /run/vipstack (the manifests' hostPath; the nodes
// share the machine's file system): vipstack names each after its network
// namespace, vrrp-net-INODE.vips (vipstack node) or
// k8s-agent-net-INODE.vips (vipstack agent), and writes it through a
// temporary .NAME.tmpNNN that a killed pod may leave behind.
func removeLedgers(t *testing.T, lab *nodelab.Lab) {
	var patterns []string
	for _, n := range lab.Nodes {
		var st syscall.Stat_t
		if err := syscall.Stat("/run/netns/"+n.Host.Name, &st); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("*-net-%d.vips", st.Ino)
		patterns = append(patterns, "/run/vipstack/"+name, "/run/vipstack/."+name+".tmp*")
	}
	lab.AfterKill(func() {
		for _, p := range patterns {
			files, _ := filepath.Glob(p)
			for _, f := range files {
				if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Error(err)
				}
			}
		}
	})
}

// checkDNS asks the cluster DNS (through its VIP) for the cluster's names.
func checkDNS(t *testing.T, c *demo.Cluster, dns netip.Addr) {
	t.Helper()
	want := map[string]netip.Addr{
		"api." + demo.Domain:          vipOf(t, demo.KindAPI),
		"api-int." + demo.Domain:      vipOf(t, demo.KindAPI),
		"console.apps." + demo.Domain: vipOf(t, demo.KindIngress),
	}
	err := c.Poll(t.Context(), stepTimeout, func(ctx context.Context) (bool, string, error) {
		var off []string
		for name, addr := range want {
			got, err := c.Resolve(ctx, dns, name)
			if err != nil || len(got) != 1 || got[0] != addr {
				off = append(off, fmt.Sprintf("%s: %v %v, want %s", name, got, err, addr))
			}
		}
		return len(off) == 0, strings.Join(off, "; "), nil
	})
	if err != nil {
		t.Fatalf("the cluster DNS at %s: %v", dns, err)
	}
}

// checkBalanced fetches the API's /readyz by name through the VIP until
// every master in want has answered.
func checkBalanced(t *testing.T, c *demo.Cluster, dns netip.Addr, want []*demo.Node) {
	t.Helper()
	url := "https://api." + demo.Domain + ":6443/readyz"
	seen := map[string]bool{}
	err := c.Poll(t.Context(), stepTimeout, func(ctx context.Context) (bool, string, error) {
		body, err := c.Get(ctx, dns, url)
		if err != nil {
			return false, err.Error(), nil
		}
		seen[strings.TrimPrefix(body, "ok from ")] = true
		for _, m := range want {
			if !seen[m.Name] {
				return false, fmt.Sprintf("answered so far: %v; want every one of %d masters", seen, len(want)), nil
			}
		}
		return true, "", nil
	})
	if err != nil {
		t.Fatalf("GET %s through the VIP: %v", url, err)
	}
}

func vipOf(t *testing.T, kind string) netip.Addr {
	t.Helper()
	for _, v := range demo.VIPs() {
		if v.Kind == kind {
			return v.Addr
		}
	}
	t.Fatalf("no %s VIP", kind)
	return netip.Addr{}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
