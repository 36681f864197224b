package discovery

import (
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
)

func TestOCPInstanceLabel(t *testing.T) {
	if got, want := ocpInstanceLabel("ostest", ocpWorkstation, "master-0"), "ostest Workstation-master-0"; got != want {
		t.Errorf("ocpInstanceLabel = %q, want %q", got, want)
	}
	if got, want := ocpInstanceLabel("ostest", ocpEtcd, "master-0"), "ostest Etcd-master-0"; got != want {
		t.Errorf("ocpInstanceLabel = %q, want %q", got, want)
	}
	tests := []struct {
		label, cluster, want string
	}{
		// What mdns-publisher publishes with the machine-config-operator's
		// config (collision_avoidance = "hostname").
		{label: "ostest Workstation-master-0", cluster: "ostest", want: ocpWorkstation},
		{label: "ostest Etcd-master-0", cluster: "ostest", want: ocpEtcd},
		{label: "ostest Workstation-worker-0.example.com", cluster: "ostest", want: ocpWorkstation},
		// Without collision avoidance (older configs): every node the same.
		{label: "ostest Workstation", cluster: "ostest", want: ocpWorkstation},
		{label: "ostest Etcd", cluster: "ostest", want: ocpEtcd},
		// As the cache keeps it: lower-case.
		{label: "ostest workstation-master-0", cluster: "ostest", want: ocpWorkstation},
		{label: "OSTEST WORKSTATION-master-0", cluster: "ostest", want: ocpWorkstation},
		// coredns-mdns's substring filter takes these; vipstack does not.
		{label: "ostest2 Workstation-master-0", cluster: "ostest", want: ""},
		{label: "my ostest Workstation-master-0", cluster: "ostest", want: ""},
		{label: "ostest Workstations", cluster: "ostest", want: ""},
		{label: "ostest Workstation master-0", cluster: "ostest", want: ""},
		// What avahi publishes for every host.
		{label: "desk [52:54:00:12:34:56]", cluster: "ostest", want: ""},
		{label: "ostest [52:54:00:12:34:56]", cluster: "ostest", want: ""},
		{label: "", cluster: "ostest", want: ""},
		{label: "ostest", cluster: "ostest", want: ""},
	}
	for _, tt := range tests {
		if got := ocpKindOf(tt.label, tt.cluster); got != tt.want {
			t.Errorf("ocpKindOf(%q, %q) = %q, want %q", tt.label, tt.cluster, got, tt.want)
		}
	}
}

func TestSplitInstance(t *testing.T) {
	tests := []struct {
		inst, label, typ string
	}{
		{inst: `ostest\ workstation-master-0._workstation._tcp.local.`, label: "ostest workstation-master-0", typ: "_workstation._tcp.local."},
		{inst: `master-0\@c1._vipstack._tcp.local.`, label: "master-0@c1", typ: "_vipstack._tcp.local."},
		{inst: `a\.b\064c._x._tcp.local.`, label: "a.b@c", typ: "_x._tcp.local."},
		{inst: `x\\y._x._tcp.local.`, label: `x\y`, typ: "_x._tcp.local."},
		{inst: `nodot`, label: "nodot", typ: ""},
	}
	for _, tt := range tests {
		label, typ := splitInstance(tt.inst)
		if label != tt.label || typ != tt.typ {
			t.Errorf("splitInstance(%q) = %q, %q; want %q, %q", tt.inst, label, typ, tt.label, tt.typ)
		}
		// escapeLabel is what the engine publishes with: the round trip
		// holds.
		if got, _ := splitInstance(escapeLabel(tt.label) + "._x._tcp.local."); got != tt.label {
			t.Errorf("splitInstance(escapeLabel(%q)) = %q", tt.label, got)
		}
	}
}

func TestMDNSConfigOpenShift(t *testing.T) {
	m := MDNS{Cluster: strings.Repeat("c", 30), Self: Node{Name: strings.Repeat("n", 25), Role: Master, Addrs: addrs("198.18.0.11")}}
	if err := m.Validate(); err != nil {
		t.Fatalf("without OpenShift: %v", err)
	}
	m.OpenShift = true
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "68-byte OpenShift instance label") {
		t.Errorf("with OpenShift: error %v, want the 68-byte label refused", err)
	}
}

