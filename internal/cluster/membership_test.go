package cluster

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const liveBase = `name: ocp4
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
`

// TestNodesOptionalWithLiveSource checks that a file may name only the
// cluster and its VIPs when it names a live source, and says so when not.
func TestNodesOptionalWithLiveSource(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, wantErr string
	}{
		{name: "no nodes, no source", yaml: liveBase,
			wantErr: "c.yaml: nodes: at least one node is required (or a live source to learn them from: membership.kubernetes or membership.mdns)"},
		{name: "no master, no source", yaml: liveBase + "nodes: [{name: w0, role: worker, ips: [198.18.0.21]}]\n",
			wantErr: "c.yaml: nodes: no node has role master (or a live source to learn them from: membership.kubernetes or membership.mdns)"},
		{name: "no nodes, kubernetes", yaml: liveBase + "membership: {kubernetes: true}\n"},
		{name: "no nodes, mdns", yaml: liveBase + "membership: {mdns: true}\n"},
		{name: "no master, both", yaml: liveBase + "membership: {kubernetes: true, mdns: true}\nnodes: [{name: w0, role: worker, ips: [198.18.0.21]}]\n"},
		{name: "membership off", yaml: liveBase + "membership: {kubernetes: false}\n",
			wantErr: "c.yaml: nodes: at least one node is required (or a live source to learn them from: membership.kubernetes or membership.mdns)"},
		{name: "membership not a mapping", yaml: liveBase + "membership: [kubernetes]\n",
			wantErr: "c.yaml:6: membership: bad value (a list); accepted: a mapping of kubernetes, mdns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.yaml))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Errorf("error:\n%s\nwant:\n%s", got, tc.wantErr)
			}
		})
	}
}

// TestOverrides checks the per-instance overrides: seed 001's cluster
// "ocp4" runs ocp4_API on VRID 29 with auth_pass ocp4_api_vip, which
// today's derivation does not give.
func TestOverrides(t *testing.T) {
	const nodes = "nodes:\n  - {name: m0, role: master, ips: [198.18.0.11]}\n  - {name: m1, role: master, ips: [198.18.0.12]}\n  - {name: b, role: bootstrap, ips: [198.18.0.10]}\n"
	if DeriveVRIDs("ocp4").API == 29 {
		t.Fatal("the derivation gives 29 for ocp4: this test shows nothing")
	}
	c, err := Parse("c.yaml", []byte(liveBase+nodes+"vrrp:\n  api: {vrid: 29, priority: 50, password: ocp4_api_vip}\n  ingress: {vrid: 30}\n"))
	if err != nil {
		t.Fatal(err)
	}
	type inst struct {
		Name     string
		VRID     uint8
		Priority uint8
		AuthPass string
	}
	got := func(node string) []inst {
		p, err := c.PlanFor(node)
		if err != nil {
			t.Fatal(err)
		}
		var out []inst
		for _, in := range p.Instances {
			out = append(out, inst{in.Name, in.VRID, in.Priority, in.AuthPass})
		}
		return out
	}
	want := []inst{{"ocp4_API", 29, 50, "ocp4_api_vip"}, {"ocp4_INGRESS", 30, PrioIngress, "ocp4_ingress_vip"}}
	if d := cmp.Diff(want, got("m0")); d != "" {
		t.Errorf("master's instances (-want +got):\n%s", d)
	}
	// The bootstrap node keeps its priority, so that it outranks the masters.
	if d := cmp.Diff([]inst{{"ocp4_API", 29, PrioBootstrap, "ocp4_api_vip"}}, got("b")); d != "" {
		t.Errorf("bootstrap's instances (-want +got):\n%s", d)
	}
	if ids := c.VRIDs(); ids.API != 29 || ids.Ingress != 30 || ids.DNS != DeriveVRIDs("ocp4").DNS {
		t.Errorf("VRIDs() = %v", ids)
	}

	for _, tc := range []struct{ name, vrrp, want string }{
		{"vrid too large", "vrrp: {api: {vrid: 256}}", "c.yaml: vrrp.api.vrid: 256 is not a virtual router ID (accepted: 1..255)"},
		{"priority of an owner", "vrrp: {ingress: {priority: 255}}", "c.yaml: vrrp.ingress.priority: 255 is not a backup priority (accepted: 1..254; 255 is the address owner's, which vipstack never is)"},
		{"password with a blank", "vrrp: {dns: {password: 'a b'}}", `c.yaml: vrrp.dns.password: "a b" is not accepted (accepted: 1..64 characters without blanks, quotes, braces, '#' or '!'; keepalived sends the first 8)`},
		{"two instances on one ID", "vrrp: {api: {vrid: 7}, ingress: {vrid: 7}}", "c.yaml: vrrp: the API, Ingress and DNS instances have virtual router IDs 7, 7 and " +
			itoa(DeriveVRIDs("ocp4").DNS) + "; each instance on the interface needs its own (set vrrp.api.vrid, vrrp.ingress.vrid or vrrp.dns.vrid apart)"},
		{"vrid of the wrong type", "vrrp: {api: {vrid: x}}", `c.yaml:7: vrrp.api.vrid: bad value "x"; accepted: a virtual router ID, 1..255`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(liveBase+"nodes: [{name: m0, role: master, ips: [198.18.0.11]}]\n"+tc.vrrp+"\n"))
			if err == nil || err.Error() != tc.want {
				t.Errorf("error:\n%v\nwant:\n%s", err, tc.want)
			}
		})
	}
}

