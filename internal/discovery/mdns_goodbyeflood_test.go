package discovery

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// TestMDNSEngineGoodbyeFlood: a host on the link that announces instances
// and says goodbye for them, over and over within a few seconds, must not
// grow the goodbye memory (see goodbyeMemory) past maxCache: it held one
// entry per goodbye until the next timer, unbounded while no timer fired.
func TestMDNSEngineGoodbyeFlood(t *testing.T) {
	l := newSimLink(t)
	h := l.add(MDNS{Cluster: "c1", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11")}, TTL: 15 * time.Second}, "198.18.0.11", 5)
	l.start(h)
	l.run(2 * time.Second)
	from := netip.AddrPortFrom(netip.MustParseAddr("198.18.0.30"), mdnsPort)
	const perPacket = 100
	for p := 0; p*perPacket < maxCache+2000; p++ {
		hi, bye := make([]string, perPacket), make([]string, perPacket)
		for i := range perPacket {
			inst := fmt.Sprintf(`x%d-%d\@c1._vipstack._tcp.local.`, p, i)
			hi[i] = "_vipstack._tcp.local. 120 IN PTR " + inst
			bye[i] = "_vipstack._tcp.local. 0 IN PTR " + inst
		}
		h.e.receive(l.now, inPacket{data: peerResponse(t, hi...), from: from, ifIndex: 1})
		h.e.receive(l.now, inPacket{data: peerResponse(t, bye...), from: from, ifIndex: 1})
	}
	if n := len(h.e.goodbyes); n > maxCache {
		t.Errorf("the goodbye memory holds %d records; want at most %d", n, maxCache)
	}
	checkSets(t, "goodbye flood", h.e)
}
