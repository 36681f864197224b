package announce

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vipstack/vipstack/internal/clock"
)

var (
	addrA = netip.MustParseAddr("198.18.0.1")
	addrB = netip.MustParseAddr("198.18.0.2")
	addrC = netip.MustParseAddr("fd00:bb::3")
	addrD = netip.MustParseAddr("198.18.0.4")
)

// pacerStep is one step of a scenario: exactly one of schedule, cancel or
// advance (advance 0 fires what is due now).
type pacerStep struct {
	schedule *schedule
	cancel   bool
	advance  time.Duration

	wantSends  []string // sends during this step, "+<offset from start> <addr>"
	wantCount  int      // instead of wantSends, for big scenarios (-1: skip)
	wantQueued int
}

type schedule struct {
	addrs  []netip.Addr
	repeat int
	delay  time.Duration
}

func TestPacer(t *testing.T) {
	many := make([]netip.Addr, 1000)
	for i := range many {
		many[i] = netip.AddrFrom4([4]byte{198, 18, byte(1 + i/250), byte(i % 250)})
	}
	tests := []struct {
		name      string
		rate      int
		burst     int
		atOnce    bool // FirstAtOnce
		firsts    int  // with atOnce, the first copies the window check allows on top
		failOn    netip.Addr
		steps     []pacerStep
		wantError []string
	}{
		{name: "keepalived default: 5 now, 5 after 5s", steps: []pacerStep{
			{schedule: &schedule{addrs: []netip.Addr{addrA}, repeat: 5, delay: 5 * time.Second}, wantQueued: 10},
			{advance: 0, wantSends: []string{"+0s 198.18.0.1", "+0s 198.18.0.1", "+0s 198.18.0.1", "+0s 198.18.0.1", "+0s 198.18.0.1"}, wantQueued: 5},
			{advance: 5*time.Second - time.Millisecond, wantQueued: 5},
			{advance: time.Millisecond, wantSends: []string{"+5s 198.18.0.1", "+5s 198.18.0.1", "+5s 198.18.0.1", "+5s 198.18.0.1", "+5s 198.18.0.1"}},
			{advance: time.Hour},
		}},
		{name: "copies cycle through the addresses", steps: []pacerStep{
			{schedule: &schedule{addrs: []netip.Addr{addrA, addrB}, repeat: 2}, wantQueued: 4},
			{advance: 0, wantSends: []string{"+0s 198.18.0.1", "+0s 198.18.0.2", "+0s 198.18.0.1", "+0s 198.18.0.2"}},
		}},
		{name: "repeat 0 schedules nothing", steps: []pacerStep{
			{schedule: &schedule{addrs: []netip.Addr{addrA}, repeat: 0, delay: time.Second}},
			{advance: time.Minute},
		}},
		{name: "rate 2 per second spaces sends 500ms apart", rate: 2, steps: []pacerStep{
			{schedule: &schedule{addrs: []netip.Addr{addrA, addrB, addrC}, repeat: 1}, wantQueued: 3},
			{advance: 0, wantSends: []string{"+0s 198.18.0.1"}, wantQueued: 2},
			{advance: 499 * time.Millisecond, wantQueued: 2},
			{advance: time.Millisecond, wantSends: []string{"+500ms 198.18.0.2"}, wantQueued: 1},
			{advance: 10 * time.Second, wantSends: []string{"+1s fd00:bb::3"}},
		}},
		{name: "a slow first burst delays the second", rate: 1, steps: []pacerStep{
			{schedule: &schedule{addrs: []netip.Addr{addrA, addrB, addrC}, repeat: 1, delay: 2 * time.Second}, wantQueued: 6},
			{advance: 10 * time.Second, wantSends: []string{"+0s 198.18.0.1", "+1s 198.18.0.2", "+2s fd00:bb::3",
				"+3s 198.18.0.1", "+4s 198.18.0.2", "+5s fd00:bb::3"}},
		}},
		{name: "1000 VIPs at 100 per second", rate: 100, steps: []pacerStep{
			{schedule: &schedule{addrs: many, repeat: 1}, wantCount: -1, wantQueued: 1000},
			{advance: time.Second, wantCount: 101, wantQueued: 899},           // at 0, 10ms, ..., 1000ms
			{advance: 8980 * time.Millisecond, wantCount: 898, wantQueued: 1}, // up to 9980ms
			{advance: 10 * time.Millisecond, wantCount: 1},
		}},
		{name: "cancel drops the queue; the rate still counts from the last send", rate: 1, steps: []pacerStep{
			{schedule: &schedule{addrs: []netip.Addr{addrA, addrB, addrC}, repeat: 1, delay: 5 * time.Second}, wantQueued: 6},
			{advance: time.Second, wantSends: []string{"+0s 198.18.0.1", "+1s 198.18.0.2"}, wantQueued: 4},
			{cancel: true},
			{advance: time.Hour},
			{schedule: &schedule{addrs: []netip.Addr{addrD}, repeat: 1}, wantQueued: 1},
			{advance: 0, wantSends: []string{"+1h0m1s 198.18.0.4"}},
		}},
		{name: "cancel right after schedule sends nothing", steps: []pacerStep{
			{schedule: &schedule{addrs: []netip.Addr{addrA}, repeat: 3, delay: time.Second}, wantQueued: 6},
			{cancel: true},
			{advance: time.Minute},
		}},
		{name: "rate limit spans separate schedules", rate: 1, steps: []pacerStep{
			{schedule: &schedule{addrs: []netip.Addr{addrA}, repeat: 1}, wantQueued: 1},
			{advance: 500 * time.Millisecond, wantSends: []string{"+0s 198.18.0.1"}},
			{schedule: &schedule{addrs: []netip.Addr{addrB}, repeat: 1}, wantQueued: 1},
			{advance: 499 * time.Millisecond, wantQueued: 1},
			{advance: time.Millisecond, wantSends: []string{"+1s 198.18.0.2"}},
		}},
		{name: "later schedules merge by due time", steps: []pacerStep{
			{schedule: &schedule{addrs: []netip.Addr{addrA}, repeat: 1, delay: 2 * time.Second}, wantQueued: 2},
			{advance: time.Second, wantSends: []string{"+0s 198.18.0.1"}, wantQueued: 1},
			{schedule: &schedule{addrs: []netip.Addr{addrB}, repeat: 1, delay: 2 * time.Second}, wantQueued: 3},
			{advance: 0, wantSends: []string{"+1s 198.18.0.2"}, wantQueued: 2},
			{advance: time.Second, wantSends: []string{"+2s 198.18.0.1"}, wantQueued: 1},
			{advance: time.Second, wantSends: []string{"+3s 198.18.0.2"}},
		}},
		{name: "burst 3 at 1 per second: three at once, then one a second", rate: 1, burst: 3, steps: []pacerStep{
			{schedule: &schedule{addrs: []netip.Addr{addrA, addrB, addrC, addrD}, repeat: 2}, wantQueued: 8},
			{advance: 0, wantSends: []string{"+0s 198.18.0.1", "+0s 198.18.0.2", "+0s fd00:bb::3"}, wantQueued: 5},
			{advance: 999 * time.Millisecond, wantQueued: 5},
			{advance: time.Millisecond, wantSends: []string{"+1s 198.18.0.4"}, wantQueued: 4},
			{advance: 4 * time.Second, wantSends: []string{"+2s 198.18.0.1", "+3s 198.18.0.2", "+4s fd00:bb::3", "+5s 198.18.0.4"}},
		}},
		{name: "an idle bucket refills up to its depth", rate: 1, burst: 2, steps: []pacerStep{
			{schedule: &schedule{addrs: []netip.Addr{addrA, addrB}, repeat: 1}, wantQueued: 2},
			{advance: 0, wantSends: []string{"+0s 198.18.0.1", "+0s 198.18.0.2"}},
			{advance: 1500 * time.Millisecond},
			{schedule: &schedule{addrs: []netip.Addr{addrC, addrD}, repeat: 1}, wantQueued: 2},
			{advance: 0, wantSends: []string{"+1.5s fd00:bb::3"}, wantQueued: 1},
			{advance: time.Second, wantSends: []string{"+2s 198.18.0.4"}},
		}},
		{name: "first copies at once: every address now, the repeats wait their slots", rate: 1, atOnce: true, firsts: 3, steps: []pacerStep{
			{schedule: &schedule{addrs: []netip.Addr{addrA, addrB, addrC}, repeat: 2, delay: 10 * time.Second}, wantQueued: 12},
			{advance: 0, wantSends: []string{"+0s 198.18.0.1", "+0s 198.18.0.2", "+0s fd00:bb::3"}, wantQueued: 9},
			{advance: 2999 * time.Millisecond, wantQueued: 9},
			{advance: 3 * time.Second, wantSends: []string{"+3s 198.18.0.1", "+4s 198.18.0.2", "+5s fd00:bb::3"}, wantQueued: 6},
			// The second burst's first copies go when due, the tokens
			// they take delay the repeats.
			{advance: 4001 * time.Millisecond, wantSends: []string{"+10s 198.18.0.1", "+10s 198.18.0.2", "+10s fd00:bb::3"}, wantQueued: 3},
			{advance: 10 * time.Second, wantSends: []string{"+13s 198.18.0.1", "+14s 198.18.0.2", "+15s fd00:bb::3"}},
		}},
		{name: "first copies at once without a rate change nothing", atOnce: true, steps: []pacerStep{
			{schedule: &schedule{addrs: []netip.Addr{addrA, addrB}, repeat: 2}, wantQueued: 4},
			{advance: 0, wantSends: []string{"+0s 198.18.0.1", "+0s 198.18.0.2", "+0s 198.18.0.1", "+0s 198.18.0.2"}},
		}},
		{name: "a failed send does not stop the rest", failOn: addrB, steps: []pacerStep{
			{schedule: &schedule{addrs: []netip.Addr{addrA, addrB, addrC}, repeat: 1}, wantQueued: 3},
			{advance: 0, wantSends: []string{"+0s 198.18.0.1", "+0s 198.18.0.2", "+0s fd00:bb::3"}},
		}, wantError: []string{"198.18.0.2: link down"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			clk := clock.NewFake(start)
			var sends []time.Time // every send, for the rate check
			var got []string      // sends in the current step
			var gotErr []string
			p := &Pacer{
				Clock:       clk,
				Rate:        tt.rate,
				Burst:       tt.burst,
				FirstAtOnce: tt.atOnce,
				Send: func(a netip.Addr) error {
					now := clk.Now()
					sends = append(sends, now)
					got = append(got, fmt.Sprintf("+%v %s", now.Sub(start), a))
					if a == tt.failOn {
						return errors.New("link down")
					}
					return nil
				},
				OnError: func(a netip.Addr, err error) { gotErr = append(gotErr, fmt.Sprintf("%s: %v", a, err)) },
			}
			for i, s := range tt.steps {
				got = nil
				switch {
				case s.schedule != nil:
					p.Schedule(s.schedule.addrs, s.schedule.repeat, s.schedule.delay)
				case s.cancel:
					p.Cancel()
				default:
					clk.Advance(s.advance)
				}
				switch {
				case s.wantCount > 0:
					if len(got) != s.wantCount {
						t.Errorf("step %d: %d sends, want %d", i, len(got), s.wantCount)
					}
				case s.wantCount == 0:
					if diff := cmp.Diff(s.wantSends, got); diff != "" {
						t.Errorf("step %d: sends (-want +got):\n%s", i, diff)
					}
				}
				if q := p.Queued(); q != s.wantQueued {
					t.Errorf("step %d: Queued() = %d, want %d", i, q, s.wantQueued)
				}
				if s.wantQueued == 0 && clk.Pending() != 0 {
					t.Errorf("step %d: nothing queued but %d timers armed", i, clk.Pending())
				}
			}
			if diff := cmp.Diff(tt.wantError, gotErr); diff != "" {
				t.Errorf("OnError calls (-want +got):\n%s", diff)
			}
			// Whatever the scenario, no one-second window [t, t+1s) holds
			// more than Rate sends, plus Burst-1, plus the first copies
			// FirstAtOnce lets through.
			if tt.rate > 0 {
				limit := tt.rate + max(tt.burst, 1) - 1 + tt.firsts
				for i := range sends {
					n := 0
					for j := i; j < len(sends) && sends[j].Sub(sends[i]) < time.Second; j++ {
						n++
					}
					if n > limit {
						t.Fatalf("%d sends in the second from +%v, rate %d and burst %d allow %d", n, sends[i].Sub(start), tt.rate, tt.burst, limit)
					}
				}
			}
		})
	}
}