// askEngine sends h a multicast query with questions qs from a querier
// and returns what h sends within 200 ms (shared answers wait 20-120 ms).
func askEngine(t *testing.T, l *simLink, h *simHost, qs ...dns.Question) []*dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.Question = qs
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	mark := len(h.sent)
	l.deliver(h, h.e.receive(l.now, inPacket{data: b, from: netip.MustParseAddrPort("198.18.0.99:5353"), ifIndex: 1}))
	l.run(200 * time.Millisecond)
	var out []*dns.Msg
	for _, p := range h.sent[mark:] {
		if p.msg.Response {
			out = append(out, p.msg)
		}
	}
	return out
}

// TestMDNSEngineOpenShiftAnswers: with OpenShift on, a node answers the
// PTR queries coredns-mdns sends (through github.com/celebdor/zeroconf's
// browser) with the records mdns-publisher would send: instance
// "<cluster> Workstation-<node>" (and "<cluster> Etcd-<node>" on masters),
// SRV to <node>.local. on port 42424 (2380), and the address in the
// additional section.
func TestMDNSEngineOpenShiftAnswers(t *testing.T) {
	const (
		ws   = `ostest\ Workstation-master-0._workstation._tcp.local.`
		etcd = `ostest\ Etcd-master-0._etcd-server-ssl._tcp.local.`
	)
	q := func(name string) dns.Question {
		return dns.Question{Name: name, Qtype: dns.TypePTR, Qclass: dns.ClassINET}
	}
	tests := []struct {
		name      string
		role      Role
		openshift bool
		question  string
		want      []string // answer and additional sections; nil: no response
	}{
		{name: "workstation", role: Master, openshift: true, question: "_workstation._tcp.local.", want: []string{
			"_workstation._tcp.local. 20 IN PTR " + ws,
			"master-0.local. 20 CLASS32769 A 198.18.0.11",
			"master-0.local. 20 CLASS32769 NSEC master-0.local. A",
			ws + " 20 CLASS32769 SRV 0 0 42424 master-0.local.",
			ws + " 20 CLASS32769 TXT ", // no data, as mdns-publisher's
		}},
		{name: "etcd on a master", role: Master, openshift: true, question: "_etcd-server-ssl._tcp.local.", want: []string{
			"_etcd-server-ssl._tcp.local. 20 IN PTR " + etcd,
			"master-0.local. 20 CLASS32769 A 198.18.0.11",
			"master-0.local. 20 CLASS32769 NSEC master-0.local. A",
			etcd + " 20 CLASS32769 SRV 0 0 2380 master-0.local.",
			etcd + " 20 CLASS32769 TXT ",
		}},
		{name: "no etcd on a worker", role: Worker, openshift: true, question: "_etcd-server-ssl._tcp.local."},
		{name: "no etcd on a bootstrap node", role: Bootstrap, openshift: true, question: "_etcd-server-ssl._tcp.local."},
		{name: "workstation on a worker", role: Worker, openshift: true, question: "_workstation._tcp.local.", want: []string{
			"_workstation._tcp.local. 20 IN PTR " + ws,
			"master-0.local. 20 CLASS32769 A 198.18.0.11",
			"master-0.local. 20 CLASS32769 NSEC master-0.local. A",
			ws + " 20 CLASS32769 SRV 0 0 42424 master-0.local.",
			ws + " 20 CLASS32769 TXT ", // no data, as mdns-publisher's
		}},
		{name: "OpenShift off: no workstation", role: Master, question: "_workstation._tcp.local."},
		{name: "OpenShift off: no etcd", role: Master, question: "_etcd-server-ssl._tcp.local."},
		{name: "service types list both", role: Master, openshift: true, question: "_services._dns-sd._udp.local.", want: []string{
			"_services._dns-sd._udp.local. 20 IN PTR _etcd-server-ssl._tcp.local.",
			"_services._dns-sd._udp.local. 20 IN PTR _vipstack._tcp.local.",
			"_services._dns-sd._udp.local. 20 IN PTR _workstation._tcp.local.",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newSimLink(t)
			h := l.add(MDNS{Cluster: "ostest", Self: Node{Name: "master-0", Role: tt.role, Addrs: addrs("198.18.0.11")},
				OpenShift: tt.openshift, TTL: 20 * time.Second}, "198.18.0.11", 5)
			l.start(h)
			l.run(5 * time.Second) // probed and announced
			got := askEngine(t, l, h, q(tt.question))
			if tt.want == nil {
				if len(got) != 0 {
					t.Fatalf("answered %v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d responses, want 1: %v", len(got), got)
			}
			if diff := cmp.Diff(tt.want, rrStrings(append(got[0].Answer, got[0].Extra...))); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

// startMaster0 starts master-0 of cluster ostest (198.18.0.11, TTL 20 s,
// OpenShift's forms if openshift) on l and runs the link 2 s: the node the
// OpenShift tests watch others from.
func startMaster0(l *simLink, openshift bool) *simHost {
	l.t.Helper()
	h := l.add(MDNS{Cluster: "ostest", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11")},
		OpenShift: openshift, TTL: 20 * time.Second}, "198.18.0.11", 5)
	l.start(h)
	l.run(2 * time.Second)
	return h
}

// zeroconfAnnouncement is what mdns-publisher (github.com/celebdor/zeroconf,
// Server.probe -> composeLookupAnswers) multicasts for one service: SRV and
// TXT with the cache-flush bit, the PTR, the service type PTR, and the
// address with TTL 120 (appendAddrs); the TXT is empty (no strings).
func zeroconfAnnouncement(t testing.TB, label, typ, host string, port uint16, addr string) []byte {
	t.Helper()
	return zeroconfPacket(t, label, typ, host, port, addr, 3200)
}

// zeroconfPacket is that announcement with TTL ttl (120 for the address
// unless ttl is 0): with 0, the goodbye (Server.unregister).
func zeroconfPacket(t testing.TB, label, typ, host string, port uint16, addr string, ttl uint32) []byte {
	t.Helper()
	attl := uint32(120)
	if ttl == 0 {
		attl = 0
	}
	inst := escapeLabel(label) + "." + typ + ".local."
	hdr := func(name string, rt, class uint16, ttl uint32) dns.RR_Header {
		return dns.RR_Header{Name: name, Rrtype: rt, Class: class, Ttl: ttl}
	}
	m := new(dns.Msg)
	m.Response = true
	m.Answer = []dns.RR{
		&dns.SRV{Hdr: hdr(inst, dns.TypeSRV, dns.ClassINET|topBit, ttl), Port: port, Target: host + ".local."},
		&dns.TXT{Hdr: hdr(inst, dns.TypeTXT, dns.ClassINET|topBit, ttl)},
		&dns.PTR{Hdr: hdr(typ+".local.", dns.TypePTR, dns.ClassINET, ttl), Ptr: inst},
		&dns.PTR{Hdr: hdr(mdnsMetaName, dns.TypePTR, dns.ClassINET, ttl), Ptr: typ + ".local."},
	}
	a := netip.MustParseAddr(addr)
	if a.Is4() {
		m.Answer = append(m.Answer, &dns.A{Hdr: hdr(host+".local.", dns.TypeA, dns.ClassINET|topBit, attl), A: a.AsSlice()})
	} else {
		m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr(host+".local.", dns.TypeAAAA, dns.ClassINET|topBit, attl), AAAA: a.AsSlice()})
	}
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMDNSEngineOpenShiftBrowse: nodes that run mdns-publisher are nodes of
// the cluster, named after their SRV target, masters when they publish an
// Etcd instance; other _workstation._tcp hosts are never cached.
func TestMDNSEngineOpenShiftBrowse(t *testing.T) {
	type pub struct{ label, typ, host, addr string }
	ws := func(node, addr string) pub {
		return pub{ocpInstanceLabel("ostest", ocpWorkstation, node), MDNSWorkstationType, node, addr}
	}
	etcd := func(node, addr string) pub {
		return pub{ocpInstanceLabel("ostest", ocpEtcd, node), MDNSEtcdType, node, addr}
	}
	tests := []struct {
		name      string
		openshift bool
		pubs      []pub
		want      []string // nodes other than self
	}{
		{name: "a master: workstation and etcd", openshift: true,
			pubs: []pub{ws("master-1", "198.18.0.12"), etcd("master-1", "198.18.0.12")},
			want: []string{"master-1 master 198.18.0.12"}},
		{name: "etcd first", openshift: true,
			pubs: []pub{etcd("master-1", "198.18.0.12"), ws("master-1", "198.18.0.12")},
			want: []string{"master-1 master 198.18.0.12"}},
		{name: "a worker: workstation only", openshift: true,
			pubs: []pub{ws("worker-0", "198.18.0.21")},
			want: []string{"worker-0 worker 198.18.0.21"}},
		{name: "IPv6 bind address", openshift: true,
			pubs: []pub{ws("worker-0", "fd00:bb::21")},
			want: []string{"worker-0 worker fd00:bb::21"}},
		{name: "no collision avoidance: the instance is the cluster's alone", openshift: true,
			pubs: []pub{{"ostest Workstation", MDNSWorkstationType, "worker-0", "198.18.0.21"}},
			want: []string{"worker-0 worker 198.18.0.21"}},
		{name: "other hosts on the link", openshift: true,
			pubs: []pub{{"desk [52:54:00:12:34:56]", MDNSWorkstationType, "desk", "198.18.0.50"},
				{"ostest2 Workstation-master-5", MDNSWorkstationType, "master-5", "198.18.0.55"},
				{"ostest2 Etcd-master-5", MDNSEtcdType, "master-5", "198.18.0.55"}}},
		{name: "a node claiming our name", openshift: true,
			pubs: []pub{ws("master-0", "198.18.0.99")}},
		{name: "OpenShift off", pubs: []pub{ws("master-1", "198.18.0.12"), etcd("master-1", "198.18.0.12")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newSimLink(t)
			h := startMaster0(l, tt.openshift)
			for _, p := range tt.pubs {
				l.deliver(h, h.e.receive(l.now, inPacket{data: zeroconfAnnouncement(t, p.label, p.typ, p.host, 42424, p.addr),
					from: netip.AddrPortFrom(netip.MustParseAddr(p.addr), mdnsPort), ifIndex: 1}))
			}
			want := append([]string{"master-0 master 198.18.0.11"}, tt.want...)
			sort.Strings(want)
			if diff := cmp.Diff(want, summary(h.e.nodes())); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			if tt.want == nil {
				for k := range h.e.cache {
					if !strings.Contains(k.name, "master-0") {
						t.Errorf("cached %+v", k)
					}
				}
			}
		})
	}
}

// TestMDNSEngineOpenShiftMixed: a vipstack peer publishes both forms; its
// TXT role stands (a bootstrap node publishes a Workstation instance, which
// alone would make it a worker).
func TestMDNSEngineOpenShiftMixed(t *testing.T) {
	l := newSimLink(t)
	self := l.add(MDNS{Cluster: "ostest", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11")}, OpenShift: true}, "198.18.0.11", 5)
	boot := l.add(MDNS{Cluster: "ostest", Self: Node{Name: "bootstrap", Role: Bootstrap, Addrs: addrs("198.18.0.9")}, OpenShift: true}, "198.18.0.9", 6)
	w := l.add(MDNS{Cluster: "ostest", Self: Node{Name: "worker-0", Role: Worker, Addrs: addrs("198.18.0.21")}, OpenShift: true}, "198.18.0.21", 7)
	for _, h := range []*simHost{self, boot, w} {
		l.start(h)
	}
	l.run(10 * time.Second)
	want := []string{"bootstrap bootstrap 198.18.0.9", "master-0 master 198.18.0.11", "worker-0 worker 198.18.0.21"}
	for _, h := range []*simHost{self, boot, w} {
		if diff := cmp.Diff(want, summary(h.e.nodes())); diff != "" {
			t.Errorf("%s: nodes (-want +got):\n%s", h.e.cfg.self.Name, diff)
		}
	}
}

// TestMDNSEngineOpenShiftRefresh: mdns-publisher gives its address a TTL of
// 120 s and answers neither a query for its host name nor one for its
// instance: the address is refreshed with a PTR query for its type that
// does not list its PTR as a known answer, and the node stays.
func TestMDNSEngineOpenShiftRefresh(t *testing.T) {
	l := newSimLink(t)
	h := startMaster0(l, true)
	from := netip.MustParseAddrPort("198.18.0.21:5353")
	announce := func() []byte {
		return zeroconfAnnouncement(t, ocpInstanceLabel("ostest", ocpWorkstation, "worker-0"), MDNSWorkstationType, "worker-0", 42424, "198.18.0.21")
	}
	l.deliver(h, h.e.receive(l.now, inPacket{data: announce(), from: from, ifIndex: 1}))
	want := []string{"master-0 master 198.18.0.11", "worker-0 worker 198.18.0.21"}
	if diff := cmp.Diff(want, summary(h.e.nodes())); diff != "" {
		t.Fatalf("nodes (-want +got):\n%s", diff)
	}
	// The way mdns-publisher answers: a PTR query for its type whose
	// known answers do not hold its PTR with at least half its TTL gets
	// the whole announcement again (isKnownAnswer, handleQuestion).
	const ptr = `_workstation._tcp.local.`
	var asked []time.Time
	for end := l.now.Add(10 * time.Minute); l.now.Before(end); {
		mark := len(h.sent)
		l.run(time.Second)
		for _, p := range h.sent[mark:] {
			if p.msg.Response || !slices.ContainsFunc(p.msg.Question, func(q dns.Question) bool { return q.Name == ptr && q.Qtype == dns.TypePTR }) {
				continue
			}
			suppressed := false
			for _, rr := range p.msg.Answer {
				if k, ok := rr.(*dns.PTR); ok && strings.Contains(k.Ptr, "worker-0") && rr.Header().Ttl >= 3200/2 {
					suppressed = true
				}
			}
			if !suppressed {
				asked = append(asked, l.now)
				l.deliver(h, h.e.receive(l.now, inPacket{data: announce(), from: from, ifIndex: 1}))
			}
		}
		if diff := cmp.Diff(want, summary(h.e.nodes())); diff != "" {
			t.Fatalf("at +%v (mdns-publisher asked %d times): nodes (-want +got):\n%s", l.now.Sub(mdnsT0), len(asked), diff)
		}
	}
	if len(asked) < 4 {
		t.Errorf("mdns-publisher was asked %d times in 10 minutes; want one per address TTL (120 s) at least", len(asked))
	}
}

// TestMDNSEngineOpenShiftSameRecords: while a node moves to vipstack its old
// mdns-publisher may still announce; its records are vipstack's byte for
// byte (empty TXT included), so that is no conflict. Another address for
// the same host name is.
func TestMDNSEngineOpenShiftSameRecords(t *testing.T) {
	for _, tt := range []struct {
		addr  string
		phase pubPhase
	}{
		{addr: "198.18.0.11", phase: pubAnnounced},
		{addr: "198.18.0.99", phase: pubConflict},
	} {
		l := newSimLink(t)
		h := l.add(MDNS{Cluster: "ostest", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11")}, OpenShift: true}, "198.18.0.11", 5)
		l.start(h)
		l.run(5 * time.Second)
		if h.e.phase != pubAnnounced {
			t.Fatalf("phase %v before mdns-publisher, want announced", h.e.phase)
		}
		for _, kind := range []struct {
			kind, typ string
			port      uint16
		}{{ocpWorkstation, MDNSWorkstationType, 42424}, {ocpEtcd, MDNSEtcdType, 2380}} {
			l.deliver(h, h.e.receive(l.now, inPacket{data: zeroconfAnnouncement(t, ocpInstanceLabel("ostest", kind.kind, "master-0"), kind.typ, "master-0", kind.port, tt.addr),
				from: netip.AddrPortFrom(netip.MustParseAddr(tt.addr), mdnsPort), ifIndex: 1}))
		}
		if h.e.phase != tt.phase {
			t.Errorf("mdns-publisher announcing master-0 at %s: phase %v, want %v", tt.addr, h.e.phase, tt.phase)
		}
	}
}
