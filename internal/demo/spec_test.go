package demo

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/cluster"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, got string) {
	t.Helper()
	path := filepath.Join("testdata", t.Name()+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, d)
	}
}

func TestClusterYAML(t *testing.T) {
	golden(t, Spec{Bootstrap: true, Masters: 3, Workers: 2}.ClusterYAML())
}

// TestDemoPriorities checks that the cluster file gives the story the
// priorities it tells: the bootstrap outranks a fully healthy master on
// the API and DNS VIPs, a master's LB is worth more than its API alone,
// and a worker's router decides the Ingress VIP.
func TestDemoPriorities(t *testing.T) {
	spec := Spec{Bootstrap: true, Masters: 3, Workers: 2}
	c, err := cluster.Parse("demo", []byte(spec.ClusterYAML()))
	if err != nil {
		t.Fatal(err)
	}
	type inst struct {
		Name     string
		Priority uint8
		Checks   []string
		Peers    int
	}
	tests := []struct {
		node string
		want []inst
	}{
		{node: "bootstrap", want: []inst{
			{Name: "demo_API", Priority: 70, Peers: 3},
			{Name: "demo_DNS", Priority: 70, Peers: 3},
		}},
		{node: "master-1", want: []inst{
			{Name: "demo_API", Priority: 40, Checks: []string{"chk_ocp_lb", "chk_ocp_both"}, Peers: 3},
			{Name: "demo_INGRESS", Priority: 20, Checks: []string{"chk_ingress"}, Peers: 4},
			{Name: "demo_DNS", Priority: 40, Checks: []string{"chk_dns"}, Peers: 3},
		}},
		{node: "worker-0", want: []inst{
			{Name: "demo_INGRESS", Priority: 20, Checks: []string{"chk_ingress"}, Peers: 4},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.node, func(t *testing.T) {
			p, err := c.PlanFor(tt.node)
			if err != nil {
				t.Fatal(err)
			}
			var got []inst
			for _, in := range p.Instances {
				got = append(got, inst{Name: in.Name, Priority: in.Priority, Checks: in.Checks, Peers: len(in.Peers)})
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("instances (-want +got):\n%s", d)
			}
		})
	}
	if full := cluster.PrioMasterAPI + cluster.WeightLB + cluster.WeightLBOrAPI; full >= cluster.PrioBootstrap {
		t.Errorf("a healthy master (%d) outranks the bootstrap (%d): the story's first step cannot hold", full, cluster.PrioBootstrap)
	}
}

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		ok   bool
	}{
		{name: "demo", spec: Spec{Bootstrap: true, Masters: 3, Workers: 2}, ok: true},
		{name: "masters only", spec: Spec{Masters: 1}, ok: true},
		{name: "no master", spec: Spec{Bootstrap: true, Workers: 2}},
		{name: "negative workers", spec: Spec{Masters: 1, Workers: -1}},
		{name: "too many", spec: Spec{Masters: 10, Workers: 11}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.spec.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate() = %v, want ok %v", err, tt.ok)
			}
		})
	}
}
