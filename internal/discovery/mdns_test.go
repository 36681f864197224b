package discovery

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
)

var (
	mdnsT0      = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	addrCompare = cmp.Comparer(func(x, y netip.Addr) bool { return x == y })
)

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

func TestMDNSConfig(t *testing.T) {
	good := MDNS{Cluster: "c1", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("fd00:bb::11", "198.18.0.11")}}
	tests := []struct {
		name    string
		edit    func(m *MDNS)
		wantErr string // substring; "" = valid
		want    Node
		wantTTL time.Duration
	}{
		{name: "valid, addresses sorted, default TTL", edit: func(*MDNS) {},
			want: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11", "fd00:bb::11")}, wantTTL: MDNSDefaultTTL},
		{name: "excluded addresses are not published", edit: func(m *MDNS) {
			m.Self.Addrs = append(m.Self.Addrs, netip.MustParseAddr("198.18.0.200"), netip.MustParseAddr("::ffff:198.18.0.11"))
			m.Exclude = addrs("198.18.0.200")
			m.TTL = 4 * time.Second
		}, want: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11", "fd00:bb::11")}, wantTTL: 4 * time.Second},
		{name: "empty cluster", edit: func(m *MDNS) { m.Cluster = "" }, wantErr: `Cluster "": length 0`},
		{name: "cluster with a dot", edit: func(m *MDNS) { m.Cluster = "a.b" }, wantErr: `Cluster "a.b": character '.' at 1`},
		{name: "name with underscore", edit: func(m *MDNS) { m.Self.Name = "m_0" }, wantErr: `Self.Name "m_0": character '_'`},
		{name: "name ends with hyphen", edit: func(m *MDNS) { m.Self.Name = "m-" }, wantErr: `Self.Name "m-": character '-' at 1`},
		{name: "instance label too long", edit: func(m *MDNS) { m.Cluster = strings.Repeat("c", 60) }, wantErr: "want at most 63 bytes"},
		{name: "bad role", edit: func(m *MDNS) { m.Self.Role = "con trol" }, wantErr: `Self.Role "con trol"`},
		{name: "role in capitals", edit: func(m *MDNS) { m.Self.Role = "Master" }, wantErr: `Self.Role "Master": want master, worker or bootstrap`},
		{name: "unknown role", edit: func(m *MDNS) { m.Self.Role = "control-plane" }, wantErr: `Self.Role "control-plane": want master, worker or bootstrap`},
		{name: "no role", edit: func(m *MDNS) { m.Self.Role = "" },
			want: Node{Name: "master-0", Addrs: addrs("198.18.0.11", "fd00:bb::11")}, wantTTL: MDNSDefaultTTL},
		{name: "link-local address", edit: func(m *MDNS) { m.Self.Addrs = addrs("fe80::1") }, wantErr: "Self.Addrs[0] = fe80::1: a link-local address"},
		{name: "loopback address", edit: func(m *MDNS) { m.Self.Addrs = addrs("198.18.0.11", "127.0.0.1") }, wantErr: "Self.Addrs[1] = 127.0.0.1: a loopback address"},
		{name: "only VIPs", edit: func(m *MDNS) { m.Self.Addrs = addrs("198.18.0.200"); m.Exclude = addrs("198.18.0.200") }, wantErr: "no address left to publish"},
		{name: "no addresses", edit: func(m *MDNS) { m.Self.Addrs = nil }, wantErr: "no address left to publish"},
		{name: "zero exclude", edit: func(m *MDNS) { m.Exclude = []netip.Addr{{}} }, wantErr: "Exclude[0] is the zero address"},
		{name: "sub-second TTL", edit: func(m *MDNS) { m.TTL = 1500 * time.Millisecond }, wantErr: "TTL 1.5s: want whole seconds"},
		{name: "huge TTL", edit: func(m *MDNS) { m.TTL = 2 * time.Hour }, wantErr: "TTL 2h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := good
			m.Self.Addrs = append([]netip.Addr(nil), good.Self.Addrs...)
			tt.edit(&m)
			before := m.Self.Addrs
			c, err := m.config()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("config() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("config(): %v", err)
			}
			if diff := cmp.Diff(tt.want, c.self, addrCompare); diff != "" {
				t.Errorf("self (-want +got):\n%s", diff)
			}
			if c.ttl != tt.wantTTL {
				t.Errorf("ttl = %v, want %v", c.ttl, tt.wantTTL)
			}
			if diff := cmp.Diff(before, m.Self.Addrs, addrCompare); diff != "" {
				t.Errorf("config() modified the caller's Self.Addrs (-before +after):\n%s", diff)
			}
		})
	}
}

// simLink connects engines as if they shared one link, in virtual time.
// Every multicast packet reaches every host that is up, the sender too
// (multicast loopback), through Pack and Unpack.
type simLink struct {
	t     testing.TB
	now   time.Time
	hosts []*simHost
}

type simHost struct {
	e    *mdnsEngine
	addr netip.Addr
	up   bool
	sent []simPacket
}

type simPacket struct {
	at  time.Time
	msg *dns.Msg
	to  netip.AddrPort
}

func newSimLink(t testing.TB) *simLink { return &simLink{t: t, now: mdnsT0} }

