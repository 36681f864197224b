package daemon

import (
	"runtime"
	"testing"
)

// TestHeapSamplingAtRest: a process at rest stops sampling its heap unless
// it serves profiles (--pprof-addr), whose heap profile needs the samples.
func TestHeapSamplingAtRest(t *testing.T) {
	const rate = 512 * 1024
	saved := runtime.MemProfileRate
	t.Cleanup(func() { runtime.MemProfileRate = saved })
	for _, tc := range []struct {
		name     string
		profiles bool
		want     int
	}{
		{name: "no profiles served", profiles: false, want: 0},
		{name: "--pprof-addr given", profiles: true, want: rate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.MemProfileRate = rate
			HeapSamplingAtRest(tc.profiles)
			if got := runtime.MemProfileRate; got != tc.want {
				t.Errorf("MemProfileRate %d after HeapSamplingAtRest(%v), want %d", got, tc.profiles, tc.want)
			}
		})
	}
}

// TestOneProcessor: one processor unless $GOMAXPROCS sets the number,
// which is left as the runtime read it.
func TestOneProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	unset := func(string) string { return "" }
	runtime.GOMAXPROCS(3)
	if got := OneProcessor(unset); got != 1 || runtime.GOMAXPROCS(0) != 1 {
		t.Errorf("$GOMAXPROCS unset: OneProcessor = %d, GOMAXPROCS %d; want 1 and 1", got, runtime.GOMAXPROCS(0))
	}
	runtime.GOMAXPROCS(3)
	set := func(k string) string {
		if k == "GOMAXPROCS" {
			return "3"
		}
		return ""
	}
	if got := OneProcessor(set); got != 3 || runtime.GOMAXPROCS(0) != 3 {
		t.Errorf("$GOMAXPROCS=3: OneProcessor = %d, GOMAXPROCS %d; want 3 and 3", got, runtime.GOMAXPROCS(0))
	}
}
