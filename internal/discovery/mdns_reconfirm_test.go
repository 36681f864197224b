package discovery

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
)

// zeroconfPeer plays one mdns-publisher node (github.com/celebdor/zeroconf,
// one server per service): it answers a PTR query for the type of a live
// service, unless the query lists that service's PTR as a known answer
// with at least half its TTL, with the service's whole announcement.
type zeroconfPeer struct {
	t     *testing.T
	host  string
	addr  string
	live  map[string]bool // service type -> answering
	label map[string]string
	sent  int // answers sent
	// seen, if set, gets what h sent in each step of run, before p
	// answers it.
	seen func([]outPacket)
}

func newZeroconfPeer(t *testing.T, cluster, host, addr string) *zeroconfPeer {
	return &zeroconfPeer{t: t, host: host, addr: addr,
		live: map[string]bool{MDNSWorkstationType: true, MDNSEtcdType: true},
		label: map[string]string{
			MDNSWorkstationType: ocpInstanceLabel(cluster, ocpWorkstation, host),
			MDNSEtcdType:        ocpInstanceLabel(cluster, ocpEtcd, host),
		}}
}

func (p *zeroconfPeer) packet(typ string, ttl uint32) []byte {
	return zeroconfPacket(p.t, p.label[typ], typ, p.host, 42424, p.addr, ttl)
}

func (p *zeroconfPeer) from() netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr(p.addr), mdnsPort)
}

// answer delivers to h the peer's answers to the queries in ps, and to
// the queries h sends in return, and so on.
func (p *zeroconfPeer) answer(l *simLink, h *simHost, ps []outPacket) {
	for _, out := range ps {
		if out.msg.Response {
			continue
		}
		for _, typ := range []string{MDNSWorkstationType, MDNSEtcdType} {
			if !p.live[typ] || !slices.ContainsFunc(out.msg.Question, func(q dns.Question) bool {
				return q.Qtype == dns.TypePTR && q.Name == typ+".local."
			}) {
				continue
			}
			if slices.ContainsFunc(out.msg.Answer, func(rr dns.RR) bool {
				ptr, ok := rr.(*dns.PTR)
				return ok && strings.Contains(ptr.Ptr, p.host) && rr.Header().Ttl >= 3200/2
			}) {
				continue
			}
			p.sent++
			p.answer(l, h, h.e.receive(l.now, inPacket{data: p.packet(typ, 3200), from: p.from(), ifIndex: 1}))
		}
	}
}

// run advances the link by d in steps of 100 ms, with p answering h's
// queries.
func (p *zeroconfPeer) run(l *simLink, h *simHost, d time.Duration) {
	for end := l.now.Add(d); l.now.Before(end); {
		mark := len(h.sent)
		l.run(100 * time.Millisecond)
		var ps []outPacket
		for _, s := range h.sent[mark:] {
			ps = append(ps, outPacket{msg: s.msg})
		}
		if p.seen != nil {
			p.seen(ps)
		}
		p.answer(l, h, ps)
	}
}