// add creates a host; it starts when start is called.
func (l *simLink) add(m MDNS, addr string, seed uint64) *simHost {
	l.t.Helper()
	if m.Logger == nil {
		m.Logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := m.config()
	if err != nil {
		l.t.Fatalf("config: %v", err)
	}
	h := &simHost{e: newMDNSEngine(cfg, rand.New(rand.NewPCG(seed, seed+1))), addr: netip.MustParseAddr(addr)}
	l.hosts = append(l.hosts, h)
	return h
}

func (l *simLink) start(h *simHost) {
	h.up = true
	l.deliver(h, h.e.start(l.now))
}

// stop ends h with its goodbye; kill ends it silently.
func (l *simLink) stop(h *simHost) { l.deliver(h, h.e.stop()); h.up = false }
func (l *simLink) kill(h *simHost) { h.up = false }

func (l *simLink) deliver(from *simHost, ps []outPacket) {
	l.t.Helper()
	for _, p := range ps {
		b, err := p.msg.Pack()
		if err != nil {
			l.t.Fatalf("pack %v: %v", p.msg, err)
		}
		from.sent = append(from.sent, simPacket{at: l.now, msg: p.msg, to: p.to})
		src := netip.AddrPortFrom(from.addr, mdnsPort)
		for _, h := range l.hosts {
			if !h.up || p.to.IsValid() && p.to.Addr() != h.addr {
				continue
			}
			l.deliver(h, h.e.receive(l.now, inPacket{data: b, from: src, ifIndex: 1}))
		}
	}
}

// run advances virtual time by d, running every engine's timers.
func (l *simLink) run(d time.Duration) {
	end := l.now.Add(d)
	for {
		var next time.Time
		for _, h := range l.hosts {
			if n := h.e.next(); h.up && !n.IsZero() && (next.IsZero() || n.Before(next)) {
				next = n
			}
		}
		if next.IsZero() || next.After(end) {
			l.now = end
			return
		}
		if next.After(l.now) {
			l.now = next
		}
		for _, h := range l.hosts {
			if n := h.e.next(); h.up && !n.IsZero() && !n.After(l.now) {
				l.deliver(h, h.e.tick(l.now))
			}
		}
	}
}

// summary is a node list in one comparable line per node.
func summary(nodes []Node) []string {
	var out []string
	for _, n := range nodes {
		var as []string
		for _, a := range n.Addrs {
			as = append(as, a.String())
		}
		out = append(out, n.Name+" "+string(n.Role)+" "+strings.Join(as, ","))
	}
	return out
}

func rrStrings(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		out = append(out, strings.ReplaceAll(rr.String(), "\t", " "))
	}
	sort.Strings(out)
	return out
}

func TestMDNSEnginePublishes(t *testing.T) {
	l := newSimLink(t)
	h := l.add(MDNS{Cluster: "c1", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11", "fd00:bb::11", "198.18.0.200")},
		Exclude: addrs("198.18.0.200", "fd00:bb::200"), TTL: 20 * time.Second}, "198.18.0.11", 1)
	l.start(h)
	l.run(5 * time.Second)

	type step struct {
		Kind    string // probe or announce
		Gap     time.Duration
		QU      bool
		Records []string
	}
	var got []step
	var prev time.Time
	for _, p := range h.sent {
		m := p.msg
		s := step{Gap: p.at.Sub(prev)}
		if prev.IsZero() {
			s.Gap = 0
		}
		switch {
		case !m.Response && len(m.Ns) > 0:
			s.Kind, s.QU, s.Records = "probe", m.Question[0].Qclass&topBit != 0, rrStrings(m.Ns)
		case m.Response:
			s.Kind, s.Records = "announce", rrStrings(m.Answer)
		default:
			continue // browse queries
		}
		prev = p.at
		got = append(got, s)
	}
	probeRecs := []string{
		"master-0.local. 20 IN A 198.18.0.11",
		"master-0.local. 20 IN AAAA fd00:bb::11",
		`master-0\@c1._vipstack._tcp.local. 20 IN SRV 0 0 9 master-0.local.`,
		`master-0\@c1._vipstack._tcp.local. 20 IN TXT "cluster=c1" "name=master-0" "role=master"`,
	}
	annRecs := []string{
		"_vipstack._tcp.local. 20 IN PTR master-0\\@c1._vipstack._tcp.local.",
		"master-0.local. 20 CLASS32769 A 198.18.0.11",
		"master-0.local. 20 CLASS32769 AAAA fd00:bb::11",
		`master-0\@c1._vipstack._tcp.local. 20 CLASS32769 SRV 0 0 9 master-0.local.`,
		`master-0\@c1._vipstack._tcp.local. 20 CLASS32769 TXT "cluster=c1" "name=master-0" "role=master"`,
	}
	want := []step{
		{Kind: "probe", QU: true, Records: probeRecs},
		{Kind: "probe", Gap: probeWait, Records: probeRecs},
		{Kind: "probe", Gap: probeWait, Records: probeRecs},
		{Kind: "announce", Gap: probeWait, Records: annRecs},
		{Kind: "announce", Gap: time.Second, Records: annRecs},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("probe and announce sequence (-want +got):\n%s", diff)
	}
	for _, p := range h.sent {
		for _, rr := range append(append(append([]dns.RR(nil), p.msg.Answer...), p.msg.Ns...), p.msg.Extra...) {
			if s := rr.String(); strings.Contains(s, "198.18.0.200") || strings.Contains(s, "fd00:bb::200") {
				t.Errorf("a VIP was advertised: %s", s)
			}
		}
	}
	l.stop(h)
	bye := h.sent[len(h.sent)-1].msg
	for _, rr := range bye.Answer {
		if rr.Header().Ttl != 0 {
			t.Errorf("goodbye record with TTL %d: %v", rr.Header().Ttl, rr)
		}
	}
	if len(bye.Answer) != len(annRecs) {
		t.Errorf("goodbye has %d records, want %d: %v", len(bye.Answer), len(annRecs), bye)
	}
}

