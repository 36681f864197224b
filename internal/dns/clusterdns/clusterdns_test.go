package clusterdns

import (
	"context"
	"net/netip"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/discovery"
)

const zone = "managed.example.com."

// nextRcode is what the next plugin returns in these tests, so that a
// fallthrough is told apart from an answer.
const nextRcode = dns.RcodeRefused

func addrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, a := range s {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}

func testConfig() Config {
	return Config{
		Zone:    zone,
		API:     addrs("198.18.0.5", "fd00:bb::5"),
		Ingress: addrs("198.18.0.7"),
		TTL:     DefaultTTL,
		Nodes: []discovery.Node{
			{Name: "master-1", Role: discovery.Master, Addrs: addrs("198.18.0.12")},
			{Name: "master-0", Role: discovery.Master, Addrs: addrs("198.18.0.11", "fd00:bb::11")},
			{Name: "master-2", Role: discovery.Master, Addrs: addrs("fd00:bb::13")},
			{Name: "worker-0", Role: discovery.Worker, Addrs: addrs("198.18.0.21")},
			{Name: "bootstrap", Role: discovery.Bootstrap},
		},
	}
}

// soa is the negative-answer SOA the tests expect (test.Section compares
// owner, TTL, type and the SOA's Ns).
var soa = test.SOA("managed.example.com. 60 IN SOA ns.managed.example.com. hostmaster.managed.example.com. 1 7200 1800 86400 60")

