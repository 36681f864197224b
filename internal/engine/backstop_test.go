package engine

import (
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
)

// TestBackstop: a master whose loop stops (its timers stopped, as for a
// thread whose CPU stopped) while its backstop threads run keeps its
// backup down at advert_int 0.01: the threads send the advertisements
// the loop is late for. A loop stopped for good is backed for
// backstopLease only, then the backup takes over (a loop that still
// hears its socket answers a backup's takeover, and renews the lease). A master advertising
// every second has no backstop.
func TestBackstop(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval time.Duration
		stop     time.Duration // how long the master's loop stops
		sockets  bool          // its sockets stop too: the loop hears nothing either
		backed   bool          // the backstop serves the master
		takeover bool          // the backup takes over meanwhile
	}{
		{"loop-late", 10 * time.Millisecond, 200 * time.Millisecond, false, true, false},
		{"loop-gone", 10 * time.Millisecond, 3 * time.Second, true, true, true},
		{"slow-adverts", time.Second, 200 * time.Millisecond, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				seg := &simSegment{}
				n1, n2 := seg.node("node1", "198.18.0.1/24"), seg.node("node2", "198.18.0.2/24")
				nodes := []*simNode{n1, n2}
				vip := netip.MustParseAddr("198.18.0.100")
				c := peers.Conf{Version: 3, Interval: tc.interval, VRID: 51, VIP: netip.PrefixFrom(vip, 32)}
				st := newSimStall(t)
				var master *Engine
				var logs []interface{ String() string }
				for i, n := range nodes {
					c.Priority = 150 - 50*i
					var more []func(*Options)
					if n == n1 {
						more = append(more, func(o *Options) { o.Clock = stallClock{st} })
					}
					e, log := simEngine(t, n, simConf(t, c, n.name), nil, more...)
					logs = append(logs, log)
					if n == n1 {
						master = e
					}
					simRun(t, e)
				}
				simWaitSole(t, nodes, vip, n1, 5*tc.interval, 20*time.Second, "start")
				time.Sleep(time.Second)
				synctest.Wait()
				if masters, _ := master.bs.serving(); (masters == 1) != tc.backed {
					t.Fatalf("the backstop serves %d masters, want backed %v", masters, tc.backed)
				}

				if tc.sockets {
					st.stop()
				} else {
					st.stopTimers()
				}
				time.Sleep(tc.stop)
				synctest.Wait()
				took := strings.Contains(logs[1].String(), "to=MASTER")
				_, sent := master.bs.serving()
				if took != tc.takeover {
					t.Errorf("the backup took over while the master's loop stopped: %v, want %v; backup's log:\n%s", took, tc.takeover, logs[1])
				}
				if tc.backed && !tc.takeover && sent == 0 {
					t.Errorf("the backstop sent nothing while the loop stopped")
				}
				if !tc.backed && sent != 0 {
					t.Errorf("the backstop sent %d advertisements for a master at advert_int %v", sent, tc.interval)
				}
				if tc.sockets {
					st.cont()
				} else {
					st.contTimers()
				}
				simWaitSole(t, nodes, vip, n1, 5*tc.interval, 20*time.Second, "the master's loop runs again")
			})
		})
	}
}
