package node

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestOverridesJoinKeepalived migrates one node of a keepalived cluster
// whose API instance came from an older installer (seed 001: ocp4_API on
// VRID 29, multicast, priority 40; here with its own password, which the
// derivation would not give either): keepalived on master-0 holds the API
// VIP, and `vipstack node` on master-1 starts with the cluster file's
// overrides. It joins keepalived's VRRP router as a backup (keepalived
// stays the only holder, and vipstack reports it as the master), and takes
// the VIP when keepalived stops. Without the overrides it would run
// another router (the derived VRID) and hold the VIP beside keepalived.
func TestOverridesJoinKeepalived(t *testing.T) {
	testnet.RequireRoot(t)
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vmb"})
	old, mig := topo.Hosts[0], topo.Hosts[1]
	dir := t.TempDir()

	ka, err := peers.Start(old, peers.Keepalived, fmt.Sprintf(`global_defs {
    router_id master-0
}
vrrp_instance ocp4_API {
    state BACKUP
    interface %s
    virtual_router_id 29
    priority 40
    advert_int 1
    authentication {
        auth_type PASS
        auth_pass oldpass1
    }
    virtual_ipaddress {
        198.18.0.5/24
    }
}
`, old.Link), filepath.Join(dir, "keepalived"), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = ka.Kill()
		if t.Failed() {
			t.Logf("---- keepalived, last lines:\n%s", testutil.Tail(ka.Log(), 20))
		}
	})
	vip := netip.MustParseAddr("198.18.0.5")
	if _, err := peers.WaitSoleHolder(topo.Hosts, vip, old, time.Second, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	cfg := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`name: ocp4
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
vrrp:
  unicast: false
  api: {vrid: 29, priority: 40, password: oldpass1}
nodes:
  - {name: master-0, role: master, ips: [%s]}
  - {name: master-1, role: master, ips: [%s]}
`, old.IPv4.Addr(), mig.IPv4.Addr())), 0o600); err != nil {
		t.Fatal(err)
	}
	vs, err := peers.StartCmd(mig, mig.Command(bin, "node", "--config", cfg, "--node", "master-1",
		"--state-dir", filepath.Join(dir, "vipstack"), "--no-supervisor", "--watch-interval", "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = vs.Kill()
		if t.Failed() {
			t.Logf("---- vipstack node, last lines:\n%s", testutil.Tail(vs.Log(), 30))
		}
	})
	sampler := sampleHolders(t, topo.Hosts, vip)
	waitFor(t, 20*time.Second, "vipstack's ocp4_API a backup of keepalived", func() (bool, string) {
		for _, in := range nodeStatus(t, mig).VRRP {
			if in.Name == "ocp4_API" {
				return in.VRID == 29 && in.State == "BACKUP" && in.Master == old.IPv4.Addr().String() && in.AdvertsRecv > 2,
					fmt.Sprintf("VRID %d %s, master %q, %d adverts received", in.VRID, in.State, in.Master, in.AdvertsRecv)
			}
		}
		return false, "no ocp4_API instance"
	})
	sampler.freeze()
	time.Sleep(3 * time.Second) // three more adverts: still keepalived's alone
	sampler.stop()
	if hs := sampler.now()[vip]; len(hs) != 1 || hs[0] != old.Name {
		t.Fatalf("the API VIP is held by %v, want keepalived's %s alone", hs, old.Name)
	}
	for _, in := range nodeStatus(t, mig).VRRP {
		if in.Name == "ocp4_API" && len(in.Conflicts) > 0 {
			t.Errorf("vipstack reports conflicts with keepalived: %+v", in.Conflicts)
		}
	}

	// keepalived stops (priority 0): the migrated node takes over.
	if err := ka.Term(); err != nil {
		t.Fatal(err)
	}
	if d, err := peers.WaitSoleHolder(topo.Hosts, vip, mig, time.Second, 15*time.Second); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("keepalived stopped: the vipstack node holds the API VIP after %v", d.Round(time.Millisecond))
	}
	if !strings.Contains(vs.Log(), "ocp4_API") {
		t.Errorf("vipstack's log never names ocp4_API")
	}
}
