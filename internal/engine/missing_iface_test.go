package engine

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestMissingInterfaceAtStart: an instance whose interface does not exist
// at start is in FAULT while the others run, and starts when the interface
// is created, in the same engine. keepalived 2.2.7 (measured) exits at
// start with "Non-existent interface specified in configuration" (status
// 2, no instance runs) unless global_defs has dynamic_interfaces; with it,
// "(VI_1): entering FAULT state (interface eth5 down)", the other instance
// became master, and VI_1 went BACKUP when eth5 was created and MASTER
// after its master-down interval. vipstack's engine failed to start and the
// supervisor restarted it forever (backing off to 30 s), every instance
// down meanwhile. (The peer of VI_2 was keepalived in namespaces; here it
// is another engine.)
func TestMissingInterfaceAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		node, peer := seg.node("node", "198.18.0.1/24"), seg.node("peer", "198.18.0.2/24")
		nodes := []*simNode{node, peer}
		missingVIP, vip := netip.MustParseAddr("198.18.1.100"), netip.MustParseAddr("198.18.0.101")
		instance := func(name, iface string, vrid, prio int, vip netip.Addr) string {
			return fmt.Sprintf("vrrp_instance %s {\n    state BACKUP\n    interface %s\n    virtual_router_id %d\n    priority %d\n"+
				"    advert_int 1\n    virtual_ipaddress {\n        %s/32\n    }\n}\n", name, iface, vrid, prio, vip)
		}
		ours := "global_defs {\n    router_id n1\n}\n" + instance("VI_1", "vsb1", 61, 100, missingVIP) + instance("VI_2", simLinkName, 62, 100, vip)
		theirs := "global_defs {\n    router_id n2\n}\n" + instance("VI_2", simLinkName, 62, 50, vip)
		pe, _ := simEngine(t, peer, theirs, nil)
		simRun(t, pe)
		e, log := simEngine(t, node, ours, nil)
		simRun(t, e)
		// running reports whether e's Run is still serving: the engine did
		// not stop (the supervisor would have restarted it).
		running := func() bool {
			select {
			case <-e.done:
				return false
			default:
				return true
			}
		}

		simWaitSole(t, nodes, vip, node, 3*time.Second, 20*time.Second, "VI_2, beside VI_1 whose interface is missing")
		for _, want := range []string{
			`msg="interface does not exist; instance in FAULT until it appears" instance=VI_1 interface=vsb1`,
			`msg="VRRP state change" instance=VI_1 from=INIT to=FAULT reason="start: interface vsb1 failing"`,
		} {
			if !strings.Contains(log.String(), want) {
				t.Errorf("vipstack's log lacks %s", want)
			}
		}

		// Created: a veth whose peer is up, off the segment, with an address.
		node.addLink("vsb1", "198.18.1.1/24")
		simWaitFor(t, "VI_1 master once vsb1 exists", func() (bool, string) {
			return node.has("vsb1", missingVIP), "VI_1's VIP not on vsb1"
		})
		if !strings.Contains(log.String(), `msg="interface now exists; starting the instance" instance=VI_1 interface=vsb1`) {
			t.Errorf("vipstack's log does not say VI_1 started when vsb1 appeared")
		}
		if !running() {
			t.Errorf("the engine stopped")
		}
		simWaitSole(t, nodes, vip, node, 2*time.Second, 10*time.Second, "VI_2 after VI_1 started")

		// Deleted: VI_1 in FAULT. Created again (another index): VI_1
		// starts anew on it, as keepalived with dynamic_interfaces did.
		node.delLink("vsb1")
		simWaitFor(t, "VI_1 in FAULT once vsb1 is deleted", func() (bool, string) {
			return strings.Contains(log.String(), `instance=VI_1 from=MASTER to=FAULT`), "no such transition logged"
		})
		node.addLink("vsb1", "198.18.1.1/24")
		simWaitFor(t, "VI_1 master once vsb1 exists again", func() (bool, string) {
			return node.has("vsb1", missingVIP), "VI_1's VIP not on vsb1"
		})
		if !strings.Contains(log.String(), `msg="stopping VRRP instance" instance=VI_1 why="interface vsb1 was created again"`) {
			t.Errorf("vipstack's log does not say VI_1 restarted on the new vsb1")
		}
		if !running() {
			t.Errorf("the engine stopped")
		}

		// A reload that adds an instance on a missing interface applies,
		// the new instance in FAULT, the others untouched. keepalived 2.2.7
		// without dynamic_interfaces exits on such a reload (measured: "pid
		// ... exited with permanent error CONFIG. Terminating"), leaving its
		// masters' VIPs on their interfaces.
		if err := os.WriteFile(e.opts.ConfigPath, []byte(ours+instance("VI_3", "vsb2", 63, 100, netip.MustParseAddr("198.18.2.100"))), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := e.Reload(); err != nil {
			t.Fatalf("reload: %v", err)
		}
		simWaitFor(t, "VI_3 in FAULT after the reload", func() (bool, string) {
			return strings.Contains(log.String(), `msg="VRRP state change" instance=VI_3 from=INIT to=FAULT reason="start: interface vsb2 failing"`), "no such transition logged"
		})
		simWaitSole(t, nodes, vip, node, 2*time.Second, 10*time.Second, "VI_2 after the reload")
		if !node.has("vsb1", missingVIP) {
			t.Errorf("VI_1's VIP gone after the reload")
		}
		if strings.Contains(log.String(), `msg="stopping VRRP instance" instance=VI_2`) {
			t.Errorf("the reload restarted VI_2")
		}
	})
}
