package engine

import (
	"net/netip"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
)

// TestReloadAuthOrVersionKeepsMaster: a reload that changes the
// authentication or the VRRP version keeps a master's state and VIP, as
// keepalived 2.2.7 keeps its own (measured in namespaces: auth_pass
// secret1 -> secret2, PASS -> none, version 2 -> 3: no priority 0, the VIP
// present in every 10 ms sample, the next advert at once in the new form).
// vipstack restarted the instance: its master sent priority 0 and dropped
// the VIP, the backup took it, and the master preempted it back seconds
// later. Both nodes reload, the master first; the backup (keepalived in
// namespaces, an engine here) must never hold the VIP and the master must
// hold it in every sample.
func TestReloadAuthOrVersionKeepsMaster(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before func(*peers.Conf)
		after  func(*peers.Conf)
	}{
		{name: "auth_pass", before: func(c *peers.Conf) { c.Auth = "secret1" }, after: func(c *peers.Conf) { c.Auth = "secret2" }},
		{name: "auth removed", before: func(c *peers.Conf) { c.Auth = "secret1" }, after: func(c *peers.Conf) { c.Auth = "" }},
		{name: "version 2 to 3", before: func(c *peers.Conf) { c.Auth = "" }, after: func(c *peers.Conf) { c.Auth, c.Version = "", 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				seg := &simSegment{}
				master, backup := seg.node("n1", "198.18.0.1/24"), seg.node("n2", "198.18.0.2/24")
				nodes := []*simNode{master, backup}
				vip := netip.MustParseAddr("198.18.0.100")
				conf := func(prio int, fs ...func(*peers.Conf)) peers.Conf {
					c := peers.Conf{Version: 2, Interval: time.Second, VRID: 51, Priority: prio, VIP: netip.PrefixFrom(vip, 32)}
					for _, f := range fs {
						f(&c)
					}
					return c
				}
				me, _ := simEngine(t, master, simConf(t, conf(100, tc.before), master.name), nil)
				simRun(t, me)
				simWaitSole(t, nodes, vip, master, time.Second, 20*time.Second, "the master alone")
				be, _ := simEngine(t, backup, simConf(t, conf(90, tc.before), backup.name), nil)
				simRun(t, be)
				simWaitSole(t, nodes, vip, master, 5*time.Second, 20*time.Second, "the backup started")

				for _, n := range []struct {
					e    *Engine
					node *simNode
					prio int
				}{{me, master, 100}, {be, backup, 90}} {
					text := simConf(t, conf(n.prio, tc.before, tc.after), n.node.name)
					if err := os.WriteFile(n.e.opts.ConfigPath, []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
					if err := n.e.Reload(); err != nil {
						t.Fatalf("reload of %s: %v", n.node.name, err)
					}
				}
				// Long enough for a restarted instance to give the VIP away
				// and take it back (priority 0, skew, then preemption).
				samples, missing, stolen := 0, 0, 0
				for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					synctest.Wait()
					samples++
					if !master.has(simLinkName, vip) {
						missing++
					}
					if backup.has(simLinkName, vip) {
						stolen++
					}
				}
				if missing > 0 || stolen > 0 {
					t.Errorf("over the reload the VIP was missing from the master in %d of %d samples and held by the backup in %d; want none",
						missing, samples, stolen)
				}
				simWaitSole(t, nodes, vip, master, time.Second, 20*time.Second, "after both reloaded")
			})
		})
	}
}
