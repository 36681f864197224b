package node

import (
	"context"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/discovery"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// chanSource is a live source the test drives: each list sent is reported.
type chanSource chan []discovery.Node

func (c chanSource) Run(ctx context.Context, update func([]discovery.Node)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case n := <-c:
			update(n)
		}
	}
}

func writeCluster(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const liveFile = `name: c1
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
membership: {kubernetes: true, mdns: true}
`

// TestMembershipApply drives the agent's live membership with fake sources
// and fake VRRP and load balancer seams, and checks after every report
// what each was given: the load balancer's backends first, then a VRRP
// reload with the new peers, and the DNS registry.
func TestMembershipApply(t *testing.T) {
	a := netip.MustParseAddr
	kube, mdns := make(chanSource), make(chanSource)
	ag, err := New(Options{
		ClusterPath: writeCluster(t, liveFile+"nodes: [{name: m0, role: master, ips: [198.18.0.11]}]\n"),
		Node:        "m0", Logger: slog.New(slog.DiscardHandler),
		Live: LiveOptions{Sources: map[string]discovery.Source{SourceKubernetes: kube, SourceMDNS: mdns}},
	})
	if err != nil {
		t.Fatal(err)
	}
	type applied struct {
		backends []string
		apiPeers []netip.Addr
		ingPeers []netip.Addr
	}
	events := make(chan string, 16)
	var lastLB *lbconfig.Config
	ag.memb.applyLB = func(cfg *lbconfig.Config) error { lastLB = cfg; events <- "lb"; return nil }
	ag.memb.reloadVRRP = func() error { events <- "vrrp"; return nil }
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// It returns once both sources gave a first list: the steps below
	// give them.
	started := make(chan struct{})
	go func() { ag.startMembership(ctx); close(started) }()
	defer func() { cancel(); <-started }()
	state := func() applied {
		ag.mu.Lock()
		defer ag.mu.Unlock()
		var got applied
		for _, s := range lastLB.Backends[0].Servers {
			got.backends = append(got.backends, s.Name+" "+s.Addr.String())
		}
		got.apiPeers, got.ingPeers = ag.plan.Instances[0].Peers, ag.plan.Instances[1].Peers
		return got
	}
	wait := func(step string) {
		t.Helper()
		for _, want := range []string{"lb", "vrrp"} {
			select {
			case got := <-events:
				if got != want {
					t.Fatalf("%s: %s applied, want %s first", step, got, want)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("%s: nothing applied (waiting for %s)", step, want)
			}
		}
	}
	dnsNames := func() []string {
		var out []string
		for _, n := range ag.nodes.Nodes() {
			out = append(out, n.Name+"/"+string(n.Role))
		}
		return out
	}
	addrCmp := cmp.Comparer(func(x, y netip.Addr) bool { return x == y })
	for _, st := range []struct {
		name string
		send func()
		want applied
		dns  []string
	}{
		{name: "the Node list: a master and a worker join", send: func() {
			kube <- []discovery.Node{
				{Name: "m0", Role: discovery.Master, Addrs: []netip.Addr{a("198.18.0.11")}},
				{Name: "m1", Role: discovery.Master, Addrs: []netip.Addr{a("198.18.0.12")}},
				{Name: "w0", Role: discovery.Worker, Addrs: []netip.Addr{a("198.18.0.21")}},
			}
		}, want: applied{
			backends: []string{"m0 198.18.0.11:6443", "m1 198.18.0.12:6443"},
			apiPeers: []netip.Addr{a("198.18.0.12")}, ingPeers: []netip.Addr{a("198.18.0.12"), a("198.18.0.21")},
		}, dns: []string{"m0/master", "m1/master", "w0/worker"}},
		{name: "mDNS: a master the API does not list yet", send: func() {
			mdns <- []discovery.Node{{Name: "m2", Role: discovery.Master, Addrs: []netip.Addr{a("198.18.0.13")}}}
		}, want: applied{
			backends: []string{"m0 198.18.0.11:6443", "m1 198.18.0.12:6443", "m2 198.18.0.13:6443"},
			apiPeers: []netip.Addr{a("198.18.0.12"), a("198.18.0.13")}, ingPeers: []netip.Addr{a("198.18.0.12"), a("198.18.0.13"), a("198.18.0.21")},
		}, dns: []string{"m0/master", "m1/master", "m2/master", "w0/worker"}},
		{name: "the Node list: m1 leaves", send: func() {
			kube <- []discovery.Node{
				{Name: "m0", Role: discovery.Master, Addrs: []netip.Addr{a("198.18.0.11")}},
				{Name: "w0", Role: discovery.Worker, Addrs: []netip.Addr{a("198.18.0.21")}},
			}
		}, want: applied{
			backends: []string{"m0 198.18.0.11:6443", "m2 198.18.0.13:6443"},
			apiPeers: []netip.Addr{a("198.18.0.13")}, ingPeers: []netip.Addr{a("198.18.0.13"), a("198.18.0.21")},
		}, dns: []string{"m0/master", "m2/master", "w0/worker"}},
		{name: "mDNS: m2 says goodbye", send: func() { mdns <- nil }, want: applied{
			backends: []string{"m0 198.18.0.11:6443"},
			ingPeers: []netip.Addr{a("198.18.0.21")},
		}, dns: []string{"m0/master", "w0/worker"}},
	} {
		st.send()
		wait(st.name)
		if d := cmp.Diff(st.want, state(), addrCmp, cmp.AllowUnexported(applied{})); d != "" {
			t.Errorf("%s: applied (-want +got):\n%s", st.name, d)
		}
		if d := cmp.Diff(st.dns, dnsNames()); d != "" {
			t.Errorf("%s: DNS registry (-want +got):\n%s", st.name, d)
		}
	}
	// A reload that changes the live sources is refused.
	if err := os.WriteFile(ag.opts.ClusterPath, []byte(strings.Replace(liveFile, "mdns: true", "mdns: false", 1)+
		"nodes: [{name: m0, role: master, ips: [198.18.0.11]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := ag.prepareReload(); err == nil || !strings.Contains(err.Error(), "membership: {Kubernetes:true MDNS:true} to {Kubernetes:true MDNS:false}: the live sources start with the node agent; restart it") {
		t.Errorf("a reload turning mDNS off: %v", err)
	}
	if err := os.WriteFile(ag.opts.ClusterPath, []byte(liveFile+"nodes: [{name: m0, role: master, ips: [198.18.0.11]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A reload of the cluster file keeps the live nodes.
	c, p, _, err := ag.prepareReload()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range c.Nodes {
		names = append(names, n.Name)
	}
	if d := cmp.Diff([]string{"m0", "w0"}, names); d != "" || len(p.Instances[1].Peers) != 1 {
		t.Errorf("after a reload: nodes (-want +got):\n%s\nIngress peers %v, want w0's", d, p.Instances[1].Peers)
	}
}

// TestSelfNode checks how a node the cluster file does not list learns
// its own role and addresses, and the errors when it cannot.
func TestSelfNode(t *testing.T) {
	a := netip.MustParseAddr
	c, err := cluster.Parse("c.yaml", []byte(liveFile))
	if err != nil {
		t.Fatal(err)
	}
	fake := map[string]discovery.Source{SourceMDNS: make(chanSource)}
	self, err := selfNode(c, "w3", LiveOptions{Role: cluster.Worker, Addrs: []netip.Addr{a("198.18.0.23")}, Sources: fake})
	if err != nil || cmp.Diff(&cluster.Node{Name: "w3", Role: cluster.Worker, IPs: []netip.Addr{a("198.18.0.23")}}, self, cmp.Comparer(func(x, y netip.Addr) bool { return x == y })) != "" {
		t.Errorf("selfNode with --role and addresses = %+v, %v", self, err)
	}
	if _, err := selfNode(c, "w3", LiveOptions{Sources: fake}); err == nil || !strings.Contains(err.Error(), "its role is unknown; give --role (bootstrap, master or worker)") {
		t.Errorf("selfNode without a role: %v", err)
	}
	if _, err := selfNode(c, "w3", LiveOptions{Role: "router", Sources: fake}); err == nil || err.Error() != `--role "router" is not a role (accepted: bootstrap, master, worker)` {
		t.Errorf("selfNode with a bad role: %v", err)
	}
	// With the API unreachable, the error says so and what to do.
	_, err = selfNode(c, "w3", LiveOptions{Kubeconfig: filepath.Join(t.TempDir(), "missing")})
	if err == nil || !strings.Contains(err.Error(), "node w3 is not in the cluster file's nodes and its role is unknown: kubeconfig") || !strings.Contains(err.Error(), "give --role") {
		t.Errorf("selfNode without a kubeconfig: %v", err)
	}
	// A file without a live source: PlanFor says the node is missing.
	static, err := cluster.Parse("c.yaml", []byte(strings.Replace(liveFile, "membership: {kubernetes: true, mdns: true}\n", "nodes: [{name: m0, role: master, ips: [198.18.0.11]}]\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if self, err := selfNode(static, "w3", LiveOptions{Role: cluster.Worker}); self != nil || err != nil {
		t.Errorf("selfNode without a live source = %+v, %v; want nil, nil", self, err)
	}
}
