package clusterdns

import (
	"context"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/discovery"
)

// fuzzConfig is seed 000's cluster "managed" as its Corefile answers it
// (API VIP 10.0.0.5, Ingress VIP 10.0.0.7, the six nodes of `oc get node`),
// with an IPv6 API VIP and one IPv6 master address added so that AAAA
// answers exist, and a bootstrap node without addresses.
func fuzzConfig() Config {
	return Config{
		Zone:    "managed.example.com.",
		API:     addrs("10.0.0.5", "fd00:bb::5"),
		Ingress: addrs("10.0.0.7"),
		TTL:     DefaultTTL,
		Nodes: []discovery.Node{
			{Name: "managed-mbggk-master-0", Role: discovery.Master, Addrs: addrs("10.0.3.211", "fd00:bb::211")},
			{Name: "managed-mbggk-master-1", Role: discovery.Master, Addrs: addrs("10.0.3.51")},
			{Name: "managed-mbggk-master-2", Role: discovery.Master, Addrs: addrs("10.0.3.229")},
			{Name: "managed-mbggk-worker-0-4ckz2", Role: discovery.Worker, Addrs: addrs("10.0.1.194")},
			{Name: "managed-mbggk-worker-0-6wcz5", Role: discovery.Worker, Addrs: addrs("10.0.2.41")},
			{Name: "managed-mbggk-worker-0-fgmk7", Role: discovery.Worker, Addrs: addrs("10.0.3.23")},
			{Name: "bootstrap", Role: discovery.Bootstrap},
		},
	}
}

// fuzzQuestions are the names seed 000's Corefile (template and hosts
// lines) and seed 001's /etc/hosts lines answer, moved into the fuzz zone,
// and a few the plugin must not answer.
var fuzzQuestions = []struct {
	name  string
	qtype uint16
}{
	{"api.managed.example.com.", dns.TypeA},
	{"api-int.managed.example.com.", dns.TypeAAAA},
	{"console-openshift-console.apps.managed.example.com.", dns.TypeA},
	{"oauth-openshift.apps.managed.example.com.", dns.TypeAAAA},
	{"managed-mbggk-master-0.managed.example.com.", dns.TypeANY},
	{"managed-mbggk-worker-0-fgmk7.", dns.TypeA},
	{"etcd-2.managed.example.com.", dns.TypeA},
	{"_etcd-server-ssl._tcp.managed.example.com.", dns.TypeSRV},
	{"managed.example.com.", dns.TypeSOA},
	{"bootstrap.managed.example.com.", dns.TypeA},
	{"nope.managed.example.com.", dns.TypeMX},
	{"api.ocp4.osd2019.local.", dns.TypeA},
	{"x.api\\.managed.example.com.", dns.TypeA},
	{"a\\.apps.managed.example.com.", dns.TypeA},
	{"Etcd-0.Managed.Example.COM.", dns.TypeA},
}

// FuzzServeDNS sends wire-format queries through the plugin, once without
// and once with fallthrough, and checks each answer against an oracle that
// reads the question name label by label (escapes included): a name outside
// the zone (other than a node's short name) is always passed on; a name in
// the zone is answered, or passed on only when it does not exist and
// fallthrough is set; an answer is a well-formed reply to the question
// (same ID and question, authoritative, NOERROR or NXDOMAIN, packs and
// unpacks), every answer record is owned by the question name and has its
// type, and the A and AAAA records are exactly the addresses the name has.
func FuzzServeDNS(f *testing.F) {
	for _, q := range fuzzQuestions {
		m := new(dns.Msg)
		m.SetQuestion(q.name, q.qtype)
		m.RecursionDesired = true
		wire, err := m.Pack()
		if err != nil {
			f.Fatalf("pack %s: %v", q.name, err)
		}
		f.Add(wire)
		m.SetEdns0(1232, true)
		if wire, err = m.Pack(); err != nil {
			f.Fatalf("pack %s: %v", q.name, err)
		}
		f.Add(wire)
	}

	plain := New(fuzzConfig(), nil)
	plain.Next = test.NextHandler(nextRcode, nil)
	cfg := fuzzConfig()
	cfg.Fall.SetZonesFromArgs(nil)
	falling := New(cfg, nil)
	falling.Next = test.NextHandler(nextRcode, nil)
	o := newOracle(fuzzConfig())

	f.Fuzz(func(t *testing.T, wire []byte) {
		r := new(dns.Msg)
		if err := r.Unpack(wire); err != nil || len(r.Question) == 0 {
			return // CoreDNS's server drops these before any plugin
		}
		for _, h := range []*ClusterDNS{plain, falling} {
			checkServe(t, h, h == falling, o, r)
		}
	})
}

