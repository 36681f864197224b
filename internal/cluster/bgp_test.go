package cluster

import (
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/bgp"
)

// routed is a cluster whose masters sit on their own subnets, each behind
// its own router address, with the API VIP announced by BGP and Ingress
// held by VRRP.
const routed = `name: c1
baseDomain: example.com
apiVIPs: [198.19.255.5]
ingressVIPs: [198.18.1.7]
machineNetworks: [198.18.1.0/24, 198.18.2.0/24]
nodes:
  - {name: m0, role: master, ips: [198.18.1.11]}
  - {name: m1, role: master, ips: [198.18.2.11], routerID: 10.0.0.1}
  - {name: w0, role: worker, ips: [198.18.1.21]}
bgp:
  asn: 64512
  announce: [api]
  peers:
    - {address: 198.18.1.1, asn: 64500, nodes: [m0, w0], holdTime: 9s, connectRetry: 3s, gracefulRestart: 30s,
       bfd: {interval: 100ms, multiplier: 3}}
    - {address: 198.18.2.1, asn: 64500, nodes: [m1], password: s3cret, families: [ipv4]}
`

func TestBGPPlans(t *testing.T) {
	c, err := Parse("c.yaml", []byte(routed))
	if err != nil {
		t.Fatal(err)
	}
	vip := netip.MustParseAddr("198.19.255.5")
	for _, tc := range []struct {
		node      string
		want      *BGPSpec
		instances []string // VRRP instances left
	}{
		{node: "m0", want: &BGPSpec{
			Config: bgp.Config{ASN: 64512, RouterID: netip.MustParseAddr("198.18.1.11"),
				Peers: []bgp.Peer{{Address: netip.MustParseAddr("198.18.1.1"), ASN: 64500, LocalAddress: netip.MustParseAddr("198.18.1.11"),
					HoldTime: 9 * time.Second, ConnectRetry: 3 * time.Second, GracefulRestart: 30 * time.Second, BFD: &bgp.BFD{Interval: 100 * time.Millisecond, Multiplier: 3}}},
				Routes: []bgp.Route{{VIP: vip}}, Demote: &bgp.Demotion{Prepend: 3}},
			Checks: map[netip.Addr][]string{vip: {checkLB, checkBoth}},
			Role:   map[netip.Addr]string{vip: "api"},
		}, instances: []string{"c1_INGRESS"}},
		{node: "m1", want: &BGPSpec{
			Config: bgp.Config{ASN: 64512, RouterID: netip.MustParseAddr("10.0.0.1"),
				Peers: []bgp.Peer{{Address: netip.MustParseAddr("198.18.2.1"), ASN: 64500, LocalAddress: netip.MustParseAddr("198.18.2.11"),
					Password: "s3cret", IPv4: true}},
				Routes: []bgp.Route{{VIP: vip}}, Demote: &bgp.Demotion{Prepend: 3}},
			Checks: map[netip.Addr][]string{vip: {checkLB, checkBoth}},
			Role:   map[netip.Addr]string{vip: "api"},
		}, instances: []string{"c1_INGRESS"}},
		// A worker holds no API VIP: it announces nothing and keeps VRRP.
		{node: "w0", want: nil, instances: []string{"c1_INGRESS"}},
	} {
		t.Run(tc.node, func(t *testing.T) {
			p, err := c.PlanFor(tc.node)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, p.BGP, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
				t.Errorf("BGP (-want +got):\n%s", d)
			}
			var names []string
			for _, in := range p.Instances {
				names = append(names, in.Name)
				for _, v := range in.VIPs {
					if v == vip {
						t.Errorf("instance %s holds %v, which BGP announces", in.Name, v)
					}
				}
			}
			if d := cmp.Diff(tc.instances, names); d != "" {
				t.Errorf("VRRP instances (-want +got):\n%s", d)
			}
		})
	}
}

