package engine

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/peers"
)

// TestVMACLifecycle: the engine's VMAC decisions for use_vmac, on one
// simulated node (what the kernel makes of the macvlan, and keepalived's
// side, are TestVMACWithKeepalived's): a master creates vrrp.51 with MAC
// 00:00:5e:00:01:33, records it in the VMAC ledger, and holds the VIP on
// it, not on eth0; it removes vrrp.51 when it stops; a run that dies (a
// handover to nobody leaves interfaces and ledgers as kill -9 does) leaves
// it, and the next start removes that one, says so, and makes its own; a
// reload that drops use_vmac moves the VIP to eth0 and removes vrrp.51.
func TestVMACLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := (&simSegment{}).node("n", "198.18.0.1/24")
		const dev, mac = "vrrp.51", "00:00:5e:00:01:33"
		vip := netip.MustParseAddr("198.18.0.100")
		c := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 51, Priority: 150, VIP: netip.PrefixFrom(vip, 32)}
		plain := simConf(t, c, n.name)
		vmac := simWithLines(plain, "use_vmac")
		ledger := netif.Ledger{Path: filepath.Join(t.TempDir(), "n.vips")}
		withLedger := func(o *Options) { o.Ledger = ledger }
		vmacLedger := func() []string {
			t.Helper()
			l, err := netif.VMACLedgerOf(ledger).Load()
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, v := range l {
				out = append(out, v.Name)
			}
			return out
		}
		masterOnVMAC := func(why string) {
			t.Helper()
			simWaitFor(t, why+": the VIP on "+dev, func() (bool, string) {
				return n.has(dev, vip), "not yet"
			})
			if got := n.linkMAC(dev); got != mac {
				t.Errorf("%s: %s has MAC %q, want %s", why, dev, got, mac)
			}
			if n.has(simLinkName, vip) {
				t.Errorf("%s: the VIP is on eth0 as well as on the VMAC", why)
			}
			if got := vmacLedger(); len(got) != 1 || got[0] != dev {
				t.Errorf("%s: the VMAC ledger lists %q, want %s", why, got, dev)
			}
		}

		e, _ := simEngine(t, n, vmac, nil, withLedger)
		stop := simRun(t, e)
		masterOnVMAC("first run")
		stop()
		if got := n.linkMAC(dev); got != "" {
			t.Errorf("the engine stopped but left %s (MAC %s)", dev, got)
		}
		if got := vmacLedger(); len(got) != 0 {
			t.Errorf("after a clean stop the VMAC ledger lists %q", got)
		}

		dying, _ := simEngine(t, n, vmac, nil, withLedger)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- dying.Run(ctx) }()
		masterOnVMAC("the run that dies")
		if _, err := dying.Handoff(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n.linkMAC(dev) == "" {
			t.Fatal("precondition: the dead run left no VMAC to sweep; the test proves nothing")
		}

		e, log := simEngine(t, n, vmac, nil, withLedger)
		simRun(t, e)
		masterOnVMAC("after the restart")
		if !strings.Contains(log.String(), `msg="removed VMAC interface left by an earlier run" vmac=vrrp.51 parent=eth0`) {
			t.Errorf("the restart did not say it removed the VMAC left by the dead run")
		}

		if err := os.WriteFile(e.opts.ConfigPath, []byte(plain), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := e.Reload(); err != nil {
			t.Fatalf("reload: %v", err)
		}
		simWaitFor(t, "the VIP on eth0 after a reload without use_vmac", func() (bool, string) {
			return n.has(simLinkName, vip) && n.linkMAC(dev) == "", "not yet"
		})
		if got := vmacLedger(); len(got) != 0 {
			t.Errorf("after a reload without use_vmac the VMAC ledger lists %q", got)
		}
		if !strings.Contains(log.String(), `msg="VMAC interface removed" vmac=vrrp.51 parent=eth0`) {
			t.Errorf("the reload did not log the removal of %s", dev)
		}
	})
}

// TestVMACReloadKeepsVIPsOnVMAC: a reload that gives a use_vmac master
// one more VIP, keeping its state, adds that VIP on the VMAC interface and
// leaves the one it held there. Before, the new list was made for the
// parent interface: the reload moved every VIP of the instance to eth0.
func TestVMACReloadKeepsVIPsOnVMAC(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := (&simSegment{}).node("n", "198.18.0.1/24")
		const dev = "vrrp.51"
		vip, more := netip.MustParseAddr("198.18.0.100"), netip.MustParseAddr("198.18.0.101")
		c := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 51, Priority: 150, VIP: netip.PrefixFrom(vip, 32)}
		vmac := simWithLines(simConf(t, c, n.name), "use_vmac")
		e, log := simEngine(t, n, vmac, nil)
		simRun(t, e)
		simWaitFor(t, "the VIP on "+dev, func() (bool, string) { return n.has(dev, vip), "not yet" })

		grown := simWithLines(vmac, "virtual_ipaddress_excluded {", "    "+more.String()+"/32", "}")
		if err := os.WriteFile(e.opts.ConfigPath, []byte(grown), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := e.Reload(); err != nil {
			t.Fatalf("reload: %v", err)
		}
		simWaitFor(t, "the new VIP on "+dev, func() (bool, string) { return n.has(dev, more), "not yet" })
		time.Sleep(time.Second) // virtual time: a later move would show
		for _, a := range []netip.Addr{vip, more} {
			if !n.has(dev, a) {
				t.Errorf("after the reload %s is not on %s", a, dev)
			}
			if n.has(simLinkName, a) {
				t.Errorf("after the reload %s is on %s, the VMAC's parent", a, simLinkName)
			}
		}
		// The reload's diff: one VIP added, none removed (the bug read
		// added=2 removed=1, every VIP moved to the parent).
		if !strings.Contains(log.String(), `msg="addresses changed; instance keeps its state" instance=VI_1 added=1 removed=0`) {
			t.Errorf("the reload's diff is not one VIP added and none removed:\n%s", log.String())
		}
	})
}
