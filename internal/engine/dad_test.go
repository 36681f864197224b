package engine

import (
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
)

// TestLinkBackWaitsForDAD: h1 (priority 100) holds an IPv6 VIP over h2
// (90); h1's link goes down (the kernel removes its IPv6 addresses), h2
// takes the VIP, and h1's link comes back with duplicate address detection
// on, so its link-local source is tentative for a second and every
// advertisement from it fails. h1 waits in FAULT until the source is
// usable, then preempts: never do both hold the VIP. Without the wait h1
// preempted while still unheard and both held it (1.4 s in an audit, in
// namespaces).
func TestLinkBackWaitsForDAD(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		h1, h2 := seg.node("h1", "198.18.0.1/24"), seg.node("h2", "198.18.0.2/24")
		nodes := []*simNode{h1, h2}
		vip := netip.MustParseAddr("fd00:bb::200")
		var h1Log interface{ String() string }
		for i, h := range nodes {
			e, log := simEngine(t, h, simConf(t, peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 55,
				Priority: 100 - 10*i, VIP: netip.PrefixFrom(vip, 64)}, h.name), nil)
			if i == 0 {
				h1Log = log
			}
			simRun(t, e)
		}
		simWaitSole(t, nodes, vip, h1, time.Second, 30*time.Second, "h1 did not become the only holder")
		ll := h1.linkLocal(simLinkName)
		h1.ifDown(simLinkName)
		simWaitSole(t, nodes, vip, h2, 500*time.Millisecond, 10*time.Second, "h2 did not take over while h1's link was down")
		h1.ifUp(simLinkName, ll, true)
		dadDone := time.Now().Add(time.Second) // the kernel's DAD: one probe, a second
		// Sample who holds the VIP until h1 alone has held it for a while.
		since := time.Time{}
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			synctest.Wait()
			if !dadDone.IsZero() && !time.Now().Before(dadDone) {
				h1.setTentative(simLinkName, ll, false)
				dadDone = time.Time{}
				synctest.Wait()
			}
			if time.Now().After(deadline) {
				t.Fatal("h1 did not take the VIP back after its link came up")
			}
			hs := simHolders(nodes, vip)
			if len(hs) > 1 {
				t.Fatalf("h1 and h2 both hold %s after h1's link came back", vip)
			}
			if len(hs) == 1 && hs[0] == h1 {
				if since.IsZero() {
					since = time.Now()
				}
				if time.Since(since) > time.Second {
					break
				}
			} else {
				since = time.Time{}
			}
		}
		if log := h1Log.String(); !strings.Contains(log, "IPv6 source still tentative") || !strings.Contains(log, "duplicate address detection finished") {
			t.Errorf("h1's log does not show the wait for duplicate address detection")
		}
	})
}
