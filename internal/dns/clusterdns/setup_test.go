package clusterdns

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/pkg/fall"
	"github.com/coredns/coredns/plugin/test"
	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/discovery"
)

var cmpAddr = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })

func TestParse(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  Config
	}{
		{
			name: "full block",
			input: `clusterdns Managed.Example.COM {
				api 198.18.0.5 fd00:bb::5
				ingress 198.18.0.7
				node master-0 master 198.18.0.11 fd00:bb::11
				node Worker-0 worker 198.18.0.21
				node bootstrap bootstrap 198.18.0.9
				ttl 30
				fallthrough
			}`,
			want: Config{
				Zone:    "managed.example.com.",
				API:     addrs("198.18.0.5", "fd00:bb::5"),
				Ingress: addrs("198.18.0.7"),
				Nodes: []discovery.Node{
					{Name: "master-0", Role: discovery.Master, Addrs: addrs("198.18.0.11", "fd00:bb::11")},
					{Name: "worker-0", Role: discovery.Worker, Addrs: addrs("198.18.0.21")},
					{Name: "bootstrap", Role: discovery.Bootstrap, Addrs: addrs("198.18.0.9")},
				},
				TTL:  30,
				Fall: fall.Root,
			},
		},
		{
			name:  "zone only",
			input: `clusterdns managed.example.com.`,
			want:  Config{Zone: "managed.example.com.", TTL: DefaultTTL},
		},
		{
			name: "repeated api lines add up; fallthrough zones; IPv4-mapped unmapped",
			input: `clusterdns managed.example.com {
				api 198.18.0.5
				api ::ffff:198.18.0.6
				fallthrough managed.example.com
			}`,
			want: Config{
				Zone: "managed.example.com.",
				API:  addrs("198.18.0.5", "198.18.0.6"),
				TTL:  DefaultTTL,
				Fall: fall.F{Zones: []string{"managed.example.com."}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(caddy.NewTestController("dns", tt.input))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpAddr); diff != "" {
				t.Errorf("parse (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSetupErrors checks that every rejection names the Corefile line, the
// bad value and what would be accepted.
func TestSetupErrors(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string // substrings of the error
	}{
		{name: "no zone", input: "clusterdns", want: []string{"Testfile:1", "want exactly one zone", "clusterdns managed.example.com {"}},
		{name: "two zones", input: "clusterdns a.example b.example", want: []string{"Testfile:1", "want exactly one zone", `"a.example" "b.example"`}},
		{name: "root zone", input: "clusterdns .", want: []string{"Testfile:1", "is the root", "managed.example.com"}},
		{name: "empty label", input: "clusterdns managed..example.com", want: []string{"Testfile:1", `label ""`, "host name label"}},
		{name: "bad label", input: "clusterdns man_aged.example.com", want: []string{"Testfile:1", `"man_aged"`, "letters, digits"}},
		{name: "reverse zone", input: "clusterdns 10.0.0.0/8", want: []string{"Testfile:1", `"0/8"`}},
		{name: "bad api IP", input: "clusterdns managed.example.com {\n api 198.18.0.500\n}", want: []string{"Testfile:2", "api", `"198.18.0.500" is not an IP address`, "IPv4 or IPv6 literal"}},
		{name: "api without address", input: "clusterdns managed.example.com {\n api\n}", want: []string{"Testfile:2", "api: want at least one IPv4 or IPv6 address"}},
		{name: "api with zone index", input: "clusterdns managed.example.com {\n api fe80::1%eth0\n}", want: []string{"Testfile:2", `"fe80::1%eth0" is not an IP address`}},
		{name: "multicast ingress", input: "clusterdns managed.example.com {\n ingress 224.0.0.251\n}", want: []string{"Testfile:2", "ingress", `"224.0.0.251" is not a unicast address`}},
		{name: "bad node IP", input: "clusterdns managed.example.com {\n node master-0 master 198.18.0.11\n node master-1 master fd00:bb::zz\n}", want: []string{"Testfile:3", "node master-1", `"fd00:bb::zz" is not an IP address`}},
		{name: "node without address", input: "clusterdns managed.example.com {\n node master-0 master\n}", want: []string{"Testfile:2", "want NAME ROLE ADDRESS..."}},
		{name: "bad role", input: "clusterdns managed.example.com {\n node master-0 boss 198.18.0.11\n}", want: []string{"Testfile:2", `role "boss"`, "master, worker or bootstrap"}},
		{name: "dotted node name", input: "clusterdns managed.example.com {\n node master-0.managed.example.com master 198.18.0.11\n}", want: []string{"Testfile:2", "not a short host name"}},
		{name: "reserved node name", input: "clusterdns managed.example.com {\n node etcd-0 master 198.18.0.11\n}", want: []string{"Testfile:2", `"etcd-0" is reserved`}},
		{name: "duplicate node", input: "clusterdns managed.example.com {\n node m master 198.18.0.11\n node m master 198.18.0.12\n}", want: []string{"Testfile:3", `node "m": listed twice`}},
		{name: "bad ttl", input: "clusterdns managed.example.com {\n ttl 1h\n}", want: []string{"Testfile:2", `ttl: "1h"`, "0 to 86400"}},
		{name: "unknown property", input: "clusterdns managed.example.com {\n vip 198.18.0.5\n}", want: []string{"Testfile:2", `unknown property "vip"`, "api, ingress, node, ttl or fallthrough"}},
		// CoreDNS's fall package would drop the first and keep the second,
		// which passes on nothing: unknown names got NXDOMAIN either way.
		{name: "fallthrough to a bad zone", input: "clusterdns managed.example.com {\n fallthrough apps.managed.example.com:\n}", want: []string{"Testfile:2", `fallthrough: "apps.managed.example.com:" is not a zone`, "apps.managed.example.com."}},
		{name: "fallthrough outside the zone", input: "clusterdns managed.example.com {\n fallthrough apps.managed.example.com other.example.com\n}", want: []string{"Testfile:2", `fallthrough: "other.example.com" is outside the block's zone managed.example.com.`}},
		{name: "two blocks", input: "clusterdns a.example\nclusterdns b.example", want: []string{"Testfile:2", "a second clusterdns block"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := NewSetup(nil)(caddy.NewTestController("dns", tt.input))
			if err == nil {
				t.Fatalf("setup accepted %q", tt.input)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "plugin/clusterdns: ") {
				t.Errorf("error %q does not name the plugin", err)
			}
		})
	}
}

// TestSetupRegistry checks that the setup closure hands each block the
// registry the embedder returns for its zone, answers for the registry's
// nodes merged with the node lines, and never writes the node lines into the
// registry: a block set up for a Corefile that then fails to load, or only
// for a check, must not change what the running block answers.
func TestSetupRegistry(t *testing.T) {
	live := discovery.NewRegistry()
	m1 := discovery.Node{Name: "master-1", Role: discovery.Master, Addrs: addrs("198.18.0.12")}
	live.Set("mdns", []discovery.Node{m1})
	version := live.Version()
	var asked []string
	setup := NewSetup(func(zone string) *discovery.Registry {
		asked = append(asked, zone)
		return live
	})
	c := caddy.NewTestController("dns", "clusterdns Managed.Example.com {\n node master-0 master 198.18.0.11\n node Master-1 master fd00:bb::12\n}")
	if err := setup(c); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"managed.example.com."}, asked); diff != "" {
		t.Errorf("zones asked (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]discovery.Node{m1}, live.Nodes(), cmpAddr); diff != "" {
		t.Errorf("registry nodes after setup (-want +got):\n%s", diff)
	}
	if v := live.Version(); v != version {
		t.Errorf("registry version %d after setup, want %d: setup wrote to the registry", v, version)
	}
	h := dnsserver.GetConfig(c).Plugin[0](nil).(*ClusterDNS)
	for _, tc := range []test.Case{
		{Qname: "etcd-0.managed.example.com.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("etcd-0.managed.example.com. 60 IN A 198.18.0.11")}},
		{Qname: "master-1.managed.example.com.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("master-1.managed.example.com. 60 IN A 198.18.0.12")}},
		{Qname: "master-1.managed.example.com.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("master-1.managed.example.com. 60 IN AAAA fd00:bb::12")}},
	} {
		rec := dnstest.NewRecorder(&test.ResponseWriter{})
		if _, err := h.ServeDNS(context.Background(), rec, tc.Msg()); err != nil {
			t.Fatalf("%s: %v", tc.Qname, err)
		}
		if err := test.SortAndCheck(rec.Msg, tc); err != nil {
			t.Errorf("%s %s: %v\n%v", dns.TypeToString[tc.Qtype], tc.Qname, err, rec.Msg)
		}
	}
}