func TestMDNSEngineAnswers(t *testing.T) {
	const inst = `master-0\@c1._vipstack._tcp.local.`
	q := func(name string, t uint16) dns.Question {
		return dns.Question{Name: name, Qtype: t, Qclass: dns.ClassINET}
	}
	tests := []struct {
		name      string
		self      []netip.Addr
		questions []dns.Question
		known     []string
		fromPort  uint16
		want      []string // answer section; nil = no response
		wantExtra []string
		unicast   bool
		delayed   bool
		id        bool // legacy: ID and question echoed
	}{
		{name: "browse PTR, shared, delayed, everything in additional",
			questions: []dns.Question{q("_vipstack._tcp.local.", dns.TypePTR)},
			want:      []string{"_vipstack._tcp.local. 20 IN PTR " + inst},
			wantExtra: []string{
				"master-0.local. 20 CLASS32769 A 198.18.0.11",
				"master-0.local. 20 CLASS32769 AAAA fd00:bb::11",
				inst + " 20 CLASS32769 SRV 0 0 9 master-0.local.",
				inst + ` 20 CLASS32769 TXT "cluster=c1" "name=master-0" "role=master"`,
			},
			delayed: true},
		{name: "known answer suppresses the PTR",
			questions: []dns.Question{q("_vipstack._tcp.local.", dns.TypePTR)},
			known:     []string{"_vipstack._tcp.local. 11 IN PTR " + inst}},
		{name: "known answer with less than half the TTL does not",
			questions: []dns.Question{q("_vipstack._tcp.local.", dns.TypePTR)},
			known:     []string{"_vipstack._tcp.local. 9 IN PTR " + inst},
			want:      []string{"_vipstack._tcp.local. 20 IN PTR " + inst},
			wantExtra: []string{
				"master-0.local. 20 CLASS32769 A 198.18.0.11",
				"master-0.local. 20 CLASS32769 AAAA fd00:bb::11",
				inst + " 20 CLASS32769 SRV 0 0 9 master-0.local.",
				inst + ` 20 CLASS32769 TXT "cluster=c1" "name=master-0" "role=master"`,
			},
			delayed: true},
		{name: "host A, unique, at once",
			questions: []dns.Question{q("MASTER-0.local.", dns.TypeA)},
			want:      []string{"master-0.local. 20 CLASS32769 A 198.18.0.11"}},
		{name: "host ANY",
			questions: []dns.Question{q("master-0.local.", dns.TypeANY)},
			want:      []string{"master-0.local. 20 CLASS32769 A 198.18.0.11", "master-0.local. 20 CLASS32769 AAAA fd00:bb::11"}},
		{name: "AAAA of an IPv4-only host: NSEC negative answer",
			self:      addrs("198.18.0.11"),
			questions: []dns.Question{q("master-0.local.", dns.TypeAAAA)},
			want:      []string{"master-0.local. 20 CLASS32769 NSEC master-0.local. A"}},
		{name: "A of an IPv4-only host: NSEC in additional",
			self:      addrs("198.18.0.11"),
			questions: []dns.Question{q("master-0.local.", dns.TypeA)},
			want:      []string{"master-0.local. 20 CLASS32769 A 198.18.0.11"},
			wantExtra: []string{"master-0.local. 20 CLASS32769 NSEC master-0.local. A"}},
		{name: "instance SRV with addresses in additional",
			questions: []dns.Question{q(inst, dns.TypeSRV)},
			want:      []string{inst + " 20 CLASS32769 SRV 0 0 9 master-0.local."},
			wantExtra: []string{"master-0.local. 20 CLASS32769 A 198.18.0.11", "master-0.local. 20 CLASS32769 AAAA fd00:bb::11"}},
		{name: "service type enumeration",
			questions: []dns.Question{q("_services._dns-sd._udp.local.", dns.TypePTR)},
			want:      []string{"_services._dns-sd._udp.local. 20 IN PTR _vipstack._tcp.local."},
			delayed:   true},
		{name: "unicast-response bit",
			questions: []dns.Question{{Name: "master-0.local.", Qtype: dns.TypeA, Qclass: dns.ClassINET | topBit}},
			want:      []string{"master-0.local. 20 CLASS32769 A 198.18.0.11"},
			unicast:   true},
		{name: "legacy unicast: ID and question echoed, TTL at most 10, no cache-flush bit",
			questions: []dns.Question{q("master-0.local.", dns.TypeA)}, fromPort: 40000,
			want:    []string{"master-0.local. 10 IN A 198.18.0.11"},
			unicast: true, id: true},
		{name: "someone else's name",
			questions: []dns.Question{q("master-1.local.", dns.TypeA)}},
		{name: "another service type",
			questions: []dns.Question{q("_http._tcp.local.", dns.TypePTR)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			self := tt.self
			if self == nil {
				self = addrs("198.18.0.11", "fd00:bb::11")
			}
			l := newSimLink(t)
			h := l.add(MDNS{Cluster: "c1", Self: Node{Name: "master-0", Role: Master, Addrs: self}, TTL: 20 * time.Second}, "198.18.0.11", 7)
			l.start(h)
			l.run(3 * time.Second)
			m := new(dns.Msg)
			m.Id = 4242
			m.Question = tt.questions
			for _, k := range tt.known {
				rr, err := dns.NewRR(k)
				if err != nil {
					t.Fatal(err)
				}
				m.Answer = append(m.Answer, rr)
			}
			b, err := m.Pack()
			if err != nil {
				t.Fatal(err)
			}
			port := tt.fromPort
			if port == 0 {
				port = mdnsPort
			}
			from := netip.AddrPortFrom(netip.MustParseAddr("198.18.0.50"), port)
			dst := mdnsGroup4.Addr()
			if tt.unicast {
				dst = netip.MustParseAddr("198.18.0.11") // a unicast query to one of our addresses
			}
			out := h.e.receive(l.now, inPacket{data: b, from: from, dst: dst, ifIndex: 1})
			delayed := false
			if len(out) == 0 && len(h.e.delayed) > 0 {
				delayed = true
				for _, d := range h.e.delayed {
					if gap := d.at.Sub(l.now); gap < 20*time.Millisecond || gap > 120*time.Millisecond {
						t.Errorf("shared answer delayed by %v, want 20-120ms", gap)
					}
				}
				l.now = l.now.Add(120 * time.Millisecond)
				out = nil
				for _, p := range h.e.tick(l.now) {
					if p.msg.Response { // the tick may also send a browse query
						out = append(out, p)
					}
				}
			}
			if tt.want == nil {
				if len(out) != 0 {
					t.Fatalf("got a response, want none: %v", out[0].msg)
				}
				return
			}
			if len(out) != 1 {
				t.Fatalf("got %d responses, want 1", len(out))
			}
			r := out[0]
			if diff := cmp.Diff(tt.want, rrStrings(r.msg.Answer)); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantExtra, rrStrings(r.msg.Extra)); diff != "" {
				t.Errorf("additional (-want +got):\n%s", diff)
			}
			if got := r.to.IsValid(); got != tt.unicast {
				t.Errorf("unicast = %v (to %v), want %v", got, r.to, tt.unicast)
			}
			if tt.unicast && (r.to != from || r.src != dst) {
				t.Errorf("unicast from %v to %v, want from %v (where the query went) to %v", r.src, r.to, dst, from)
			}
			if delayed != tt.delayed {
				t.Errorf("delayed = %v, want %v", delayed, tt.delayed)
			}
			if got := r.msg.Id == m.Id && len(r.msg.Question) == len(m.Question); got != tt.id {
				t.Errorf("ID and question echoed = %v, want %v (id %d, %d questions)", got, tt.id, r.msg.Id, len(r.msg.Question))
			}
			if !r.msg.Response || !r.msg.Authoritative {
				t.Errorf("response flags QR=%v AA=%v, want both", r.msg.Response, r.msg.Authoritative)
			}
		})
	}
}