// lateClock is a fake clock whose timers all fire late by late, as a busy
// machine's do.
type lateClock struct {
	*clock.Fake
	late time.Duration
}

func (c lateClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return c.Fake.AfterFunc(d+c.late, f)
}

// TestPacerLateTimers: when every timer fires 2 ms late, a Burst lets the
// queue catch up with its slots, so 1000 announcements at 1000 per second
// take a second; strict spacing (Burst 1) loses the lateness at every
// send, and the same queue takes three.
func TestPacerLateTimers(t *testing.T) {
	many := make([]netip.Addr, 1000)
	for i := range many {
		many[i] = netip.AddrFrom4([4]byte{198, 18, byte(1 + i/250), byte(i % 250)})
	}
	for _, tc := range []struct {
		burst     int
		after     time.Duration
		wantSent  int
		wantDrain time.Duration // when the last one left
	}{
		{burst: 10, after: time.Second, wantSent: 1000, wantDrain: 992 * time.Millisecond},
		{burst: 1, after: time.Second, wantSent: 333},
		{burst: 1, after: 3 * time.Second, wantSent: 1000, wantDrain: 2999 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("burst %d, %v", tc.burst, tc.after), func(t *testing.T) {
			start := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
			fake := clock.NewFake(start)
			var sends []time.Time
			p := &Pacer{Clock: lateClock{fake, 2 * time.Millisecond}, Rate: 1000, Burst: tc.burst, Send: func(netip.Addr) error {
				sends = append(sends, fake.Now())
				return nil
			}}
			p.Schedule(many, 1, 0)
			fake.Advance(tc.after)
			if len(sends) != tc.wantSent {
				t.Fatalf("%d sent after %v, want %d", len(sends), tc.after, tc.wantSent)
			}
			if tc.wantDrain > 0 {
				if got := sends[len(sends)-1].Sub(start); got != tc.wantDrain {
					t.Errorf("the last left at +%v, want +%v", got, tc.wantDrain)
				}
			}
			for i := range sends {
				n := 0
				for j := i; j < len(sends) && sends[j].Sub(sends[i]) < time.Second; j++ {
					n++
				}
				if limit := 1000 + max(tc.burst, 1) - 1; n > limit {
					t.Fatalf("%d sends in the second from +%v, want at most %d", n, sends[i].Sub(start), limit)
				}
			}
		})
	}
}

