package mdnsplugin

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/discovery"
	"github.com/vipstack/vipstack/internal/dns/clusterdns"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		keys    []string // server block keys; nil = "."
		input   string
		want    Config
		wantErr string
	}{
		{name: "OpenShift's line", input: "mdns example.com 0 ostest 198.18.0.11",
			want: Config{Domain: "example.com.", MinSRV: 0, Filter: "ostest", Bind: netip.MustParseAddr("198.18.0.11")}},
		{name: "domain only: coredns-mdns's defaults", input: "mdns Example.COM.",
			want: Config{Domain: "example.com.", MinSRV: 3}},
		{name: "MIN_SRV", input: "mdns example.com 2", want: Config{Domain: "example.com.", MinSRV: 2}},
		{name: "IPv6 bind address", input: "mdns example.com 0 ostest fd00:bb::11",
			want: Config{Domain: "example.com.", Filter: "ostest", Bind: netip.MustParseAddr("fd00:bb::11")}},
		{name: "no domain", input: "mdns", wantErr: "Testfile:1 - Error during parsing: want mdns DOMAIN [MIN_SRV [FILTER [BIND_ADDRESS]]]"},
		{name: "five arguments", input: "mdns example.com 0 ostest 198.18.0.11 extra", wantErr: `got 5 arguments ["example.com" "0" "ostest" "198.18.0.11" "extra"]`},
		{name: "MIN_SRV not a number", input: "mdns example.com three", wantErr: `MIN_SRV "three" is not a number`},
		{name: "MIN_SRV negative", input: "mdns example.com -1", wantErr: `MIN_SRV "-1" is not a number`},
		{name: "BIND_ADDRESS not an IP", input: "mdns example.com 0 ostest 198.18.0.x", wantErr: `BIND_ADDRESS "198.18.0.x" is not an IP address`},
		{name: "BIND_ADDRESS a name", input: "mdns example.com 0 ostest eth0", wantErr: `BIND_ADDRESS "eth0" is not an IP address`},
		{name: "BIND_ADDRESS unspecified", input: "mdns example.com 0 ostest 0.0.0.0", wantErr: `BIND_ADDRESS "0.0.0.0" is not an IP address`},
		{name: "FILTER not a cluster name", input: "mdns example.com 0 os_test", wantErr: `FILTER "os_test": want the cluster name`},
		{name: "bad domain", input: "mdns exa_mple.com", wantErr: `DOMAIN: "exa_mple.com": label "exa_mple"`},
		{name: "root domain", input: "mdns .", wantErr: `DOMAIN: "." is the root`},
		{name: "domain outside the block", keys: []string{"example.org."}, input: "mdns example.com", wantErr: `DOMAIN: "example.com." is outside this server block's zones ["example.org."], so no query for it would reach mdns`},
		{name: "a block", input: "mdns example.com {\n fallthrough\n}", wantErr: "mdns takes no block"},
		{name: "two lines", input: "mdns example.com\nmdns example.org", wantErr: "Testfile:2 - Error during parsing: a second mdns line in one server block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := caddy.NewTestController("dns", tt.input)
			c.ServerBlockKeys = tt.keys
			if c.ServerBlockKeys == nil {
				c.ServerBlockKeys = []string{"."}
			}
			got, err := parse(c)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parse(%q) error = %v, want it to contain %q", tt.input, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse(%q): %v", tt.input, err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("parse(%q) (-want +got):\n%s", tt.input, diff)
			}
		})
	}
}

// TestSetupStartsNothing: setting the plugin up (what -check and a failed
// reload do) opens no socket and starts no goroutine: the browser starts in
// OnStartup only, and each key of a server block shares it.
func TestSetupStartsNothing(t *testing.T) {
	c := caddy.NewTestController("dns", "mdns example.com 0 ostest")
	if err := NewBrowsers().setup(c); err != nil {
		t.Fatal(err)
	}
	b, ok := c.ServerBlockStorage.(*browser)
	if !ok {
		t.Fatalf("no browser in the server block storage: %#v", c.ServerBlockStorage)
	}
	if b.cancel != nil {
		t.Errorf("browser started at setup")
	}
	if err := b.stop(); err != nil {
		t.Errorf("stop before start: %v", err)
	}
}

const nextRcode = dns.RcodeServerFailure // what the fake next plugin returns

