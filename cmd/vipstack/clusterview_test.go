package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestKubectlArgs: as kubectl-vipstack, `status` is the Kubernetes
// cluster view with kubectl's kubeconfig; a --kubeconfig after it wins
// (the flag package keeps the last); other commands pass through.
func TestKubectlArgs(t *testing.T) {
	t.Setenv("HOME", "/home/op")
	for _, tc := range []struct {
		name, env  string
		args, want []string
	}{
		{name: "kubectl's default file", args: []string{"status"}, want: []string{"status", "--cluster", "--kubeconfig", "/home/op/.kube/config"}},
		{name: "first file of $KUBECONFIG", env: "/a/k1" + string(os.PathListSeparator) + "/a/k2", args: []string{"status", "-o", "json"},
			want: []string{"status", "--cluster", "--kubeconfig", "/a/k1", "-o", "json"}},
		{name: "own --kubeconfig last", args: []string{"status", "--kubeconfig", "/x"}, want: []string{"status", "--cluster", "--kubeconfig", "/home/op/.kube/config", "--kubeconfig", "/x"}},
		{name: "other command", args: []string{"version"}, want: []string{"version"}},
		{name: "nothing", args: nil, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.env)
			if d := cmp.Diff(tc.want, kubectlArgs(tc.args)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestClusterStatusNeedsStatusPort: without ports.status the cluster
// view cannot ask the nodes; it exits 2 saying what to set. A file that
// does not load exits 2 naming it.
func TestClusterStatusNeedsStatusPort(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(`name: c1
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
nodes:
  - {name: master-0, role: master, ips: [198.18.0.11]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want string
	}{
		{cfg, "ports.status is not set"},
		{filepath.Join(dir, "none.yaml"), "none.yaml"},
	} {
		var stdout, stderr bytes.Buffer
		code := run([]string{"status", "--cluster", "--config", tc.path}, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("status --cluster --config %s: exit %d, %q; want 2 and %q", tc.path, code, stderr.String(), tc.want)
		}
	}
}
