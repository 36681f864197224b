package demo

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/node"
)

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestObserveNode(t *testing.T) {
	s := node.Status{Node: "master-1", VRRP: []engine.InstanceStatus{
		{Name: "demo_API", State: "MASTER", Effective: 45, Contributions: []engine.Contribution{
			{Source: "script chk_ocp_lb", Weight: 20, OK: false, Reason: "connection refused"},
			{Source: "script chk_ocp_both", Weight: 5, OK: true, Applied: 5},
			{Source: "interface eth0", OK: true},
		}, LastTransition: &engine.Transition{Reason: "preempting master 198.18.0.14: its priority 40 is below ours 45"}},
		{Name: "demo_INGRESS", State: "BACKUP", Effective: 20, Contributions: []engine.Contribution{
			{Source: "script chk_ingress", Weight: 50, OK: false},
			{Source: "interface eth0", OK: false, Fault: true},
		}},
		{Name: "other_API", State: "MASTER"},
	}}
	want := NodeObs{Name: "master-1", Addr: addr("198.18.0.13"), Inst: map[string]InstObs{
		KindAPI: {State: "MASTER", Priority: 45, Down: []string{"LB down"},
			Reason: "preempting master 198.18.0.14: its priority 40 is below ours 45"},
		KindIngress: {State: "BACKUP", Priority: 20, Down: []string{"router down", "interface eth0 down"}},
	}}
	if d := cmp.Diff(want, ObserveNode("master-1", addr("198.18.0.13"), s), cmpopts.EquateComparable(netip.Addr{})); d != "" {
		t.Errorf("ObserveNode (-want +got):\n%s", d)
	}
}

func observation() Observation {
	return Observation{Nodes: []NodeObs{
		{Name: "bootstrap", Addr: addr("198.18.0.11"), Gone: "shut down"},
		{Name: "master-0", Addr: addr("198.18.0.12"), Inst: map[string]InstObs{
			KindAPI:     {State: "BACKUP", Priority: 45, Down: []string{"LB down"}},
			KindDNS:     {State: "MASTER", Priority: 60},
			KindIngress: {State: "BACKUP", Priority: 20, Down: []string{"router down"}},
		}},
		{Name: "master-1", Addr: addr("198.18.0.13"), Inst: map[string]InstObs{
			KindAPI:     {State: "MASTER", Priority: 65, Reason: "preempting master 198.18.0.12: its priority 45 is below ours 65"},
			KindDNS:     {State: "FAULT", Fault: "interface eth0 is down"},
			KindIngress: {State: "INIT"},
		}},
		{Name: "worker-0", Addr: addr("198.18.0.14"), Inst: map[string]InstObs{
			KindIngress: {State: "MASTER", Priority: 70},
		}},
	}}
}

func TestTable(t *testing.T) {
	golden(t, observation().Table()+"\n")
}

func TestMoves(t *testing.T) {
	before := observation()
	before.Nodes[1].Inst[KindAPI] = InstObs{State: "MASTER", Priority: 65}
	before.Nodes[2].Inst[KindAPI] = InstObs{State: "BACKUP", Priority: 65}
	split := observation()
	split.Nodes[1].Inst[KindDNS] = InstObs{State: "MASTER"}
	split.Nodes[2].Inst[KindDNS] = InstObs{State: "MASTER"}
	leftBehind := observation()
	leftBehind.Nodes[1] = NodeObs{Name: "master-0", Gone: "agent not answering", Left: []string{KindDNS}}
	stray := observation()
	stray.Nodes[1].Stray = []string{KindAPI}
	tests := []struct {
		name      string
		prev, cur Observation
		want      []string
	}{
		{name: "nothing moved", prev: observation(), cur: observation()},
		{name: "from nobody", prev: Observation{}, cur: observation(), want: []string{
			"API VIP 198.18.0.5: nobody -> master-1 (preempting master master-0: its priority 45 is below ours 65)",
			"DNS VIP 198.18.0.6: nobody -> master-0",
			"Ingress VIP 198.18.0.7: nobody -> worker-0",
		}},
		{name: "the API VIP moves", prev: before, cur: observation(), want: []string{
			"API VIP 198.18.0.5: master-0 -> master-1 (preempting master master-0: its priority 45 is below ours 65)",
		}},
		{name: "two claim the DNS VIP", prev: observation(), cur: split, want: []string{
			"DNS VIP 198.18.0.6: master-0 -> master-0+master-1 (SEVERAL CLAIM IT)",
		}},
		// master-0's agent was killed with nothing left to remove its
		// addresses: the view must not say nobody holds them.
		{name: "an agent gone, its addresses left", prev: observation(), cur: leftBehind, want: []string{
			"DNS VIP 198.18.0.6: master-0 -> master-0 (its agent is gone; the address is still on its interface)",
		}},
		// master-0 reports BACKUP for the API VIP but its interface has
		// the address: the view must show both holders, not master-1 alone
		// (the demo once showed one holder while three had it).
		{name: "a backup with the address", prev: observation(), cur: stray, want: []string{
			"API VIP 198.18.0.5: master-1 -> master-0 (not MASTER, yet the address is on its interface)+master-1 (SEVERAL CLAIM IT)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, Moves(tt.prev, tt.cur)); d != "" {
				t.Errorf("Moves (-want +got):\n%s", d)
			}
		})
	}
}