// dualRouted is routed, dual-stack, announcing only the IPv6 API VIP.
var dualRouted = strings.NewReplacer("apiVIPs: [198.19.255.5]", "apiVIPs: [198.18.1.5, 'fd00::5']",
	"ingressVIPs: [198.18.1.7]", "ingressVIPs: [198.18.1.7, 'fd00::7']",
	"machineNetworks: [198.18.1.0/24, 198.18.2.0/24]", "machineNetworks: [198.18.1.0/24, 198.18.2.0/24, 'fd00::/64']",
	"ips: [198.18.1.11]", "ips: [198.18.1.11, 'fd00::11']", "ips: [198.18.2.11]", "ips: [198.18.2.11, 'fd00::12']",
	"ips: [198.18.1.21]", "ips: [198.18.1.21, 'fd00::21']",
	"announce: [api]", "announce: ['fd00::5']").Replace(routed) +
	"    - {address: 'fd00::1', asn: 64500, nodes: [m0, m1]}\n"

// TestBGPSingleVIP: one VIP of a dual-stack list is announced, the other
// stays in its VRRP instance.
func TestBGPSingleVIP(t *testing.T) {
	c, err := Parse("c.yaml", []byte(dualRouted))
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.PlanFor("m0")
	if err != nil {
		t.Fatal(err)
	}
	if p.BGP == nil || len(p.BGP.Config.Routes) != 1 || p.BGP.Config.Routes[0].VIP != netip.MustParseAddr("fd00::5") {
		t.Fatalf("BGP routes: %+v; want fd00::5 only", p.BGP)
	}
	if got := p.BGP.Config.Peers[1].LocalAddress; got != netip.MustParseAddr("fd00::11") {
		t.Errorf("source of the IPv6 peer: %v; want the node's IPv6 address fd00::11", got)
	}
	var api []netip.Addr
	for _, in := range p.Instances {
		if strings.Contains(in.Name, "_API") {
			api = append(api, in.VIPs...)
		}
	}
	if d := cmp.Diff([]netip.Addr{netip.MustParseAddr("198.18.1.5")}, api, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
		t.Errorf("API VRRP VIPs (-want +got):\n%s", d)
	}
	// Without the IPv6 peer, m1 would announce an IPv6 VIP to no one
	// that carries IPv6: the speaker's check, named in the file's terms.
	_, err = Parse("c.yaml", []byte(strings.Replace(dualRouted, "nodes: [m0, m1]", "nodes: [m0]", 1)))
	if want := "c.yaml: bgp.announce: fd00::5 is IPv6 but no peer carries IPv6 unicast"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v; want %q", err, want)
	}
}

