package memtrim

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
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

// Settle is for a supervisor that from now on only waits for its child:
// the start-up's garbage goes back to the kernel at once
// (debug.FreeOSMemory), and the collector runs only once the runtime's
// memory grew by headroom (CollectOnGrowth).
func Settle(headroom uint64, env func(string) string) {
	debug.FreeOSMemory()
	CollectOnGrowth(headroom, env)
}

// holdCollector keeps the collector from starting a cycle of its own until
// the returned func is called (the one a caller forces still runs), then
// restores its settings: GOGC off, under a memory limit 256 MiB above what
// the runtime holds (or the one set, if lower). GOGC off alone leaves the
// collector without a goal, and a cycle that ends with a goal over 1 GiB
// has the runtime ask for huge pages under its heap index and page
// allocator's metadata for the rest of the process's life
// (runtime.minHeapForMetadataHugePages): the kernel then backs the few
// entries a small heap uses with 2 MiB pages, 2 MiB or more resident
// (docs/design/memory.md).
func holdCollector() (restore func()) {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	limit := debug.SetMemoryLimit(-1) // reads it
	if s[0].Value.Kind() == metrics.KindUint64 {
		debug.SetMemoryLimit(min(limit, int64(s[0].Value.Uint64())+256<<20))
	}
	percent := debug.SetGCPercent(-1)
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}

// afterEachGC calls f after each collection until ctx is done, on the
// goroutine that runs cleanups (runtime.AddCleanup): each call arms the
// next on a new object, which the next collection finds unreachable. It
// arms before calling f, so a collection that follows f's effects (as
// the next one a test waits for does) always finds the new object.
func afterEachGC(ctx context.Context, f func()) {
	var arm func()
	arm = func() {
		runtime.AddCleanup(new(sentinel), func(struct{}) {
			if ctx.Err() != nil {
				return
			}
			arm()
			f()
		}, struct{}{})
	}
	arm()
}

// sentinel is what afterEachGC watches; the pointer keeps it out of the
// tiny allocator, whose objects may share a block and never be freed.
type sentinel struct{ _ *byte }

// LowerGC sets the collector's GOGC to percent, unless GOGC or GOMEMLIMIT
// is set in the environment: for a process whose heap at rest is mostly
// what its start-up left and which then allocates little, where the
// default 100 keeps up to twice that heap resident for little gain.
func LowerGC(percent int, env func(string) string) {
	if env("GOGC") != "" || env("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(percent)
}

// afterQuietGC calls f after each collection that came at rest (at least
// gap after the one before, by now), until ctx is done.
func afterQuietGC(ctx context.Context, gap time.Duration, now func() time.Time, f func()) {
	g := &quietGate{gap: gap, prev: now()}
	var mu sync.Mutex // cleanups may run concurrently
	afterEachGC(ctx, func() {
		mu.Lock()
		quiet := g.pass(now())
		mu.Unlock()
		if quiet {
			f()
		}
	})
}

// quietGate decides, collection by collection, which ones come at rest:
// at least gap after the one before (or after the gate was made). A
// process under load collects several times a second; one at rest
// collects when its few allocations add up, or when the runtime forces
// it every two minutes.
type quietGate struct {
	gap  time.Duration
	prev time.Time
}

// pass reports whether a collection at now came at rest, and remembers it.
func (q *quietGate) pass(now time.Time) bool {
	quiet := now.Sub(q.prev) >= q.gap
	q.prev = now
	return quiet
}
