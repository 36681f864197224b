package discovery

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
)

// TestMDNSEngineMissingBacksOff: a node on mdns-publisher that dies without
// its goodbye (power loss) leaves its PTR and SRV (TTL 3200 s) behind its
// address (TTL 120 s). Once the address lapses, the node leaves the
// answers, and the browser asks for what is missing: the address, and
// mdns-publisher's type (the one query mdns-publisher answers, and every
// live mdns-publisher node answers it in full, known answers or not). It
// must not ask again on every response that comes by for the 53 minutes
// the PTR lives: the questions back off as RFC 6762 section 5.2's
// continuous queries do (1 s, doubling), and start over once the record
// comes.
func TestMDNSEngineMissingBacksOff(t *testing.T) {
	l := newSimLink(t)
	h := startMaster0(l, true)
	dead := newZeroconfPeer(t, "ostest", "master-2", "198.18.0.14")
	dead.live[MDNSWorkstationType], dead.live[MDNSEtcdType] = false, false
	for _, typ := range []string{MDNSEtcdType, MDNSWorkstationType} {
		l.deliver(h, h.e.receive(l.now, inPacket{data: dead.packet(typ, 3200), from: dead.from(), ifIndex: 1}))
	}
	want := []string{"master-0 master 198.18.0.11", "master-2 master 198.18.0.14"}
	if diff := cmp.Diff(want, summary(h.e.nodes())); diff != "" {
		t.Fatalf("nodes (-want +got):\n%s", diff)
	}
	// Another host on the link answers now and then (every 500 ms: an
	// avahi laptop's _workstation._tcp, not of the cluster), as on any busy
	// link.
	laptop := zeroconfPacket(t, "laptop [52:54:00:12:34:56]", MDNSWorkstationType, "laptop", 9, "198.18.0.99", 120)
	chatter := func(d time.Duration) {
		for end := l.now.Add(d); l.now.Before(end); {
			l.run(500 * time.Millisecond)
			l.deliver(h, h.e.receive(l.now, inPacket{data: laptop, from: netip.MustParseAddrPort("198.18.0.99:5353"), ifIndex: 1}))
		}
	}
	chatter(125 * time.Second) // past the address's TTL
	if diff := cmp.Diff(want[:1], summary(h.e.nodes())); diff != "" {
		t.Fatalf("125 s after master-2 died, nodes (-want +got):\n%s", diff)
	}
	asked := func(from int) int {
		n := 0
		for _, p := range h.sent[from:] {
			for _, q := range p.msg.Question {
				if !p.msg.Response && q.Name == "master-2.local." && q.Qtype == dns.TypeA {
					n++
				}
			}
		}
		return n
	}
	mark := len(h.sent)
	chatter(10 * time.Minute)
	// 1, 2, 4, ... 512 s: 10 questions; a few more for the PTR's refresh
	// at 80-95 % of its TTL is not in these 10 minutes.
	if n := asked(mark); n > 12 {
		t.Errorf("asked for master-2's address %d times in the 10 minutes after it lapsed; want at most 12 (1 s apart, doubling)", n)
	}
	ptrs := 0
	for _, p := range h.sent[mark:] {
		for _, q := range p.msg.Question {
			if !p.msg.Response && q.Name == "_etcd-server-ssl._tcp.local." && q.Qtype == dns.TypePTR {
				ptrs++
			}
		}
	}
	t.Logf("in the 10 minutes: %d questions for master-2's address, %d for the Etcd type", asked(mark), ptrs)
	if ptrs > 20 {
		t.Errorf("asked mdns-publisher's Etcd type %d times in those 10 minutes; want at most 20", ptrs)
	}

	// master-2 comes back: its announcement is cached at once, and once
	// its address lapses again the first question goes out at once.
	for _, typ := range []string{MDNSEtcdType, MDNSWorkstationType} {
		l.deliver(h, h.e.receive(l.now, inPacket{data: dead.packet(typ, 3200), from: dead.from(), ifIndex: 1}))
	}
	if diff := cmp.Diff(want, summary(h.e.nodes())); diff != "" {
		t.Fatalf("after master-2's return, nodes (-want +got):\n%s", diff)
	}
	chatter(119 * time.Second)
	mark = len(h.sent)
	chatter(2 * time.Second)
	if n := asked(mark); n == 0 {
		var qs []string
		for _, p := range h.sent[mark:] {
			for _, q := range p.msg.Question {
				qs = append(qs, strings.ReplaceAll(q.String(), "\t", " "))
			}
		}
		t.Errorf("the address lapsed again and the browser did not ask for it within a second; asked %v", qs)
	}
}
