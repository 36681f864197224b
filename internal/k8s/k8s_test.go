package k8s

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGroupOf(t *testing.T) {
	tests := []struct {
		name     string
		ann      map[string]string
		want     GroupRef
		wantFrom string
		wantErr  string
	}{
		{name: "none", ann: map[string]string{"other": "x"}},
		{name: "ours, qualified", ann: map[string]string{GroupAnnotation: "infra/workers"},
			want: GroupRef{"infra", "workers"}, wantFrom: GroupAnnotation},
		{name: "ours, bare name means the Service's namespace", ann: map[string]string{GroupAnnotation: "workers"},
			want: GroupRef{"demo", "workers"}, wantFrom: GroupAnnotation},
		{name: "keepalived-operator's, as in the seed", ann: map[string]string{KeepalivedGroupAnnotation: "keepalived-operator/keepalivedgroup-workers"},
			want: GroupRef{"keepalived-operator", "keepalivedgroup-workers"}, wantFrom: KeepalivedGroupAnnotation},
		{name: "both agreeing", ann: map[string]string{GroupAnnotation: "infra/workers", KeepalivedGroupAnnotation: "infra/workers"},
			want: GroupRef{"infra", "workers"}, wantFrom: GroupAnnotation},
		{name: "both disagreeing", ann: map[string]string{GroupAnnotation: "infra/workers", KeepalivedGroupAnnotation: "infra/edge"},
			wantFrom: KeepalivedGroupAnnotation,
			wantErr:  "annotation vipstack.io/group names group infra/workers but keepalived-operator.redhat-cop.io/keepalivedgroup names infra/edge"},
		{name: "bad namespace", ann: map[string]string{GroupAnnotation: "Infra/workers"}, wantFrom: GroupAnnotation,
			wantErr: `annotation vipstack.io/group: "Infra/workers": namespace "Infra" is not a DNS label`},
		{name: "empty name", ann: map[string]string{KeepalivedGroupAnnotation: "infra/"}, wantFrom: KeepalivedGroupAnnotation,
			wantErr: `name "" is not a DNS subdomain`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, from, err := GroupOf("demo", tt.ann)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("group (-want +got):\n%s", diff)
			}
			if from != tt.wantFrom {
				t.Errorf("from = %q, want %q", from, tt.wantFrom)
			}
		})
	}
}

