package render

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestUpstreamDaemonsAcceptRenderedConfigs renders each role's files and
// has the real daemons check them inside a namespace whose eth0 carries the
// node's addresses: `keepalived -t -f` (as root, so script security is
// checked for real) and `haproxy -c -f`; then vipstack's own checks, the
// code behind `vipstack vrrp --check` (engine.Check, which also checks the
// scripts' security) and `vipstack lb --check` (haproxycfg.Load). The
// Corefile is checked by TestCorefileServes, which needs no root.
func TestUpstreamDaemonsAcceptRenderedConfigs(t *testing.T) {
	testnet.RequireRoot(t)
	for _, p := range []string{"keepalived", "haproxy"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("skipping: %s is not installed (the root tier checks the rendered configs with the real daemons)", p)
		}
	}
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsM"})
	h := topo.Hosts[0]
	// Host 1 is 198.18.0.11 and fd00:bb::11 (master-0 and m0); give it the
	// other rendered nodes' addresses too, so every unicast_src_ip is local.
	for _, a := range []string{"198.18.0.10/24", "198.18.0.21/24"} {
		if _, err := h.Run("ip", "addr", "add", a, "dev", h.Link); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		name    string
		cluster string // "" for the demo cluster
		node    string
		lb      bool
	}{
		{name: "bootstrap", node: "bootstrap"},
		{name: "master-0", node: "master-0", lb: true},
		{name: "worker-0", node: "worker-0"},
		{name: "ipv6 master", cluster: v6Cluster, node: "m0", lb: true},
		{name: "dual-stack master", cluster: dualCluster, node: "m0", lb: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := demo(t)
			if tc.cluster != "" {
				c = parseCluster(t, tc.cluster)
			}
			files, err := Files(c, tc.node, Options{Interface: h.Link})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if _, err := WriteDir(dir, files, false); err != nil {
				t.Fatal(err)
			}
			conf := filepath.Join(dir, filepath.FromSlash(KeepalivedConfPath))
			if out, err := h.Run("keepalived", "-t", "-f", conf); err != nil {
				t.Errorf("keepalived -t rejects the rendered configuration: %v\n%s", err, out)
			}
			if _, err := engine.Check(conf); err != nil {
				t.Errorf("vipstack vrrp --check: %v", err)
			}

			cfg := filepath.Join(dir, filepath.FromSlash(HAProxyCfgPath))
			if _, err := os.Stat(cfg); (err == nil) != tc.lb {
				t.Fatalf("haproxy.cfg rendered = %v, want %v", err == nil, tc.lb)
			}
			if !tc.lb {
				return
			}
			out, err := h.Run("haproxy", "-c", "-f", cfg)
			if err != nil || !strings.Contains(out, "Configuration file is valid") {
				t.Errorf("haproxy -c rejects the rendered configuration: %v\n%s", err, out)
			}
			if strings.Contains(out, "WARNING") || strings.Contains(out, "ALERT") {
				t.Errorf("haproxy -c warns:\n%s", out)
			}
			if _, err := haproxycfg.Load(cfg); err != nil {
				t.Errorf("vipstack lb --check: %v", err)
			}
		})
	}
}
