package agent

import (
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/keepalived"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func golden(t *testing.T, got string) {
	t.Helper()
	path := filepath.Join("testdata", strings.ReplaceAll(t.Name(), "/", "_")+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

var a = netip.MustParseAddr

func testGroups() []GroupView {
	nodes := map[string][]netip.Addr{
		"n1": {a("198.18.0.11"), a("fd00:bb::11")},
		"n2": {a("198.18.0.12"), a("fd00:bb::12")},
		"n3": {a("198.18.0.13")},
	}
	inst := []k8s.Instance{
		{Name: "node/n1", VRID: 1, Node: "n1"},
		{Name: "node/n2", VRID: 2, Node: "n2"},
		{Name: "node/n3", VRID: 3, Node: "n3"},
		{Name: "service/demo/local", VRID: 4, Service: "demo/local"},
	}
	var vips []VIP
	base := a("198.18.1.0")
	for i := range 30 {
		vips = append(vips, VIP{Addr: base, Service: "demo/s" + string(rune('a'+i%26)) + string(rune('0'+i/26))})
		base = base.Next()
	}
	vips = append(vips,
		VIP{Addr: a("fd00:1::1"), Service: "demo/v6"},
		VIP{Addr: a("198.18.2.1"), Service: "demo/local", Local: true, Ready: []string{"n1", "n3", "elsewhere"}},
		VIP{Addr: a("198.18.2.2"), Service: "demo/local-pending", Local: true, Ready: []string{"n1"}},
	)
	return []GroupView{
		{Key: "infra/workers", Interface: "eth0", Unicast: true, Version: 2, Interval: time.Second,
			Instances: inst, NodeAddrs: nodes, VIPs: vips},
		{Key: "infra/other", Interface: "eth1", Version: 3, Interval: 500 * time.Millisecond,
			Instances: []k8s.Instance{{Name: "node/n9", VRID: 9, Node: "n9"}},
			VIPs:      []VIP{{Addr: a("198.18.3.1"), Service: "x/y"}}},
	}
}

// TestPlanNode renders each node's share of a unicast group with a Local
// Service and an IPv6 address, plus a group the nodes are not in.
func TestPlanNode(t *testing.T) {
	tests := []struct {
		node      string
		wantWarns []string
	}{
		{node: "n1", wantWarns: []string{
			"198.18.2.2 of demo/local-pending (externalTrafficPolicy Local): group infra/workers has no instance for it yet (the controller gives it a VRID); the group's node instances hold it meanwhile",
			"infra/workers/node/n1/v6: node n3 has no IPv6 InternalIP and cannot be a unicast peer",
		}},
		{node: "n2", wantWarns: []string{
			"198.18.2.2 of demo/local-pending (externalTrafficPolicy Local): group infra/workers has no instance for it yet (the controller gives it a VRID); the group's node instances hold it meanwhile",
			"infra/workers/node/n1/v6: node n3 has no IPv6 InternalIP and cannot be a unicast peer",
		}},
		{node: "n3", wantWarns: []string{
			"198.18.2.2 of demo/local-pending (externalTrafficPolicy Local): group infra/workers has no instance for it yet (the controller gives it a VRID); the group's node instances hold it meanwhile",
			"infra/workers/node/n1/v6: unicast needs an IPv6 InternalIP on node n3; it has none, so the instance is not run",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.node, func(t *testing.T) {
			p, warns := PlanNode(tt.node, testGroups())
			if diff := cmp.Diff(tt.wantWarns, warns); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			cfg, err := p.Config()
			if err != nil {
				t.Fatalf("the engine's reader rejects the plan: %v", err)
			}
			// keepalived runs the text, the engine the model: both read the same.
			parsed, err := keepalived.Parse("agent", []byte(p.Render()), nil)
			if err != nil {
				t.Fatalf("the reader rejects the text: %v\n%s", err, p.Render())
			}
			if diff := cmp.Diff(parsed, cfg, cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
				cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }), cmpopts.IgnoreTypes(keepalived.Pos{}),
				// A VIP compares whole (VIP.Equal); its position is ignored here too.
				cmp.Comparer(keepalived.VIP.SameEntry),
				cmpopts.IgnoreFields(keepalived.Config{}, "Warnings", "Files", "Comment")); diff != "" {
				t.Errorf("the engine's model differs from the text's (-text +model):\n%s", diff)
			}
			golden(t, p.Render())
		})
	}
}

// TestPlanNodeShares checks the whole picture over the three nodes: every
// Cluster address is run by every node, at 250 on exactly one; the Local
// address only on nodes with a ready endpoint; the Local address whose
// instance the controller has not made yet (198.18.2.2) as a Cluster one,
// so that a Service turning Local keeps its holder meanwhile; no node runs
// the group it is not in.
func TestPlanNodeShares(t *testing.T) {
	masters := map[netip.Addr][]string{}
	runs := map[netip.Addr][]string{}
	for _, n := range []string{"n1", "n2", "n3", "n9x"} {
		p, _ := PlanNode(n, testGroups())
		for _, in := range p.Instances {
			if in.Group != "infra/workers" {
				t.Errorf("%s runs %s of a group it is not in", n, in.Name)
			}
			for _, v := range in.VIPs {
				runs[v] = append(runs[v], n)
				if in.Priority == 250 {
					masters[v] = append(masters[v], n)
				}
			}
		}
	}
	share := map[string]int{}
	for v, ns := range runs {
		switch v {
		case a("198.18.2.1"):
			if diff := cmp.Diff([]string{"n1", "n3"}, ns); diff != "" {
				t.Errorf("Local address run by (-want +got):\n%s", diff)
			}
			continue
		case a("fd00:1::1"):
			if diff := cmp.Diff([]string{"n1", "n2"}, ns); diff != "" {
				// n3 has no IPv6 InternalIP: in unicast mode it cannot take part.
				t.Errorf("IPv6 address run by (-want +got):\n%s", diff)
			}
		default:
			if diff := cmp.Diff([]string{"n1", "n2", "n3"}, ns); diff != "" {
				t.Errorf("%s run by (-want +got):\n%s", v, diff)
			}
		}
		if len(masters[v]) != 1 && v != a("fd00:1::1") {
			t.Errorf("%s is preferred by %v, want exactly one node", v, masters[v])
		}
		if len(masters[v]) == 1 {
			share[masters[v][0]]++
		}
	}
	for n, c := range share {
		if c < 5 {
			t.Errorf("node %s is preferred for only %d of 30 addresses (shares %v)", n, c, share)
		}
	}
}

// TestPlanNodeNewGroup: a group without Services yet still runs an IPv4
// instance per node instance on every member (its own at 250), so the
// masters are elected before the first address arrives; a non-member
// runs nothing. Adding the first address keeps the instance set.
func TestPlanNodeNewGroup(t *testing.T) {
	g := testGroups()[0]
	g.VIPs = nil
	tests := []struct {
		node string
		want []string // instance name@priority
	}{
		{node: "n1", want: []string{"infra/workers/node/n1/v4@250", "infra/workers/node/n2/v4@*", "infra/workers/node/n3/v4@*"}},
		{node: "n3", want: []string{"infra/workers/node/n1/v4@*", "infra/workers/node/n2/v4@*", "infra/workers/node/n3/v4@250"}},
		{node: "n9", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.node, func(t *testing.T) {
			p, warns := PlanNode(tt.node, []GroupView{g})
			if len(warns) != 0 {
				t.Errorf("warnings: %q", warns)
			}
			var got []string
			for _, in := range p.Instances {
				prio := "*"
				if in.Priority == 250 {
					prio = "250"
				}
				if len(in.VIPs) != 0 {
					t.Errorf("%s holds %v in a group without Services", in.Name, in.VIPs)
				}
				got = append(got, in.Name+"@"+prio)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("instances (-want +got):\n%s", diff)
			}
			cfg, err := p.Config()
			if err != nil {
				t.Fatalf("the engine's reader rejects the plan: %v", err)
			}
			if len(cfg.Instances) != len(tt.want) {
				t.Errorf("the reader sees %d instances, want %d", len(cfg.Instances), len(tt.want))
			}
			if tt.node == "n1" {
				golden(t, p.Render())
			}
			// The first Service: the same instances, one of them now holds it.
			g2 := g
			g2.VIPs = []VIP{{Addr: a("198.18.1.1"), Service: "demo/first"}}
			p2, _ := PlanNode(tt.node, []GroupView{g2})
			var names []string
			for _, in := range p2.Instances {
				names = append(names, in.Name)
			}
			var wantNames []string
			for _, in := range p.Instances {
				wantNames = append(wantNames, in.Name)
			}
			if diff := cmp.Diff(wantNames, names); diff != "" {
				t.Errorf("the first Service changed the instance set (-want +got):\n%s", diff)
			}
			if got := p2.VIPCount(); tt.node != "n9" && got != 1 {
				t.Errorf("the first Service is held by %d instances on %s, want 1", got, tt.node)
			}
		})
	}
}

// TestPlanNodePassword: a group with a VRRP password (a KeepalivedGroup's
// passwordAuth) speaks VRRPv2 with keepalived's auth_type PASS on its
// IPv4 instances; its IPv6 instances speak VRRPv3, which has no
// authentication. The configuration passes the keepalived reader's
// checks.
func TestPlanNodePassword(t *testing.T) {
	g := testGroups()[0]
	g.Version, g.AuthPass = 2, "s3cret"
	p, _ := PlanNode("n1", []GroupView{g})
	cfg, err := p.Config()
	if err != nil {
		t.Fatal(err)
	}
	v4, v6 := 0, 0
	for _, in := range cfg.Instances {
		switch {
		case in.Version == 2 && in.AuthType == "PASS" && in.AuthPass == "s3cret":
			v4++
		case in.Version == 3 && in.AuthType == "" && in.AuthPass == "":
			v6++
		default:
			t.Errorf("instance %s: version %d, auth %q %q", in.Name, in.Version, in.AuthType, in.AuthPass)
		}
	}
	if v4 == 0 || v6 == 0 {
		t.Errorf("%d VRRPv2 instances with the password, %d VRRPv3 without; want some of each", v4, v6)
	}
	if text := p.Render(); !strings.Contains(text, "auth_pass s3cret") {
		t.Errorf("rendered configuration has no auth_pass:\n%s", text)
	}
}

// TestPlanNodePreempt: a group's nonRevertive and preemptDelayMilliseconds
// reach every instance of the node as keepalived's nopreempt and
// preempt_delay, and pass the keepalived.conf reader's rules.
func TestPlanNodePreempt(t *testing.T) {
	tests := []struct {
		name      string
		noPreempt bool
		delay     time.Duration
		want      string // in the rendered text
	}{
		{name: "non-revertive", noPreempt: true, want: "nopreempt"},
		{name: "delay", delay: 5 * time.Second, want: "preempt_delay 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := testGroups()[0]
			g.NoPreempt, g.PreemptDelay = tt.noPreempt, tt.delay
			p, _ := PlanNode("n1", []GroupView{g})
			cfg, err := p.Config()
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Instances) == 0 {
				t.Fatal("no instances")
			}
			for _, in := range cfg.Instances {
				if in.Preempt == tt.noPreempt || in.PreemptDelay != tt.delay {
					t.Errorf("instance %s: preempt %t delay %v, want preempt %t delay %v", in.Name, in.Preempt, in.PreemptDelay, !tt.noPreempt, tt.delay)
				}
			}
			if text := p.Render(); !strings.Contains(text, tt.want) {
				t.Errorf("rendered configuration has no %q:\n%s", tt.want, text)
			}
		})
	}
}
