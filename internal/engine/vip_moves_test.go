package engine

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
)

// TestRemovesPresentVIPsAtStart: a configured VIP already on the interface
// when vipstack starts (left by a keepalived or a vipstack killed together
// with its ledger) is removed before the instance runs, as keepalived does
// at start, so a backup does not hold it beside the master.
func TestRemovesPresentVIPsAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		master, backup := seg.node("master", "198.18.0.1/24"), seg.node("backup", "198.18.0.2/24")
		vip := netip.MustParseAddr("198.18.0.100")
		conf := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 61, VIP: netip.PrefixFrom(vip, 32)}

		// What a killed keepalived left on the backup.
		backup.addAddr(simLinkName, "198.18.0.100/32", false)
		mc := conf
		mc.Priority = 200
		me, _ := simEngine(t, master, simConf(t, mc, master.name), nil)
		simRun(t, me)
		simWaitSole(t, []*simNode{master}, vip, master, time.Second, 20*time.Second, "the master did not take the VIP")
		bc := conf
		bc.Priority = 100
		be, log := simEngine(t, backup, simConf(t, bc, backup.name), nil)
		simRun(t, be)
		simWaitSole(t, []*simNode{master, backup}, vip, master, time.Second, 20*time.Second, "the VIP left on the backup before its start")
		if !strings.Contains(log.String(), "removed a configured VIP present at start") {
			t.Errorf("the backup's log does not say it removed the VIP")
		}
		if !backup.has(simLinkName, netip.MustParseAddr("198.18.0.2")) {
			t.Errorf("the backup's own address 198.18.0.2/24 is gone")
		}
	})
}

// TestReloadMovesVIPBetweenMasters: a reload moves a VIP from one instance
// to another, both MASTER on this node (a generated configuration, such as
// ipfailover's, regroups its VIPs). The VIP must stay on the interface
// throughout. The instance that gained it added it (already there) and then
// the one that lost it, handled after it, removed it from under it: the
// VIP was gone until the address watcher made its new owner step down and
// take it again (before the watcher, for good). Sampled every 10 ms (of
// virtual time, each sample once the engine is idle) for 2 s after the
// reload.
func TestReloadMovesVIPBetweenMasters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := (&simSegment{}).node("h", "198.18.0.1/24")
		a, moved, b := "198.18.0.100", "198.18.0.101", "198.18.0.102"
		conf := func(va, vb string) string {
			text := "global_defs {\n    router_id n1\n    vrrp_version 3\n}\n"
			for _, in := range []struct {
				name string
				vrid int
				vip  string
			}{{"VI_A", 51, va}, {"VI_B", 52, vb}} {
				text += fmt.Sprintf("vrrp_instance %s {\n    state BACKUP\n    interface eth0\n    virtual_router_id %d\n"+
					"    priority 100\n    advert_int 0.1\n    virtual_ipaddress {\n        %s/32\n    }\n}\n", in.name, in.vrid, in.vip)
			}
			return text
		}
		e, _ := simEngine(t, h, conf(a, moved+"/32\n        "+b), nil)
		simRun(t, e)
		all := []netip.Addr{netip.MustParseAddr(a), netip.MustParseAddr(moved), netip.MustParseAddr(b)}
		holds := func() map[netip.Addr]bool {
			got := map[netip.Addr]bool{}
			for _, v := range all {
				got[v] = h.has(simLinkName, v)
			}
			return got
		}
		simWaitFor(t, "both instances master with their VIPs", func() (bool, string) {
			got := holds()
			return got[all[0]] && got[all[1]] && got[all[2]], fmt.Sprint(got)
		})

		if err := os.WriteFile(e.opts.ConfigPath, []byte(conf(a+"/32\n        "+moved, b)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := e.Reload(); err != nil {
			t.Fatal(err)
		}
		missing := map[netip.Addr]int{}
		samples := 0
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			synctest.Wait()
			got := holds()
			samples++
			for _, v := range all {
				if !got[v] {
					missing[v]++
				}
			}
		}
		for _, v := range all {
			if missing[v] > 0 {
				t.Errorf("%v missing in %d of %d samples after the reload; a VIP that moves between two masters of this node must stay", v, missing[v], samples)
			}
		}
	})
}