// TestMDNSEngineDiscovery is a scenario on a simulated link: each step acts,
// lets virtual time pass, and checks what every host reports.
func TestMDNSEngineDiscovery(t *testing.T) {
	l := newSimLink(t)
	const ttl = 5 * time.Second
	m0 := l.add(MDNS{Cluster: "c1", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11", "fd00:bb::11")},
		Exclude: addrs("198.18.0.200"), TTL: ttl}, "198.18.0.11", 1)
	w0 := l.add(MDNS{Cluster: "c1", Self: Node{Name: "worker-0", Role: Worker, Addrs: addrs("198.18.0.21")}, TTL: ttl}, "198.18.0.21", 2)
	other := l.add(MDNS{Cluster: "c2", Self: Node{Name: "master-9", Role: Master, Addrs: addrs("198.18.0.99")}, TTL: ttl}, "198.18.0.99", 3)
	const (
		m0s    = "master-0 master 198.18.0.11,fd00:bb::11"
		w0s    = "worker-0 worker 198.18.0.21"
		others = "master-9 master 198.18.0.99"
	)
	steps := []struct {
		name   string
		act    func()
		wait   time.Duration
		m0, w0 []string
	}{
		{name: "both start and find each other; another cluster on the link stays out",
			act: func() { l.start(m0); l.start(w0); l.start(other) }, wait: 3 * time.Second,
			m0: []string{m0s, w0s}, w0: []string{m0s, w0s}},
		{name: "ten TTLs later the refresh queries keep them",
			wait: 10 * ttl, m0: []string{m0s, w0s}, w0: []string{m0s, w0s}},
		{name: "goodbye removes worker-0 at once",
			act: func() { l.stop(w0) }, m0: []string{m0s}, w0: []string{m0s, w0s}},
		{name: "worker-0 comes back",
			act: func() { l.start(w0) }, wait: 3 * time.Second, m0: []string{m0s, w0s}, w0: []string{m0s, w0s}},
		{name: "worker-0 dies silently: still there a second later",
			act: func() { l.kill(w0) }, wait: time.Second, m0: []string{m0s, w0s}, w0: []string{m0s, w0s}},
		{name: "and gone once its records expire",
			wait: ttl, m0: []string{m0s}, w0: []string{m0s, w0s}},
	}
	for _, s := range steps {
		if s.act != nil {
			s.act()
		}
		l.run(s.wait)
		if diff := cmp.Diff(s.m0, summary(m0.e.nodes())); diff != "" {
			t.Errorf("%s: master-0 sees (-want +got):\n%s", s.name, diff)
		}
		if diff := cmp.Diff(s.w0, summary(w0.e.nodes())); diff != "" {
			t.Errorf("%s: worker-0 sees (-want +got):\n%s", s.name, diff)
		}
		if got := summary(other.e.nodes()); !cmp.Equal(got, []string{others}) {
			t.Errorf("%s: the other cluster sees %v, want only itself", s.name, got)
		}
		for _, h := range []*simHost{m0, w0, other} {
			checkSets(t, s.name, h.e)
		}
	}
}

// checkSets checks that the engine's RRset index holds exactly the cache.
func checkSets(t *testing.T, step string, e *mdnsEngine) {
	t.Helper()
	n := 0
	for sk, set := range e.sets {
		if len(set) == 0 {
			t.Errorf("%s: empty RRset %v left in the index", step, sk)
		}
		for k, c := range set {
			n++
			if k.name != sk.name || k.typ != sk.typ || e.cache[k] != c {
				t.Errorf("%s: RRset %v holds %v, which the cache does not", step, sk, k)
			}
		}
	}
	if n != len(e.cache) {
		t.Errorf("%s: the RRset index holds %d records, the cache %d", step, n, len(e.cache))
	}
}

// manyPeers returns n peers' announcements, one packet each.
func manyPeers(t testing.TB, n int) [][]byte {
	pkts := make([][]byte, n)
	for i := range n {
		inst := fmt.Sprintf(`peer-%d\@c1._vipstack._tcp.local.`, i)
		pkts[i] = peerResponse(t, "_vipstack._tcp.local. 15 IN PTR "+inst,
			inst+fmt.Sprintf(" 15 IN SRV 0 0 9 peer-%d.local.", i),
			inst+fmt.Sprintf(` 15 IN TXT "cluster=c1" "name=peer-%d" "role=worker"`, i),
			fmt.Sprintf("peer-%d.local. 15 CLASS32769 A 198.18.%d.%d", i, 1+i/250, 1+i%250),
			fmt.Sprintf("peer-%d.local. 15 CLASS32769 AAAA fd00:bb::%x", i, 0x100+i))
	}
	return pkts
}

