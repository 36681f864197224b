package stats

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vipstack/vipstack/internal/clock"
)

// TestRateCounter walks haproxy's freq_ctr arithmetic on a fake clock:
// the first steps replay what haproxy 2.6.12 showed after five sessions
// at once (measured, rates.go: 5 at 0.3 s and 0.8 s, 3 at 1.3 s, 0 at
// 1.8 s, rate_max 5), the next a count in each of two periods, then a
// gap of more than a period. rate_max is the most one period counted.
func TestRateCounter(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	var r RateCounter
	steps := []struct {
		name     string
		advance  time.Duration // before the step
		events   int
		rate     uint64
		rateMax  int64
		periodAt time.Duration // the current period's start, from the first event
	}{
		{name: "five sessions", events: 5, rate: 5, rateMax: 5},
		{name: "0.315 s", advance: 315 * time.Millisecond, rate: 5, rateMax: 5},
		{name: "0.816 s", advance: 501 * time.Millisecond, rate: 5, rateMax: 5},
		{name: "1.321 s: 5 × 679/1000", advance: 505 * time.Millisecond, rate: 3, rateMax: 5},
		{name: "1.823 s: 5 × 177/1000", advance: 502 * time.Millisecond, rate: 0, rateMax: 5},
		{name: "2.2 s, 2 more: a period later, the 5 are 2 periods old", advance: 377 * time.Millisecond, events: 2, rate: 2, rateMax: 5, periodAt: 2200 * time.Millisecond},
		{name: "3.0 s, 4 more: the same period, 6", advance: 800 * time.Millisecond, events: 4, rate: 6, rateMax: 6, periodAt: 2200 * time.Millisecond},
		{name: "3.3 s, 4 more: the next period, 6 × 900/1000 + 4", advance: 300 * time.Millisecond, events: 4, rate: 9, rateMax: 6, periodAt: 3200 * time.Millisecond},
		{name: "8 s: nothing for more than a period", advance: 4700 * time.Millisecond, rate: 0, rateMax: 6, periodAt: 3200 * time.Millisecond},
		{name: "8 s, 1: a new period from now", events: 1, rate: 1, rateMax: 6, periodAt: 8 * time.Second},
	}
	first := clk.Now()
	for _, s := range steps {
		clk.Advance(s.advance)
		for range s.events {
			r.Add(clk.Now())
		}
		if got := r.Read(clk.Now()); got != s.rate {
			t.Errorf("%s: rate %d, want %d", s.name, got, s.rate)
		}
		if got := r.max.Load(); got != s.rateMax {
			t.Errorf("%s: rate_max %d, want %d", s.name, got, s.rateMax)
		}
		if got, want := r.start.Load(), first.Add(s.periodAt).UnixMilli(); got != want {
			t.Errorf("%s: period from %+d ms, want %+d", s.name, got-first.UnixMilli(), want-first.UnixMilli())
		}
	}
}

// TestSessionTimesArithmetic checks haproxy's swrate sums and averages:
// a plain sum divided, rounded up, by the sessions picked until 1024,
// with failed sessions in the divisor (measured, rates.go: samples of 203
// and 200 ms give a server picked twice 202 and its backend picked four
// times, twice for a refusing server, 101), then 1/1024 of the sum out per
// sample.
func TestSessionTimesArithmetic(t *testing.T) {
	var server, backend SessionTimes
	server.Add(1, 0, 0, 203)
	backend.Add(2, 0, 0, 203)
	server.Add(2, 0, 1, 200)
	backend.Add(4, 0, 1, 200)
	if diff := cmp.Diff(TimeStats{ConnectMS: 1, TotalMS: 202, MaxConnectMS: 1, MaxTotalMS: 203}, server.Stats(2)); diff != "" {
		t.Errorf("server (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(TimeStats{ConnectMS: 1, TotalMS: 101, MaxConnectMS: 1, MaxTotalMS: 203}, backend.Stats(4)); diff != "" {
		t.Errorf("backend (-want +got):\n%s", diff)
	}
	// None picked: the window is 1024 and the sums are 0.
	var none SessionTimes
	if diff := cmp.Diff(TimeStats{}, none.Stats(0)); diff != "" {
		t.Errorf("never picked (-want +got):\n%s", diff)
	}

	// 1024 sessions of 100 ms, then the window slides: each sample takes
	// (sum+1023)/1024 out of the sum.
	var st SessionTimes
	for i := uint64(1); i <= timeSamples; i++ {
		st.Add(i, 0, 0, 100)
	}
	if got := st.Stats(timeSamples).TotalMS; got != 100 {
		t.Fatalf("1024 × 100 ms: average %d, want 100", got)
	}
	st.Add(timeSamples+1, 0, 0, 1124) // 102400 - 100 + 1124 = 103424
	if got, want := st.t.Load(), uint64(103424); got != want {
		t.Errorf("sum after the 1025th sample %d, want %d", got, want)
	}
	if got := st.Stats(timeSamples + 1).TotalMS; got != 101 {
		t.Errorf("average after the 1025th sample %d, want 101 (103424/1024 rounded up)", got)
	}
}

// TestLastSessionAge: -1 before any session, then now's second minus the
// session's, as haproxy's lastsess (measured: 1 at 0.6 s after sessions
// at x.3 s, the wall clock's second having turned).
func TestLastSessionAge(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	var l LastSession
	if got := l.Age(clk.Now()); got != -1 {
		t.Errorf("no session: %d, want -1", got)
	}
	clk.Advance(700 * time.Millisecond)
	l.Set(clk.Now())
	for _, s := range []struct {
		advance time.Duration
		want    int64
	}{{0, 0}, {200 * time.Millisecond, 0}, {100 * time.Millisecond, 1}, {900 * time.Millisecond, 1}, {100 * time.Millisecond, 2}} {
		clk.Advance(s.advance)
		if got := l.Age(clk.Now()); got != s.want {
			t.Errorf("at %v: %d, want %d", clk.Now().Sub(time.Unix(1_700_000_000, 0)), got, s.want)
		}
	}
}

// TestRateCounterConcurrent: adds from many goroutines around a period's
// rollover lose none: the previous and current counts hold them all
// (run with -race, the counter's lock bit is the only guard).
func TestRateCounterConcurrent(t *testing.T) {
	t0 := clock.NewFake(time.Unix(1_700_000_000, 0)).Now()
	var r RateCounter
	const workers, each = 8, 1000
	done := make(chan struct{})
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range each {
				at := t0
				if i >= each/2 {
					at = t0.Add(1500 * time.Millisecond) // the next period
				}
				r.Add(at)
			}
		}()
	}
	for range workers {
		<-done
	}
	if got := r.prev.Load() + r.curr.Load(); got != workers*each {
		t.Errorf("previous %d + current %d = %d, want %d", r.prev.Load(), r.curr.Load(), got, workers*each)
	}
	if got, want := r.start.Load(), t0.Add(time.Second).UnixMilli(); got != want {
		t.Errorf("period from %d, want %d", got, want)
	}
}
