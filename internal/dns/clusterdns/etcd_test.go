package clusterdns

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/discovery"
)

func TestEtcdNumbers(t *testing.T) {
	for _, tc := range []struct {
		names []string // in name order, as buildIndex passes them
		want  []int
	}{
		{[]string{"master-0", "master-1", "master-2"}, []int{0, 1, 2}},
		{[]string{"master-1", "master-2"}, []int{1, 2}},                 // master-0 left: the others keep theirs
		{[]string{"master-0", "master-2"}, []int{0, 2}},                 // master-1 left
		{[]string{"ocp-x7-master-10", "ocp-x7-master-3"}, []int{10, 3}}, // cluster-prefixed names
		{[]string{"alpha", "beta", "gamma"}, []int{0, 1, 2}},            // no numbers: name order
		{[]string{"alpha", "master-0"}, []int{1, 0}},                    // a named number first, then the lowest left
		{[]string{"a-master-0", "b-master-0"}, []int{0, 1}},             // a number taken twice: the second gets the lowest left
		{[]string{"master-00", "master-1"}, []int{0, 1}},                // a leading zero is not a number; 0 is left
		{[]string{"master-99999", "master-1"}, []int{0, 1}},             // beyond the bound: the lowest left
		{nil, []int{}},
	} {
		if got := etcdNumbers(tc.names); !slices.Equal(got, tc.want) {
			t.Errorf("etcdNumbers(%q) = %v, want %v", tc.names, got, tc.want)
		}
	}
}

// TestEtcdNameStaysWhenAMasterLeaves: master-0 leaves a cluster of three.
// master-1 and master-2 keep etcd-1 and etcd-2 (their certificates in
// OpenShift 4.1 to 4.3 name them so), and etcd-0 is gone. Before, the
// masters were numbered in name order: etcd-0 answered master-1's address
// and etcd-1 master-2's.
func TestEtcdNameStaysWhenAMasterLeaves(t *testing.T) {
	cfg := testConfig()
	all := cfg.Nodes
	var without0 []discovery.Node
	for _, n := range all {
		if n.Name != "master-0" {
			without0 = append(without0, n)
		}
	}
	for _, step := range []struct {
		name  string
		nodes []discovery.Node
		want  map[string]string // etcd label -> the address it must answer ("" = absent)
		srv   []string
	}{
		{"three masters", all, map[string]string{"etcd-0": "198.18.0.11", "etcd-1": "198.18.0.12", "etcd-2": "fd00:bb::13"},
			[]string{"etcd-0", "etcd-1", "etcd-2"}},
		{"master-0 left", without0, map[string]string{"etcd-0": "", "etcd-1": "198.18.0.12", "etcd-2": "fd00:bb::13"},
			[]string{"etcd-1", "etcd-2"}},
	} {
		idx, skipped := buildIndex(&cfg, 1, step.nodes)
		if len(skipped) > 0 {
			t.Fatalf("%s: skipped %v", step.name, skipped)
		}
		for label, addr := range step.want {
			e := idx.names[label]
			switch {
			case addr == "" && e != nil:
				t.Errorf("%s: %s exists (%v %v), want it gone", step.name, label, e.v4, e.v6)
			case addr != "" && e == nil:
				t.Errorf("%s: %s missing, want %s", step.name, label, addr)
			case addr != "" && !slices.ContainsFunc(append(e.v4, e.v6...), func(a netip.Addr) bool { return a.String() == addr }):
				t.Errorf("%s: %s answers %v %v, want %s", step.name, label, e.v4, e.v6, addr)
			}
		}
		var targets []string
		for _, tg := range idx.names[srvName].srv {
			targets = append(targets, strings.TrimSuffix(tg.name, "."+cfg.Zone))
		}
		if !slices.Equal(targets, step.srv) {
			t.Errorf("%s: SRV targets %q, want %q", step.name, targets, step.srv)
		}
	}
}

// TestNotReadyMasterLeavesSRV: a master a source reports not ready (its
// Node's Ready condition) keeps its name and PTR but leaves etcd-N and the
// SRV record, so that the record lists the masters currently running; in
// the mDNS form too.
func TestNotReadyMasterLeavesSRV(t *testing.T) {
	for _, nodesOnly := range []bool{false, true} {
		cfg := testConfig()
		cfg.NodesOnly = nodesOnly
		for i := range cfg.Nodes {
			if cfg.Nodes[i].Name == "master-1" {
				cfg.Nodes[i].NotReady = true
			}
		}
		idx, _ := buildIndex(&cfg, 1, cfg.Nodes)
		var targets []string
		if e := idx.names[srvName]; e != nil {
			for _, tg := range e.srv {
				targets = append(targets, tg.name)
			}
		}
		want := []string{"etcd-0." + zone, "etcd-2." + zone}
		if nodesOnly {
			want = []string{"master-0." + zone, "master-2." + zone}
		}
		if !slices.Equal(targets, want) {
			t.Errorf("NodesOnly=%v: SRV targets %v, want %v", nodesOnly, targets, want)
		}
		if e := idx.names["master-1"]; e == nil || len(e.v4) != 1 {
			t.Errorf("NodesOnly=%v: master-1 lost its name", nodesOnly)
		}
		if !nodesOnly {
			if idx.names["etcd-1"] != nil {
				t.Errorf("etcd-1 still answered for a master that is not ready")
			}
			if !slices.Contains(idx.ptr["12.0.18.198.in-addr.arpa."], "master-1."+zone) {
				t.Errorf("PTR of master-1's address: %v", idx.ptr["12.0.18.198.in-addr.arpa."])
			}
		}
	}
}
