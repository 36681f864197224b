package engine

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// twoInstances is a VRRPv3 keepalived.conf with VI_1 (VRID 51) and VI_2
// (52) on eth0, priority 100, advert_int 100 ms, one VIP each.
func twoInstances(vip1, vip2 netip.Addr) string {
	text := "global_defs {\n    router_id n1\n    vrrp_version 3\n}\n"
	for i, v := range []netip.Addr{vip1, vip2} {
		text += fmt.Sprintf("vrrp_instance VI_%d {\n    state BACKUP\n    interface eth0\n    virtual_router_id %d\n"+
			"    priority 100\n    advert_int 0.1\n    virtual_ipaddress {\n        %s/32\n    }\n}\n", i+1, 51+i, v)
	}
	return text
}

// replaceFirst returns text with the first old replaced by new, failing
// the test when there is none.
func replaceFirst(t *testing.T, text, old, new string) string {
	t.Helper()
	if !strings.Contains(text, old) {
		t.Fatalf("%q not in the configuration", old)
	}
	return strings.Replace(text, old, new, 1)
}

// TestReloadKeepsUnchangedInstance: a reload after changing the VIP of one
// of two instances moves that instance to the new VIP while the other,
// whose priority, interval and preemption alone changed, keeps its state
// and VIP throughout (as keepalived does); a broken file is rejected with
// file:line in the log and changes nothing.
func TestReloadKeepsUnchangedInstance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := (&simSegment{}).node("h", "198.18.0.1/24")
		vip1, vip2, vip2new := netip.MustParseAddr("198.18.0.100"), netip.MustParseAddr("198.18.0.101"), netip.MustParseAddr("198.18.0.102")
		e, log := simEngine(t, h, twoInstances(vip1, vip2), nil)
		simRun(t, e)
		holds := func() map[netip.Addr]bool {
			got := map[netip.Addr]bool{}
			for _, v := range []netip.Addr{vip1, vip2, vip2new} {
				got[v] = h.has(simLinkName, v)
			}
			return got
		}
		simWaitFor(t, "both instances master", func() (bool, string) {
			got := holds()
			return got[vip1] && got[vip2], fmt.Sprint(got)
		})

		// VI_1's priority and interval change too, and it gets nopreempt:
		// keepalived keeps an instance's state over such a reload, and so
		// must vipstack (a restarted master with nopreempt would not take
		// its VIP back).
		reloaded := replaceFirst(t, twoInstances(vip1, vip2new), "    priority 100\n    advert_int 0.1\n", "    priority 110\n    advert_int 0.2\n    nopreempt\n")
		if err := os.WriteFile(e.opts.ConfigPath, []byte(reloaded), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := e.Reload(); err != nil {
			t.Fatalf("reload: %v", err)
		}
		// Sample the addresses every 10 ms until instance 2 has moved, and
		// a while longer: vip1 must be in every sample.
		deadline := time.Now().Add(20 * time.Second)
		samples, missing, settledAt := 0, 0, -1
		for time.Now().Before(deadline) && (settledAt < 0 || samples < settledAt+50) {
			synctest.Wait()
			got := holds()
			samples++
			if !got[vip1] {
				missing++
			}
			if settledAt < 0 && got[vip2new] && !got[vip2] {
				settledAt = samples
			}
			time.Sleep(10 * time.Millisecond)
		}
		if missing > 0 {
			t.Errorf("instance 1's VIP %v was missing in %d of %d samples during a reload that changed only its priority, interval and preemption", vip1, missing, samples)
		}
		if settledAt < 0 {
			t.Fatalf("instance 2 did not move from %v to %v after the reload", vip2, vip2new)
		}
		got := holds()
		if diff := cmp.Diff(map[netip.Addr]bool{vip1: true, vip2: false, vip2new: true}, got); diff != "" {
			t.Errorf("VIPs held after the reload (-want +got):\n%s", diff)
		}
		if strings.Contains(log.String(), `msg="stopping VRRP instance" instance=VI_1 `) {
			t.Errorf("the reload stopped VI_1, whose priority, interval and preemption alone changed")
		}
		for _, want := range []string{
			`msg="priority changed; instance keeps its state" instance=VI_1 from=100 to=110`,
			`msg="preemption changed; instance keeps its state" instance=VI_1 preempt=false preempt_delay=0s`,
			`msg="advert_int changed; instance keeps its state" instance=VI_1 from=100ms to=200ms`,
		} {
			if !strings.Contains(log.String(), want) {
				t.Errorf("the log lacks %s", want)
			}
		}

		broken := replaceFirst(t, reloaded, "    priority 110\n", "    priority 110\n    frobnicate yes\n")
		if err := os.WriteFile(e.opts.ConfigPath, []byte(broken), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := e.Reload(); err == nil {
			t.Errorf("a reload of a broken file succeeded")
		}
		at := fmt.Sprintf("%s:%d", e.opts.ConfigPath, strings.Count(broken[:strings.Index(broken, "frobnicate")], "\n")+1)
		synctest.Wait()
		found := false
		for _, l := range strings.Split(log.String(), "\n") {
			if strings.Contains(l, "reload rejected") && strings.Contains(l, at) && strings.Contains(l, "frobnicate") {
				found = true
			}
		}
		if !found {
			t.Errorf("no log line with \"reload rejected\", %s and frobnicate", at)
		}
		for range 20 {
			synctest.Wait()
			got := holds()
			if !got[vip1] || !got[vip2new] {
				t.Fatalf("after a rejected reload: %v held %v, %v held %v; want both kept", vip1, got[vip1], vip2new, got[vip2new])
			}
			time.Sleep(20 * time.Millisecond)
		}
		select {
		case <-e.done:
			t.Fatal("the engine stopped after a rejected reload")
		default:
		}
	})
}