func TestServeDNS(t *testing.T) {
	h := New(testConfig(), nil)
	h.Next = test.NextHandler(nextRcode, nil)
	cases := []test.Case{
		// API VIPs, both families, api and api-int.
		{Qname: "api.managed.example.com.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("api.managed.example.com. 60 IN A 198.18.0.5")}},
		{Qname: "api.managed.example.com.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("api.managed.example.com. 60 IN AAAA fd00:bb::5")}},
		{Qname: "api-int.managed.example.com.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("api-int.managed.example.com. 60 IN A 198.18.0.5")}},
		{Qname: "api.managed.example.com.", Qtype: dns.TypeANY, Answer: []dns.RR{
			test.A("api.managed.example.com. 60 IN A 198.18.0.5"),
			test.AAAA("api.managed.example.com. 60 IN AAAA fd00:bb::5"),
		}},
		// Ingress: anything under apps; IPv4 only, so AAAA is NODATA.
		{Qname: "console.apps.managed.example.com.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("console.apps.managed.example.com. 60 IN A 198.18.0.7")}},
		{Qname: "a.b.apps.managed.example.com.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("a.b.apps.managed.example.com. 60 IN A 198.18.0.7")}},
		{Qname: "console.apps.managed.example.com.", Qtype: dns.TypeAAAA, Ns: []dns.RR{soa}},
		{Qname: "apps.managed.example.com.", Qtype: dns.TypeA, Ns: []dns.RR{soa}},
		// Nodes, fully qualified and short; the owner keeps the query's case.
		{Qname: "master-0.managed.example.com.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("master-0.managed.example.com. 60 IN A 198.18.0.11")}},
		{Qname: "master-0.managed.example.com.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("master-0.managed.example.com. 60 IN AAAA fd00:bb::11")}},
		{Qname: "Master-0.Managed.Example.COM.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("Master-0.Managed.Example.COM. 60 IN A 198.18.0.11")}},
		{Qname: "master-0.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("master-0. 60 IN A 198.18.0.11")}},
		{Qname: "worker-0.", Qtype: dns.TypeAAAA},                                        // short name without IPv6: empty NOERROR
		{Qname: "worker-0.managed.example.com.", Qtype: dns.TypeAAAA, Ns: []dns.RR{soa}}, // NODATA
		{Qname: "master-2.managed.example.com.", Qtype: dns.TypeA, Ns: []dns.RR{soa}},
		{Qname: "bootstrap.managed.example.com.", Qtype: dns.TypeA, Ns: []dns.RR{soa}}, // node without addresses
		{Qname: "worker-0.managed.example.com.", Qtype: dns.TypeMX, Ns: []dns.RR{soa}},
		// etcd-N: the masters sorted by name.
		{Qname: "etcd-0.managed.example.com.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("etcd-0.managed.example.com. 60 IN A 198.18.0.11")}},
		{Qname: "etcd-1.managed.example.com.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("etcd-1.managed.example.com. 60 IN A 198.18.0.12")}},
		{Qname: "etcd-2.managed.example.com.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("etcd-2.managed.example.com. 60 IN AAAA fd00:bb::13")}},
		{Qname: "etcd-2.managed.example.com.", Qtype: dns.TypeA, Ns: []dns.RR{soa}},
		{Qname: "etcd-3.managed.example.com.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soa}},
		// The etcd SRV record, with the targets' addresses as additional data.
		{Qname: "_etcd-server-ssl._tcp.managed.example.com.", Qtype: dns.TypeSRV,
			Answer: []dns.RR{
				test.SRV("_etcd-server-ssl._tcp.managed.example.com. 60 IN SRV 0 10 2380 etcd-0.managed.example.com."),
				test.SRV("_etcd-server-ssl._tcp.managed.example.com. 60 IN SRV 0 10 2380 etcd-1.managed.example.com."),
				test.SRV("_etcd-server-ssl._tcp.managed.example.com. 60 IN SRV 0 10 2380 etcd-2.managed.example.com."),
			},
			Extra: []dns.RR{
				test.A("etcd-0.managed.example.com. 60 IN A 198.18.0.11"),
				test.AAAA("etcd-0.managed.example.com. 60 IN AAAA fd00:bb::11"),
				test.A("etcd-1.managed.example.com. 60 IN A 198.18.0.12"),
				test.AAAA("etcd-2.managed.example.com. 60 IN AAAA fd00:bb::13"),
			}},
		{Qname: "_etcd-server-ssl._tcp.managed.example.com.", Qtype: dns.TypeA, Ns: []dns.RR{soa}},
		{Qname: "_tcp.managed.example.com.", Qtype: dns.TypeSRV, Ns: []dns.RR{soa}},
		// The apex.
		{Qname: "managed.example.com.", Qtype: dns.TypeSOA, Answer: []dns.RR{soa}},
		{Qname: "managed.example.com.", Qtype: dns.TypeA, Ns: []dns.RR{soa}},
		// Unknown names in the zone: NXDOMAIN with the SOA.
		{Qname: "nope.managed.example.com.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soa}},
		{Qname: "x.api.managed.example.com.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soa}},
		{Qname: "x.master-0.managed.example.com.", Qtype: dns.TypeAAAA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soa}},
		// PTR for node addresses, both families, as a hosts line
		// "ADDR NODE NODE.ZONE" answers: the short name, then the FQDN.
		{Qname: "11.0.18.198.in-addr.arpa.", Qtype: dns.TypePTR, Answer: []dns.RR{
			test.PTR("11.0.18.198.in-addr.arpa. 60 IN PTR master-0."),
			test.PTR("11.0.18.198.in-addr.arpa. 60 IN PTR master-0.managed.example.com."),
		}},
		{Qname: "21.0.18.198.IN-ADDR.ARPA.", Qtype: dns.TypePTR, Answer: []dns.RR{
			test.PTR("21.0.18.198.IN-ADDR.ARPA. 60 IN PTR worker-0."),
			test.PTR("21.0.18.198.IN-ADDR.ARPA. 60 IN PTR worker-0.managed.example.com."),
		}},
		{Qname: "3.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.b.b.0.0.0.0.d.f.ip6.arpa.", Qtype: dns.TypePTR, Answer: []dns.RR{
			test.PTR("3.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.b.b.0.0.0.0.d.f.ip6.arpa. 60 IN PTR master-2."),
			test.PTR("3.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.b.b.0.0.0.0.d.f.ip6.arpa. 60 IN PTR master-2.managed.example.com."),
		}},
	}
	for _, tc := range cases {
		t.Run(dns.TypeToString[tc.Qtype]+"/"+tc.Qname, func(t *testing.T) {
			rec := dnstest.NewRecorder(&test.ResponseWriter{})
			code, err := h.ServeDNS(context.Background(), rec, tc.Msg())
			if err != nil {
				t.Fatalf("ServeDNS: %v", err)
			}
			if code != tc.Rcode {
				t.Errorf("ServeDNS returned rcode %s, want %s", dns.RcodeToString[code], dns.RcodeToString[tc.Rcode])
			}
			if rec.Msg == nil {
				t.Fatalf("no response written")
			}
			if !rec.Msg.Authoritative {
				t.Errorf("AA flag not set")
			}
			if err := test.SortAndCheck(rec.Msg, tc); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestServeDNSPassesOn covers the queries the plugin hands to the next
// plugin: names outside the zone, other classes, and fallthrough.
func TestServeDNSPassesOn(t *testing.T) {
	tests := []struct {
		name  string
		fall  []string // nil: no fallthrough; empty: fallthrough for every zone
		qname string
		qtype uint16
		class uint16
		want  int // rcode: nextRcode when passed on
	}{
		{name: "outside zone", qname: "example.org.", qtype: dns.TypeA, want: nextRcode},
		{name: "suffix without label boundary", qname: "xmanaged.example.com.", qtype: dns.TypeA, want: nextRcode},
		{name: "single label that is no node", qname: "printer.", qtype: dns.TypeA, want: nextRcode},
		{name: "CHAOS class", qname: "api.managed.example.com.", qtype: dns.TypeTXT, class: dns.ClassCHAOS, want: nextRcode},
		{name: "unknown without fallthrough", qname: "nope.managed.example.com.", qtype: dns.TypeA, want: dns.RcodeNameError},
		{name: "unknown with fallthrough", fall: []string{}, qname: "nope.managed.example.com.", qtype: dns.TypeA, want: nextRcode},
		{name: "unknown with fallthrough for the zone", fall: []string{"managed.example.com"}, qname: "nope.managed.example.com.", qtype: dns.TypeA, want: nextRcode},
		{name: "unknown with fallthrough for another zone", fall: []string{"example.org"}, qname: "nope.managed.example.com.", qtype: dns.TypeA, want: dns.RcodeNameError},
		{name: "known name with fallthrough is answered", fall: []string{}, qname: "api.managed.example.com.", qtype: dns.TypeA, want: dns.RcodeSuccess},
		{name: "PTR of an address no node has (a VIP)", qname: "5.0.18.198.in-addr.arpa.", qtype: dns.TypePTR, want: nextRcode},
		{name: "PTR of a node address asked as A", qname: "11.0.18.198.in-addr.arpa.", qtype: dns.TypeA, want: nextRcode},
		{name: "NODATA is not passed on", fall: []string{}, qname: "console.apps.managed.example.com.", qtype: dns.TypeAAAA, want: dns.RcodeSuccess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			if tt.fall != nil {
				cfg.Fall.SetZonesFromArgs(tt.fall)
			}
			h := New(cfg, nil)
			h.Next = test.NextHandler(nextRcode, nil)
			m := new(dns.Msg)
			m.SetQuestion(tt.qname, tt.qtype)
			if tt.class != 0 {
				m.Question[0].Qclass = tt.class
			}
			rec := dnstest.NewRecorder(&test.ResponseWriter{})
			code, err := h.ServeDNS(context.Background(), rec, m)
			if err != nil {
				t.Fatalf("ServeDNS: %v", err)
			}
			if code != tt.want {
				t.Errorf("rcode %s, want %s", dns.RcodeToString[code], dns.RcodeToString[tt.want])
			}
			if passed := code == nextRcode; passed != (rec.Msg == nil) {
				t.Errorf("passed on = %v but response written = %v", passed, rec.Msg != nil)
			}
		})
	}
}

func TestTTL(t *testing.T) {
	cfg := testConfig()
	cfg.TTL = 5
	h := New(cfg, nil)
	for _, tc := range []test.Case{
		{Qname: "api.managed.example.com.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("api.managed.example.com. 5 IN A 198.18.0.5")}},
		{Qname: "nope.managed.example.com.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{
			test.SOA("managed.example.com. 5 IN SOA ns.managed.example.com. hostmaster.managed.example.com. 1 7200 1800 86400 5"),
		}},
	} {
		rec := dnstest.NewRecorder(&test.ResponseWriter{})
		if _, err := h.ServeDNS(context.Background(), rec, tc.Msg()); err != nil {
			t.Fatal(err)
		}
		if err := test.SortAndCheck(rec.Msg, tc); err != nil {
			t.Errorf("%s: %v", tc.Qname, err)
		}
		if ns := rec.Msg.Ns; len(ns) == 1 && ns[0].(*dns.SOA).Minttl != 5 {
			t.Errorf("SOA minimum %d, want 5", ns[0].(*dns.SOA).Minttl)
		}
	}
}

// TestLiveUpdate feeds the registry the way the mDNS source or the node
// agent does and checks that the very next query sees every change.
func TestLiveUpdate(t *testing.T) {
	reg := discovery.NewRegistry()
	// The node agent's source: the nodes of the cluster file.
	reg.Set("cluster", []discovery.Node{{Name: "master-0", Role: discovery.Master, Addrs: addrs("198.18.0.11")}})
	cfg := testConfig()
	cfg.Nodes = nil
	h := New(cfg, reg)
	if h.Registry() != reg {
		t.Fatalf("Registry() is not the registry passed to New")
	}
	srv := func(n string) dns.RR {
		return test.SRV("_etcd-server-ssl._tcp.managed.example.com. 60 IN SRV 0 10 2380 etcd-" + n + ".managed.example.com.")
	}
	srvName := "_etcd-server-ssl._tcp.managed.example.com."
	steps := []struct {
		name  string
		mdns  []discovery.Node // what the "mdns" source reports before the queries
		clear bool             // empty the "cluster" source before the queries
		cases []test.Case
	}{
		{
			name: "cluster file only",
			cases: []test.Case{
				{Qname: srvName, Qtype: dns.TypeSRV, Answer: []dns.RR{srv("0")}, Extra: []dns.RR{test.A("etcd-0.managed.example.com. 60 IN A 198.18.0.11")}},
				{Qname: "master-1.managed.example.com.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soa}},
			},
		},
		{
			name: "master-1 joins with IPv4 and IPv6",
			mdns: []discovery.Node{{Name: "master-1", Role: discovery.Master, Addrs: addrs("198.18.0.12", "fd00:bb::12")}},
			cases: []test.Case{
				{Qname: srvName, Qtype: dns.TypeSRV, Answer: []dns.RR{srv("0"), srv("1")}, Extra: []dns.RR{
					test.A("etcd-0.managed.example.com. 60 IN A 198.18.0.11"),
					test.A("etcd-1.managed.example.com. 60 IN A 198.18.0.12"),
					test.AAAA("etcd-1.managed.example.com. 60 IN AAAA fd00:bb::12"),
				}},
				{Qname: "master-1.managed.example.com.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("master-1.managed.example.com. 60 IN AAAA fd00:bb::12")}},
				{Qname: "etcd-1.managed.example.com.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("etcd-1.managed.example.com. 60 IN A 198.18.0.12")}},
			},
		},
		{
			name: "mdns also sees master-0 with a second address",
			mdns: []discovery.Node{
				{Name: "master-0", Role: discovery.Master, Addrs: addrs("fd00:bb::11")},
				{Name: "master-1", Role: discovery.Master, Addrs: addrs("198.18.0.12", "fd00:bb::12")},
			},
			cases: []test.Case{
				{Qname: "master-0.managed.example.com.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("master-0.managed.example.com. 60 IN AAAA fd00:bb::11")}},
			},
		},
		{
			name: "master-1 leaves",
			mdns: []discovery.Node{},
			cases: []test.Case{
				{Qname: srvName, Qtype: dns.TypeSRV, Answer: []dns.RR{srv("0")}, Extra: []dns.RR{test.A("etcd-0.managed.example.com. 60 IN A 198.18.0.11")}},
				{Qname: "master-1.managed.example.com.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soa}},
				{Qname: "etcd-1.managed.example.com.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soa}},
				{Qname: "master-0.managed.example.com.", Qtype: dns.TypeAAAA, Ns: []dns.RR{soa}},
			},
		},
		{
			name: "a node name the zone cannot hold is ignored",
			mdns: []discovery.Node{{Name: "api", Role: discovery.Master, Addrs: addrs("198.18.0.66")}, {Name: "bad_name", Addrs: addrs("198.18.0.67")}},
			cases: []test.Case{
				{Qname: "api.managed.example.com.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("api.managed.example.com. 60 IN A 198.18.0.5")}},
				{Qname: srvName, Qtype: dns.TypeSRV, Answer: []dns.RR{srv("0")}, Extra: []dns.RR{test.A("etcd-0.managed.example.com. 60 IN A 198.18.0.11")}},
			},
		},
		{
			name: "a name qualified with the zone is accepted",
			mdns: []discovery.Node{{Name: "Worker-7.managed.example.com.", Role: discovery.Worker, Addrs: addrs("198.18.0.27")}},
			cases: []test.Case{
				{Qname: "worker-7.managed.example.com.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("worker-7.managed.example.com. 60 IN A 198.18.0.27")}},
				{Qname: "worker-7.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("worker-7. 60 IN A 198.18.0.27")}},
			},
		},
		{
			name:  "the cluster file's master leaves too: the SRV name is gone",
			mdns:  []discovery.Node{},
			clear: true,
			cases: []test.Case{
				{Qname: srvName, Qtype: dns.TypeSRV, Rcode: dns.RcodeNameError, Ns: []dns.RR{soa}},
			},
		},
	}
	for i, step := range steps {
		if step.mdns != nil {
			reg.Set("mdns", step.mdns)
		}
		if step.clear {
			reg.Set("cluster", nil)
		}
		for _, tc := range step.cases {
			rec := dnstest.NewRecorder(&test.ResponseWriter{})
			if _, err := h.ServeDNS(context.Background(), rec, tc.Msg()); err != nil {
				t.Fatalf("step %d (%s): %s: %v", i, step.name, tc.Qname, err)
			}
			if err := test.SortAndCheck(rec.Msg, tc); err != nil {
				t.Errorf("step %d (%s): %s %s: %v\n%v", i, step.name, dns.TypeToString[tc.Qtype], tc.Qname, err, rec.Msg)
			}
			if got, want := rec.Msg.Ns, tc.Ns; len(got) == 1 && len(want) == 1 {
				if s := got[0].(*dns.SOA).Serial; uint64(s) != reg.Version()+1 {
					t.Errorf("step %d: SOA serial %d, want the registry version %d plus one", i, s, reg.Version())
				}
			}
		}
	}
}

// TestIndexReuse checks that the answer index is rebuilt only when the
// registry changes.
func TestIndexReuse(t *testing.T) {
	h := New(testConfig(), nil)
	first := h.index()
	if again := h.index(); again != first {
		t.Errorf("index rebuilt without a registry change")
	}
	h.Registry().Set("other", nil)
	if after := h.index(); after == first || after.version != h.Registry().Version() {
		t.Errorf("index not rebuilt after a registry change (version %d, registry %d)", after.version, h.Registry().Version())
	}
}

// BenchmarkServeDNS measures one A query for a node name (no network).
func BenchmarkServeDNS(b *testing.B) {
	h := New(testConfig(), nil)
	m := new(dns.Msg)
	m.SetQuestion("master-0.managed.example.com.", dns.TypeA)
	w := &test.ResponseWriter{}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := h.ServeDNS(context.Background(), w, m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestConcurrentUpdates queries from several goroutines while the registry
// changes (run with -race): every answer must be one of the two states.
func TestConcurrentUpdates(t *testing.T) {
	cfg := testConfig()
	cfg.Nodes = []discovery.Node{{Name: "master-0", Role: discovery.Master, Addrs: addrs("198.18.0.11")}}
	h := New(cfg, nil)
	joined := []discovery.Node{{Name: "master-1", Role: discovery.Master, Addrs: addrs("198.18.0.12")}}
	done := make(chan struct{})
	errs := make(chan string, 4)
	for range 4 {
		go func() {
			m := new(dns.Msg)
			m.SetQuestion("_etcd-server-ssl._tcp.managed.example.com.", dns.TypeSRV)
			for {
				select {
				case <-done:
					errs <- ""
					return
				default:
				}
				rec := dnstest.NewRecorder(&test.ResponseWriter{})
				h.ServeDNS(context.Background(), rec, m)
				if n := len(rec.Msg.Answer); n != 1 && n != 2 || len(rec.Msg.Extra) != n {
					errs <- rec.Msg.String()
					return
				}
			}
		}()
	}
	for i := range 2000 {
		if i%2 == 0 {
			h.Registry().Set("mdns", joined)
		} else {
			h.Registry().Set("mdns", nil)
		}
	}
	close(done)
	for range 4 {
		if e := <-errs; e != "" {
			t.Errorf("inconsistent answer:\n%s", e)
		}
	}
}
