package memtrim

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"
)

func TestCollectOnGrowth(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	for _, tc := range []struct {
		name   string
		env    map[string]string
		wantGC int // GOGC after the call
	}{
		{name: "defaults", wantGC: -1},
		{name: "GOGC set", env: map[string]string{"GOGC": "50"}, wantGC: 100},
		{name: "GOMEMLIMIT set", env: map[string]string{"GOMEMLIMIT": "1GiB"}, wantGC: 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			CollectOnGrowth(8<<20, func(k string) string { return tc.env[k] })
			gc := debug.SetGCPercent(100)
			limit := debug.SetMemoryLimit(math.MaxInt64)
			if gc != tc.wantGC {
				t.Errorf("GOGC after CollectOnGrowth = %d, want %d", gc, tc.wantGC)
			}
			switch {
			case tc.wantGC == -1 && (limit < 8<<20 || limit > 1<<30):
				t.Errorf("memory limit = %d bytes, want the runtime's memory plus 8 MiB", limit)
			case tc.wantGC != -1 && limit != math.MaxInt64:
				t.Errorf("memory limit = %d bytes, want it left unset", limit)
			}
		})
	}
}

// TestHoldCollector: while held, GOGC is off but a forced collection ends
// with a goal under 1 GiB, where the runtime would ask for huge pages
// under its metadata for good; a lower memory limit already set stays;
// both settings come back after.
func TestHoldCollector(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(70))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	goal := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	for _, limit := range []int64{math.MaxInt64, 64 << 20} {
		debug.SetGCPercent(70)
		debug.SetMemoryLimit(limit)
		restore := holdCollector()
		percent := debug.SetGCPercent(-1)
		held := debug.SetMemoryLimit(-1)
		runtime.GC()
		if g := goal(); g >= 1<<30 {
			t.Errorf("limit %d: goal after a collection while held: %d bytes, want under 1 GiB", limit, g)
		}
		if percent != -1 || held > limit || held > 1<<30 {
			t.Errorf("limit %d: while held GOGC %d and memory limit %d, want -1 and at most %d", limit, percent, held, min(limit, 1<<30))
		}
		restore()
		if p, l := debug.SetGCPercent(70), debug.SetMemoryLimit(-1); p != 70 || l != limit {
			t.Errorf("after: GOGC %d and memory limit %d, want 70 and %d", p, l, limit)
		}
	}
}

// TestAfterEachGC: f runs after each collection, and no more once ctx is
// done.
func TestAfterEachGC(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	afterEachGC(ctx, func() { calls.Add(1) })
	for i := range int32(3) {
		runtime.GC()
		// The cleanup runs on its own goroutine after the collection.
		for end := time.Now().Add(10 * time.Second); calls.Load() <= i; time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("after collection %d, f ran %d times, want %d", i+1, calls.Load(), i+1)
			}
		}
	}
	cancel()
	n := calls.Load()
	for range 3 {
		runtime.GC()
	}
	time.Sleep(50 * time.Millisecond)
	if got := calls.Load(); got != n {
		t.Errorf("f ran %d more times after ctx ended, want none", got-n)
	}
}

// TestQuietGate: a collection passes when it comes at least gap after the
// one before it, whether or not that one passed.
func TestQuietGate(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	g := quietGate{gap: 5 * time.Second, prev: t0}
	steps := []struct {
		after time.Duration // since t0
		want  bool
	}{
		{after: 1 * time.Second, want: false}, // soon after the start
		{after: 7 * time.Second, want: true},  // 6 s later
		{after: 7500 * time.Millisecond, want: false},
		{after: 12 * time.Second, want: false}, // 4.5 s after the last, though 5 after the last passed
		{after: 17 * time.Second, want: true},
		{after: 17 * time.Second, want: false},
		{after: 140 * time.Second, want: true}, // the runtime's two-minute collection at rest
	}
	for i, s := range steps {
		if got := g.pass(t0.Add(s.after)); got != s.want {
			t.Errorf("step %d, collection at +%v after one at +%v: pass = %v, want %v", i, s.after, g.prev.Sub(t0), got, s.want)
		}
	}
}

// TestAfterQuietGC: with collections closer than gap f never runs; with
// each one gap after the last, it runs after each.
func TestAfterQuietGC(t *testing.T) {
	for _, tc := range []struct {
		name string
		step time.Duration // the clock's advance at each reading
		want bool
	}{
		{name: "under load", step: time.Second, want: false},
		{name: "at rest", step: time.Minute, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var ticks atomic.Int64
			now := func() time.Time { return time.Unix(0, 0).Add(time.Duration(ticks.Add(1)) * tc.step) }
			var calls atomic.Int32
			seen := make(chan struct{}, 16)
			afterQuietGC(ctx, 10*time.Second, now, func() { calls.Add(1) })
			afterEachGC(ctx, func() { seen <- struct{}{} }) // tells when a collection's cleanups run
			for range 3 {
				runtime.GC()
				select {
				case <-seen:
				case <-time.After(10 * time.Second):
					t.Fatal("no cleanup ran within 10 s of a collection")
				}
			}
			time.Sleep(50 * time.Millisecond)
			// A collection of the runtime's own may come between: at rest
			// that is one call more.
			if got := calls.Load(); tc.want && got < 3 {
				t.Errorf("f ran %d times after 3 collections at rest, want 3 or more", got)
			} else if !tc.want && got != 0 {
				t.Errorf("f ran %d times after 3 collections under load, want none", got)
			}
		})
	}
}
