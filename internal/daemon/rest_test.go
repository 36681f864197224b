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