func itoa(v uint8) string { return strconv.Itoa(int(v)) }

// TestWithNodes is the merge of a file's nodes with the nodes live sources
// report: a step table, each step the live list and what follows from it.
func TestWithNodes(t *testing.T) {
	a := netip.MustParseAddr
	c, err := Parse("c.yaml", []byte(liveBase+"membership: {kubernetes: true}\nnodes:\n  - {name: m0, role: master, ips: [198.18.0.11]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		nodes    []Node
		notes    []string
		m0API    []netip.Addr // master m0's API instance peers
		m0Ingr   []netip.Addr // its Ingress peers
		backends []string     // the API backend's servers
	}
	steps := []struct {
		name string
		live []Node
		want want
	}{
		{name: "file only", want: want{
			nodes: []Node{{Name: "m0", Role: Master, IPs: []netip.Addr{a("198.18.0.11")}}}, backends: []string{"m0 198.18.0.11:6443"}}},
		{name: "a master and a worker join", live: []Node{
			{Name: "m1", Role: Master, IPs: []netip.Addr{a("198.18.0.12")}},
			{Name: "w0", Role: Worker, IPs: []netip.Addr{a("198.18.0.21"), a("10.0.0.21")}}, // outside the machine network: dropped
		}, want: want{
			nodes: []Node{{Name: "m0", Role: Master, IPs: []netip.Addr{a("198.18.0.11")}}, {Name: "m1", Role: Master, IPs: []netip.Addr{a("198.18.0.12")}}, {Name: "w0", Role: Worker, IPs: []netip.Addr{a("198.18.0.21")}}},
			m0API: []netip.Addr{a("198.18.0.12")}, m0Ingr: []netip.Addr{a("198.18.0.12"), a("198.18.0.21")},
			backends: []string{"m0 198.18.0.11:6443", "m1 198.18.0.12:6443"}}},
		{name: "the file's entry wins over a live one", live: []Node{
			{Name: "m0", Role: Worker, IPs: []netip.Addr{a("198.18.0.99")}},
			{Name: "m1", Role: Master, IPs: []netip.Addr{a("198.18.0.12")}},
		}, want: want{
			nodes: []Node{{Name: "m0", Role: Master, IPs: []netip.Addr{a("198.18.0.11")}}, {Name: "m1", Role: Master, IPs: []netip.Addr{a("198.18.0.12")}}},
			m0API: []netip.Addr{a("198.18.0.12")}, m0Ingr: []netip.Addr{a("198.18.0.12")},
			backends: []string{"m0 198.18.0.11:6443", "m1 198.18.0.12:6443"}}},
		{name: "bad live nodes are left out with a note", live: []Node{
			{Name: "vip", Role: Worker, IPs: []netip.Addr{a("198.18.0.5")}},  // a VIP only
			{Name: "dup", Role: Worker, IPs: []netip.Addr{a("198.18.0.11")}}, // m0's address
			{Name: "Bad_Name", Role: Worker, IPs: []netip.Addr{a("198.18.0.30")}},
			{Name: "r", Role: Role("router"), IPs: []netip.Addr{a("198.18.0.31")}},
		}, want: want{
			nodes: []Node{{Name: "m0", Role: Master, IPs: []netip.Addr{a("198.18.0.11")}}},
			notes: []string{
				"node vip: no address in the machine networks (198.18.0.0/24) that is not a VIP or another node's",
				"node dup: address 198.18.0.11 is also node m0's; left out",
				"node dup: no address in the machine networks (198.18.0.0/24) that is not a VIP or another node's",
				`node "Bad_Name": not a DNS label`,
				`node r: role "router" is not a role (bootstrap, master, worker)`,
			},
			backends: []string{"m0 198.18.0.11:6443"}}},
		{name: "everyone left", want: want{
			nodes: []Node{{Name: "m0", Role: Master, IPs: []netip.Addr{a("198.18.0.11")}}}, backends: []string{"m0 198.18.0.11:6443"}}},
	}
	for _, st := range steps {
		got, notes := c.WithNodes(st.live)
		addrCmp := cmp.Comparer(func(x, y netip.Addr) bool { return x == y })
		if d := cmp.Diff(st.want.nodes, got.Nodes, addrCmp); d != "" {
			t.Errorf("%s: nodes (-want +got):\n%s", st.name, d)
		}
		if d := cmp.Diff(st.want.notes, notes); d != "" {
			t.Errorf("%s: notes (-want +got):\n%s", st.name, d)
		}
		p, err := got.PlanFor("m0")
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if d := cmp.Diff(st.want.m0API, p.Instances[0].Peers, addrCmp); d != "" {
			t.Errorf("%s: API peers (-want +got):\n%s", st.name, d)
		}
		if d := cmp.Diff(st.want.m0Ingr, p.Instances[1].Peers, addrCmp); d != "" {
			t.Errorf("%s: Ingress peers (-want +got):\n%s", st.name, d)
		}
		lb, err := got.LBConfig()
		if err != nil {
			t.Fatal(err)
		}
		var backends []string
		for _, s := range lb.Backends[0].Servers {
			backends = append(backends, s.Name+" "+s.Addr.String())
		}
		if d := cmp.Diff(st.want.backends, backends); d != "" {
			t.Errorf("%s: backends (-want +got):\n%s", st.name, d)
		}
		if d := cmp.Diff(c.Listed, got.Listed, addrCmp); d != "" || len(c.Nodes) != 1 {
			t.Errorf("%s: WithNodes changed the file's cluster (-was +now):\n%s", st.name, d)
		}
	}
}

// TestMachineConfigBalanced checks loadBalancer.machineConfig: a second
// frontend and backend over the masters' machine-config port with HTTPS
// /healthz checks, and a redirect of each API VIP's port 22623 to it.
func TestMachineConfigBalanced(t *testing.T) {
	const nodes = "nodes:\n  - {name: m0, role: master, ips: [198.18.0.11]}\n  - {name: m1, role: master, ips: [198.18.0.12]}\n  - {name: w0, role: worker, ips: [198.18.0.21]}\n"
	off, err := Parse("c.yaml", []byte(liveBase+nodes))
	if err != nil {
		t.Fatal(err)
	}
	on, err := Parse("c.yaml", []byte(liveBase+nodes+"loadBalancer: {machineConfig: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg, _ := off.LBConfig(); len(cfg.Frontends) != 1 || len(cfg.Backends) != 1 {
		t.Errorf("without loadBalancer.machineConfig: %d frontends, %d backends; want the API's alone", len(cfg.Frontends), len(cfg.Backends))
	}
	if d := cmp.Diff(map[netip.AddrPort]uint16{netip.MustParseAddrPort("198.18.0.5:6443"): 9445}, off.Redirects()); d != "" {
		t.Errorf("redirects without loadBalancer.machineConfig (-want +got):\n%s", d)
	}
	cfg, err := on.LBConfig()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Frontends) != 2 || cfg.Frontends[1].Name != LBMachineConfigFrontend || cfg.Frontends[1].Binds[0].Addr.Port() != DefaultLBMachineConfigPort {
		t.Fatalf("frontends: %+v", cfg.Frontends)
	}
	be := cfg.Backends[1]
	var servers []string
	for _, s := range be.Servers {
		servers = append(servers, s.Name+" "+s.Addr.String())
		if !s.Check || !s.CheckSSL {
			t.Errorf("server %s is not checked over TLS", s.Name)
		}
	}
	if d := cmp.Diff([]string{"m0 198.18.0.11:22623", "m1 198.18.0.12:22623"}, servers); d != "" {
		t.Errorf("machine-config servers (-want +got):\n%s", d)
	}
	if be.Check.URI != "/healthz" {
		t.Errorf("check URI %q, want /healthz", be.Check.URI)
	}
	want := map[netip.AddrPort]uint16{
		netip.MustParseAddrPort("198.18.0.5:6443"):  9445,
		netip.MustParseAddrPort("198.18.0.5:22623"): DefaultLBMachineConfigPort,
	}
	if d := cmp.Diff(want, on.Redirects()); d != "" {
		t.Errorf("redirects (-want +got):\n%s", d)
	}
	if _, err := Parse("c.yaml", []byte(liveBase+nodes+"ports: {lbMachineConfig: 9446}\n")); err == nil ||
		err.Error() != "c.yaml: ports.lbMachineConfig: 9446 is only used with loadBalancer.machineConfig: true" {
		t.Errorf("lbMachineConfig without the balancer: %v", err)
	}
	if _, err := Parse("c.yaml", []byte(liveBase+nodes+"loadBalancer: {machineConfig: true}\nports: {lbMachineConfig: 9445}\n")); err == nil ||
		!strings.Contains(err.Error(), "ports.l") {
		t.Errorf("lbMachineConfig on ports.lb: %v", err)
	}
}