func TestRequestedIPs(t *testing.T) {
	tests := []struct {
		name    string
		lbIP    string
		ann     map[string]string
		want    []string
		wantErr string
	}{
		{name: "none"},
		{name: "spec only", lbIP: "198.18.0.5", want: []string{"198.18.0.5"}},
		{name: "dual-stack annotation", ann: map[string]string{IPsAnnotation: "198.18.0.5, fd00::5"}, want: []string{"198.18.0.5", "fd00::5"}},
		{name: "same in both", lbIP: "198.18.0.5", ann: map[string]string{IPsAnnotation: "198.18.0.5"}, want: []string{"198.18.0.5"}},
		{name: "two of a family", lbIP: "198.18.0.5", ann: map[string]string{IPsAnnotation: "198.18.0.6"},
			wantErr: "annotation vipstack.io/loadBalancerIPs: 198.18.0.5 and 198.18.0.6 are both IPv4"},
		{name: "garbage", lbIP: "not-an-ip", wantErr: `spec.loadBalancerIP: "not-an-ip" is not an IPv4 or IPv6 address`},
		{name: "MetalLB's annotation", ann: map[string]string{MetalLBIPsAnnotation: "198.18.0.5,fd00::5"}, want: []string{"198.18.0.5", "fd00::5"}},
		{name: "MetalLB's legacy annotation", ann: map[string]string{LegacyMetalLBIPsAnnotation: "198.18.0.7"}, want: []string{"198.18.0.7"}},
		{name: "kube-vip's annotation and spec agree", lbIP: "198.18.0.8", ann: map[string]string{KubeVIPIPsAnnotation: "198.18.0.8"}, want: []string{"198.18.0.8"}},
		{name: "MetalLB's and kube-vip's disagree", ann: map[string]string{MetalLBIPsAnnotation: "198.18.0.5", KubeVIPIPsAnnotation: "198.18.0.6"},
			wantErr: "annotation kube-vip.io/loadbalancerIPs: 198.18.0.5 and 198.18.0.6 are both IPv4"},
		{name: "garbage in MetalLB's", ann: map[string]string{MetalLBIPsAnnotation: "x"}, wantErr: `annotation metallb.io/loadBalancerIPs: "x" is not`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RequestedIPs(tt.lbIP, tt.ann)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, a := range got {
				s = append(s, a.String())
			}
			if diff := cmp.Diff(tt.want, s); diff != "" {
				t.Errorf("addresses (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServiceGroup: the annotation first, else the controller's True
// condition (Services served from MetalLB's or kube-vip's pools).
func TestServiceGroup(t *testing.T) {
	const typ = "vipstack.io/ServedByGroup"
	cond := func(status metav1.ConditionStatus, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: typ, Status: status, Message: msg}}
	}
	for _, tc := range []struct {
		name  string
		ann   map[string]string
		conds []metav1.Condition
		want  string
		err   bool
	}{
		{name: "neither", want: "/"},
		{name: "annotation wins", ann: map[string]string{GroupAnnotation: "infra/a"}, conds: cond(metav1.ConditionTrue, "metallb-system/metallb-x"), want: "infra/a"},
		{name: "condition", conds: cond(metav1.ConditionTrue, "metallb-system/metallb-x"), want: "metallb-system/metallb-x"},
		{name: "False condition", conds: cond(metav1.ConditionFalse, "no advertisement"), want: "/"},
		{name: "bad message", conds: cond(metav1.ConditionTrue, "Not A Group"), err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ServiceGroup("demo", tc.ann, tc.conds, typ)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want error %v", err, tc.err)
			}
			if !tc.err && g.String() != tc.want {
				t.Errorf("group %s, want %s", g, tc.want)
			}
		})
	}
}

// TestPlanInstances runs a sequence of group changes and checks the VRIDs
// after each: kept while still wanted, the lowest free one for newcomers,
// never one held by another group or excluded.
func TestPlanInstances(t *testing.T) {
	tests := []struct {
		name     string
		nodes    []string
		local    []string
		excluded []int
		taken    map[int]string
		want     map[string]int // instance name -> VRID
		wantErr  string
	}{
		{name: "three nodes", nodes: []string{"n2", "n1", "n3"},
			want: map[string]int{"node/n1": 1, "node/n2": 2, "node/n3": 3}},
		{name: "another group takes 4 and 5, 6 is excluded; a Local Service arrives", nodes: []string{"n1", "n2", "n3"},
			local: []string{"demo/web"}, excluded: []int{6}, taken: map[int]string{4: "infra/edge", 5: "infra/edge"},
			want: map[string]int{"node/n1": 1, "node/n2": 2, "node/n3": 3, "service/demo/web": 7}},
		{name: "n2 leaves: the others keep theirs", nodes: []string{"n1", "n3"}, local: []string{"demo/web"},
			excluded: []int{6}, taken: map[int]string{4: "infra/edge", 5: "infra/edge"},
			want: map[string]int{"node/n1": 1, "node/n3": 3, "service/demo/web": 7}},
		{name: "n4 joins: it gets the freed 2", nodes: []string{"n1", "n3", "n4"}, local: []string{"demo/web"},
			excluded: []int{6}, taken: map[int]string{4: "infra/edge", 5: "infra/edge"},
			want: map[string]int{"node/n1": 1, "node/n3": 3, "node/n4": 2, "service/demo/web": 7}},
		{name: "VRID 3 becomes excluded: n3 moves to the lowest free", nodes: []string{"n1", "n3", "n4"}, local: []string{"demo/web"},
			excluded: []int{3, 6}, taken: map[int]string{4: "infra/edge", 5: "infra/edge"},
			want: map[string]int{"node/n1": 1, "node/n3": 8, "node/n4": 2, "service/demo/web": 7}},
		{name: "exhausted: what fits is kept, the rest is named", nodes: []string{"n1", "n3", "n4", "n5"}, local: []string{"demo/web"},
			excluded: []int{3, 6}, taken: takenExcept(1, 2, 7, 8),
			want:    map[string]int{"node/n1": 1, "node/n3": 8, "node/n4": 2, "service/demo/web": 7},
			wantErr: "group infra/workers needs 5 VRIDs but only 4 are free (249 held by other groups on its link, 2 excluded); no VRID for node/n5"},
	}
	var cur []Instance
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PlanInstances(VRIDPlan{Group: "infra/workers", Nodes: tt.nodes, Local: tt.local, Current: cur,
				Excluded: tt.excluded, Taken: tt.taken})
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v\nwant    %s", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			m := map[string]int{}
			for _, in := range got {
				m[in.Name] = in.VRID
				if strings.HasPrefix(in.Name, "node/") && in.Node != strings.TrimPrefix(in.Name, "node/") {
					t.Errorf("%s: Node = %q", in.Name, in.Node)
				}
			}
			if diff := cmp.Diff(tt.want, m); diff != "" {
				t.Errorf("VRIDs (-want +got):\n%s", diff)
			}
			cur = got
		})
	}
}