func TestBGPValidationErrors(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{name: "no asn", old: "asn: 64512", new: "asn: 0",
			want: "bgp.asn: 0 (or unset) is reserved (RFC 7607); accepted: 1..4294967295"},
		{name: "asn out of range", old: "asn: 64512", new: "asn: 4294967296",
			want: `bgp.asn: bad value "4294967296"; accepted: an AS number, 1..4294967295`},
		{name: "unknown role", old: "announce: [api]", new: "announce: [apiserver]",
			want: `bgp.announce[0]: "apiserver" is neither a role nor a VIP of the file; accepted: api, ingress, dns, or an address of apiVIPs, ingressVIPs or dnsVIP`},
		{name: "dns without dnsVIP", old: "announce: [api]", new: "announce: [api, dns]",
			want: "bgp.announce[1]: dns, but the file has no dnsVIP"},
		{name: "twice", old: "announce: [api]", new: "announce: [api, 198.19.255.5]",
			want: "bgp.announce[1]: 198.19.255.5 is already announced by an earlier entry"},
		{name: "VRRP VIP outside the machine networks", old: "announce: [api]", new: "announce: [ingress]",
			want: "apiVIPs[0]: 198.19.255.5 is outside every machine network"},
		{name: "bad peer address", old: "address: 198.18.2.1", new: "address: router",
			want: `bgp.peers[1].address: "router" is not an IP address`},
		{name: "unknown node", old: "nodes: [m1]", new: "nodes: [m9]",
			want: `bgp.peers[1].nodes[0]: "m9" is not a node of the file (nodes[].name)`},
		{name: "node without a peer", old: "nodes: [m1]", new: "nodes: [m0]",
			want: "bgp.peers: node m1 announces 198.19.255.5 but no peer lists it in nodes"},
		{name: "hold time", old: "holdTime: 9s", new: "holdTime: 2s",
			want: "bgp.peers[0].holdTime: 2s; want 0 (default 90s) or whole seconds 3s..65535s (RFC 4271 4.2)"},
		{name: "connect retry", old: "connectRetry: 3s", new: "connectRetry: 500ms",
			want: "bgp.peers[0].connectRetry: 500ms; want 0 (default 1s) or whole seconds 1s..65535s"},
		{name: "hold time not a duration", old: "holdTime: 9s", new: "holdTime: nine",
			want: `bgp.peers[0].holdTime: "nine" is not a duration; accepted: e.g. 90s, 300ms`},
		{name: "graceful restart", old: "gracefulRestart: 30s", new: "gracefulRestart: 5000s",
			want: "bgp.peers[0].gracefulRestart: 1h23m20s; want 0 (off) or whole seconds 1s..4095s (RFC 4724 restart time)"},
		{name: "family", old: "families: [ipv4]", new: "families: [ip4]",
			want: `bgp.peers[1].families[0]: "ip4"; accepted: ipv4, ipv6`},
		{name: "bfd interval", old: "interval: 100ms", new: "interval: 1ms",
			want: "bgp.peers[0].bfd.interval: 1ms; want whole milliseconds 10ms..60s"},
		{name: "bfd multiplier", old: "multiplier: 3", new: "multiplier: 300",
			want: "bgp.peers[0].bfd.multiplier: 300; accepted: 1..255"},
		{name: "source of many nodes", old: "nodes: [m0, w0],", new: "nodes: [m0, w0], source: 198.18.1.11,",
			want: "bgp.peers[0].source: 198.18.1.11 is one node's address, but the peer has 2 nodes"},
		{name: "source not the node's", old: "nodes: [m1],", new: "nodes: [m1], source: 198.18.1.11,",
			want: "bgp.peers[1].source: 198.18.1.11 is not an address of node m1"},
		{name: "password too long", old: "password: s3cret", new: "password: " + strings.Repeat("x", 81),
			want: "bgp.peers[1].password: 81 bytes; TCP MD5 keys are at most 80 bytes"},
		{name: "multihop on iBGP", old: "asn: 64500, nodes: [m1]", new: "asn: 64512, multihop: 2, nodes: [m1]",
			want: "bgp.peers[1].multihop: 2 is set on an iBGP peer"},
		{name: "bad router ID", old: "routerID: 10.0.0.1", new: "routerID: 'fd00::1'",
			want: `nodes[1].routerID: "fd00::1" is not an IPv4 address other than 0.0.0.0`},
		{name: "duplicate router ID", old: "routerID: 10.0.0.1", new: "routerID: 198.18.1.11",
			want: "nodes[1].routerID: 198.18.1.11 is also the router ID of node m0"},
		{name: "live membership", old: "bgp:\n", new: "membership: {mdns: true}\nbgp:\n",
			want: "bgp: not supported with live membership (membership.kubernetes or membership.mdns)"},
		{name: "onCheckFailure", old: "asn: 64512", new: "asn: 64512\n  onCheckFailure: drop",
			want: `bgp.onCheckFailure: "drop"; accepted: demote (the default: a failing check keeps the route announced with worse attributes, as VRRP lowers the priority) or withdraw (a failing check withdraws the route)`},
		{name: "demote with withdraw", old: "asn: 64512", new: "asn: 64512\n  onCheckFailure: withdraw\n  demote: {prepend: 2}",
			want: "bgp.demote: set, but bgp.onCheckFailure is withdraw"},
		{name: "demote prepend out of range", old: "asn: 64512", new: "asn: 64512\n  demote: {prepend: 12}",
			want: "bgp.demote.prepend: 12; want 0..10"},
		{name: "demote prepend with an iBGP peer", old: "announce: [api]\n  peers:\n    - {address: 198.18.1.1, asn: 64500",
			new:  "announce: [api]\n  demote: {prepend: 2, med: 100}\n  peers:\n    - {address: 198.18.1.1, asn: 64512",
			want: "bgp.demote.prepend: 2 with an iBGP peer"},
		{name: "demote local-pref over eBGP", old: "asn: 64512", new: "asn: 64512\n  demote: {localPref: 50, med: 100}",
			want: "bgp.demote.localPref: 50, but every peer is eBGP"},
		{name: "demote that changes nothing", old: "asn: 64512", new: "asn: 64512\n  demote: {}",
			want: "bgp.demote: changes nothing an eBGP peer sees; want prepend (1..10) or med"},
		{name: "demote bad value", old: "asn: 64512", new: "asn: 64512\n  demote: {med: lots}",
			want: `bgp.demote.med: bad value "lots"; accepted: a MED, e.g. 100 (above the route's 0)`},
		{name: "router ID missing on an IPv6-only node", old: "ips: [198.18.2.11], routerID: 10.0.0.1", new: "ips: ['fd00::12']",
			want: "nodes[1].routerID:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := strings.Replace(routed, tc.old, tc.new, 1)
			if y == routed {
				t.Fatalf("%q is not in the file", tc.old)
			}
			_, err := Parse("c.yaml", []byte(y))
			if err == nil {
				t.Fatalf("accepted; want error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), "c.yaml: "+tc.want) && !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
}

// TestDocsBGPExample parses the bgp example of docs/cluster-mode.md, with
// the name and base domain it leaves out.
func TestDocsBGPExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cluster-mode.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "## BGP: VIPs announced to routers")
	if !ok {
		t.Fatal("docs/cluster-mode.md has no BGP section")
	}
	_, block, ok := strings.Cut(sec, "```yaml\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("the BGP section has no yaml example")
	}
	c, err := Parse("cluster-mode.md", []byte("name: c1\nbaseDomain: example.com\n"+block))
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.PlanFor("master-1")
	if err != nil {
		t.Fatal(err)
	}
	if p.BGP == nil || p.BGP.Config.RouterID.String() != "10.0.0.2" || len(p.BGP.Config.Peers) != 1 || p.BGP.Config.Peers[0].Password != "s3cret" {
		t.Errorf("master-1's speaker from the example: %+v", p.BGP)
	}
}

// TestBGPDemotion: each node's demotion follows bgp.onCheckFailure and
// bgp.demote, by default prepending over eBGP and LOCAL_PREF with MED
// when the node has an iBGP peer.
func TestBGPDemotion(t *testing.T) {
	u32 := func(v uint32) *uint32 { return &v }
	ibgp := strings.Replace(routed, "asn: 64500, nodes: [m1]", "asn: 64512, nodes: [m1]", 1)
	for _, tc := range []struct {
		name, yaml string
		want       map[string]*bgp.Demotion // by node
	}{
		{name: "default over eBGP", yaml: routed,
			want: map[string]*bgp.Demotion{"m0": {Prepend: 3}, "m1": {Prepend: 3}}},
		{name: "default with an iBGP peer", yaml: ibgp,
			want: map[string]*bgp.Demotion{"m0": {Prepend: 3}, "m1": {LocalPref: u32(50), MED: u32(100)}}},
		{name: "withdraw", yaml: strings.Replace(routed, "asn: 64512\n", "asn: 64512\n  onCheckFailure: withdraw\n", 1),
			want: map[string]*bgp.Demotion{"m0": nil, "m1": nil}},
		{name: "explicit", yaml: strings.Replace(routed, "asn: 64512\n", "asn: 64512\n  onCheckFailure: demote\n  demote: {prepend: 1, med: 500}\n", 1),
			want: map[string]*bgp.Demotion{"m0": {Prepend: 1, MED: u32(500)}, "m1": {Prepend: 1, MED: u32(500)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("c.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			for node, want := range tc.want {
				p, err := c.PlanFor(node)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(want, p.BGP.Config.Demote); d != "" {
					t.Errorf("%s's demotion (-want +got):\n%s", node, d)
				}
			}
		})
	}
}
