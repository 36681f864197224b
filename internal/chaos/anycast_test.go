package chaos

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// anyConfig: nodes a, b, c announce both VIPs by BGP; stale bound 300 +
// 100 = 400 ms (2.1 s within 500 ms of a route's return), rejoin 1 s,
// supervisor bound 250 ms, router bound 1 s.
func anyConfig() Config {
	return Config{
		Nodes:   []string{"a", "b", "c"},
		VIPs:    []netip.Addr{netip.MustParseAddr("198.19.0.5"), netip.MustParseAddr("198.19.0.7")},
		Allowed: [][]int{{0, 1, 2}, {0, 1, 2}},
		Advert:  100 * time.Millisecond, Margin: 100 * time.Millisecond, PartitionLoss: 20,
		SupervisorBound: 250 * time.Millisecond, StartSweep: time.Second,
		Anycast: true, Detect: 300 * time.Millisecond, Rejoin: time.Second, Warmup: 500 * time.Millisecond, Hold: 2 * time.Second,
		RouterBound: time.Second,
	}
}

func TestCheckAnycast(t *testing.T) {
	cfg := anyConfig()
	api, ing := cfg.VIPs[0].String(), cfg.VIPs[1].String()
	const all = "01>01 01>01 01>01"
	tests := []struct {
		name    string
		windows []Window
		phases  []phase
		want    []string
		// Optional figures: the withdrawals (Recoveries), the rejoins and
		// the router's returns.
		withdrawals, rejoins, returns []time.Duration
	}{
		{
			name:   "steady: every node holds and is routed both VIPs",
			phases: []phase{{time.Second, all}},
		},
		{
			name:    "a cut node's route goes within the bound and comes back",
			windows: []Window{win(Cut, 1, 200*ms, 1500*ms, 0)},
			phases:  []phase{{500 * ms, all}, {1500 * ms, "01>01 01 01>01"}, {500 * ms, all}},
			// Withdrawn at the first sample without the route (500 ms),
			// routed again 500 ms after the cut ended.
			withdrawals: []time.Duration{300 * ms}, rejoins: []time.Duration{500 * ms},
		},
		{
			name:    "the router keeps routing to a cut node past the bound",
			windows: []Window{win(Cut, 1, 200*ms, 1500*ms, 0)},
			phases:  []phase{{800 * ms, all}, {1000 * ms, "01>01 01 01>01"}},
			want:    []string{"stale-route +610ms " + api + " b", "stale-route +610ms " + ing + " b"},
			// Withdrawn 600 ms after the cut: too late, but timed.
			withdrawals: []time.Duration{600 * ms},
		},
		{
			name:        "a slow cut command: the bound counts from its return",
			windows:     []Window{slowNet(win(Cut, 1, 200*ms, 1500*ms, 0), 300*ms)},
			phases:      []phase{{800 * ms, all}, {1000 * ms, "01>01 01 01>01"}},
			withdrawals: []time.Duration{300 * ms},
		},
		{
			name:        "a killed agent still routed: stale from its kill",
			windows:     []Window{win(KillAgent, 2, 200*ms, 1200*ms, 0)},
			phases:      []phase{{200 * ms, all}, {600 * ms, "01>01 01>01 01!>01"}, {400 * ms, "01>01 01>01 01!"}, {500 * ms, "01>01 01>01 01"}},
			want:        []string{"stale-route +610ms " + api + " c", "stale-route +610ms " + ing + " c"},
			withdrawals: []time.Duration{600 * ms},
		},
		{
			name:   "a VIP off a node's loopback while still routed there",
			phases: []phase{{200 * ms, all}, {600 * ms, "01>01 1>01 01>01"}, {200 * ms, "01>01 1>1 01>01"}},
			want:   []string{"stale-route +610ms " + api + " b"},
		},
		{
			name:    "two nodes cut and the third, eligible, not routed",
			windows: []Window{win(Cut, 1, 200*ms, 3000*ms, 0), win(Cut, 2, 200*ms, 3000*ms, 0)},
			phases:  []phase{{200 * ms, all}, {800 * ms, "01 01 01"}, {200 * ms, "01>01 01 01"}},
			want:    []string{"no-eligible-route +610ms " + api + " ", "no-eligible-route +610ms " + ing + " "},
		},
		{
			name: "a node back less than Rejoin ago is not eligible yet",
			windows: []Window{win(KillAgent, 1, 100*ms, 300*ms, 0),
				win(Cut, 0, 800*ms, 3000*ms, 0), win(Cut, 2, 800*ms, 3000*ms, 0)},
			// b runs again from 400 ms; a and c are cut at 800 ms; b is
			// routed at 1300 ms, within its rejoin (1.4 s).
			phases:  []phase{{100 * ms, all}, {300 * ms, "01>01 ! 01>01"}, {400 * ms, "01>01 01 01>01"}, {500 * ms, "01 01 01"}, {500 * ms, "01 01>01 01"}},
			rejoins: []time.Duration{900 * ms},
		},
		{
			name:    "the last node, its checks failing, keeps the VIPs demoted: no violation",
			windows: []Window{win(FlapLB, 0, 100*ms, 3000*ms, 0), win(Cut, 1, 200*ms, 3000*ms, 0), win(Cut, 2, 200*ms, 3000*ms, 0)},
			phases:  []phase{{200 * ms, all}, {800 * ms, "01>01 01 01"}},
		},
		{
			name:    "the last node, its checks failing, withdrawn: no eligible route",
			windows: []Window{win(FlapLB, 0, 100*ms, 3000*ms, 0), win(Cut, 1, 200*ms, 3000*ms, 0), win(Cut, 2, 200*ms, 3000*ms, 0)},
			phases:  []phase{{200 * ms, all}, {800 * ms, "01 01 01"}},
			want:    []string{"no-eligible-route +610ms " + api + " ", "no-eligible-route +610ms " + ing + " "},
		},
		{
			name:    "a demoted node left out while nodes whose checks pass are routed",
			windows: []Window{win(FlapLB, 0, 100*ms, 3000*ms, 0)},
			phases:  []phase{{200 * ms, all}, {800 * ms, "01 01>01 01>01"}},
		},
		{
			name:    "every node's checks failing and none routed: no eligible route",
			windows: []Window{win(FlapLB, 0, 200*ms, 3000*ms, 0), win(FlapLB, 1, 200*ms, 3000*ms, 0), win(FlapLB, 2, 200*ms, 3000*ms, 0)},
			phases:  []phase{{200 * ms, all}, {800 * ms, "01 01 01"}},
			want:    []string{"no-eligible-route +610ms " + api + " ", "no-eligible-route +610ms " + ing + " "},
		},
		{
			name:    "a node whose checks are rising again after flap-lb is a last resort",
			windows: []Window{win(FlapLB, 0, 100*ms, 300*ms, 0), win(Cut, 1, 400*ms, 3000*ms, 0), win(Cut, 2, 400*ms, 3000*ms, 0)},
			// a's flap ended at 300 ms: not eligible until it is routed
			// again or 1.3 s, but demoted it must carry the VIPs once b
			// and c are cut.
			phases: []phase{{100 * ms, all}, {300 * ms, "01 01>01 01>01"}, {700 * ms, "01 01 01"}},
			want:   []string{"no-eligible-route +810ms " + api + " ", "no-eligible-route +810ms " + ing + " "},
		},
		{
			name:    "a stall right after b's route came back: judged against the hold time",
			windows: []Window{win(Stall, 1, 500*ms, 2000*ms, 0)},
			// b is routed again at 300 ms, stalled at 500 ms: its BFD may
			// not be up; the route goes at 2.2 s, within 2 s + 100 ms.
			phases: []phase{{300 * ms, "01>01 01 01>01"}, {1900 * ms, all}, {300 * ms, "01>01 01 01>01"}},
			// Still routed when the stall ended: back at once.
			rejoins: []time.Duration{0},
		},
		{
			name:    "the same stall past the hold time",
			windows: []Window{win(Stall, 1, 500*ms, 3000*ms, 0)},
			phases:  []phase{{300 * ms, "01>01 01 01>01"}, {2400 * ms, all}, {300 * ms, "01>01 01 01>01"}},
			want:    []string{"stale-route +2.61s " + api + " b", "stale-route +2.61s " + ing + " b"},
		},
		{
			name:    "the steady node's route flaps while a rejoining node carries the VIPs",
			windows: []Window{win(Cut, 1, 100*ms, 300*ms, 0), win(Cut, 2, 100*ms, 3000*ms, 0)},
			// b's cut ended at 300 ms: not eligible until 1.3 s, but
			// routed from 500 ms it carries the VIPs when a drops its
			// routes at 800 ms.
			phases:  []phase{{100 * ms, all}, {400 * ms, "01>01 01 01"}, {300 * ms, "01>01 01>01 01"}, {500 * ms, "01 01>01 01"}},
			rejoins: []time.Duration{200 * ms},
		},
		{
			name:   "no fault and the only routes go: no eligible route at once",
			phases: []phase{{200 * ms, all}, {100 * ms, "01 01 01"}, {100 * ms, all}},
			want:   []string{"no-eligible-route +200ms " + api + " ", "no-eligible-route +200ms " + ing + " "},
		},
		{
			name:    "a lossy node loses its route (BFD): no violation, out until it rejoins",
			windows: []Window{win(HeavyLoss, 0, 200*ms, 1200*ms, 50), win(Cut, 1, 1300*ms, 3000*ms, 0), win(Cut, 2, 1300*ms, 3000*ms, 0)},
			phases:  []phase{{500 * ms, all}, {800 * ms, "01 01>01 01>01"}, {700 * ms, "01 01 01"}},
		},
		{
			name:    "an engine killed: its VIPs must leave the loopback within the supervisor bound",
			windows: []Window{win(KillEngine, 0, 200*ms, 1400*ms, 0)},
			phases:  []phase{{200 * ms, all}, {600 * ms, "01e 01>01 01>01"}, {600 * ms, "e 01>01 01>01"}, {200 * ms, "01 01>01 01>01"}},
			want:    []string{"leftover +460ms invalid IP a"},
		},
		{
			name:    "a bgpd restart: every route goes, all back within the router bound",
			windows: []Window{win(RestartBGPD, -1, 200*ms, 1000*ms, 0)},
			phases:  []phase{{200 * ms, all}, {1300 * ms, "01 01 01"}, {500 * ms, all}},
			returns: []time.Duration{500 * ms},
		},
		{
			name:    "after a bgpd restart, an eligible node not routed again past the router bound",
			windows: []Window{win(RestartBGPD, -1, 200*ms, 1000*ms, 0)},
			// c is left out from 2 s (1 s after the end): a, routed,
			// carries the VIPs, but the router has not recovered.
			phases:  []phase{{200 * ms, all}, {1000 * ms, "01 01 01"}, {1000 * ms, "01>01 01>01 01"}, {300 * ms, all}},
			want:    []string{"no-eligible-route +2s " + api + " ", "no-eligible-route +2s " + ing + " "},
			returns: []time.Duration{1200 * ms},
		},
		{
			name:    "a node cut while bfdd restarts may keep its route until the hold time",
			windows: []Window{win(RestartBFDD, -1, 200*ms, 1000*ms, 0), win(Cut, 1, 500*ms, 3500*ms, 0)},
			phases:  []phase{{200 * ms, all}, {2000 * ms, all}, {1000 * ms, "01>01 01 01>01"}},
			// Not timed against BFD: counted as unprotected. The router is
			// back at once (b, cut, is not eligible).
			returns: []time.Duration{0},
		},
		{
			name:    "the same cut routed past the hold time",
			windows: []Window{win(RestartBFDD, -1, 200*ms, 1000*ms, 0), win(Cut, 1, 500*ms, 3500*ms, 0)},
			phases:  []phase{{200 * ms, all}, {2600 * ms, all}},
			want:    []string{"stale-route +2.61s " + api + " b", "stale-route +2.61s " + ing + " b"},
			returns: []time.Duration{0},
		},
		{
			name:    "a graceful stop withdraws within the stale bound; its exit is explained",
			windows: []Window{win(TermAgent, 2, 200*ms, 1200*ms, 0)},
			phases:  []phase{{300 * ms, all}, {200 * ms, "01>01 01>01 01"}, {700 * ms, "01>01 01>01 !"}, {500 * ms, all}},
			// Withdrawn 100 ms after SIGTERM; routed again as it starts.
			withdrawals: []time.Duration{100 * ms}, rejoins: []time.Duration{0},
		},
		{
			name:    "a graceful stop right after the route's return: no BFD needed, the stale bound holds",
			windows: []Window{win(TermAgent, 1, 500*ms, 2000*ms, 0)},
			// b is routed again at 300 ms; SIGTERM at 500 ms; still routed
			// at 900 ms + 10 ms.
			phases:      []phase{{300 * ms, "01>01 01 01>01"}, {800 * ms, all}, {500 * ms, "01>01 ! 01>01"}},
			want:        []string{"stale-route +910ms " + api + " b", "stale-route +910ms " + ing + " b"},
			withdrawals: []time.Duration{600 * ms},
		},
		{
			name:   "an agent that exits on its own",
			phases: []phase{{200 * ms, all}, {200 * ms, "01>01 01>01 !"}},
			want:   []string{"unexpected-exit +200ms invalid IP c"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Check(cfg, tc.windows, stream(t, cfg, tc.phases...))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summary(rep)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
			var took, back []time.Duration
			for _, r := range rep.Recoveries {
				took = append(took, r.Took)
			}
			for _, r := range rep.Rejoins {
				back = append(back, r.Took)
			}
			if diff := cmp.Diff(tc.withdrawals, took); diff != "" {
				t.Errorf("withdrawals (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.rejoins, back); diff != "" {
				t.Errorf("rejoins (-want +got):\n%s", diff)
			}
			var ret []time.Duration
			for _, r := range rep.RouterReturns {
				ret = append(ret, r.Took)
			}
			if diff := cmp.Diff(tc.returns, ret); diff != "" {
				t.Errorf("router returns (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckAnycastRejects(t *testing.T) {
	cfg := anyConfig()
	cfg.Detect = 0
	if _, err := Check(cfg, nil, nil); err == nil {
		t.Error("Check took Anycast with Detect 0")
	}
	cfg = anyConfig()
	cfg.Hold = 0
	if _, err := Check(cfg, nil, nil); err == nil {
		t.Error("Check took Anycast with a hold time below Detect")
	}
}