// TestPacerRealClock runs the Pacer on real timers (their callbacks run on
// other goroutines) so that -race sees the locking. It waits for the sends
// themselves, with a generous bound, and asserts no timing.
func TestPacerRealClock(t *testing.T) {
	var mu sync.Mutex
	var got []netip.Addr
	done := make(chan struct{})
	p := &Pacer{Clock: clock.Real{}, Rate: 1000, Send: func(a netip.Addr) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, a)
		if len(got) == 4 {
			close(done)
		}
		return nil
	}}
	p.Schedule([]netip.Addr{addrA, addrB}, 2, 0)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("4 sends did not happen within 20s")
	}
	p.Cancel()
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]netip.Addr{addrA, addrB, addrA, addrB}, got, cmp.Comparer(func(x, y netip.Addr) bool { return x == y })); diff != "" {
		t.Errorf("sends (-want +got):\n%s", diff)
	}
}

// TestPacerScheduleRest: a new master sends the first announcement of each
// address itself (SendNow, as the kernel adds it) and leaves the rest to
// the pacer: keepalived's pattern, repeat x 2 per address, no more, and
// with a rate the first copies count against it.
func TestPacerScheduleRest(t *testing.T) {
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		rate     int
		wantNow  []string
		wantRest []string
	}{
		{name: "unlimited", rate: 0,
			wantNow:  []string{"+0s 198.18.0.1", "+0s 198.18.0.2"},
			wantRest: []string{"+0s 198.18.0.1", "+0s 198.18.0.2", "+0s 198.18.0.1", "+0s 198.18.0.2", "+5s 198.18.0.1", "+5s 198.18.0.2", "+5s 198.18.0.1", "+5s 198.18.0.2", "+5s 198.18.0.1", "+5s 198.18.0.2"}},
		{name: "a rate counts the first copies", rate: 10,
			wantNow:  []string{"+0s 198.18.0.1", "+0s 198.18.0.2"},
			wantRest: []string{"+200ms 198.18.0.1", "+300ms 198.18.0.2", "+400ms 198.18.0.1", "+500ms 198.18.0.2", "+5s 198.18.0.1", "+5s 198.18.0.2", "+5.2s 198.18.0.1", "+5.3s 198.18.0.2", "+5.4s 198.18.0.1", "+5.5s 198.18.0.2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(start)
			var mu sync.Mutex
			var sends []string
			p := &Pacer{Clock: clk, Rate: tc.rate, FirstAtOnce: true, Send: func(a netip.Addr) error {
				mu.Lock()
				defer mu.Unlock()
				sends = append(sends, fmt.Sprintf("+%v %s", clk.Now().Sub(start), a))
				return nil
			}}
			addrs := []netip.Addr{addrA, addrB}
			for _, a := range addrs {
				if err := p.SendNow(a); err != nil {
					t.Fatal(err)
				}
			}
			mu.Lock()
			now := sends
			sends = nil
			mu.Unlock()
			if d := cmp.Diff(tc.wantNow, now); d != "" {
				t.Errorf("SendNow (-want +got):\n%s", d)
			}
			p.ScheduleRest(addrs, 3, 5*time.Second)
			if got, want := p.Queued(), 2*3*2-2; got != want {
				t.Errorf("queued %d, want %d (repeat x 2 per address, less the first copies sent)", got, want)
			}
			for range 100 {
				clk.Advance(100 * time.Millisecond)
			}
			mu.Lock()
			defer mu.Unlock()
			if d := cmp.Diff(tc.wantRest, sends); d != "" {
				t.Errorf("sent by the pacer afterwards (-want +got):\n%s", d)
			}
		})
	}
}