// TestMDNSEngineReconfirmAfterGoodbye: mdns-publisher sends a service's
// goodbye before it closes its sockets, and answers a query that comes in
// between: after the Workstation service's goodbye the Etcd service
// answers, and after its own goodbye it answers once more. A record back within 5 s of its goodbye is
// reconfirmed: the node is gone 4 s later unless mdns-publisher answers
// the reconfirmation. A clean-clone CI run failed on this race
// (TestRootMDNSDirectivePublisher, 2026-11-24): the node stayed.
func TestMDNSEngineReconfirmAfterGoodbye(t *testing.T) {
	for _, tt := range []struct {
		name string
		// back: mdns-publisher runs again (a restart) and answers from
		// this long after the Etcd goodbye on; 0: never.
		back time.Duration
		want []string
	}{
		{name: "answers after its goodbye, then gone", want: []string{"master-0 master 198.18.0.11"}},
		{name: "restarted at once: answers the reconfirmation", back: 500 * time.Millisecond,
			want: []string{"master-0 master 198.18.0.11", "master-2 master 198.18.0.14"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newSimLink(t)
			h := startMaster0(l, true)
			p := newZeroconfPeer(t, "ostest", "master-2", "198.18.0.14")
			for _, typ := range []string{MDNSEtcdType, MDNSWorkstationType} {
				p.answer(l, h, h.e.receive(l.now, inPacket{data: p.packet(typ, 3200), from: p.from(), ifIndex: 1}))
			}
			p.run(l, h, 2*time.Second)
			withPeer := []string{"master-0 master 198.18.0.11", "master-2 master 198.18.0.14"}
			if diff := cmp.Diff(withPeer, summary(h.e.nodes())); diff != "" {
				t.Fatalf("after the announcements, nodes (-want +got):\n%s", diff)
			}

			// The goodbyes, in mdns-publisher's order. After each, the
			// Etcd server, whose sockets are still open, answers a PTR
			// query for its type: another browser's on the link (OpenShift's
			// CoreDNS browses every few seconds), or vipstack's own.
			late := func() {
				l.deliver(h, h.e.receive(l.now, inPacket{data: p.packet(MDNSEtcdType, 3200), from: p.from(), ifIndex: 1}))
			}
			l.deliver(h, h.e.receive(l.now, inPacket{data: p.packet(MDNSWorkstationType, 0), from: p.from(), ifIndex: 1}))
			p.live[MDNSWorkstationType] = false
			late()
			l.run(time.Millisecond)
			l.deliver(h, h.e.receive(l.now, inPacket{data: p.packet(MDNSEtcdType, 0), from: p.from(), ifIndex: 1}))
			p.live[MDNSEtcdType] = false
			late()
			if diff := cmp.Diff(withPeer, summary(h.e.nodes())); diff != "" {
				t.Fatalf("right after the late answer, nodes (-want +got):\n%s", diff)
			}

			// The reconfirmation asks for the Etcd PTR the way
			// mdns-publisher answers: a PTR query for its type that
			// does not hold its PTR as a known answer.
			etcdPTR := keyOf(&dns.PTR{Hdr: dns.RR_Header{Name: MDNSEtcdType + ".local.", Rrtype: dns.TypePTR},
				Ptr: escapeLabel(p.label[MDNSEtcdType]) + "." + MDNSEtcdType + ".local."})
			if c := h.e.cache[etcdPTR]; c == nil || !c.verifying() {
				t.Fatalf("master-2's Etcd PTR, back right after its goodbye, is not being reconfirmed: %+v", c)
			}
			asked := 0
			p.seen = func(ps []outPacket) {
				if c := h.e.cache[etcdPTR]; c == nil || !c.verifying() {
					return // gone, or confirmed before these were sent
				}
				for _, o := range ps {
					if o.msg.Response || !slices.ContainsFunc(o.msg.Question, func(q dns.Question) bool {
						return q.Qtype == dns.TypePTR && q.Name == MDNSEtcdType+".local."
					}) {
						continue
					}
					if slices.ContainsFunc(o.msg.Answer, func(rr dns.RR) bool { return strings.Contains(rr.String(), "master-2") }) {
						t.Errorf("a reconfirmation query lists master-2 as a known answer: %v", o.msg)
					}
					asked++
				}
			}
			if tt.back > 0 {
				p.run(l, h, tt.back)
				p.live[MDNSWorkstationType], p.live[MDNSEtcdType] = true, true
			}
			p.run(l, h, 10*time.Second-tt.back)
			if diff := cmp.Diff(tt.want, summary(h.e.nodes())); diff != "" {
				t.Errorf("10 s after the goodbyes, nodes (-want +got):\n%s", diff)
			}
			if want := map[bool]int{false: reconfirmQueries, true: 1}[tt.back > 0]; asked < want {
				t.Errorf("asked %d times for the Etcd PTR while reconfirming it; want %d or more", asked, want)
			}
			if c := h.e.cache[etcdPTR]; c != nil && c.verifying() {
				t.Errorf("master-2's Etcd PTR is still being reconfirmed: %+v", c)
			}
		})
	}
}

