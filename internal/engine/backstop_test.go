package engine

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"
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
				p := newFastPair(t, tc.interval)
				master, st, logs := p.engines[0], p.stalls[0], p.logs
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
				simWaitSole(t, p.nodes, p.vip, p.nodes[0], 5*tc.interval, 20*time.Second, "the master's loop runs again")
			})
		})
	}
}
