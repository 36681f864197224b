package memidle

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestStep(t *testing.T) {
	o := Options{Busy: 100, Quiet: 3, Gap: 6}
	tests := []struct {
		name   string
		deltas []uint64
		want   []bool // trim after each period
	}{
		{name: "at rest: never", deltas: []uint64{0, 10, 99, 0, 0, 0}, want: []bool{false, false, false, false, false, false}},
		{name: "a burst, then quiet", deltas: []uint64{500, 500, 0, 0, 0, 0, 0}, want: []bool{false, false, false, false, true, false, false}},
		{name: "work again before the quiet periods end", deltas: []uint64{500, 0, 0, 100, 0, 0, 0}, want: []bool{false, false, false, false, false, false, true}},
		{name: "two bursts, two trims", deltas: []uint64{100, 0, 0, 0, 0, 0, 0, 200, 0, 0, 0},
			want: []bool{false, false, false, true, false, false, false, false, false, false, true}},
		{name: "the second burst's trim waits for the gap", deltas: []uint64{100, 0, 0, 0, 200, 0, 0, 0, 0, 0, 0},
			want: []bool{false, false, false, true, false, false, false, false, false, true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := State{Since: o.Gap} // as Run starts
			var got []bool
			for _, d := range tt.deltas {
				var trim bool
				s, trim = step(s, d, o)
				got = append(got, trim)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("trims (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRun drives Run in a synctest bubble: the allocation counter moves
// as a burst would, and the trim comes Quiet periods after its end, once;
// a failing trim does not stop Run.
func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu    sync.Mutex
			alloc uint64
			trims []time.Duration
		)
		start := time.Now()
		o := Options{Period: time.Second, Busy: 1000, Quiet: 2, Gap: 1,
			Allocated: func() uint64 { mu.Lock(); defer mu.Unlock(); return alloc },
			Trim: func() error {
				mu.Lock()
				defer mu.Unlock()
				trims = append(trims, time.Since(start))
				alloc += 5000 // the trim's own allocation is not work
				return errors.New("not this time")
			}}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); Run(ctx, o) }()
		work := func(bytes uint64) {
			mu.Lock()
			alloc += bytes
			mu.Unlock()
		}
		// Periods end at 1 s, 2 s, ...: work in the first three.
		for range 3 {
			time.Sleep(500 * time.Millisecond)
			work(4000)
			time.Sleep(500 * time.Millisecond)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		mu.Lock()
		got := append([]time.Duration(nil), trims...)
		mu.Unlock()
		cancel()
		<-done
		if diff := cmp.Diff([]time.Duration{5 * time.Second}, got); diff != "" {
			t.Errorf("trims at (-want +got):\n%s", diff)
		}
	})
}

func TestOverHalf(t *testing.T) {
	tests := []struct {
		live  uint64
		limit int64
		want  bool
	}{
		{live: 10 << 20, limit: 40 << 20},
		{live: 20 << 20, limit: 40 << 20},
		{live: 20<<20 + 1, limit: 40 << 20, want: true},
		{live: 1 << 30, limit: math.MaxInt64},
		{live: 1 << 30, limit: 0},
	}
	for _, tt := range tests {
		if got := overHalf(tt.live, tt.limit); got != tt.want {
			t.Errorf("overHalf(%d, %d) = %v, want %v", tt.live, tt.limit, got, tt.want)
		}
	}
}

// TestRunWork: work Run is told of (Options.Work) counts as work though
// it allocated nothing: the trim follows Quiet periods after it, once.
func TestRunWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu    sync.Mutex
			trims []time.Duration
		)
		start := time.Now()
		work := make(chan struct{}, 1)
		o := Options{Period: time.Second, Busy: 1000, Quiet: 2, Gap: 1, Work: work,
			Allocated: func() uint64 { return 0 },
			Trim: func() error {
				mu.Lock()
				defer mu.Unlock()
				trims = append(trims, time.Since(start))
				return nil
			}}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); Run(ctx, o) }()
		time.Sleep(1500 * time.Millisecond)
		work <- struct{}{}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		mu.Lock()
		got := append([]time.Duration(nil), trims...)
		mu.Unlock()
		cancel()
		<-done
		// Periods end at 1 s, 2 s, ...: quiet at 2 s and 3 s.
		if diff := cmp.Diff([]time.Duration{3 * time.Second}, got); diff != "" {
			t.Errorf("trims at (-want +got):\n%s", diff)
		}
	})
}
