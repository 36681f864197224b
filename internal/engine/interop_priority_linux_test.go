package engine_test

// Interop tests of priorities and preemption: equal priorities, preempt_delay.

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestInteropEqualPriority: vipstack and keepalived at the same
// priority become master each on its side of a partition (their bridge
// ports isolated before they start). When the partition heals, RFC 3768 6.4.3
// / RFC 5798 6.4.3 break the tie on the sender's address: the router with
// the higher primary address (unicast_src_ip in unicast, the link-local
// address for IPv6) stays master and the other steps down, whichever of
// the two implementations has it. keepalived 2.2.7 does (measured here:
// "Master received advert from <higher> with same priority 100 but higher
// IP address than ours"); a vipstack that kept the VIP against a higher
// address, or gave it up to a lower one, leaves two holders or none.
func TestInteropEqualPriority(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	for _, m := range []mode{
		{version: 2, family: 4},
		{version: 3, family: 4, unicast: true},
		{version: 3, family: 6},
		{version: 3, family: 6, unicast: true},
	} {
		for _, impls := range [][]peers.Impl{{peers.Vipstack, peers.Keepalived}, {peers.Keepalived, peers.Vipstack}} {
			t.Run(fmt.Sprintf("%v/%s-%s", m, impls[0], impls[1]), func(t *testing.T) {
				t.Parallel()
				c := newCluster(t, m, impls, []int{100, 100})
				isolate(t, c.topo, true)
				c.startAll()
				vips := []netip.Addr{c.vip, c.vip}
				waitHolders(t, c.topo.Hosts, vips, []bool{true, true}, 3*m.interval(), 20*time.Second, "partitioned: each side is master")
				winner := 0
				if c.source(0).Less(c.source(1)) {
					winner = 1
				}
				isolate(t, c.topo, false)
				c.waitMaster(winner, fmt.Sprintf("healed: the higher address %v keeps the VIP (%v lower)", c.source(winner), c.source(1-winner)))
			})
		}
	}
}

// TestInteropPreemptDelay: preempt_delay (ipfailover renders
// `preempt_delay 300`) holds a higher-priority node back from preempting a
// lower master for the delay after it starts, then it preempts. With one
// group of a lower master (priority 100), a node coming back at 150 with
// preempt_delay 5 and, for the second case, a third node at 200 without a
// delay. Measured with keepalived on every node (the keepalived row, VRRPv3
// at 0.1 s), and required of vipstack in either role:
//
//	event                                   keepalived 2.2.7 (measured)
//	150 starts, lower master at 100         stays BACKUP through the delay
//	                                        (sampled to 2.5 s of 5), MASTER
//	                                        after it (5.3 s, log:
//	                                        "Entering MASTER STATE")
//	200 starts during 150's delay           200 preempts at once; 150 stays
//	                                        BACKUP (a higher master)
//	200 stops (priority 0) during the delay 150 becomes MASTER after its
//	                                        skew time, delay or not: a
//	                                        master leaving is no preemption
//
// A vipstack that ignored the delay takes the VIP within a skew time of
// starting; one that counted it from a wrong origin, or applied it to a
// master leaving, fails the check points.
func TestInteropPreemptDelay(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	const delay = 5 * time.Second
	for _, tc := range []struct {
		name                    string
		lower, delayed, highest peers.Impl
	}{
		{name: "keepalived-only", lower: peers.Keepalived, delayed: peers.Keepalived, highest: peers.Keepalived},
		{name: "vipstack-delayed", lower: peers.Keepalived, delayed: peers.Vipstack, highest: peers.Keepalived},
		{name: "keepalived-delayed", lower: peers.Vipstack, delayed: peers.Keepalived, highest: peers.Vipstack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: interopPrefix2})
			lowH, delH, highH := topo.Hosts[0], topo.Hosts[1], topo.Hosts[2]
			vip := netip.MustParseAddr("198.18.0.100")
			conf := func(prio int) peers.Conf {
				return peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 51, Priority: prio, VIP: netip.PrefixFrom(vip, 32)}
			}
			delayLine := fmt.Sprintf("preempt_delay %d", int(delay.Seconds()))
			startText(t, lowH, tc.lower, withLines(t, conf(100), lowH, delayLine))
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, lowH, 500*time.Millisecond, 20*time.Second); err != nil {
				t.Fatalf("the lower node alone: %v", err)
			}

			// 1. The higher node comes back with preempt_delay.
			delText := withLines(t, conf(150), delH, delayLine)
			del := startText(t, delH, tc.delayed, delText)
			neverHolds(t, topo.Hosts, vip, lowH, delay/2, "150 within its preempt_delay")
			d, err := peers.WaitSoleHolder(topo.Hosts, vip, delH, 500*time.Millisecond, 20*time.Second)
			if err != nil {
				t.Fatalf("150 after its preempt_delay: %v", err)
			}
			t.Logf("150 took the VIP %v after it started", d.Round(100*time.Millisecond))

			// 2. It comes back again, and a higher master appears and
			// leaves during its delay.
			if err := del.Term(); err != nil {
				t.Fatal(err)
			}
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, lowH, 500*time.Millisecond, 20*time.Second); err != nil {
				t.Fatalf("150 stopped: %v", err)
			}
			startText(t, delH, tc.delayed, delText)
			restarted := time.Now()
			high := startText(t, highH, tc.highest, withLines(t, conf(200), highH))
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, highH, 500*time.Millisecond, 3*time.Second); err != nil {
				t.Fatalf("200 preempts at once: %v", err)
			}
			if err := high.Term(); err != nil {
				t.Fatal(err)
			}
			stopped := time.Now()
			// The check point: 150 holds the VIP before its delay (counted
			// from its restart) is over.
			d, err = peers.WaitSoleHolder(topo.Hosts, vip, delH, 0, time.Until(restarted.Add(delay-500*time.Millisecond)))
			if err != nil {
				t.Fatalf("200 stopped during 150's preempt_delay, 150 must take over without waiting for it: %v", err)
			}
			t.Logf("200 stopped %v after 150 restarted; 150 took the VIP %v later", stopped.Sub(restarted).Round(100*time.Millisecond), d.Round(10*time.Millisecond))
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, delH, 500*time.Millisecond, 5*time.Second); err != nil {
				t.Fatalf("150 after 200 stopped: %v", err)
			}
		})
	}
}

