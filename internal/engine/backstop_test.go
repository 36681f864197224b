package engine

import (
	"context"
	"errors"
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

// TestBackstopNapPins: each nap pins the thread to its CPU for the sleep
// and unpins it before letting it go; a pin or an unpin that fails ends
// the thread's goroutine (nap false), an unpin failure with the thread
// still locked, so that the runtime ends the pinned thread with it.
func TestBackstopNapPins(t *testing.T) {
	for _, tc := range []struct {
		name             string
		pinErr, unpinErr error
		want             bool
		pins, unpins     int
	}{
		{name: "pinned and unpinned", want: true, pins: 1, unpins: 1},
		{name: "pin fails", pinErr: errors.New("EINVAL"), pins: 1},
		{name: "unpin fails", unpinErr: errors.New("EPERM"), pins: 1, unpins: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pins, unpins int
			pinnedTo := -1
			var slept time.Duration
			seams := backstopSeams{
				sleep: func(_ context.Context, d time.Duration) { slept = d },
				cpus:  func() []int { return []int{0, 1} },
				pin: func(cpu int) (func() error, error) {
					pins++
					if tc.pinErr != nil {
						return nil, tc.pinErr
					}
					pinnedTo = cpu
					return func() error { unpins++; return tc.unpinErr }, nil
				},
			}
			now := time.Unix(1000, 0)
			b := newBackstop(t.Context(), seams, func() time.Time { return now })
			got := make(chan bool)
			go func() { got <- b.nap(0, 1, now.Add(time.Second)) }() // its own goroutine: a failed unpin leaves it locked
			if g := <-got; g != tc.want {
				t.Errorf("nap = %v, want %v", g, tc.want)
			}
			if pins != tc.pins || unpins != tc.unpins {
				t.Errorf("pinned %d and unpinned %d times, want %d and %d", pins, unpins, tc.pins, tc.unpins)
			}
			if tc.pinErr == nil && (pinnedTo != 1 || slept != backstopNap) {
				t.Errorf("pinned to CPU %d and slept %v, want CPU 1 and backstopNap (%v) for a wake a second away", pinnedTo, slept, backstopNap)
			}
			if tc.pinErr != nil && slept != 0 {
				t.Errorf("slept %v on a thread that could not be pinned", slept)
			}
		})
	}
}
