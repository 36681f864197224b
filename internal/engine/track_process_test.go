package engine

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/procwatch"
)

// fakeProcesses is a process table for Options.Processes: how many
// processes of each name run.
type fakeProcesses struct {
	mu sync.Mutex
	n  map[string]int
}

func (f *fakeProcesses) set(name string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[string]int{}
	}
	f.n[name] = n
}

func (f *fakeProcesses) count(m procwatch.Matcher) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[m.Process], nil
}

// TestTrackProcess: vrrp_track_process with keepalived's semantics, the
// process table a fake (the namespace test TestTrackProcessKeepalivedInNamespace
// counts real processes): an engine at priority 100 tracks process
// "daemon", a peer at 50 tracks nothing. With the default weight 0 the
// instance is in FAULT while no such process runs, and master once one
// does; with weight -60 and quorum 2 its priority drops to 40 below the
// quorum, and the peer takes the VIP. fork_delay and terminate_delay hold
// the change back: the VIP does not move before the delay has passed.
func TestTrackProcess(t *testing.T) {
	type step struct {
		running int
		master  bool          // whether the tracking node is the sole holder then
		hold    time.Duration // how long the previous holder must keep the VIP first
	}
	for _, tc := range []struct {
		name    string
		block   string
		steps   []step
		wantLog []string
	}{
		{
			name:  "weight 0",
			block: "vrrp_track_process chk {\n    process daemon\n    delay 0.3\n}\n",
			steps: []step{{0, false, 0}, {1, true, 0}, {0, false, 0}},
			wantLog: []string{"tracked process chk quorum not achieved: 0 running \\\"daemon\\\", want at least 1",
				"to=FAULT"},
		},
		{
			name:  "weight -60 quorum 2",
			block: "vrrp_track_process chk {\n    process daemon\n    weight -60\n    quorum 2\n}\n",
			steps: []step{{1, false, 0}, {2, true, 0}, {1, false, 0}},
		},
		{
			name:  "fork_delay 3 terminate_delay 4",
			block: "vrrp_track_process chk {\n    process daemon\n    fork_delay 3\n    terminate_delay 4\n}\n",
			steps: []step{{0, false, 0}, {1, true, 2500 * time.Millisecond}, {0, false, 3500 * time.Millisecond}},
		},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "-"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				seg := &simSegment{}
				node, peer := seg.node("node", "198.18.0.1/24"), seg.node("peer", "198.18.0.2/24")
				nodes := []*simNode{node, peer}
				vip := netip.MustParseAddr("198.18.0.100")
				procs := &fakeProcesses{}
				procs.set("daemon", tc.steps[0].running)
				c := func(prio int) peers.Conf {
					return peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 74, Priority: prio, VIP: netip.PrefixFrom(vip, 32)}
				}
				text := tc.block + simWithLines(simConf(t, c(100), node.name), "track_process {\n        chk\n    }")
				e, log := simEngine(t, node, text, nil, func(o *Options) { o.Processes = procs.count })
				simRun(t, e)
				pe, _ := simEngine(t, peer, simConf(t, c(50), peer.name), nil)
				simRun(t, pe)
				for i, s := range tc.steps {
					procs.set("daemon", s.running)
					want, was := peer, node
					if s.master {
						want, was = node, peer
					}
					why := fmt.Sprintf("step %d: %d running", i, s.running)
					if s.hold > 0 {
						simNeverHolds(t, nodes, vip, was, s.hold, why+", within the delay")
					}
					simWaitSole(t, nodes, vip, want, 2*time.Second, 30*time.Second, why)
				}
				for _, want := range tc.wantLog {
					if !strings.Contains(log.String(), want) {
						t.Errorf("the log does not say %s", want)
					}
				}
			})
		})
	}
}
