package memtrim

import (
	"runtime/debug"
	"runtime/metrics"
)

// CollectOnGrowth is for a process that has finished starting and from
// then on allocates little (the supervisor): the collector no longer runs
// on the heap's growth ratio nor every two minutes (GOGC off), only when
// the Go runtime's memory grows by headroom bytes beyond what it holds now
// (a soft memory limit). A periodic collection would mark the whole heap
// the initialisation left, touching type descriptors all over the
// executable and mapping back the pages Executable dropped. A GOGC or
// GOMEMLIMIT set in the environment is left as it is.
func CollectOnGrowth(headroom uint64, env func(string) string) {
	if env("GOGC") != "" || env("GOMEMLIMIT") != "" {
		return
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return // not this runtime's metrics: keep the defaults
	}
	held := s[0].Value.Uint64() - s[1].Value.Uint64()
	debug.SetMemoryLimit(int64(held + headroom))
	debug.SetGCPercent(-1)
}
