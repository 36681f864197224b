package kadump

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/keepalived"
)

// TestSourceDump: the engine's status, configuration and counters become
// keepalived's instance, VIP and stats fields.
func TestSourceDump(t *testing.T) {
	reg := prometheus.NewRegistry()
	transitions := prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricTransitions}, []string{"instance", "to"})
	dropped := prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricDropped}, []string{"instance", "reason"})
	reg.MustRegister(transitions, dropped)
	transitions.WithLabelValues("VI_a", "MASTER").Add(3)
	transitions.WithLabelValues("VI_a", "BACKUP").Add(4)
	transitions.WithLabelValues("VI_b", "MASTER").Add(2)
	dropped.WithLabelValues("VI_a", "conflict_auth").Add(5)
	dropped.WithLabelValues("VI_a", "conflict_interval").Add(6)
	dropped.WithLabelValues("VI_a", "conflict_addresses").Add(7)
	dropped.WithLabelValues("", "bad_ttl").Add(8) // no instance: not counted anywhere

	cfg := &keepalived.Config{
		Global:  keepalived.GlobalDefs{RouterID: "r1"},
		Scripts: map[string]*keepalived.Script{"chk": {Name: "chk", Command: "/bin/chk", Interval: 2 * time.Second, Timeout: 2 * time.Second, Weight: 10, Rise: 2, Fall: 3}},
		Instances: []*keepalived.Instance{{
			Name: "VI_a", AdvertInterval: 3 * time.Second, Accept: true, Preempt: false, AuthType: "PASS",
			GARPMasterDelay: 2 * time.Second, GARPMasterRepeat: 3,
			VIPs:         []keepalived.VIP{{Prefix: netip.MustParsePrefix("198.18.1.1/24")}, keepalived.MakeVIP(netip.MustParsePrefix("198.18.1.2/32"), keepalived.VIPOptions{Dev: "eth9"})},
			ExcludedVIPs: []keepalived.VIP{keepalived.MakeVIP(netip.MustParsePrefix("198.18.2.1/24"), keepalived.VIPOptions{Scope: "link"})},
			TrackScripts: []keepalived.TrackScript{{Name: "chk"}},
		}},
	}
	at := time.Unix(1700000000, 0)
	status := []engine.InstanceStatus{
		{
			Name: "VI_a", State: "BACKUP", VRID: 9, Version: 2, Interface: "eth1", Source: "198.18.1.5",
			VIPs: []string{"198.18.1.1/24", "198.18.1.2/32", "198.18.2.1/24"}, MasterPriority: 200, BasePriority: 100, Effective: 110,
			Contributions:  []engine.Contribution{{Source: "script chk", Weight: 10, OK: true, Applied: 10}, {Source: "interface eth1", OK: true}},
			LastTransition: &engine.Transition{From: "MASTER", To: "BACKUP", At: at},
			AdvertsSent:    11, AdvertsRecv: 12,
		},
		{Name: "VI_b", State: "MASTER", VRID: 10, Version: 3, Interface: "eth2", VIPs: []string{"fd00:1::1/64"}, BasePriority: 50, Effective: 50},
		{Name: "VI_new", State: "INIT", VRID: 11, Version: 2, Interface: "eth3"},
	}
	got, err := Source{Status: func() []engine.InstanceStatus { return status }, Config: func() *keepalived.Config { return cfg }, Gatherer: reg}.Dump()
	if err != nil {
		t.Fatal(err)
	}
	want := Dump{
		RouterID: "r1",
		Instances: []Instance{
			{
				Name: "VI_a", State: "BACKUP", Version: 2, Interface: "eth1", Source: netip.MustParseAddr("198.18.1.5"),
				LastTransition: at, VRID: 9, BasePriority: 100, Effective: 110, MasterPriority: 200,
				AdvertInterval: 3 * time.Second, Accept: true, AuthPass: true,
				GARPDelay: 2 * time.Second, GARPRepeat: 3, GARPRefreshRep: 1,
				VIPs: []VIP{
					{Prefix: netip.MustParsePrefix("198.18.1.1/24"), Dev: "eth1"},
					{Prefix: netip.MustParsePrefix("198.18.1.2/32"), Dev: "eth9"},
				},
				ExcludedVIPs: []VIP{{Prefix: netip.MustParsePrefix("198.18.2.1/24"), Dev: "eth1", Scope: "link"}},
				TrackScripts: []TrackRef{{Name: "chk", Weight: 10}},
				Stats: Stats{AdvertRcvd: 12, AdvertSent: 11, BecomeMaster: 3, ReleaseMaster: 3,
					AuthFailure: 5, AdvertIntervalErr: 6, AddrListErr: 7},
			},
			{
				// Not in the configuration: keepalived's defaults.
				Name: "VI_b", State: "MASTER", Version: 3, Interface: "eth2", VRID: 10, BasePriority: 50, Effective: 50,
				AdvertInterval: time.Second, Accept: true, Preempt: true, GARPDelay: 5 * time.Second, GARPRepeat: 5, GARPRefreshRep: 1,
				VIPs:  []VIP{{Prefix: netip.MustParsePrefix("fd00:1::1/64"), Dev: "eth2", Set: true}},
				Stats: Stats{BecomeMaster: 2, ReleaseMaster: 1},
			},
			{
				Name: "VI_new", State: "INIT", Version: 2, Interface: "eth3", VRID: 11,
				AdvertInterval: time.Second, Accept: true, Preempt: true, GARPDelay: 5 * time.Second, GARPRepeat: 5, GARPRefreshRep: 1,
			},
		},
		Scripts: []Script{{Name: "chk", Command: "/bin/chk", Interval: 2 * time.Second, Timeout: 2 * time.Second, Weight: 10, Rise: 2, Fall: 3, Good: true,
			Tracking: []TrackRef{{Name: "VI_a", Weight: 10}}}},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b }), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("Dump (-want +got):\n%s", diff)
	}
}
