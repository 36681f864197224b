package engine_test

// The second part of the interop audit (see the table at the top of
// interop_audit_linux_test.go): preempt_delay, notify scripts and a /16
// virtual_ipaddress, each run with vipstack and a real keepalived 2.2.7, and
// each with a row of keepalived alone that records what keepalived does
// (the reference the vipstack rows must match).

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// audit2Prefix starts the namespace names of the tests in this file.
const audit2Prefix = "vsmm"

// withLines renders c for host h with lines added at the end of its
// vrrp_instance block (directives peers.Conf has no field for).
func withLines(t *testing.T, c peers.Conf, h *testnet.Host, lines ...string) string {
	t.Helper()
	text, err := c.Render(h.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) == 0 {
		return text
	}
	i := strings.LastIndex(text, "}")
	return text[:i] + "    " + strings.Join(lines, "\n    ") + "\n" + text[i:]
}

// startText runs impl on h with the keepalived.conf text and prints its
// log if the test fails.
func startText(t *testing.T, h *testnet.Host, impl peers.Impl, text string) *peers.Node {
	t.Helper()
	n, err := peers.Start(h, impl, text, filepath.Join(t.TempDir(), h.Name), vipstackBin(t))
	if err != nil {
		t.Fatal(err)
	}
	logOnFailure(t, n)
	return n
}

// neverHolds samples, every 10 ms for d, that host h does not hold vip
// while host other does, alone (a check point inside a timer, not a wait for
// one).
func neverHolds(t *testing.T, hs []*testnet.Host, vip netip.Addr, other *testnet.Host, d time.Duration, why string) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) { // sampling the kernel
		got, err := peers.Holders(hs, vip)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != other {
			var names []string
			for _, g := range got {
				names = append(names, g.Name)
			}
			t.Fatalf("%s: %v is held by %v, want only %s", why, vip, names, other.Name)
		}
	}
	t.Logf("%s: only %s held %v for %v", why, other.Name, vip, d)
}

// TestInteropAuditPreemptDelay: preempt_delay (ipfailover renders
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
func TestInteropAuditPreemptDelay(t *testing.T) {
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
			topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: audit2Prefix})
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
