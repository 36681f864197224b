package cluster

import (
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/vipstack/vipstack/internal/track"
)

// fuzzErrorLine is the shape of every line of a rejection: the file and
// either the line ("fuzz.yaml:LINE: message", from the YAML decoder) or
// the field ("fuzz.yaml: nodes[2].ips: message", from validation), or for
// a whole-file problem "fuzz.yaml: message".
var fuzzErrorLine = regexp.MustCompile(`^fuzz\.yaml(:\d+: \S|: [a-zA-Z]+(\[\d+\])?(\.[a-zA-Z]+(\[\d+\])?)*: \S|: empty file;|: document contains excessive aliasing)`)

// FuzzParse checks that Parse never panics and returns exactly one of a
// cluster and an error; that every line of an error names the file; that
// an accepted cluster written back as YAML parses to the same cluster; and
// that every node of an accepted cluster gets a plan (or a clear error)
// whose instances have distinct, non-zero VRIDs in each family, VIPs of
// one family (IPv6 on VRRPv3; auth only on VRRPv2), a source address of the
// node's own and peers that are other nodes of the VIP's family, and that
// turns into an engine configuration and, with masters, a valid load
// balancer configuration. The seed corpus is every YAML file in testdata
// (seed 000's and 001's clusters among them) and the crashers kept in
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil || len(files) < 4 {
		f.Fatalf("seed files in testdata: %v %v", files, err)
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(good))
	f.Add([]byte(good + "vrrp: {version: 3, advertInterval: 40950ms, interface: eth0}\nports: {api: 1, lb: 65535}\n"))
	f.Add([]byte(good + "dnsVIP: 198.18.0.9\nupstreamDNS: ['[fd00::53]:53', 'fe80::1%eth0']\n"))
	f.Add([]byte("name: a\nnodes: [{name: m, role: master, ips: [::ffff:1.2.3.4]}]\n---\nname: b\n"))
	f.Add([]byte("name: &a x\nbaseDomain: *a\napiVIPs: [\n"))

	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data)
		if (c == nil) == (err == nil) {
			t.Fatalf("Parse returned cluster %v and error %v; want exactly one", c != nil, err)
		}
		if err != nil {
			for _, l := range strings.Split(err.Error(), "\n") {
				if !fuzzErrorLine.MatchString(l) {
					t.Fatalf("error line %q does not start with the file name", l)
				}
			}
			return
		}
		checkAccepted(t, c)
	})
}

// checkAccepted checks the properties of an accepted cluster.
func checkAccepted(t *testing.T, c *Cluster) {
	t.Helper()
	if len(c.Nodes) == 0 || len(c.Nodes) > MaxNodes || len(c.APIVIPs) == 0 || len(c.APIVIPs) > MaxVIPs ||
		len(c.IngressVIPs) == 0 || len(c.IngressVIPs) > MaxVIPs {
		t.Fatalf("accepted cluster breaks a count limit: %d nodes, %d API VIPs, %d Ingress VIPs", len(c.Nodes), len(c.APIVIPs), len(c.IngressVIPs))
	}
	if len(c.Domain()) > maxDomain || len(c.VRRP.Interface) > maxIfName {
		t.Fatalf("accepted domain %q or interface %q is too long", c.Domain(), c.VRRP.Interface)
	}

	y, err := yaml.Marshal(fileOf(c))
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	again, err := Parse("again.yaml", y)
	if err != nil {
		t.Fatalf("an accepted cluster written back is rejected: %v\n%s", err, y)
	}
	opts := []cmp.Option{cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
		cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
		cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })}
	if !cmp.Equal(c, again, opts...) { // Equal first: Diff is slow, and the fuzzer runs this often
		t.Fatalf("round trip mismatch (-first +second):\n%s\n%s", cmp.Diff(c, again, opts...), y)
	}

	masters := 0
	for _, n := range c.Nodes {
		if n.Role == Master {
			masters++
		}
		p, err := c.PlanFor(n.Name)
		if err != nil {
			if !strings.Contains(err.Error(), "node "+n.Name+" ") {
				t.Fatalf("PlanFor(%s) error does not name the node: %v", n.Name, err)
			}
			continue
		}
		checkPlan(t, c, n, p)
	}
	if masters == 0 {
		t.Fatalf("accepted a cluster without masters")
	}
	if _, err := c.LBConfig(); err != nil {
		t.Fatalf("LBConfig of an accepted cluster: %v", err)
	}
}