// TestMDNSEngineReturnAfterGoodbyeMemory: a host that says goodbye and is
// back more than 5 s later is a host that restarted; its records are
// cached as any others, without reconfirmation.
func TestMDNSEngineReturnAfterGoodbyeMemory(t *testing.T) {
	l := newSimLink(t)
	h := startMaster0(l, true)
	p := newZeroconfPeer(t, "ostest", "master-2", "198.18.0.14")
	p.live[MDNSWorkstationType], p.live[MDNSEtcdType] = false, false // never answers a query
	announce := func(ttl uint32) {
		for _, typ := range []string{MDNSEtcdType, MDNSWorkstationType} {
			l.deliver(h, h.e.receive(l.now, inPacket{data: p.packet(typ, ttl), from: p.from(), ifIndex: 1}))
		}
	}
	announce(3200)
	l.run(time.Second)
	announce(0)
	l.run(6 * time.Second) // past goodbyeMemory
	announce(3200)
	l.run(time.Minute)
	want := []string{"master-0 master 198.18.0.11", "master-2 master 198.18.0.14"}
	if diff := cmp.Diff(want, summary(h.e.nodes())); diff != "" {
		t.Errorf("a minute after the return, nodes (-want +got):\n%s", diff)
	}
	for k, c := range h.e.cache {
		if c.verifying() {
			t.Errorf("%+v is being reconfirmed", k)
		}
	}
}

// TestMDNSEngineReconfirmVipstackPeer: the same for a vipstack peer, which
// answers queries for its host and instance names: its announcement
// replayed after its goodbye goes 4 s later; a peer that restarts at once
// answers the reconfirmation (the query lists no known answer that would
// keep it quiet) and stays.
func TestMDNSEngineReconfirmVipstackPeer(t *testing.T) {
	for _, restart := range []bool{false, true} {
		l := newSimLink(t)
		self := l.add(MDNS{Cluster: "c1", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11")}}, "198.18.0.11", 5)
		peer := l.add(MDNS{Cluster: "c1", Self: Node{Name: "peer", Role: Worker, Addrs: addrs("198.18.0.30")}}, "198.18.0.30", 6)
		l.start(self)
		l.start(peer)
		l.run(5 * time.Second)
		var announcement []byte
		for _, s := range peer.sent {
			if s.msg.Response && len(s.msg.Answer) > 3 {
				b, err := s.msg.Pack()
				if err != nil {
					t.Fatal(err)
				}
				announcement = b
			}
		}
		if announcement == nil {
			t.Fatal("the peer announced nothing")
		}
		both := []string{"master-0 master 198.18.0.11", "peer worker 198.18.0.30"}
		if diff := cmp.Diff(both, summary(self.e.nodes())); diff != "" {
			t.Fatalf("nodes (-want +got):\n%s", diff)
		}
		l.stop(peer)
		l.run(10 * time.Millisecond)
		l.deliver(self, self.e.receive(l.now, inPacket{data: announcement, from: netip.MustParseAddrPort("198.18.0.30:5353"), ifIndex: 1}))
		if diff := cmp.Diff(both, summary(self.e.nodes())); diff != "" {
			t.Fatalf("after the replayed announcement, nodes (-want +got):\n%s", diff)
		}
		want := both[:1]
		if restart {
			// A new engine, as a restarted process: it probes and
			// announces; its records are the old ones.
			l.hosts = l.hosts[:1]
			peer = l.add(MDNS{Cluster: "c1", Self: Node{Name: "peer", Role: Worker, Addrs: addrs("198.18.0.30")}}, "198.18.0.30", 7)
			l.start(peer)
			want = both
		}
		l.run(10 * time.Second)
		if diff := cmp.Diff(want, summary(self.e.nodes())); diff != "" {
			t.Errorf("restart %v: 10 s after the goodbye, nodes (-want +got):\n%s", restart, diff)
		}
	}
}