// TestMDNSEngineManyPeers: 300 peers announce, re-announce, one says
// goodbye, and the rest expire; the node list and the RRset index follow.
func TestMDNSEngineManyPeers(t *testing.T) {
	const n = 300
	l := newSimLink(t)
	h := l.add(MDNS{Cluster: "c1", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11")}, TTL: 15 * time.Second}, "198.18.0.11", 5)
	l.start(h)
	l.run(2 * time.Second)
	from := netip.AddrPortFrom(netip.MustParseAddr("198.18.0.30"), mdnsPort)
	pkts := manyPeers(t, n)
	for round := range 2 {
		for _, p := range pkts {
			h.e.receive(l.now, inPacket{data: p, from: from, ifIndex: 1})
		}
		if got := len(h.e.nodes()); got != n+1 {
			t.Fatalf("round %d: %d nodes, want %d", round, got, n+1)
		}
		checkSets(t, fmt.Sprintf("round %d", round), h.e)
		l.run(2 * time.Second)
	}
	// The browse query carries every PTR as a known answer: 300 fit in
	// one packet (about 26 bytes each, compressed).
	q := h.e.query(l.now.Add(time.Second), []dns.Question{{Name: h.e.svc, Qtype: dns.TypePTR, Qclass: dns.ClassINET}}, nil, nil)
	if len(q) != 1 || len(q[0].msg.Answer) != n+1 || q[0].msg.Len() > maxPacket {
		t.Errorf("browse query: %d packets, want 1 with %d known answers in at most %d bytes", len(q), n+1, maxPacket)
		for _, p := range q {
			t.Logf("%d questions, %d answers, %d bytes", len(p.msg.Question), len(p.msg.Answer), p.msg.Len())
		}
	}
	h.e.receive(l.now, inPacket{data: peerResponse(t, `_vipstack._tcp.local. 0 IN PTR peer-7\@c1._vipstack._tcp.local.`), from: from, ifIndex: 1})
	if got := len(h.e.nodes()); got != n {
		t.Errorf("after peer-7's goodbye: %d nodes, want %d", got, n)
	}
	checkSets(t, "goodbye", h.e)
	h.e.tick(l.now.Add(20 * time.Second))
	if diff := cmp.Diff([]string{"master-0 master 198.18.0.11"}, summary(h.e.nodes())); diff != "" {
		t.Errorf("after the TTL (-want +got):\n%s", diff)
	}
	checkSets(t, "expired", h.e)
}

// TestMDNSEngineFlood: a host announces far more instances than any cluster
// has, with TTLs of 68 years. The cache stays bounded, no record is kept
// longer than maxCacheTTL, every packet we send fits in maxPacket bytes
// (they reached 1.4 MB, which no socket sends, and took the browse and
// refresh questions down with them), and a peer known before the flood
// stays known.
func TestMDNSEngineFlood(t *testing.T) {
	l := newSimLink(t)
	h := l.add(MDNS{Cluster: "c1", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11")}, TTL: 15 * time.Second}, "198.18.0.11", 5)
	l.start(h)
	l.run(2 * time.Second)
	from := netip.AddrPortFrom(netip.MustParseAddr("198.18.0.30"), mdnsPort)
	receive := func(p []byte) {
		t.Helper()
		for _, o := range h.e.receive(l.now, inPacket{data: p, from: from, ifIndex: 1}) {
			if n := o.msg.Len(); n > maxPacket {
				t.Fatalf("sent a %d-byte packet (%d questions, %d answers); want at most %d", n, len(o.msg.Question), len(o.msg.Answer), maxPacket)
			}
		}
	}
	receive(manyPeers(t, 1)[0])
	const perPacket = 100
	for p := 0; p*perPacket < maxCache+2000; p++ {
		var recs []string
		for i := range perPacket {
			recs = append(recs, fmt.Sprintf(`_vipstack._tcp.local. 2147483647 IN PTR x%d-%d\@c1._vipstack._tcp.local.`, p, i))
		}
		receive(peerResponse(t, recs...))
		if p%40 == 0 {
			receive(manyPeers(t, 1)[0]) // peer-0 announces again now and then
		}
	}
	if n := len(h.e.cache); n > maxCache {
		t.Errorf("cache holds %d records; want at most %d", n, maxCache)
	}
	for k, c := range h.e.cache {
		if c.ttl > maxCacheTTL || c.expires.Sub(l.now) > maxCacheTTL {
			t.Fatalf("%v kept for %v; want at most %v", k, c.expires.Sub(l.now), maxCacheTTL)
		}
	}
	checkSets(t, "flood", h.e)
	if !slices.Contains(summary(h.e.nodes()), "peer-0 worker 198.18.1.1,fd00:bb::100") {
		t.Errorf("peer-0, known before the flood, is gone: %v", summary(h.e.nodes()))
	}
	before := len(h.sent)
	l.run(30 * time.Second) // refresh and missing-record queries for everything cached
	for _, p := range h.sent[before:] {
		if n := p.msg.Len(); n > maxPacket {
			t.Fatalf("sent a %d-byte packet (%d questions, %d answers); want at most %d", n, len(p.msg.Question), len(p.msg.Answer), maxPacket)
		}
	}
	if len(h.sent) == before {
		t.Errorf("no query in the 30 s after the flood")
	}
}

// BenchmarkMDNSEngineReceive is the cost of one peer's announcement with
// the other peers cached: it grows with the peers (the node list and the
// wanted hosts are rebuilt), not with their square.
func BenchmarkMDNSEngineReceive(b *testing.B) {
	for _, n := range []int{50, 500} {
		b.Run(fmt.Sprintf("peers=%d", n), func(b *testing.B) {
			l := newSimLink(b)
			h := l.add(MDNS{Cluster: "c1", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11")}, TTL: 15 * time.Second}, "198.18.0.11", 5)
			l.start(h)
			from := netip.AddrPortFrom(netip.MustParseAddr("198.18.0.30"), mdnsPort)
			pkts := manyPeers(b, n)
			for _, p := range pkts {
				h.e.receive(l.now, inPacket{data: p, from: from, ifIndex: 1})
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.e.receive(l.now, inPacket{data: pkts[i%n], from: from, ifIndex: 1})
				h.e.nodes()
			}
		})
	}
}

// peerResponse is a response as another host would announce itself.
func peerResponse(t testing.TB, records ...string) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.Response, m.Authoritative = true, true
	for _, s := range records {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		m.Answer = append(m.Answer, rr)
	}
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMDNSEngineBrowse(t *testing.T) {
	const inst = `peer\@c1._vipstack._tcp.local.`
	ptr := "_vipstack._tcp.local. 120 IN PTR " + inst
	srv := inst + " 120 IN SRV 0 0 9 peer.local."
	txt := inst + ` 120 IN TXT "cluster=c1" "name=peer" "role=worker"`
	type packet struct {
		after   time.Duration // since the previous packet
		records []string
		port    uint16
	}
	tests := []struct {
		name    string
		packets []packet
		want    []string // nodes other than self
	}{
		{name: "complete announcement",
			packets: []packet{{records: []string{ptr, srv, txt, "peer.local. 120 IN A 198.18.0.30", "peer.local. 120 IN AAAA fd00:bb::30"}}},
			want:    []string{"peer worker 198.18.0.30,fd00:bb::30"}},
		{name: "records in separate packets, host name in any case",
			packets: []packet{{records: []string{ptr}}, {records: []string{srv, txt}}, {records: []string{"PEER.local. 120 IN A 198.18.0.30"}}},
			want:    []string{"peer worker 198.18.0.30"}},
		{name: "no address: not a node yet",
			packets: []packet{{records: []string{ptr, srv, txt}}}},
		{name: "no TXT: not a node",
			packets: []packet{{records: []string{ptr, srv, "peer.local. 120 IN A 198.18.0.30"}}}},
		{name: "another cluster",
			packets: []packet{{records: []string{ptr, srv, inst + ` 120 IN TXT "cluster=c2" "name=peer"`, "peer.local. 120 IN A 198.18.0.30"}}}},
		{name: "VIP, link-local and loopback addresses are dropped",
			packets: []packet{{records: []string{ptr, srv, txt, "peer.local. 120 IN A 198.18.0.200", "peer.local. 120 IN AAAA fe80::1",
				"peer.local. 120 IN A 127.0.0.1", "peer.local. 120 IN A 198.18.0.30"}}},
			want: []string{"peer worker 198.18.0.30"}},
		{name: "only a VIP: not a node",
			packets: []packet{{records: []string{ptr, srv, txt, "peer.local. 120 IN A 198.18.0.200"}}}},
		{name: "no name= key: the SRV target's first label",
			packets: []packet{{records: []string{ptr, srv, inst + ` 120 IN TXT "cluster=c1" "role=master"`, "peer.local. 120 IN A 198.18.0.30"}}},
			want:    []string{"peer master 198.18.0.30"}},
		{name: "TXT keys are case-insensitive, first wins",
			packets: []packet{{records: []string{ptr, srv, inst + ` 120 IN TXT "CLUSTER=c1" "cluster=c9" "Role=worker"`, "peer.local. 120 IN A 198.18.0.30"}}},
			want:    []string{"peer worker 198.18.0.30"}},
		{name: "a role in capitals is the role (avahi-publish by hand: role=Master)",
			packets: []packet{{records: []string{ptr, srv, inst + ` 120 IN TXT "cluster=c1" "name=peer" "role=Master"`, "peer.local. 120 IN A 198.18.0.30"}}},
			want:    []string{"peer master 198.18.0.30"}},
		{name: "a peer claiming our own name is ignored",
			packets: []packet{{records: []string{ptr, srv, inst + ` 120 IN TXT "cluster=c1" "name=master-0"`, "peer.local. 120 IN A 198.18.0.30"}}}},
		{name: "goodbye for the PTR removes the node",
			packets: []packet{{records: []string{ptr, srv, txt, "peer.local. 120 IN A 198.18.0.30"}},
				{after: time.Second, records: []string{"_vipstack._tcp.local. 0 IN PTR " + inst}}}},
		{name: "goodbye for one address removes only that address",
			packets: []packet{{records: []string{ptr, srv, txt, "peer.local. 120 IN A 198.18.0.30", "peer.local. 120 IN A 198.18.0.31"}},
				{after: time.Second, records: []string{"peer.local. 0 IN A 198.18.0.31"}}},
			want: []string{"peer worker 198.18.0.30"}},
		{name: "cache-flush: a new address replaces the old one a second later",
			packets: []packet{{records: []string{ptr, srv, txt, "peer.local. 120 IN A 198.18.0.30"}},
				{after: 5 * time.Second, records: []string{"peer.local. 120 CLASS32769 A 198.18.0.33"}},
				{after: 1500 * time.Millisecond, records: nil}},
			want: []string{"peer worker 198.18.0.33"}},
		{name: "same address again with cache-flush keeps it",
			packets: []packet{{records: []string{ptr, srv, txt, "peer.local. 120 IN A 198.18.0.30"}},
				{after: 5 * time.Second, records: []string{"peer.local. 120 CLASS32769 A 198.18.0.30"}},
				{after: 5 * time.Second, records: nil}},
			want: []string{"peer worker 198.18.0.30"}},
		{name: "responses from a port other than 5353 are ignored",
			packets: []packet{{port: 40000, records: []string{ptr, srv, txt, "peer.local. 120 IN A 198.18.0.30"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newSimLink(t)
			h := l.add(MDNS{Cluster: "c1", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11")},
				Exclude: addrs("198.18.0.200"), TTL: 20 * time.Second}, "198.18.0.11", 5)
			l.start(h)
			l.run(2 * time.Second)
			for _, p := range tt.packets {
				l.run(p.after)
				if p.records == nil {
					continue
				}
				port := p.port
				if port == 0 {
					port = mdnsPort
				}
				l.deliver(h, h.e.receive(l.now, inPacket{data: peerResponse(t, p.records...),
					from: netip.AddrPortFrom(netip.MustParseAddr("198.18.0.30"), port), ifIndex: 1}))
			}
			want := append([]string{"master-0 master 198.18.0.11"}, tt.want...)
			sort.Strings(want)
			if diff := cmp.Diff(want, summary(h.e.nodes())); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMDNSEngineAsksForMissing: a PTR alone makes the browser ask for the
// SRV and TXT, and an SRV without addresses makes it ask for A and AAAA.
func TestMDNSEngineAsksForMissing(t *testing.T) {
	const inst = `peer\@c1._vipstack._tcp.local.`
	l := newSimLink(t)
	h := l.add(MDNS{Cluster: "c1", Self: Node{Name: "master-0", Addrs: addrs("198.18.0.11")}}, "198.18.0.11", 5)
	l.start(h)
	l.run(2 * time.Second)
	from := netip.AddrPortFrom(netip.MustParseAddr("198.18.0.30"), mdnsPort)
	questions := func(ps []outPacket) []string {
		var out []string
		for _, p := range ps {
			for _, q := range p.msg.Question {
				out = append(out, q.Name+" "+dns.TypeToString[q.Qtype])
			}
		}
		return out
	}
	out := h.e.receive(l.now, inPacket{data: peerResponse(t, "_vipstack._tcp.local. 120 IN PTR "+inst), from: from, ifIndex: 1})
	if diff := cmp.Diff([]string{inst + " TXT", inst + " SRV"}, questions(out)); diff != "" {
		t.Errorf("after a PTR, questions (-want +got):\n%s", diff)
	}
	l.now = l.now.Add(2 * time.Second)
	out = h.e.receive(l.now, inPacket{data: peerResponse(t, inst+" 120 IN SRV 0 0 9 peer.local.", inst+` 120 IN TXT "cluster=c1"`), from: from, ifIndex: 1})
	if diff := cmp.Diff([]string{"peer.local. A", "peer.local. AAAA"}, questions(out)); diff != "" {
		t.Errorf("after SRV and TXT, questions (-want +got):\n%s", diff)
	}
	out = h.e.receive(l.now.Add(100*time.Millisecond), inPacket{data: peerResponse(t, inst+" 120 IN SRV 0 0 9 peer.local."), from: from, ifIndex: 1})
	if got := questions(out); len(got) != 0 {
		t.Errorf("asked again within a second: %v", got)
	}
}

// TestMDNSEngineConflict: a second host with the same name loses while
// probing, never announces, and takes the name once the first leaves.
func TestMDNSEngineConflict(t *testing.T) {
	l := newSimLink(t)
	a := l.add(MDNS{Cluster: "c1", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11")}, TTL: 10 * time.Second}, "198.18.0.11", 1)
	b := l.add(MDNS{Cluster: "c1", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.12")}, TTL: 10 * time.Second}, "198.18.0.12", 2)
	l.start(a)
	l.run(3 * time.Second)
	l.start(b)
	l.run(4 * time.Second)
	announced := func(h *simHost) bool {
		for _, p := range h.sent {
			if p.msg.Response && !p.to.IsValid() && len(p.msg.Answer) > 0 && p.msg.Answer[0].Header().Ttl > 0 &&
				len(p.msg.Answer) >= 4 && p.msg.Answer[0].Header().Rrtype == dns.TypePTR {
				return true
			}
		}
		return false
	}
	if b.e.phase != pubConflict || announced(b) {
		t.Fatalf("second master-0: phase %v, announced %v; want it to have lost the name without announcing", b.e.phase, announced(b))
	}
	if a.e.phase != pubAnnounced {
		t.Fatalf("first master-0 phase %v, want announced", a.e.phase)
	}
	l.stop(a)
	b.sent = nil
	l.run(conflictBackoff + 2*time.Second)
	if b.e.phase != pubAnnounced || !announced(b) {
		t.Errorf("after the first left, the second: phase %v, announced %v; want announced", b.e.phase, announced(b))
	}
}

// TestMDNSEngineConflictAfterAnnounce: a conflicting record seen once
// announced makes the engine probe again at once (RFC 6762 section 9); with
// nobody defending the name it announces again.
func TestMDNSEngineConflictAfterAnnounce(t *testing.T) {
	l := newSimLink(t)
	h := l.add(MDNS{Cluster: "c1", Self: Node{Name: "master-0", Addrs: addrs("198.18.0.11")}}, "198.18.0.11", 1)
	l.start(h)
	l.run(3 * time.Second)
	h.sent = nil
	h.e.receive(l.now, inPacket{data: peerResponse(t, "master-0.local. 120 CLASS32769 A 198.18.0.66"),
		from: netip.MustParseAddrPort("198.18.0.66:5353"), ifIndex: 1})
	if h.e.phase != pubConflict || !h.e.pubAt.Equal(l.now) {
		t.Fatalf("after a conflicting A: phase %v, next step in %v; want a new probe at once", h.e.phase, h.e.pubAt.Sub(l.now))
	}
	l.run(3 * time.Second)
	var probes, announces int
	for _, p := range h.sent {
		switch {
		case !p.msg.Response && len(p.msg.Ns) > 0:
			probes++
		case p.msg.Response && len(p.msg.Answer) >= 4:
			announces++
		}
	}
	if h.e.phase != pubAnnounced || probes != probeCount || announces != announceCount {
		t.Errorf("phase %v after %d probes and %d announcements; want announced after %d and %d", h.e.phase, probes, announces, probeCount, announceCount)
	}
}

// TestMDNSLegacyReplySource: a legacy query sent to the group is answered
// from our node address of the querier's family, never left to the kernel
// (which could pick a VIP).
func TestMDNSLegacyReplySource(t *testing.T) {
	l := newSimLink(t)
	h := l.add(MDNS{Cluster: "c1", Self: Node{Name: "master-0", Addrs: addrs("198.18.0.11", "fd00:bb::11")}}, "198.18.0.11", 1)
	l.start(h)
	l.run(3 * time.Second)
	q := new(dns.Msg)
	q.SetQuestion("master-0.local.", dns.TypeA)
	b, err := q.Pack()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ from, dst, want string }{
		{"198.18.0.50:40000", "224.0.0.251", "198.18.0.11"},
		{"[fd00:bb::50]:40000", "ff02::fb", "fd00:bb::11"},
		{"[fd00:bb::50]:40000", "fd00:bb::11", "fd00:bb::11"},
	} {
		out := h.e.receive(l.now, inPacket{data: b, from: netip.MustParseAddrPort(tc.from), dst: netip.MustParseAddr(tc.dst), ifIndex: 1})
		if len(out) != 1 || out[0].src != netip.MustParseAddr(tc.want) {
			t.Errorf("legacy query from %s to %s: replies %v, want one from %s", tc.from, tc.dst, out, tc.want)
		}
	}
}

func TestMDNSTieBreak(t *testing.T) {
	cfg, err := (&MDNS{Cluster: "c1", Self: Node{Name: "m", Addrs: addrs("198.18.0.20")}, Logger: slog.New(slog.DiscardHandler)}).config()
	if err != nil {
		t.Fatal(err)
	}
	e := newMDNSEngine(cfg, rand.New(rand.NewPCG(1, 1)))
	rr := func(s string) dns.RR {
		r, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tests := []struct {
		name  string
		ns    []dns.RR
		loses bool
	}{
		{name: "identical (our own probe looped back)", ns: e.probe(false).Ns},
		{name: "their address is higher", ns: []dns.RR{rr("m.local. 15 IN A 198.18.0.30")}, loses: true},
		{name: "their address is lower", ns: []dns.RR{rr("m.local. 15 IN A 198.18.0.10")}},
		{name: "they have one more record", ns: []dns.RR{rr("m.local. 15 IN A 198.18.0.20"), rr("m.local. 15 IN A 198.18.0.21")}, loses: true},
		{name: "AAAA sorts after A (type decides first)", ns: []dns.RR{rr("m.local. 15 IN AAAA fd00::1")}, loses: true},
		{name: "someone else's name", ns: []dns.RR{rr("x.local. 15 IN A 198.18.0.99")}},
		{name: "name compared case-insensitively", ns: []dns.RR{rr("M.LOCAL. 15 IN A 198.18.0.30")}, loses: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := e.losesTieBreak(tt.ns); got != tt.loses {
				t.Errorf("losesTieBreak = %v, want %v", got, tt.loses)
			}
		})
	}
}

// FuzzMDNSEngineReceive feeds arbitrary datagrams to an announced engine
// that already knows a peer: it must not panic, and no report may ever
// carry an excluded address.
func FuzzMDNSEngineReceive(f *testing.F) {
	cfg, err := (&MDNS{Cluster: "c1", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11", "fd00:bb::11")},
		Exclude: addrs("198.18.0.200", "fd00:bb::200"), Logger: slog.New(slog.DiscardHandler)}).config()
	if err != nil {
		f.Fatal(err)
	}
	seedEngine := newMDNSEngine(cfg, rand.New(rand.NewPCG(1, 1)))
	for _, p := range []*dns.Msg{seedEngine.probe(true), seedEngine.response(seedEngine.own, nil, true)} {
		b, err := p.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	const inst = `peer\@c1._vipstack._tcp.local.`
	f.Add(peerResponse(f, "_vipstack._tcp.local. 120 IN PTR "+inst, inst+" 120 IN SRV 0 0 9 peer.local.",
		inst+` 120 IN TXT "cluster=c1"`, "peer.local. 120 IN A 198.18.0.200", "peer.local. 120 IN AAAA fd00:bb::200"))
	captured, _ := filepath.Glob(filepath.Join(avahiCaptureDir, "*.bin"))
	for _, name := range captured {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e := newMDNSEngine(cfg, rand.New(rand.NewPCG(1, 1)))
		now := mdnsT0
		e.start(now)
		for i := 0; i < 10; i++ {
			now = e.next()
			e.tick(now)
		}
		e.receive(now, inPacket{data: data, from: netip.MustParseAddrPort("198.18.0.30:5353"), ifIndex: 1})
		e.receive(now, inPacket{data: data, from: netip.MustParseAddrPort("198.18.0.30:40000"), ifIndex: 1})
		// The same records' goodbye, then the records again 10 ms
		// later: the reconfirmation's paths (goodbyeMemory).
		if m := new(dns.Msg); m.Unpack(data) == nil {
			for _, rr := range append(append([]dns.RR(nil), m.Answer...), m.Extra...) {
				rr.Header().Ttl = 0
			}
			if bye, err := m.Pack(); err == nil {
				e.receive(now, inPacket{data: bye, from: netip.MustParseAddrPort("198.18.0.30:5353"), ifIndex: 1})
				now = now.Add(10 * time.Millisecond)
				e.receive(now, inPacket{data: data, from: netip.MustParseAddrPort("198.18.0.30:5353"), ifIndex: 1})
			}
		}
		for i := 0; i < 8 && !e.next().IsZero(); i++ {
			now = e.next()
			e.tick(now)
		}
		for k, c := range e.cache {
			if c.verifying() && !now.Before(c.verifyBy) {
				t.Fatalf("%+v is still cached at %v, past its reconfirmation's end %v", k, now, c.verifyBy)
			}
		}
		for _, n := range e.nodes() {
			for _, a := range n.Addrs {
				if cfg.exclude[a] || unusableAddr(a) != "" {
					t.Fatalf("node %s reported with address %v", n.Name, a)
				}
			}
		}
	})
}

// avahiCaptureDir holds the datagrams avahi-daemon 0.8 sent while
// avahi-publish published peer-9.local (198.18.0.99, fd00:bb::99) and the
// service "peer-9@c1" (cluster=c1 name=peer-9 role=worker), answered
// vipstack's queries, and then withdrew the service. Regenerate as root with
// go test -run TestMDNSAvahiInterop -mdns.capture ./internal/discovery
const avahiCaptureDir = "testdata/avahi-peer"

// TestMDNSEngineAvahiCapture replays avahi's packets: peer-9 appears with
// both addresses and disappears with avahi's goodbye.
func TestMDNSEngineAvahiCapture(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(avahiCaptureDir, "*.bin"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captured packets in %s (%v)", avahiCaptureDir, err)
	}
	l := newSimLink(t)
	h := l.add(MDNS{Cluster: "c1", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11")}}, "198.18.0.11", 9)
	l.start(h)
	l.run(3 * time.Second)
	const peer = "peer-9 worker 198.18.0.99,fd00:bb::99"
	seen := false
	var last []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		l.run(10 * time.Millisecond)
		l.deliver(h, h.e.receive(l.now, inPacket{data: b, from: netip.MustParseAddrPort("198.18.0.12:5353"), ifIndex: 1}))
		last = summary(h.e.nodes())
		if slices.Contains(last, peer) {
			seen = true
		}
	}
	if !seen {
		t.Errorf("peer-9 never appeared with both addresses; last report %v", last)
	}
	if diff := cmp.Diff([]string{"master-0 master 198.18.0.11"}, last); diff != "" {
		t.Errorf("after avahi's goodbye (-want +got):\n%s", diff)
	}
}
