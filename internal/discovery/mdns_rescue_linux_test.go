//go:build linux

package discovery

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/testnet"
)

// TestRootMDNSRescueFromPublisher: a worker moving to vipstack runs the real
// mdns-publisher and vipstack side by side, publishing the same records;
// then mdns-publisher is stopped and sends its goodbye for them. A
// browse-only MDNS on another host (the DNS's mdns directive) must keep the
// worker throughout: vipstack on the worker rescues the records at once
// (TestMDNSEngineRescuesOwnRecords has the details).
func TestRootMDNSRescueFromPublisher(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsx"})
	h := topo.Hosts
	const cluster = "ostest"
	runLocal(t, h[0], &MDNS{Cluster: cluster, OpenShift: true, Interface: h[0].Link,
		Self: Node{Name: "worker-1", Role: Worker, Addrs: []netip.Addr{h[0].IPv4.Addr()}}})
	pub := startPublisher(t, h[0], "worker-1", publisherConfig(h[0].IPv4.Addr(), "hostname", mcoServices(cluster, "worker-1", false)...))
	sniff := startSniffer(t, h[1])
	started := time.Now()
	browse, _ := runLocal(t, h[1], &MDNS{Cluster: cluster, OpenShift: true, Interface: h[1].Link})
	want := Node{Name: "worker-1", Role: Worker, Addrs: []netip.Addr{h[0].IPv4.Addr()}}
	browse.waitFor(t, 0, 10*time.Second, "the browser reports worker-1", hasNode(want))
	// Wait for vipstack's announcement on the worker (its _vipstack._tcp
	// PTR): from then on it publishes the records mdns-publisher will say
	// goodbye for. (A legacy query cannot tell: in a namespace where
	// mdns-publisher runs, a unicast datagram to port 5353 goes to its
	// socket, bound last without SO_REUSEPORT, not to vipstack's.)
	for i := 0; ; i++ {
		announced := false
		sniff.mu.Lock()
		for _, m := range sniff.msgs {
			if m.msg.Response && slices.ContainsFunc(m.msg.Answer, func(rr dns.RR) bool {
				return rr.Header().Name == MDNSServiceType+".local." && rr.Header().Ttl > 0
			}) {
				announced = true
			}
		}
		sniff.mu.Unlock()
		if announced {
			break
		}
		if i == 100 {
			t.Fatal("vipstack on the worker did not announce within 5 s")
		}
		time.Sleep(50 * time.Millisecond) // polling what another host sends
	}
	// The goodbye comes between two PTR queries for _workstation._tcp:
	// both MDNS browse at their start and 1, 3, 7, 15 s later (a little
	// more), and the browser refreshes worker-1's address (TTL 15 s) 12 s
	// after it came. Without the rescue the browser lacked worker-1 until
	// the one at 7 s.
	time.Sleep(time.Until(started.Add(4500 * time.Millisecond))) // placing the event, not waiting for a timer
	mark := browse.mark()
	stopped := time.Now()
	pub.Term(t)
	// An observation window, not a timer: past the reconfirmation of the
	// records back right after their goodbye (dropped 4 s after they came
	// unless answered), and past the browser's next browse query.
	time.Sleep(8 * time.Second)
	browse.mu.Lock()
	defer browse.mu.Unlock()
	// The browser drops a goodbye'd record at once, and gets it back from
	// the rescue one round trip later: measured 1-2 ms here.
	const bound = 250 * time.Millisecond
	for i, r := range browse.hist[mark:] {
		if slices.ContainsFunc(r.nodes, func(n Node) bool { return n.Name == want.Name }) {
			continue
		}
		gap, back := time.Duration(0), false
		for _, r2 := range browse.hist[mark+i:] {
			if hasNode(want)(r2.nodes) {
				gap, back = r2.at.Sub(r.at), true
				break
			}
		}
		t.Logf("%v after mdns-publisher's SIGTERM the browser lost worker-1; back %v later (%v)", r.at.Sub(stopped).Round(time.Millisecond), gap.Round(time.Millisecond), back)
		if !back || gap > bound {
			t.Errorf("the browser lacked worker-1 for %v (back: %v) after mdns-publisher's goodbye; want at most %v", gap.Round(time.Millisecond), back, bound)
		}
	}
	if n := len(browse.hist); n == 0 || !hasNode(want)(browse.hist[n-1].nodes) {
		t.Errorf("8 s after mdns-publisher's SIGTERM the browser lacks worker-1")
	}
}
