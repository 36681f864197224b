package engine

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipstack/vipstack/internal/vrrp/transport"
)

// takeoverConf is one ipfailover-like group: VRRPv2, advert 1 s, n VIPs
// from 198.18.16.1 (the first advertised, the rest excluded), keepalived's
// default announcements (5 at once, 5 more 5 s later).
func takeoverConf(prio, n int) string {
	var ex []string
	for i := 2; i <= n; i++ {
		ex = append(ex, fmt.Sprintf("        198.18.16.%d/32", i))
	}
	return fmt.Sprintf("global_defs {\n    router_id r%d\n}\nvrrp_instance G_3 {\n    state BACKUP\n    interface eth0\n"+
		"    virtual_router_id 13\n    priority %d\n    advert_int 1\n    virtual_ipaddress {\n        198.18.16.1/32\n    }\n"+
		"    virtual_ipaddress_excluded {\n%s\n    }\n}\n", prio, prio, strings.Join(ex, "\n"))
}

// TestTakeoverAnnouncesOnce: the master of a group of 200 VIPs dies; of
// its two backups (priorities 230 and 210, as ipfailover gives three nodes,
// so Skew_Time 78 ms apart), the higher takes over alone, each VIP's first
// announcement leaves as soon as the VIP is added, and each VIP is
// announced keepalived's 5 + 5 times, no more. Each add takes 1 ms here
// (the kernel's cost with thousands of addresses on a loaded machine):
// when the new master took every VIP before its first advertisement, the
// lower backup's timer ran out meanwhile, and it took, announced and let go
// of the 200 VIPs too (bench/ipfailover: 1.75 to 3 times keepalived's
// announcements).
func TestTakeoverAnnouncesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		dead := seg.node("dead", "198.18.0.11/24")
		high, low := seg.node("high", "198.18.0.12/24"), seg.node("low", "198.18.0.13/24")
		const n = 200
		vips := make([]netip.Addr, n)
		for i := range vips {
			vips[i] = netip.AddrFrom4([4]byte{198, 18, 16, byte(i + 1)})
		}
		de, _ := simEngine(t, dead, takeoverConf(250, n), nil)
		simRun(t, de)
		simWaitSole(t, []*simNode{dead}, vips[n-1], dead, time.Second, 20*time.Second, "the first node takes the group")
		for _, b := range []struct {
			node *simNode
			prio int
		}{{high, 230}, {low, 210}} {
			e, _ := simEngine(t, b.node, takeoverConf(b.prio, n), nil)
			simRun(t, e)
		}
		time.Sleep(12 * time.Second) // the backups settle; the first node's second burst is over
		synctest.Wait()
		for _, s := range []*simNode{high, low} {
			s.mu.Lock()
			s.addDelay = time.Millisecond
			s.journal = nil
			s.announced = nil
			s.mu.Unlock()
		}
		// The first node dies: nothing it sends arrives any more.
		seg.mu.Lock()
		seg.drop = func(from, _ *simNode, _ transport.Packet) bool { return from == dead }
		seg.mu.Unlock()
		simWaitSole(t, []*simNode{high, low}, vips[n-1], high, time.Second, 20*time.Second, "the higher backup takes the group")
		time.Sleep(10 * time.Second) // past the second burst
		synctest.Wait()

		if got := low.announcements(); len(got) != 0 {
			t.Errorf("the lower backup announced %d times (first %v); want none: it must not take the group", len(got), got[0])
		}
		count := map[netip.Addr]int{}
		for _, a := range high.announcements() {
			count[a]++
		}
		for _, v := range vips {
			if count[v] != 10 {
				t.Errorf("%s announced %d times by the new master, want 10 (5 at once, 5 after 5 s)", v, count[v])
			}
		}
		if len(count) != n {
			t.Errorf("the new master announced %d addresses, want the %d VIPs", len(count), n)
		}
		high.mu.Lock()
		journal := slices.Clone(high.journal)
		high.mu.Unlock()
		firstAnnounce, lastAdd := -1, -1
		added := map[string]bool{}
		for i, j := range journal {
			what, addr, _ := strings.Cut(j, " ")
			switch what {
			case "add":
				lastAdd = i
				added[addr] = true
			case "announce":
				if firstAnnounce < 0 {
					firstAnnounce = i
				}
				if !added[addr] {
					t.Errorf("%s announced before it was added (journal entry %d)", addr, i)
				}
			}
		}
		if firstAnnounce < 0 || firstAnnounce > lastAdd {
			t.Errorf("first announcement at journal entry %d, last add at %d: the first VIP waited for the last add", firstAnnounce, lastAdd)
		}
	})
}

// TestAnnouncedAfterBursts: Options.Announced receives once a new master's
// announcements are over (both of keepalived's bursts), not while they
// are still queued: a process gives the burst's memory back then.
func TestAnnouncedAfterBursts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		node := seg.node("alone", "198.18.0.11/24")
		const n = 50
		last := netip.AddrFrom4([4]byte{198, 18, 16, n})
		announced := make(chan struct{}, 1)
		e, _ := simEngine(t, node, takeoverConf(250, n), nil, func(o *Options) {
			o.AnnounceRate = 10 // 9 x 50 repeats at 10 a second: 45 s
			o.Announced = announced
		})
		simRun(t, e)
		simWaitSole(t, []*simNode{node}, last, node, time.Second, 20*time.Second, "the node takes the group")
		time.Sleep(20 * time.Second)
		synctest.Wait()
		select {
		case <-announced:
			t.Fatalf("Announced received with %d announcements sent, the paced repeats still queued", len(node.announcements()))
		default:
		}
		time.Sleep(40 * time.Second)
		synctest.Wait()
		select {
		case <-announced:
		default:
			t.Fatalf("Announced did not receive after %d announcements", len(node.announcements()))
		}
		if got := len(node.announcements()); got != 10*n {
			t.Errorf("%d announcements, want %d (5 + 5 per VIP)", got, 10*n)
		}
	})
}