// TestPacerDrained: Drained is called once a queue's last announcement
// has left, once per burst, and not when Cancel empties the queue.
func TestPacerDrained(t *testing.T) {
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	var mu sync.Mutex
	sent, drained := 0, 0
	var drainedAfter []int // sends done when Drained was called
	p := &Pacer{Clock: clk, Rate: 10, Send: func(netip.Addr) error {
		mu.Lock()
		defer mu.Unlock()
		sent++
		return nil
	}, Drained: func() {
		mu.Lock()
		defer mu.Unlock()
		drained++
		drainedAfter = append(drainedAfter, sent)
	}}
	counts := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return sent, drained
	}
	p.Schedule([]netip.Addr{addrA, addrB}, 2, time.Second) // 8 announcements over 1.2 s
	for range 5 {
		clk.Advance(100 * time.Millisecond)
	}
	if s, d := counts(); s == 0 || s == 8 || d != 0 {
		t.Fatalf("after 0.5 s: %d sent, drained %d times; want some of 8 sent and none drained", s, d)
	}
	for range 20 {
		clk.Advance(100 * time.Millisecond)
	}
	if s, d := counts(); s != 8 || d != 1 {
		t.Fatalf("after 2.5 s: %d sent, drained %d times; want 8 and once", s, d)
	}
	p.Schedule([]netip.Addr{addrA, addrB}, 2, 0)
	clk.Advance(0)
	p.Cancel()
	for range 20 {
		clk.Advance(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]int{8}, drainedAfter); diff != "" {
		t.Errorf("Drained called after these many sends (-want +got):\n%s", diff)
	}
}

// TestScheduleGrowsQueueOnce: a burst is queued into a list made at its
// size, not grown by doubling (garbage for every instance taking over).
func TestScheduleGrowsQueueOnce(t *testing.T) {
	addrs := make([]netip.Addr, 10)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)})
	}
	for _, tc := range []struct {
		name      string
		delay     time.Duration
		firstSent bool
		want      int
	}{
		{name: "one burst", want: 50},
		{name: "two bursts", delay: 5 * time.Second, want: 100},
		{name: "two bursts, first copies sent", delay: 5 * time.Second, firstSent: true, want: 90},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Pacer{Clock: clock.NewFake(time.Unix(0, 0)), Send: func(netip.Addr) error { return nil }}
			p.schedule(addrs, 5, tc.delay, tc.firstSent)
			if got := len(p.queue); got != tc.want {
				t.Errorf("queued %d, want %d", got, tc.want)
			}
			// Its size rounded up to the allocator's size class; append's
			// doublings leave a quarter or more unused.
			if got := cap(p.queue); got > tc.want+tc.want/8 {
				t.Errorf("queue's capacity %d, want %d (its size, to the allocator's size class)", got, tc.want)
			}
			p.Cancel()
		})
	}
}
