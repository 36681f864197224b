package node

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/lb"
)

func TestWriteTableExplainsPriorities(t *testing.T) {
	s := Status{
		Node: "master-0", Role: "master", Interface: "eth0",
		VRRP: []engine.InstanceStatus{{
			Name: "managed_API", State: "BACKUP", VRID: 124, VIPs: []string{"198.18.0.5/32"},
			Master: "198.18.0.12", MasterPriority: 65, BasePriority: 40, Effective: 45,
			Contributions: []engine.Contribution{
				{Source: "script chk_ocp_lb", Weight: 20, OK: false, Applied: 0},
				{Source: "script chk_ocp_both", Weight: 5, OK: true, Applied: 5},
				{Source: "interface eth0", OK: true},
			},
			LastTransition: &engine.Transition{From: "MASTER", To: "BACKUP", Reason: "advertisement from 198.18.0.12 with higher priority 65, ours 45"},
		}},
		LB:  &lb.Snapshot{Healthy: false, Backends: []lb.BackendStats{{Name: "masters", Servers: []lb.ServerStats{{Name: "master-1", Addr: "198.18.0.12:6443", Status: "DOWN", CheckStatus: "L4CON"}}}}},
		DNS: &DNSStatus{Zone: "managed.example.com", Nodes: 6, Listening: []string{"[::]:53"}},
	}
	var b bytes.Buffer
	if err := WriteTable(&b, s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"node master-0 (master) on eth0",
		"managed_API", "BACKUP", "198.18.0.12 (prio 65)",
		"40 +0(chk_ocp_lb failing) +5(chk_ocp_both ok) = 45",
		"advertisement from 198.18.0.12 with higher priority 65, ours 45",
		"load balancer: UNHEALTHY (no backend up)",
		"masters  master-1  198.18.0.12:6443  DOWN",
		"dns: zone managed.example.com, 6 nodes",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
