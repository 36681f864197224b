package memtrim

import (
	"math"
	"runtime/debug"
	"testing"
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
