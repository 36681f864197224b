package discovery

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestMDNSEngineRescuesOwnRecords: while a node moves to vipstack, its
// mdns-publisher may run beside vipstack for a while, publishing the same
// records byte for byte (host address included). When it is stopped it
// sends its goodbye for them (one per service: on a master the Workstation
// and the Etcd servers each say goodbye, each for the address too), and
// every browser drops them at once (see the MDNS doc comment): the node's
// address is gone from the others, and with it the node, though vipstack on
// that node still publishes it. A browser of mdns-publisher's types only
// (the DNS's mdns directive) got it back at the next PTR query for the type
// by any host on the link (1.1 s in this simulation without the rescue;
// up to the refresh of another node's records, 12 s at the default TTL,
// or its own next browse, up to an hour, in general). The node's vipstack
// rescues its records at once with an announcement, as RFC 6762 section
// 10.1 has cooperating responders do, and the others keep the node.
func TestMDNSEngineRescuesOwnRecords(t *testing.T) {
	for _, tt := range []struct {
		name   string
		role   Role
		types  []string      // mdns-publisher's services, in the order of their goodbyes
		apart  time.Duration // between two goodbyes
		wantMe string
	}{
		{name: "worker", role: Worker, types: []string{MDNSWorkstationType}, wantMe: "me worker 198.18.0.22"},
		{name: "master, goodbyes together", role: Master, types: []string{MDNSWorkstationType, MDNSEtcdType}, wantMe: "me master 198.18.0.22"},
		{name: "master, goodbyes 50 ms apart", role: Master, types: []string{MDNSWorkstationType, MDNSEtcdType},
			apart: 50 * time.Millisecond, wantMe: "me master 198.18.0.22"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newSimLink(t)
			h := l.add(MDNS{Cluster: "ostest", Self: Node{Name: "me", Role: tt.role, Addrs: addrs("198.18.0.22")},
				OpenShift: true}, "198.18.0.22", 5)
			o := l.add(MDNS{Cluster: "ostest", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11")},
				OpenShift: true}, "198.18.0.11", 6)
			// bo browses only mdns-publisher's types, as the DNS's mdns
			// directive does (internal/dns/mdnsplugin).
			bo := l.add(MDNS{Cluster: "ostest", OpenShift: true}, "198.18.0.31", 7)
			l.start(h)
			l.start(o)
			l.start(bo)
			l.run(5 * time.Second)
			// mdns-publisher on me's host: its packets come from me's
			// address, to every engine on the link; me's vipstack gets
			// them last, so that what it sends in return reaches the
			// others after them, as on a real link.
			pub := newZeroconfPeer(t, "ostest", "me", "198.18.0.22")
			broadcast := func(b []byte) {
				for _, x := range []*simHost{o, bo, h} {
					l.deliver(x, x.e.receive(l.now, inPacket{data: b, from: pub.from(), ifIndex: 1}))
				}
			}
			for _, typ := range tt.types {
				broadcast(pub.packet(typ, 3200))
			}
			l.run(20 * time.Second) // the goodbyes come between two browse queries (~15 s and ~31 s)
			want := []string{"master-0 master 198.18.0.11", tt.wantMe}
			check := func(when string) {
				t.Helper()
				if diff := cmp.Diff(want, summary(o.e.nodes())); diff != "" {
					t.Errorf("%s, master-0's nodes (-want +got):\n%s", when, diff)
				}
				if diff := cmp.Diff(want, summary(bo.e.nodes())); diff != "" {
					t.Errorf("%s, the browse-only engine's nodes (-want +got):\n%s", when, diff)
				}
			}
			check("before the goodbyes")
			if t.Failed() {
				t.FailNow()
			}
			mark := len(h.sent)
			for i, typ := range tt.types {
				if i > 0 && tt.apart > 0 {
					l.run(tt.apart)
				}
				broadcast(pub.packet(typ, 0))
				check("right after mdns-publisher's " + typ + " goodbye")
			}
			rescued := slices.ContainsFunc(h.sent[mark:], func(p simPacket) bool {
				return p.msg.Response && !p.to.IsValid() && len(p.msg.Answer) > 0 && p.msg.Answer[0].Header().Ttl > 0
			})
			if !rescued {
				t.Errorf("me sent no multicast response after the goodbye for its records")
			}
			for i := 1; i <= 300 && !t.Failed(); i++ {
				l.run(100 * time.Millisecond)
				check((time.Duration(i) * 100 * time.Millisecond).String() + " after the goodbyes")
			}
		})
	}
}
