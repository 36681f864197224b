package memtrim

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
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