func takenExcept(free ...int) map[int]string {
	m := map[int]string{}
	for v := 1; v <= 255; v++ {
		m[v] = "other/g"
	}
	for _, v := range free {
		delete(m, v)
	}
	for _, v := range []int{3, 6} { // excluded, counted there
		delete(m, v)
	}
	return m
}

// TestPlaceSpreadsAndIsStable places 1,000 addresses over 3 node
// instances, then adds a fourth: the shares stay within 15% of even, and
// only addresses the new instance wins move.
func TestPlaceSpreadsAndIsStable(t *testing.T) {
	inst := func(nodes ...string) []Instance {
		var out []Instance
		for i, n := range nodes {
			out = append(out, Instance{Name: NodeInstance(n), VRID: i + 1, Node: n})
		}
		return append(out, Instance{Name: ServiceInstance("demo/local"), VRID: 99, Service: "demo/local"})
	}
	addrs := make([]netip.Addr, 1000)
	base := netip.MustParseAddr("198.18.0.0")
	for i := range addrs {
		addrs[i] = base
		base = base.Next()
	}
	tests := []struct {
		name      string
		instances []Instance
	}{
		{name: "three nodes", instances: inst("n1", "n2", "n3")},
		{name: "a fourth node", instances: inst("n1", "n2", "n3", "n4")},
		{name: "n2 leaves", instances: inst("n1", "n3", "n4")},
	}
	var prev map[netip.Addr]string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[netip.Addr]string{}
			share := map[string]int{}
			for _, a := range addrs {
				in, ok := Place(a, tt.instances)
				if !ok {
					t.Fatal("no instance")
				}
				if in.Service != "" {
					t.Fatalf("%s placed on the Local instance %s", a, in.Name)
				}
				got[a] = in.Name
				share[in.Name]++
			}
			n := len(share)
			for name, c := range share {
				if even := len(addrs) / n; c < even*85/100 || c > even*115/100 {
					t.Errorf("%s holds %d addresses, want within 15%% of %d (shares %v)", name, c, even, share)
				}
			}
			for a, was := range prev {
				now := got[a]
				if now == was {
					continue
				}
				// A move is allowed only to a new instance or away from a gone one.
				if _, existed := share[was]; existed && prevHas(prev, now) {
					t.Fatalf("%s moved from %s to %s, both present before and after", a, was, now)
				}
			}
			prev = got
		})
	}
}

func prevHas(m map[netip.Addr]string, name string) bool {
	for _, v := range m {
		if v == name {
			return true
		}
	}
	return false
}

func TestPriority(t *testing.T) {
	in := Instance{Name: NodeInstance("n1"), Node: "n1"}
	if got := Priority(in, "n1"); got != 250 {
		t.Errorf("own node priority = %d, want 250", got)
	}
	seen := map[uint8]int{}
	for i := range 50 {
		p := Priority(in, fmt.Sprintf("node-%d", i))
		if p < 1 || p > 240 {
			t.Fatalf("priority %d out of 1..240", p)
		}
		seen[p]++
		if again := Priority(in, fmt.Sprintf("node-%d", i)); again != p {
			t.Fatalf("priority not deterministic: %d then %d", p, again)
		}
	}
	if len(seen) < 40 {
		t.Errorf("50 nodes got only %d distinct priorities; want a spread", len(seen))
	}
	local := Instance{Name: ServiceInstance("demo/web"), Service: "demo/web"}
	if got := Priority(local, "n1"); got == 250 {
		t.Errorf("a Local instance has no preferred node, got 250")
	}
}
