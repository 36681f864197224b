package discovery

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
)

// TestMDNSEngineRefreshRetries: a cached record is asked for at 80, 85, 90
// and 95 % of its TTL until an answer comes (RFC 6762 section 5.2). At the
// default TTL of 15 s those queries are 0.75 s apart, closer than the
// second within which a question is not repeated; that rule is for
// questions another record's need asked already, not for this record's own
// retries, which it cut to two (80 and 90 %): a live node was dropped when
// two packets were lost instead of four. A question some other need asked
// since the record's last attempt still counts for it.
func TestMDNSEngineRefreshRetries(t *testing.T) {
	l := newSimLink(t)
	h := l.add(MDNS{Cluster: "c1", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11")}}, "198.18.0.11", 5)
	peer := l.add(MDNS{Cluster: "c1", Self: Node{Name: "peer", Role: Worker, Addrs: addrs("198.18.0.30")}}, "198.18.0.30", 6)
	l.start(h)
	l.start(peer)
	l.run(5 * time.Second)
	if diff := cmp.Diff([]string{"master-0 master 198.18.0.11", "peer worker 198.18.0.30"}, summary(h.e.nodes())); diff != "" {
		t.Fatalf("nodes (-want +got):\n%s", diff)
	}
	l.kill(peer) // silent: power loss
	mark := len(h.sent)
	l.run(20 * time.Second)
	if diff := cmp.Diff([]string{"master-0 master 198.18.0.11"}, summary(h.e.nodes())); diff != "" {
		t.Fatalf("20 s after peer died, nodes (-want +got):\n%s", diff)
	}
	asked := map[dns.Question][]time.Duration{}
	for _, p := range h.sent[mark:] {
		if p.msg.Response {
			continue
		}
		for _, q := range p.msg.Question {
			asked[q] = append(asked[q], p.at.Sub(l.now.Add(-20*time.Second)))
		}
	}
	for _, q := range []dns.Question{
		{Name: "peer.local.", Qtype: dns.TypeA, Qclass: dns.ClassINET},
		{Name: `peer\@c1._vipstack._tcp.local.`, Qtype: dns.TypeSRV, Qclass: dns.ClassINET},
		{Name: `peer\@c1._vipstack._tcp.local.`, Qtype: dns.TypeTXT, Qclass: dns.ClassINET},
	} {
		if got := asked[q]; len(got) != 4 {
			t.Errorf("after peer died, %s %s was asked at %v; want 4 times (80, 85, 90, 95 %% of its TTL)", q.Name, dns.TypeToString[q.Qtype], got)
		}
	}
}
