package cluster

import (
	"math/rand/v2"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vipstack/vipstack/internal/track"
)

// TestVRIDsAgreeWithoutDNS: OpenShift's current baremetal-runtimecfg
// (PopulateVRIDs without a DNS VIP) bumps the Ingress ID once, only off the
// API ID; the older one, which DeriveVRIDs follows, also bumps it off the
// DNS ID. They agree for every name because no bump ever happens: the low
// nibble of Fletcher-8 is the byte sum mod 15, and the suffixes' sums
// ("-api" 14, "-dns" 10, "-ingress" 13, mod 15) differ, so one name's three
// checksums always differ. The test checks that fact, then both rules over
// random names.
func TestVRIDsAgreeWithoutDNS(t *testing.T) {
	sums := map[int]string{}
	for _, suffix := range []string{"-api", "-dns", "-ingress"} {
		sum := 0
		for i := 0; i < len(suffix); i++ {
			sum += int(suffix[i])
		}
		if other, ok := sums[sum%15]; ok {
			t.Fatalf("%q and %q have the same byte sum mod 15: their checksums can meet and the bump rules can differ", suffix, other)
		}
		sums[sum%15] = suffix
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-"
	r := rand.New(rand.NewPCG(20261123, 1))
	for range 200000 {
		b := make([]byte, 1+r.IntN(24))
		for j := range b {
			b[j] = alphabet[r.IntN(len(alphabet))]
		}
		name := string(b)
		api, ingress := Fletcher8(name+"-api")+1, Fletcher8(name+"-ingress")+1
		if ingress == api {
			ingress++
		}
		if got := DeriveVRIDs(name); got.API != api || got.Ingress != ingress {
			t.Fatalf("DeriveVRIDs(%q) = %+v; current OpenShift derives API %d, Ingress %d", name, got, api, ingress)
		}
	}
}

func TestVRIDsMatchOpenShift(t *testing.T) {
	// Seed 000: cluster "managed" runs managed_API on VRID 124 and
	// managed_INGRESS on VRID 75.
	got := DeriveVRIDs("managed")
	if got.API != 124 || got.Ingress != 75 {
		t.Fatalf("DeriveVRIDs(managed) = %+v, want API 124, Ingress 75 as in seed 000", got)
	}
	if got.DNS == got.API || got.Ingress == got.DNS {
		t.Fatalf("collision not bumped: %+v", got)
	}
	for _, name := range []string{"a", "ocp4", "managed", "x-very-long-cluster-name-0123456789"} {
		v := DeriveVRIDs(name)
		if v.API == 0 || v.DNS == 0 || v.Ingress == 0 || v.API == v.DNS || v.API == v.Ingress || v.DNS == v.Ingress {
			t.Errorf("DeriveVRIDs(%q) = %+v: IDs must be non-zero and distinct", name, v)
		}
	}
}

func TestLoadDemoCluster(t *testing.T) {
	c, err := Load("testdata/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Domain() != "managed.example.com" || len(c.Nodes) != 6 || c.VRRP.Version != 2 || !c.VRRP.Unicast ||
		c.VRRP.AdvertInterval != time.Second || c.Ports != (Ports{API: 6443, LB: 9445, IngressHealth: 1936, MachineConfig: 22623, LBMachineConfig: DefaultLBMachineConfigPort}) {
		t.Fatalf("unexpected defaults: %+v", c)
	}
	if c.UpstreamDNS[0] != netip.MustParseAddrPort("198.18.0.53:53") {
		t.Fatalf("upstream = %v", c.UpstreamDNS)
	}
}

const good = `name: c1
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
nodes:
  - {name: m0, role: master, ips: [198.18.0.11]}
  - {name: w0, role: worker, ips: [198.18.0.21]}
`

func TestValidationErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want string
	}{
		{name: "unknown field", yaml: good + "colour: blue\n", want: `c.yaml:9: unknown field "colour"`},
		{name: "unknown nested field", yaml: strings.Replace(good, "role: worker,", "role: worker, zone: a,", 1), want: `c.yaml:8: unknown field "zone"`},
		{name: "VIP outside every machine network", yaml: strings.Replace(good, "apiVIPs: [198.18.0.5]", "apiVIPs: [10.0.0.5]", 1),
			want: "apiVIPs[0]: 10.0.0.5 is outside every machine network (198.18.0.0/24)"},
		{name: "VIP equal to a node IP", yaml: strings.Replace(good, "ingressVIPs: [198.18.0.7]", "ingressVIPs: [198.18.0.21]", 1),
			want: "ingressVIPs[0]: 198.18.0.21 is also an address of node w0"},
		{name: "dual-stack API, single-stack Ingress", yaml: strings.NewReplacer("apiVIPs: [198.18.0.5]", "apiVIPs: [198.18.0.5, 'fd00::5']",
			"198.18.0.0/24]", "198.18.0.0/24, 'fd00::/64']", "198.18.0.11]", "198.18.0.11, 'fd00::11']", "198.18.0.21]", "198.18.0.21, 'fd00::21']").Replace(good),
			want: "ingressVIPs: families IPv4, but apiVIPs has IPv4, IPv6; in a dual-stack cluster both lists hold the same families with the same one first"},
		{name: "dual-stack lists in other orders", yaml: strings.NewReplacer("apiVIPs: [198.18.0.5]", "apiVIPs: [198.18.0.5, 'fd00::5']", "ingressVIPs: [198.18.0.7]", "ingressVIPs: ['fd00::7', 198.18.0.7]",
			"198.18.0.0/24]", "198.18.0.0/24, 'fd00::/64']", "198.18.0.11]", "198.18.0.11, 'fd00::11']", "198.18.0.21]", "198.18.0.21, 'fd00::21']").Replace(good),
			want: "ingressVIPs: families IPv6, IPv4, but apiVIPs has IPv4, IPv6"},
		{name: "dual-stack VIPs, a node without IPv6", yaml: strings.NewReplacer("apiVIPs: [198.18.0.5]", "apiVIPs: [198.18.0.5, 'fd00::5']", "ingressVIPs: [198.18.0.7]", "ingressVIPs: [198.18.0.7, 'fd00::7']",
			"198.18.0.0/24]", "198.18.0.0/24, 'fd00::/64']", "198.18.0.11]", "198.18.0.11, 'fd00::11']").Replace(good),
			want: "nodes[1].ips: node w0 (worker) has no IPv6 address, and it runs the instance of VIP fd00::7; a node needs an address of each family its VIPs use"},
		{name: "dual-stack VRRPv2 with a sub-second interval", yaml: strings.NewReplacer("apiVIPs: [198.18.0.5]", "apiVIPs: ['fd00::5', 198.18.0.5]", "ingressVIPs: [198.18.0.7]", "ingressVIPs: ['fd00::7', 198.18.0.7]",
			"198.18.0.0/24]", "198.18.0.0/24, 'fd00::/64']", "198.18.0.11]", "198.18.0.11, 'fd00::11']", "198.18.0.21]", "198.18.0.21, 'fd00::21']").Replace(good) + "vrrp: {version: 2, advertInterval: 100ms}\n",
			want: "vrrp.advertInterval: advertisement interval 100ms is not valid for VRRP version 2 (accepted: whole seconds 1..255)"},
		{name: "IPv6 API, IPv4 Ingress", yaml: strings.NewReplacer("apiVIPs: [198.18.0.5]", "apiVIPs: ['fd00::5']",
			"198.18.0.0/24]", "198.18.0.0/24, 'fd00::/64']", "198.18.0.11]", "198.18.0.11, 'fd00::11']").Replace(good),
			want: "ingressVIPs: families IPv4, but apiVIPs has IPv6"},
		{name: "unspecified node address", yaml: strings.Replace(good, "ips: [198.18.0.21]", "ips: [0.0.0.0]", 1),
			want: "nodes[1].ips[0]: 0.0.0.0 is not a unicast address a host can hold (accepted: a unicast address, not unspecified, multicast or loopback)"},
		{name: "multicast VIP", yaml: strings.Replace(good, "apiVIPs: [198.18.0.5]", "apiVIPs: [224.0.0.18]", 1),
			want: "apiVIPs[0]: 224.0.0.18 is not a unicast address a host can hold (accepted: a unicast address, not unspecified, multicast or loopback)"},
		// A VIP the kernel would hold but no client off its link reaches,
		// and that the API redirect (internal/redirect.CheckVIP) refuses
		// at every enable: the file is refused instead.
		{name: "link-local IPv4 VIP", yaml: strings.NewReplacer("apiVIPs: [198.18.0.5]", "apiVIPs: [169.254.0.5]", "198.18.0.0/24]", "198.18.0.0/24, 169.254.0.0/16]").Replace(good),
			want: "apiVIPs[0]: 169.254.0.5 is a link-local address: only its own link reaches it (accepted: a unicast address that is not link-local)"},
		{name: "link-local IPv6 VIP", yaml: strings.NewReplacer("ingressVIPs: [198.18.0.7]", "ingressVIPs: ['fe80::7']").Replace(good),
			want: "ingressVIPs[0]: fe80::7 is a link-local address: only its own link reaches it (accepted: a unicast address that is not link-local)"},
		{name: "IPv4-mapped VIP", yaml: strings.NewReplacer("apiVIPs: [198.18.0.5]", "apiVIPs: ['::ffff:198.18.0.5']").Replace(good),
			want: "apiVIPs[0]: ::ffff:198.18.0.5 is an IPv4-mapped IPv6 address, which never appears on the wire (accepted: 198.18.0.5)"},
		{name: "IPv4-mapped node address", yaml: strings.Replace(good, "ips: [198.18.0.21]", "ips: ['::ffff:198.18.0.21']", 1),
			want: "nodes[1].ips[0]: ::ffff:198.18.0.21 is an IPv4-mapped IPv6 address, which never appears on the wire (accepted: 198.18.0.21)"},
		{name: "multicast DNS VIP", yaml: good + "dnsVIP: 224.0.0.18\n",
			want: "dnsVIP: 224.0.0.18 is not a unicast address a host can hold (accepted: a unicast address, not unspecified, multicast or loopback)"},
		{name: "link-local DNS VIP", yaml: good + "dnsVIP: 169.254.0.53\n",
			want: "dnsVIP: 169.254.0.53 is a link-local address"},
		{name: "duplicate names", yaml: strings.Replace(good, "name: w0", "name: m0", 1), want: `nodes[1].name: "m0" is already the name of nodes[0]`},
		{name: "unknown role", yaml: strings.Replace(good, "role: worker", "role: infra", 1), want: `nodes[1].role: "infra" is not a role (accepted: bootstrap, master, worker)`},
		{name: "bad CIDR", yaml: strings.Replace(good, "198.18.0.0/24", "198.18.0.0/33", 1), want: `machineNetworks[0]: "198.18.0.0/33" is not a CIDR (e.g. 198.18.0.0/24)`},
		{name: "bad name", yaml: strings.Replace(good, "name: c1", "name: C_1", 1), want: `name: "C_1" is not a DNS label`},
		{name: "v2 with IPv6", yaml: "vrrp: {version: 2}\n" + strings.NewReplacer("198.18.0.5", "'fd00::5'", "198.18.0.7", "'fd00::7'", "198.18.0.0/24", "'fd00::/64'", "198.18.0.11", "'fd00::11'", "198.18.0.21", "'fd00::21'").Replace(good),
			want: "vrrp.version: 2 cannot carry IPv6 VIPs and this cluster has no IPv4 VIP; use version 3"},
		{name: "bad interval", yaml: good + "vrrp: {advertInterval: 1500ms}\n", want: "vrrp.advertInterval: advertisement interval 1.5s is not valid for VRRP version 2 (accepted: whole seconds 1..255)"},
		{name: "bad port", yaml: good + "ports: {lb: 70000}\n", want: "ports.lb: 70000 is not a port (1..65535)"},
		{name: "no master", yaml: strings.Replace(good, "role: master", "role: worker", 1), want: "nodes: no node has role master"},
		{name: "upstream DNS is a node", yaml: good + "upstreamDNS: [198.18.0.53, 198.18.0.21]\n",
			want: "upstreamDNS[1]: 198.18.0.21:53 is an address of node w0, where the cluster DNS listens: queries forwarded there come back to it (a loop)"},
		{name: "upstream DNS is a VIP", yaml: good + "upstreamDNS: ['198.18.0.5:53']\n",
			want: "upstreamDNS[0]: 198.18.0.5:53 is apiVIPs[0], where the cluster DNS listens"},
		{name: "upstream DNS is the unspecified address", yaml: good + "upstreamDNS: ['::']\n",
			want: "upstreamDNS[0]: [::]:53 is every address of the node itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("accepted; want error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
	if _, err := Parse("c.yaml", []byte(good)); err != nil {
		t.Fatalf("the base case is rejected: %v", err)
	}
	// Another port of a node is another server (a local resolver beside
	// the cluster DNS), not a loop.
	if _, err := Parse("c.yaml", []byte(good+"upstreamDNS: ['198.18.0.21:5353']\n")); err != nil {
		t.Fatalf("an upstream on another port of a node is rejected: %v", err)
	}
}

// TestPortCollisions checks that a port of the file that another service
// of a node also binds is rejected with the field, the value, the other
// service and the ports accepted.
func TestPortCollisions(t *testing.T) {
	const others = "1..65535 except 53, 1936, 6443, 9650, 9651, 9653, 9654, 9655, 18080, 22623, 50000, 50936"
	for _, tc := range []struct {
		name  string
		ports string
		want  string // "" = accepted
	}{
		{name: "lb on the cluster DNS", ports: "{lb: 53}",
			want: "ports.lb: 53 is also the port of the cluster DNS (UDP and TCP); every service of a node needs its own port (accepted: " + others + ")"},
		{name: "api on the cluster DNS", ports: "{api: 53}",
			want: "ports.api: 53 is also the port of the cluster DNS (UDP and TCP); every service of a node needs its own port (accepted: 1..65535 except 53, 1936, 9445, 9650, 9651, 9653, 9654, 9655, 18080, 22623, 50000, 50936)"},
		{name: "lb on the DNS health check", ports: "{lb: 18080}",
			want: "ports.lb: 18080 is also the port of the DNS health check; every service of a node needs its own port (accepted: " + others + ")"},
		{name: "lb on the LB monitor", ports: "{lb: 50936}",
			want: "ports.lb: 50936 is also the port of the load balancer's monitor; every service of a node needs its own port (accepted: " + others + ")"},
		{name: "ingressHealth on the LB stats page", ports: "{ingressHealth: 50000}",
			want: "ports.ingressHealth: 50000 is also the port of the load balancer's stats page; every service of a node needs its own port (accepted: 1..65535 except 53, 6443, 9445, 9650, 9651, 9653, 9654, 9655, 18080, 22623, 50000, 50936)"},
		{name: "lb on the metrics port", ports: "{lb: 9650}",
			want: "ports.lb: 9650 is also the port of vipstack node's default --metrics-addr; every service of a node needs its own port (accepted: " + others + ")"},
		{name: "machineConfig on the status port", ports: "{machineConfig: 9651}",
			want: "ports.machineConfig: 9651 is also the port of vipstack node's default --status-addr; every service of a node needs its own port (accepted: 1..65535 except 53, 1936, 6443, 9445, 9650, 9651, 9653, 9654, 9655, 18080, 50000, 50936)"},
		{name: "lb on the agent's metrics port", ports: "{lb: 9654}",
			want: "ports.lb: 9654 is also the port of vipstack agent's default --metrics-addr; every service of a node needs its own port (accepted: " + others + ")"},
		{name: "lb on the agent's health port", ports: "{lb: 9655}",
			want: "ports.lb: 9655 is also the port of vipstack agent's default --health-addr; every service of a node needs its own port (accepted: " + others + ")"},
		{name: "lb on the API", ports: "{lb: 6443}",
			want: "ports.lb: 6443 is also the port of ports.api; every service of a node needs its own port (accepted: " + others + ")"},
		{name: "lb on 54", ports: "{lb: 54}"},
		{name: "status on the node's default status port", ports: "{status: 9651}",
			want: "ports.status: 9651 is also the port of vipstack node's default --status-addr; every service of a node needs its own port (accepted: 1..65535 except 53, 1936, 6443, 9445, 9650, 9651, 9653, 9654, 9655, 18080, 22623, 50000, 50936)"},
		{name: "lb on the status port", ports: "{lb: 9652, status: 9652}",
			want: "ports.status: 9652 is also the port of ports.lb; every service of a node needs its own port (accepted: 1..65535 except 53, 1936, 6443, 9650, 9651, 9652, 9653, 9654, 9655, 18080, 22623, 50000, 50936)"},
		{name: "status served to the cluster", ports: "{status: 9652}"},
		{name: "every port moved", ports: "{api: 7443, lb: 7445, ingressHealth: 2936, machineConfig: 23623}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(good+"ports: "+tc.ports+"\n"))
			got := ""
			if err != nil {
				got = err.Error()
			}
			want := ""
			if tc.want != "" {
				want = "c.yaml: " + tc.want
			}
			if got != want {
				t.Fatalf("error:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestPlans(t *testing.T) {
	data, err := os.ReadFile("testdata/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse("cluster.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr
	type inst struct {
		Name     string
		VRID     uint8
		Priority uint8
		Checks   []string
		Peers    []string
		Auth     string
	}
	summarize := func(p *Plan) []inst {
		var out []inst
		for _, in := range p.Instances {
			var peers []string
			for _, x := range in.Peers {
				peers = append(peers, x.String())
			}
			out = append(out, inst{in.Name, in.VRID, in.Priority, in.Checks, peers, in.AuthPass})
		}
		return out
	}
	for _, tc := range []struct {
		node   string
		lb     bool
		want   []inst
		source netip.Addr
	}{{
		node: "bootstrap", source: a("198.18.0.10"),
		want: []inst{{"managed_API", 124, 70, nil, []string{"198.18.0.11", "198.18.0.12", "198.18.0.13"}, "managed_api_vip"}},
	}, {
		node: "master-1", lb: true, source: a("198.18.0.12"),
		want: []inst{
			{"managed_API", 124, 40, []string{"chk_ocp_lb", "chk_ocp_both"}, []string{"198.18.0.10", "198.18.0.11", "198.18.0.13"}, "managed_api_vip"},
			{"managed_INGRESS", 75, 20, []string{"chk_ingress"}, []string{"198.18.0.11", "198.18.0.13", "198.18.0.21", "198.18.0.22"}, "managed_ingress_vip"},
		},
	}, {
		node: "worker-0", source: a("198.18.0.21"),
		want: []inst{{"managed_INGRESS", 75, 20, []string{"chk_ingress"}, []string{"198.18.0.11", "198.18.0.12", "198.18.0.13", "198.18.0.22"}, "managed_ingress_vip"}},
	}} {
		t.Run(tc.node, func(t *testing.T) {
			p, err := c.PlanFor(tc.node)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summarize(p)); diff != "" {
				t.Fatalf("instances (-want +got):\n%s", diff)
			}
			if p.RunLB != tc.lb || !p.RunDNS || p.Instances[0].Source != tc.source {
				t.Fatalf("RunLB=%v RunDNS=%v source=%v", p.RunLB, p.RunDNS, p.Instances[0].Source)
			}
		})
	}
	// Priorities as the seed's comment intends: a master with its LB up
	// (65) beats one with only its API (45); neither beats the bootstrap (70).
	if 40+WeightLB+WeightLBOrAPI >= PrioBootstrap || 40+WeightLBOrAPI >= 40+WeightLB+WeightLBOrAPI {
		t.Fatal("priority ladder broken")
	}
	if _, err := c.PlanFor("nobody"); err == nil || !strings.Contains(err.Error(), `node "nobody" is not in the cluster file`) {
		t.Fatalf("unknown node: %v", err)
	}
}

func TestLBConfig(t *testing.T) {
	c, err := Load("testdata/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lb, err := c.LBConfig()
	if err != nil {
		t.Fatal(err)
	}
	if len(lb.Backends) != 1 || len(lb.Backends[0].Servers) != 3 || lb.Frontends[0].Binds[0].Addr.Port() != 9445 ||
		lb.Backends[0].Servers[0].Addr != netip.MustParseAddrPort("198.18.0.11:6443") || !lb.Backends[0].Servers[0].CheckSSL ||
		lb.Monitors[0].URI != "/haproxy_ready" {
		t.Fatalf("LB config: %+v", lb)
	}
}

// TestCheckEndpoints checks the node agent's own endpoint ports against a
// file's services: the agent checks them at start and on every reload, so
// a new file that moves a service onto --metrics-addr's port is refused.
func TestCheckEndpoints(t *testing.T) {
	metrics := ServicePort{Owner: "--metrics-addr", Port: 19650}
	status := ServicePort{Owner: "--status-addr", Port: 19651}
	for _, tc := range []struct {
		name  string
		ports string
		eps   []ServicePort
		want  string // "" = accepted
	}{
		{name: "none", eps: nil},
		{name: "free", eps: []ServicePort{metrics, status}},
		{name: "file moves lb onto metrics", ports: "{lb: 19650}", eps: []ServicePort{metrics, status},
			want: "--metrics-addr: port 19650 is also the port of ports.lb; every service of a node needs its own port (accepted: 1..65535 except 53, 1936, 6443, 18080, 19650, 19651, 22623, 50000, 50936)"},
		{name: "status on the api", eps: []ServicePort{{Owner: "--status-addr", Port: 6443}},
			want: "--status-addr: port 6443 is also the port of ports.api; every service of a node needs its own port (accepted: 1..65535 except 53, 1936, 6443, 9445, 18080, 22623, 50000, 50936)"},
		{name: "both wrong", ports: "{lb: 19650, ingressHealth: 19651}", eps: []ServicePort{metrics, status},
			want: "--metrics-addr: port 19650 is also the port of ports.lb; every service of a node needs its own port (accepted: 1..65535 except 53, 6443, 18080, 19650, 19651, 22623, 50000, 50936)\n" +
				"--status-addr: port 19651 is also the port of ports.ingressHealth; every service of a node needs its own port (accepted: 1..65535 except 53, 6443, 18080, 19650, 19651, 22623, 50000, 50936)"},
		{name: "the default ports are free for the endpoints", eps: []ServicePort{{Owner: "--metrics-addr", Port: DefaultMetricsPort}, {Owner: "--status-addr", Port: DefaultStatusPort}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := good
			if tc.ports != "" {
				data += "ports: " + tc.ports + "\n"
			}
			c, err := Parse("c.yaml", []byte(data))
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if err := c.CheckEndpoints(tc.eps); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Fatalf("error:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestPlansDualStack: a dual-stack list is one instance per family, as
// OpenShift runs it: the same VRID for both, "<name>_API_0" for the first
// entry's family and "<name>_API_1" for the other, the unicast source and
// peers of the instance's family, VRRPv2 with auth_pass for IPv4 (the
// default version) and VRRPv3 without it for IPv6.
func TestPlansDualStack(t *testing.T) {
	c, err := Load("testdata/dualstack.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.VRRP.Version != 2 {
		t.Fatalf("VRRP.Version = %d, want 2 (the IPv4 instances'; OpenShift writes none, and keepalived's default is 2)", c.VRRP.Version)
	}
	ids := DeriveVRIDs("dual")
	type inst struct {
		Name          string
		VIPs          []string
		VRID          uint8
		Version       int
		Source        string
		Peers         []string
		Auth          string
		Priority      uint8
		ChecksTracked int
	}
	summarize := func(p *Plan) []inst {
		var out []inst
		for _, in := range p.Instances {
			var vips, peers []string
			for _, x := range in.VIPs {
				vips = append(vips, x.String())
			}
			for _, x := range in.Peers {
				peers = append(peers, x.String())
			}
			out = append(out, inst{in.Name, vips, in.VRID, in.Version, in.Source.String(), peers, in.AuthPass, in.Priority, len(in.Checks)})
		}
		return out
	}
	for _, tc := range []struct {
		node string
		want []inst
	}{{
		node: "master-1",
		want: []inst{
			{"dual_API_0", []string{"fd00::5"}, ids.API, 3, "fd00::12", []string{"fd00::10", "fd00::11"}, "", 40, 2},
			{"dual_API_1", []string{"198.18.0.5"}, ids.API, 2, "198.18.0.12", []string{"198.18.0.10", "198.18.0.11"}, "dual_api_vip", 40, 2},
			{"dual_INGRESS_0", []string{"fd00::7"}, ids.Ingress, 3, "fd00::12", []string{"fd00::11", "fd00::21"}, "", 20, 1},
			{"dual_INGRESS_1", []string{"198.18.0.7"}, ids.Ingress, 2, "198.18.0.12", []string{"198.18.0.11", "198.18.0.21"}, "dual_ingress_vip", 20, 1},
		},
	}, {
		node: "bootstrap",
		want: []inst{
			{"dual_API_0", []string{"fd00::5"}, ids.API, 3, "fd00::10", []string{"fd00::11", "fd00::12"}, "", 70, 0},
			{"dual_API_1", []string{"198.18.0.5"}, ids.API, 2, "198.18.0.10", []string{"198.18.0.11", "198.18.0.12"}, "dual_api_vip", 70, 0},
		},
	}, {
		node: "worker-0",
		want: []inst{
			{"dual_INGRESS_0", []string{"fd00::7"}, ids.Ingress, 3, "fd00::21", []string{"fd00::11", "fd00::12"}, "", 20, 1},
			{"dual_INGRESS_1", []string{"198.18.0.7"}, ids.Ingress, 2, "198.18.0.21", []string{"198.18.0.11", "198.18.0.12"}, "dual_ingress_vip", 20, 1},
		},
	}} {
		t.Run(tc.node, func(t *testing.T) {
			p, err := c.PlanFor(tc.node)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summarize(p)); diff != "" {
				t.Fatalf("instances (-want +got):\n%s", diff)
			}
			// The engine's configuration carries each instance's version.
			cfg := p.Keepalived(c, "eth0", func(CheckSpec) track.Check { return nil })
			for i, in := range cfg.Instances {
				if in.Version != tc.want[i].Version || (in.AuthType == "PASS") != (tc.want[i].Auth != "") {
					t.Errorf("%s: engine instance version %d auth %q, want version %d auth %q", in.Name, in.Version, in.AuthType, tc.want[i].Version, tc.want[i].Auth)
				}
			}
		})
	}

	// vrrp.version 3 makes the IPv4 instances VRRPv3 too, without
	// authentication.
	data, err := os.ReadFile("testdata/dualstack.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c3, err := Parse("dualstack.yaml", append(data, "vrrp: {version: 3, advertInterval: 500ms}\n"...))
	if err != nil {
		t.Fatal(err)
	}
	p, err := c3.PlanFor("master-0")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range p.Instances {
		if in.Version != 3 || in.AuthPass != "" {
			t.Errorf("vrrp.version 3: %s runs version %d with auth_pass %q, want 3 and none", in.Name, in.Version, in.AuthPass)
		}
	}
}

// TestNodeEqual: a membership change is a node added, removed, renamed,
// given another role, router ID or addresses (their order too).
func TestNodeEqual(t *testing.T) {
	a4, b4, a6 := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2"), netip.MustParseAddr("fd00::1")
	n := Node{Name: "m0", Role: Master, IPs: []netip.Addr{a4, a6}, RouterID: a4}
	for _, tc := range []struct {
		name string
		m    Node
		want bool
	}{
		{name: "same", m: Node{Name: "m0", Role: Master, IPs: []netip.Addr{a4, a6}, RouterID: a4}, want: true},
		{name: "name", m: Node{Name: "m1", Role: Master, IPs: []netip.Addr{a4, a6}, RouterID: a4}},
		{name: "role", m: Node{Name: "m0", Role: Worker, IPs: []netip.Addr{a4, a6}, RouterID: a4}},
		{name: "address", m: Node{Name: "m0", Role: Master, IPs: []netip.Addr{b4, a6}, RouterID: a4}},
		{name: "order", m: Node{Name: "m0", Role: Master, IPs: []netip.Addr{a6, a4}, RouterID: a4}},
		{name: "fewer", m: Node{Name: "m0", Role: Master, IPs: []netip.Addr{a4}, RouterID: a4}},
		{name: "router ID", m: Node{Name: "m0", Role: Master, IPs: []netip.Addr{a4, a6}}},
	} {
		if got := n.Equal(tc.m); got != tc.want {
			t.Errorf("%s: Equal = %v, want %v", tc.name, got, tc.want)
		}
	}
}