// TestInteropPreemptDelayMasterLeaves: a master leaving (priority 0
// advert) during a backup's preempt_delay is taken over by that backup
// after its skew time, not after a master-down interval: the delay holds
// back preemption, and a master leaving is none. Three nodes in one group,
// VRRPv2 at 1 s: a lower master at 50, a node at 150 that restarts with
// preempt_delay 10, and one at 200 (no delay) that preempts the lower at
// once and then stops during 150's delay. The order of the adverts on the
// wire tells the two apart without timing anything: after 200's priority
// 0, 150 (skew 0.41 s) advertises before the lower node's skew (0.80 s)
// runs out, so the first advert is 150's and the lower node sends none;
// a 150 that waited its master-down interval (3.41 s) would let the lower
// node become master first, and its adverts would come before 150's.
// keepalived 2.2.7 on every node (the keepalived row, measured): after
// "200 prio 0" the next advert is 150's, and the lower node sends none.
func TestInteropPreemptDelayMasterLeaves(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	const delay = 10 * time.Second
	for _, tc := range []struct {
		name                    string
		lower, delayed, highest peers.Impl
	}{
		{name: "keepalived-only", lower: peers.Keepalived, delayed: peers.Keepalived, highest: peers.Keepalived},
		{name: "vipstack-delayed", lower: peers.Keepalived, delayed: peers.Vipstack, highest: peers.Keepalived},
		{name: "keepalived-delayed", lower: peers.Vipstack, delayed: peers.Keepalived, highest: peers.Vipstack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: interopPrefix3})
			lowH, delH, highH := topo.Hosts[0], topo.Hosts[1], topo.Hosts[2]
			vip := netip.MustParseAddr("198.18.0.100")
			conf := func(prio int) peers.Conf {
				return peers.Conf{Version: 2, Interval: time.Second, VRID: 51, Priority: prio, VIP: netip.PrefixFrom(vip, 32), Auth: "secret1"}
			}
			delayLine := fmt.Sprintf("preempt_delay %d", int(delay.Seconds()))
			startText(t, lowH, tc.lower, withLines(t, conf(50), lowH))
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, lowH, 500*time.Millisecond, 20*time.Second); err != nil {
				t.Fatalf("the lower node alone: %v", err)
			}
			capt := captureVRRP(t, lowH, "")
			startText(t, delH, tc.delayed, withLines(t, conf(150), delH, delayLine))
			restarted := time.Now()
			high := startText(t, highH, tc.highest, withLines(t, conf(200), highH))
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, highH, 500*time.Millisecond, 5*time.Second); err != nil {
				t.Fatalf("200 preempts at once: %v", err)
			}
			if err := high.Term(); err != nil {
				t.Fatal(err)
			}
			// 150 ends up holding the VIP either way (at the latest when
			// its delay is over); the adverts say how it got there.
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, delH, time.Second, time.Until(restarted.Add(delay+10*time.Second))); err != nil {
				t.Errorf("after 200 stopped: %v", err)
			}
			lines := capt.Lines()
			left := slices.Index(lines, highH.IPv4.Addr().String()+" vrid 51 prio 0")
			if left < 0 {
				t.Fatalf("no priority 0 advert from 200 captured: %q", lines)
			}
			after := lines[left+1:]
			t.Logf("adverts after 200's priority 0: %q", after[:min(len(after), 4)])
			if want := delH.IPv4.Addr().String() + " vrid 51 prio 150"; len(after) == 0 || after[0] != want {
				t.Errorf("after 200's priority 0 advert the first advert is %q, want 150's %q (150 took over after its skew time, before the lower node's)", after[:min(len(after), 1)], want)
			}
			for _, l := range after {
				if strings.HasPrefix(l, lowH.IPv4.Addr().String()+" ") {
					t.Errorf("the lower node advertised after 200 left (it became master before 150): %q", l)
					break
				}
			}
		})
	}
}