func checkPlan(t *testing.T, c *Cluster, n Node, p *Plan) {
	t.Helper()
	type router struct {
		v6   bool
		vrid uint8
	}
	var vrids []router // IPv4 and IPv6 routers with one VRID are distinct
	for _, in := range p.Instances {
		if len(in.VIPs) == 0 {
			t.Fatalf("node %s: instance %s has no VIP", n.Name, in.Name)
		}
		r := router{in.VIPs[0].Is6(), in.VRID}
		if in.VRID == 0 || slices.Contains(vrids, r) {
			t.Fatalf("node %s: instance %s has VRID %d; VRIDs of the plan so far %v", n.Name, in.Name, in.VRID, vrids)
		}
		vrids = append(vrids, r)
		for _, v := range in.VIPs {
			if v.Is6() != r.v6 {
				t.Fatalf("node %s: instance %s mixes families: %v", n.Name, in.Name, in.VIPs)
			}
		}
		if (r.v6 && in.Version != 3) || (in.AuthPass != "") != (in.Version == 2) {
			t.Fatalf("node %s: instance %s for %v runs VRRPv%d with auth_pass %q", n.Name, in.Name, in.VIPs, in.Version, in.AuthPass)
		}
		if in.Priority == 0 || in.Priority == 255 {
			t.Fatalf("node %s: instance %s has priority %d; an owner or a stopping router is not what a plan asks for", n.Name, in.Name, in.Priority)
		}
		if len(in.VIPs) == 0 || !slices.Contains(n.IPs, in.Source) || in.Source.Is4() != in.VIPs[0].Is4() {
			t.Fatalf("node %s: instance %s has source %v for VIPs %v; want one of the node's addresses %v of the VIPs' family", n.Name, in.Name, in.Source, in.VIPs, n.IPs)
		}
		for i, peer := range in.Peers {
			if peer.Is4() != in.Source.Is4() || slices.Contains(n.IPs, peer) || slices.Contains(in.Peers[:i], peer) {
				t.Fatalf("node %s: instance %s has peer %v (peers %v, source %v)", n.Name, in.Name, peer, in.Peers, in.Source)
			}
		}
		if !c.VRRP.Unicast && len(in.Peers) > 0 {
			t.Fatalf("node %s: instance %s has unicast peers in multicast mode", n.Name, in.Name)
		}
		for _, name := range in.Checks {
			if !slices.ContainsFunc(p.Checks, func(ch CheckSpec) bool { return ch.Name == name }) {
				t.Fatalf("node %s: instance %s tracks check %q that the plan does not define", n.Name, in.Name, name)
			}
		}
	}
	kc := p.Keepalived(c, "eth0", func(CheckSpec) track.Check { return nil })
	if len(kc.Instances) != len(p.Instances) || len(kc.Scripts) != len(p.Checks) {
		t.Fatalf("node %s: engine configuration has %d instances and %d scripts for a plan of %d and %d",
			n.Name, len(kc.Instances), len(kc.Scripts), len(p.Instances), len(p.Checks))
	}
}

// fileOf writes c back as a File, every default spelled out.
func fileOf(c *Cluster) map[string]any {
	strs := func(as []netip.Addr) []string {
		out := []string{}
		for _, a := range as {
			out = append(out, a.String())
		}
		return out
	}
	var nets, ups []string
	for _, p := range c.MachineNetworks {
		nets = append(nets, p.String())
	}
	for _, u := range c.UpstreamDNS {
		ups = append(ups, u.String())
	}
	var nodes []map[string]any
	for _, n := range c.Nodes {
		nodes = append(nodes, map[string]any{"name": n.Name, "role": string(n.Role), "ips": strs(n.IPs)})
	}
	m := map[string]any{
		"name": c.Name, "baseDomain": c.BaseDomain, "apiVIPs": strs(c.APIVIPs), "ingressVIPs": strs(c.IngressVIPs),
		"machineNetworks": nets, "nodes": nodes,
		"vrrp": map[string]any{"version": c.VRRP.Version, "advertInterval": c.VRRP.AdvertInterval.String(),
			"unicast": c.VRRP.Unicast, "interface": c.VRRP.Interface},
		"ports": map[string]any{"api": c.Ports.API, "lb": c.Ports.LB, "ingressHealth": c.Ports.IngressHealth,
			"machineConfig": c.Ports.MachineConfig, "status": c.Ports.Status},
	}
	if ups != nil {
		m["upstreamDNS"] = ups
	}
	if c.DNSVIP.IsValid() {
		m["dnsVIP"] = c.DNSVIP.String()
	}
	return m
}

// TestSeedFiles checks that the seed files are accepted and pass the
// fuzz target's properties, so the fuzzer starts from valid clusters.
func TestSeedFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			c, err := Load(p)
			if err != nil {
				t.Fatal(err)
			}
			checkAccepted(t, c)
		})
	}
}
