package engine_test

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
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
// down meanwhile.
func TestMissingInterfaceAtStart(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsBif"})
	node, peer := topo.Hosts[0], topo.Hosts[1]
	missingVIP, vip := netip.MustParseAddr("198.18.1.100"), netip.MustParseAddr("198.18.0.101")
	instance := func(name, iface string, vrid, prio int, vip netip.Addr) string {
		return fmt.Sprintf("vrrp_instance %s {\n    state BACKUP\n    interface %s\n    virtual_router_id %d\n    priority %d\n"+
			"    advert_int 1\n    virtual_ipaddress {\n        %s/32\n    }\n}\n", name, iface, vrid, prio, vip)
	}
	ours := "global_defs {\n    router_id n1\n}\n" + instance("VI_1", "vsb1", 61, 100, missingVIP) + instance("VI_2", node.Link, 62, 100, vip)
	theirs := "global_defs {\n    router_id n2\n}\n" + instance("VI_2", peer.Link, 62, 50, vip)
	k, err := peers.Start(peer, peers.Keepalived, theirs, t.TempDir(), bin)
	if err != nil {
		t.Fatal(err)
	}
	logOnFailure(t, k)
	n, err := peers.Start(node, peers.Vipstack, ours, t.TempDir(), bin)
	if err != nil {
		t.Fatal(err)
	}
	logOnFailure(t, n)

	if _, err := peers.WaitSoleHolder(topo.Hosts, vip, node, 3*time.Second, 20*time.Second); err != nil {
		t.Fatalf("VI_2, beside VI_1 whose interface is missing: %v", err)
	}
	engine, err := n.EnginePid()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`msg="interface does not exist; instance in FAULT until it appears" instance=VI_1 interface=vsb1`,
		`msg="VRRP state change" instance=VI_1 from=INIT to=FAULT reason="start: interface vsb1 failing"`,
	} {
		if !strings.Contains(n.Log(), want) {
			t.Errorf("vipstack's log lacks %s", want)
		}
	}

	// createVsb1 creates the missing interface, with an address, up.
	createVsb1 := func() {
		t.Helper()
		for _, args := range [][]string{
			{"link", "add", "vsb1", "type", "veth", "peer", "name", "vsb1p"},
			{"addr", "add", "198.18.1.1/24", "dev", "vsb1"},
			{"link", "set", "vsb1p", "up"},
			{"link", "set", "vsb1", "up"},
		} {
			if out, err := node.Run("ip", args...); err != nil {
				t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
			}
		}
	}
	createVsb1()
	poll(t, 20*time.Second, "VI_1 master once vsb1 exists", func() (bool, error) {
		out, err := node.Run("ip", "-o", "addr", "show", "dev", "vsb1")
		return strings.Contains(out, " "+missingVIP.String()+"/32 "), err
	})
	if !strings.Contains(n.Log(), `msg="interface now exists; starting the instance" instance=VI_1 interface=vsb1`) {
		t.Errorf("vipstack's log does not say VI_1 started when vsb1 appeared")
	}
	if now, err := n.EnginePid(); err != nil || now != engine {
		t.Errorf("engine pid %d (%v), want %d: the engine restarted", now, err, engine)
	}
	if strings.Contains(n.Log(), "restarting the engine") {
		t.Errorf("the supervisor restarted the engine")
	}
	if _, err := peers.WaitSoleHolder(topo.Hosts, vip, node, 2*time.Second, 10*time.Second); err != nil {
		t.Fatalf("VI_2 after VI_1 started: %v", err)
	}

	// Deleted: VI_1 in FAULT. Created again (another index): VI_1 starts
	// anew on it, as keepalived with dynamic_interfaces did.
	if out, err := node.Run("ip", "link", "del", "vsb1"); err != nil {
		t.Fatalf("ip link del: %v: %s", err, out)
	}
	poll(t, 10*time.Second, "VI_1 in FAULT once vsb1 is deleted", func() (bool, error) {
		return strings.Contains(n.Log(), `instance=VI_1 from=MASTER to=FAULT`), nil
	})
	createVsb1()
	poll(t, 20*time.Second, "VI_1 master once vsb1 exists again", func() (bool, error) {
		out, err := node.Run("ip", "-o", "addr", "show", "dev", "vsb1")
		return strings.Contains(out, " "+missingVIP.String()+"/32 "), err
	})
	if !strings.Contains(n.Log(), `msg="stopping VRRP instance" instance=VI_1 why="interface vsb1 was created again"`) {
		t.Errorf("vipstack's log does not say VI_1 restarted on the new vsb1")
	}
	if now, err := n.EnginePid(); err != nil || now != engine {
		t.Errorf("engine pid %d (%v), want %d: the engine restarted", now, err, engine)
	}

	// A reload that adds an instance on a missing interface applies, the
	// new instance in FAULT, the others untouched. keepalived 2.2.7
	// without dynamic_interfaces exits on such a reload (measured: "pid
	// ... exited with permanent error CONFIG. Terminating"), leaving its
	// masters' VIPs on their interfaces.
	if err := os.WriteFile(n.Conf, []byte(ours+instance("VI_3", "vsb2", 63, 100, netip.MustParseAddr("198.18.2.100"))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll(t, 10*time.Second, "VI_3 in FAULT after the reload", func() (bool, error) {
		return strings.Contains(n.Log(), `msg="VRRP state change" instance=VI_3 from=INIT to=FAULT reason="start: interface vsb2 failing"`), nil
	})
	if _, err := peers.WaitSoleHolder(topo.Hosts, vip, node, 2*time.Second, 10*time.Second); err != nil {
		t.Fatalf("VI_2 after the reload: %v", err)
	}
	if out, err := node.Run("ip", "-o", "addr", "show", "dev", "vsb1"); err != nil || !strings.Contains(out, " "+missingVIP.String()+"/32 ") {
		t.Errorf("VI_1's VIP gone after the reload (%v): %s", err, out)
	}
	if strings.Contains(n.Log(), `msg="stopping VRRP instance" instance=VI_2`) {
		t.Errorf("the reload restarted VI_2")
	}
}