// TestReloadMovesVIPFromStoppedInstance: a VIP moves from an instance the
// reload removes to another master of this node, kept in place (the
// Kubernetes agent's Service instance when externalTrafficPolicy goes
// from Local back to Cluster). The stopped instance must not remove it:
// the master that took it over would find it gone behind its back, step
// down and drop its other VIPs too (seen in bench/chaos -k8s).
func TestReloadMovesVIPFromStoppedInstance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := (&simSegment{}).node("h", "198.18.0.1/24")
		a, moved, b := "198.18.0.100", "198.18.0.101", "198.18.0.102"
		inst := func(name string, vrid int, vips string) string {
			return fmt.Sprintf("vrrp_instance %s {\n    state BACKUP\n    interface eth0\n    virtual_router_id %d\n"+
				"    priority 100\n    advert_int 0.1\n    virtual_ipaddress {\n        %s\n    }\n}\n", name, vrid, vips)
		}
		head := "global_defs {\n    router_id n1\n    vrrp_version 3\n}\n"
		// VI_A sorts before VI_LOCAL: the reload updates it first.
		before := head + inst("VI_A", 51, a+"/32") + inst("VI_B", 52, b+"/32") + inst("VI_LOCAL", 53, moved+"/32")
		after := head + inst("VI_A", 51, a+"/32\n        "+moved+"/32") + inst("VI_B", 52, b+"/32")
		e, _ := simEngine(t, h, before, nil)
		simRun(t, e)
		all := []netip.Addr{netip.MustParseAddr(a), netip.MustParseAddr(moved), netip.MustParseAddr(b)}
		holds := func() map[netip.Addr]bool {
			got := map[netip.Addr]bool{}
			for _, v := range all {
				got[v] = h.has(simLinkName, v)
			}
			return got
		}
		simWaitFor(t, "the three instances master with their VIPs", func() (bool, string) {
			got := holds()
			return got[all[0]] && got[all[1]] && got[all[2]], fmt.Sprint(got)
		})
		if err := os.WriteFile(e.opts.ConfigPath, []byte(after), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := e.Reload(); err != nil {
			t.Fatal(err)
		}
		missing := map[netip.Addr]int{}
		samples := 0
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			synctest.Wait()
			got := holds()
			samples++
			for _, v := range all {
				if !got[v] {
					missing[v]++
				}
			}
		}
		for _, v := range all {
			if missing[v] > 0 {
				t.Errorf("%v missing in %d of %d samples after the reload; a VIP that moves from a stopped master to a kept one of this node must stay, and so must the kept one's others", v, missing[v], samples)
			}
		}
	})
}

// TestReloadKeepsHeldOnCurrentList: after reloads that each add a VIP to a
// master in place, every VIP it holds is held through its current list.
// An entry left on an earlier list kept that list, and the configuration
// it points into, for as long as the VIP was held: a list per reload.
func TestReloadKeepsHeldOnCurrentList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := (&simSegment{}).node("h", "198.18.0.1/24")
		vips := []string{"198.18.0.100", "198.18.0.101", "198.18.0.102"}
		conf := func(n int) string {
			return "global_defs {\n    vrrp_version 3\n}\nvrrp_instance VI_1 {\n    state BACKUP\n    interface eth0\n    virtual_router_id 51\n    priority 100\n" +
				"    advert_int 0.1\n    virtual_ipaddress {\n        " + strings.Join(vips[:n], "/32\n        ") + "/32\n    }\n}\n"
		}
		e, _ := simEngine(t, h, conf(1), nil)
		simRun(t, e)
		for n := 1; n <= len(vips); n++ {
			if n > 1 {
				if err := os.WriteFile(e.opts.ConfigPath, []byte(conf(n)), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := e.Reload(); err != nil {
					t.Fatal(err)
				}
			}
			last := netip.MustParseAddr(vips[n-1])
			simWaitFor(t, fmt.Sprintf("%d VIPs held", n), func() (bool, string) { return h.has(simLinkName, last), "not yet" })
		}
		synctest.Wait() // the loop waits: its state may be read
		in := e.instances["VI_1"]
		if len(in.vips) != len(vips) {
			t.Fatalf("the instance has %d VIPs, want %d", len(in.vips), len(vips))
		}
		for i := range in.vips {
			if e.held.get(in.vips[i].Prefix, in.vips[i].Dev) != &in.vips[i] {
				t.Errorf("%s on %s is held through another list than the instance's", in.vips[i].Prefix, in.vips[i].Dev)
			}
		}
	})
}