func checkServe(t *testing.T, h *ClusterDNS, falls bool, o *oracle, r *dns.Msg) {
	t.Helper()
	q := r.Question[0]
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	code, err := h.ServeDNS(context.Background(), rec, r.Copy())
	if err != nil {
		t.Fatalf("ServeDNS(%s %s): %v", q.Name, dns.TypeToString[q.Qtype], err)
	}
	want, inZone := o.lookup(q.Name)
	passed := code == nextRcode && rec.Msg == nil
	switch {
	case q.Qclass != dns.ClassINET:
		if !passed {
			t.Fatalf("%v: class %d answered; want it passed on", q, q.Qclass)
		}
		return
	case !inZone:
		if !passed {
			t.Fatalf("%v: outside the zone, answered with %v; want it passed on", q, rec.Msg)
		}
		return
	case want == nil && falls:
		if !passed {
			t.Fatalf("%v: no such name, fallthrough set, answered with %v; want it passed on", q, rec.Msg)
		}
		return
	case passed:
		t.Fatalf("%v: in the zone, passed on (fallthrough %v); want an answer", q, falls)
	}

	m := rec.Msg
	if m == nil {
		t.Fatalf("%v: ServeDNS returned %d without writing a reply", q, code)
	}
	if _, err := m.Pack(); err != nil {
		t.Fatalf("%v: the reply does not pack: %v\n%v", q, err, m)
	}
	if m.Id != r.Id || !m.Response || !m.Authoritative || len(m.Question) != 1 || m.Question[0] != q {
		t.Fatalf("%v: reply header or question does not match the query:\n%v", q, m)
	}
	wantRcode := dns.RcodeSuccess
	if want == nil {
		wantRcode = dns.RcodeNameError
	}
	if m.Rcode != wantRcode || code != wantRcode {
		t.Fatalf("%v: rcode %s (returned %s); want %s\n%v", q, dns.RcodeToString[m.Rcode], dns.RcodeToString[code], dns.RcodeToString[wantRcode], m)
	}
	var v4, v6 []netip.Addr
	for _, rr := range m.Answer {
		hdr := rr.Header()
		if hdr.Name != q.Name || hdr.Class != dns.ClassINET || (hdr.Rrtype != q.Qtype && q.Qtype != dns.TypeANY) {
			t.Fatalf("%v: answer %v does not match the question", q, rr)
		}
		switch rr := rr.(type) {
		case *dns.A:
			a, _ := netip.AddrFromSlice(rr.A)
			v4 = append(v4, a)
		case *dns.AAAA:
			a, _ := netip.AddrFromSlice(rr.AAAA)
			v6 = append(v6, a)
		}
	}
	for _, rr := range append(slices.Clone(m.Ns), m.Extra...) {
		if !dns.IsSubDomain(h.cfg.Zone, strings.ToLower(rr.Header().Name)) {
			t.Fatalf("%v: authority or additional record %v outside the zone", q, rr)
		}
	}
	if want == nil {
		return
	}
	var wantV4, wantV6 []netip.Addr
	if q.Qtype == dns.TypeA || q.Qtype == dns.TypeANY {
		wantV4 = want.v4
	}
	if q.Qtype == dns.TypeAAAA || q.Qtype == dns.TypeANY {
		wantV6 = want.v6
	}
	if !slices.Equal(v4, wantV4) || !slices.Equal(v6, wantV6) {
		t.Fatalf("%v: answered %v %v; want %v %v", q, v4, v6, wantV4, wantV6)
	}
}

// oracle says what a name has, reading it label by label; it is written
// independently of index.lookup.
type oracle struct {
	zone  []string          // the zone's labels
	names map[string]*entry // in-zone names by their labels joined with "\x00"
	nodes map[string]*entry // node short names
	apps  *entry            // every name strictly under apps
}

func newOracle(cfg Config) *oracle {
	o := &oracle{zone: splitLabels(cfg.Zone), names: map[string]*entry{"": {}}, nodes: map[string]*entry{}}
	split := func(as []netip.Addr) *entry {
		e := &entry{}
		for _, a := range as {
			if a.Is4() {
				e.v4 = append(e.v4, a)
			} else {
				e.v6 = append(e.v6, a)
			}
		}
		return e
	}
	o.names["api"], o.names["api-int"] = split(cfg.API), split(cfg.API)
	o.names["apps"], o.apps = &entry{}, split(cfg.Ingress)
	var masters []discovery.Node
	for _, n := range cfg.Nodes {
		o.names[n.Name], o.nodes[n.Name] = split(n.Addrs), split(n.Addrs)
		if n.Role == discovery.Master {
			masters = append(masters, n)
		}
	}
	slices.SortFunc(masters, func(a, b discovery.Node) int { return strings.Compare(a.Name, b.Name) })
	for i, n := range masters {
		o.names["etcd-"+strconv.Itoa(i)] = split(n.Addrs)
	}
	o.names["_etcd-server-ssl\x00_tcp"], o.names["_tcp"] = &entry{}, &entry{}
	return o
}

// lookup returns what name has (nil: no such name) and whether it is the
// plugin's to answer (in the zone, or a node's short name).
func (o *oracle) lookup(name string) (*entry, bool) {
	labels := splitLabels(strings.ToLower(name))
	if len(labels) == 1 && o.nodes[labels[0]] != nil {
		return o.nodes[labels[0]], true
	}
	rel, ok := strings.CutSuffix(strings.Join(labels, "\x00"), strings.Join(o.zone, "\x00"))
	if !ok || (rel != "" && !strings.HasSuffix(rel, "\x00")) {
		return nil, false
	}
	rel = strings.TrimSuffix(rel, "\x00")
	if e := o.names[rel]; e != nil {
		return e, true
	}
	if strings.HasSuffix(rel, "\x00apps") {
		return o.apps, true
	}
	return nil, true
}

// splitLabels splits a domain name in presentation format into its labels,
// keeping escapes (\. \\ \DDD) inside the label they belong to.
func splitLabels(name string) []string {
	var labels []string
	start := 0
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case '\\':
			i++ // the escaped character (or the first digit of \DDD) is no dot
		case '.':
			labels = append(labels, name[start:i])
			start = i + 1
		}
	}
	if start < len(name) {
		labels = append(labels, name[start:])
	}
	return labels
}
