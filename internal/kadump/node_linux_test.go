package kadump

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestExporterScrapesVipstackNode: `vipstack node
// --keepalived-exporter-compat`, alone on its link, becomes master of the
// API and ingress VIPs; scraped as keepalived-exporter scrapes, each VIP's
// keepalived_vrrp_state is 2 and each instance became master once.
func TestExporterScrapesVipstackNode(t *testing.T) {
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vkx"})
	h := topo.Hosts[0]
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`name: lab
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
vrrp:
  unicast: false
nodes:
  - {name: master-0, role: master, ips: [%s]}
  - {name: master-1, role: master, ips: [198.18.0.99]}
`, h.IPv4.Addr())), 0o600); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "keepalived.pid")
	n, err := peers.StartCmd(h, h.Command(bin, "node", "--config", cfg, "--node", "master-0",
		"--state-dir", filepath.Join(dir, "state"), "--no-supervisor", "--watch-interval", "0",
		"--keepalived-exporter-compat", "--keepalived-exporter-pid-file", pidFile, "--keepalived-exporter-dir", dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = n.Kill()
		if t.Failed() {
			t.Logf("---- vipstack node, last lines:\n%s", testutil.Tail(n.Log(), 40))
		}
	})
	var series []string
	err = testutil.Poll(30*time.Second, func() error {
		var err error
		if series, err = scrape(pidFile, dir, SigStats, SigData); err != nil {
			return err
		}
		for _, vip := range []string{"198.18.0.5", "198.18.0.7"} {
			found := false
			for _, s := range series {
				if strings.HasPrefix(s, "keepalived_vrrp_state{") && strings.Contains(s, `ip_address="`+vip+`"`) {
					found = true
					if !strings.HasSuffix(s, "} 2") {
						return fmt.Errorf("%s", s)
					}
				}
			}
			if !found {
				return fmt.Errorf("no keepalived_vrrp_state for %s in\n%s", vip, strings.Join(series, "\n"))
			}
		}
		// The stats file and the data file are written at two signals, as
		// keepalived writes them: a transition between the two pairs a
		// MASTER in the data with the counts from before it in the stats.
		// Both are read again until they agree.
		return becameMasterOnce(series)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("vipstack node, as the exporter reads it:\n%s", strings.Join(series, "\n"))
}

// becameMasterOnce wants each instance's keepalived_become_master_total
// at 1, for the API's and the ingress's instance.
func becameMasterOnce(series []string) error {
	masters := 0
	for _, s := range series {
		if strings.HasPrefix(s, "keepalived_become_master_total{") {
			masters++
			if !strings.HasSuffix(s, "} 1") {
				return fmt.Errorf("%s, want 1", s)
			}
		}
	}
	if masters < 2 {
		return fmt.Errorf("%d instances with keepalived_become_master_total, want the API's and the ingress's", masters)
	}
	return nil
}