// TestServeDNS: the answers for a node set as a browse-only MDNS reports
// it (masters have an Etcd instance). What coredns-mdns answers is noted
// where vipstack differs (see doc.go).
func TestServeDNS(t *testing.T) {
	nodes := []discovery.Node{
		{Name: "master-0", Role: discovery.Master, Addrs: addrs("198.18.0.11", "fd00:bb::11")},
		{Name: "master-1", Role: discovery.Master, Addrs: addrs("198.18.0.12")},
		{Name: "worker-0", Role: discovery.Worker, Addrs: addrs("fd00:bb::21")},
	}
	a := func(s string) dns.RR { return test.A(s) }
	srv0 := test.SRV("_etcd-server-ssl._tcp.example.com. 60 IN SRV 0 10 2380 master-0.example.com.")
	srv1 := test.SRV("_etcd-server-ssl._tcp.example.com. 60 IN SRV 0 10 2380 master-1.example.com.")
	tests := []struct {
		minSRV int
		tc     test.Case
		next   bool // passed to the next plugin
	}{
		{tc: test.Case{Qname: "master-0.example.com.", Qtype: dns.TypeA, Answer: []dns.RR{a("master-0.example.com. 60 IN A 198.18.0.11")}}},
		// coredns-mdns would add the AAAA to an A answer and vice versa.
		{tc: test.Case{Qname: "master-0.example.com.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("master-0.example.com. 60 IN AAAA fd00:bb::11")}}},
		{tc: test.Case{Qname: "MASTER-1.Example.com.", Qtype: dns.TypeA, Answer: []dns.RR{a("MASTER-1.Example.com. 60 IN A 198.18.0.12")}}},
		// NODATA, without SOA: the name exists.
		{tc: test.Case{Qname: "master-1.example.com.", Qtype: dns.TypeAAAA}},
		{tc: test.Case{Qname: "worker-0.example.com.", Qtype: dns.TypeA}},
		{tc: test.Case{Qname: "worker-0.example.com.", Qtype: dns.TypeCNAME}},
		{tc: test.Case{Qname: "_etcd-server-ssl._tcp.example.com.", Qtype: dns.TypeSRV, Answer: []dns.RR{srv0, srv1},
			Extra: []dns.RR{a("master-0.example.com. 60 IN A 198.18.0.11"), test.AAAA("master-0.example.com. 60 IN AAAA fd00:bb::11"), a("master-1.example.com. 60 IN A 198.18.0.12")}}},
		{minSRV: 2, tc: test.Case{Qname: "_etcd-server-ssl._tcp.example.com.", Qtype: dns.TypeSRV, Answer: []dns.RR{srv0, srv1},
			Extra: []dns.RR{a("master-0.example.com. 60 IN A 198.18.0.11"), test.AAAA("master-0.example.com. 60 IN AAAA fd00:bb::11"), a("master-1.example.com. 60 IN A 198.18.0.12")}}},
		// Fewer masters than MIN_SRV: no SRV answer, the name goes on.
		{minSRV: 3, tc: test.Case{Qname: "_etcd-server-ssl._tcp.example.com.", Qtype: dns.TypeSRV}, next: true},
		// Everything else goes on: the templates and forward answer it.
		{tc: test.Case{Qname: "api.example.com.", Qtype: dns.TypeA}, next: true},
		{tc: test.Case{Qname: "x.apps.example.com.", Qtype: dns.TypeA}, next: true},
		{tc: test.Case{Qname: "example.com.", Qtype: dns.TypeSOA}, next: true},
		{tc: test.Case{Qname: "example.com.", Qtype: dns.TypeA}, next: true},
		{tc: test.Case{Qname: "etcd-0.example.com.", Qtype: dns.TypeA}, next: true},
		{tc: test.Case{Qname: "_tcp.example.com.", Qtype: dns.TypeA}, next: true},
		{tc: test.Case{Qname: "master-0.", Qtype: dns.TypeA}, next: true},
		{tc: test.Case{Qname: "nope.example.com.", Qtype: dns.TypeA}, next: true},
		{tc: test.Case{Qname: "master-0.example.org.", Qtype: dns.TypeA}, next: true},
		{tc: test.Case{Qname: "master-0.example.com.", Qtype: dns.TypeTXT}, next: true},
		{tc: test.Case{Qname: "master-0.example.com.", Qtype: dns.TypeANY}, next: true},
	}
	for _, tt := range tests {
		t.Run(dns.TypeToString[tt.tc.Qtype]+"/"+tt.tc.Qname, func(t *testing.T) {
			reg := discovery.NewRegistry()
			reg.Set(Name, nodes)
			h := clusterdns.New(clusterdns.Config{Zone: "example.com.", TTL: TTL, NodesOnly: true, MinSRV: tt.minSRV, Plugin: Name}, reg)
			h.Next = test.NextHandler(nextRcode, nil)
			if h.Name() != Name {
				t.Errorf("Name() = %q", h.Name())
			}
			rec := dnstest.NewRecorder(&test.ResponseWriter{})
			code, err := h.ServeDNS(context.Background(), rec, tt.tc.Msg())
			if tt.next {
				if code != nextRcode || rec.Msg != nil {
					t.Fatalf("rcode %s, response %v; want it passed to the next plugin", dns.RcodeToString[code], rec.Msg)
				}
				return
			}
			if err != nil || code != dns.RcodeSuccess || rec.Msg == nil {
				t.Fatalf("ServeDNS = %s, %v, response %v", dns.RcodeToString[code], err, rec.Msg)
			}
			if err := test.SortAndCheck(rec.Msg, tt.tc); err != nil {
				t.Error(err)
			}
		})
	}
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

// TestBrowsersAcrossReload walks the instance lifecycle a reload goes
// through (CoreDNS starts the new instance, then shuts the old one down)
// with a fake browse loop, and checks after every step which browser runs
// and what its registry holds. A reload keeping the mdns line must keep
// the running browser and its nodes: a fresh one knows no node until mDNS
// answers, and meanwhile the names went upstream (measured with
// TestRootMDNSReloadGap: 183 of 256 answers in the 6 s after a reload were
// upstream's).
func TestBrowsersAcrossReload(t *testing.T) {
	node := discovery.Node{Name: "master-1", Role: discovery.Master, Addrs: addrs("198.18.0.12")}
	starts := 0
	reported := make(chan struct{})
	p := NewBrowsers()
	p.run = func(ctx context.Context, cfg Config, ifname string, update func([]discovery.Node)) error {
		update([]discovery.Node{node})
		reported <- struct{}{}
		<-ctx.Done()
		return nil
	}
	setup := func(line string) *browser {
		t.Helper()
		c := caddy.NewTestController("dns", line)
		if err := p.setup(c); err != nil {
			t.Fatal(err)
		}
		return c.ServerBlockStorage.(*browser)
	}
	acquire := func(b *browser) {
		t.Helper()
		running := b.cancel != nil
		if err := p.acquire(b); err != nil {
			t.Fatal(err)
		}
		if !running {
			starts++
			<-reported
		}
	}
	release := func(b *browser) {
		t.Helper()
		if err := p.release(b); err != nil {
			t.Fatal(err)
		}
	}
	const line = "mdns example.com 0 ostest"
	var first, second *browser
	steps := []struct {
		name        string
		do          func()
		b           func() *browser
		wantRunning bool
		wantNodes   int
		wantStarts  int
	}{
		{name: "first instance starts", do: func() { first = setup(line); acquire(first) }, b: func() *browser { return first }, wantRunning: true, wantNodes: 1, wantStarts: 1},
		{name: "reload sets up the same line", do: func() { second = setup(line) }, b: func() *browser { return second }, wantRunning: true, wantNodes: 1, wantStarts: 1},
		{name: "new instance starts", do: func() { acquire(second) }, b: func() *browser { return second }, wantRunning: true, wantNodes: 1, wantStarts: 1},
		{name: "old instance shuts down", do: func() { release(first) }, b: func() *browser { return second }, wantRunning: true, wantNodes: 1, wantStarts: 1},
		{name: "a check of another line starts nothing", do: func() { setup("mdns example.com 0 other") }, b: func() *browser { return second }, wantRunning: true, wantNodes: 1, wantStarts: 1},
		{name: "last instance shuts down", do: func() { release(second) }, b: func() *browser { return second }, wantRunning: false, wantNodes: 0, wantStarts: 1},
		{name: "a shutdown too many does nothing", do: func() { release(second) }, b: func() *browser { return second }, wantRunning: false, wantNodes: 0, wantStarts: 1},
		{name: "started again", do: func() { acquire(setup(line)) }, b: func() *browser { return second }, wantRunning: true, wantNodes: 1, wantStarts: 2},
	}
	for _, st := range steps {
		st.do()
		b := st.b()
		if first != nil && b != first {
			t.Errorf("%s: a different browser for the same line", st.name)
		}
		if running := b.cancel != nil; running != st.wantRunning {
			t.Errorf("%s: running %v, want %v", st.name, running, st.wantRunning)
		}
		if n := len(b.reg.Nodes()); n != st.wantNodes {
			t.Errorf("%s: registry holds %d nodes, want %d", st.name, n, st.wantNodes)
		}
		if starts != st.wantStarts {
			t.Errorf("%s: %d browse loops started, want %d", st.name, starts, st.wantStarts)
		}
	}
	if other := p.get(Config{Domain: "example.com.", MinSRV: 0, Filter: "other"}); other == first || other.cancel != nil {
		t.Errorf("another line: browser %p running %v; want its own, idle", other, other.cancel != nil)
	}
	release(first)
}
