package memtrim

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/vipstack/vipstack/internal/memtrim/pages"
	"github.com/vipstack/vipstack/internal/sched"
)

// Executable drops this process's page-table entries for the read-only
// mappings of its executable (MADV_DONTNEED). The pages stay in the page
// cache; those the process uses again are mapped back on first touch, so
// its resident set becomes what it runs from then on, not everything the
// initialisation of every linked package touched once. It returns the
// bytes of address space released (not all of it was resident).
func Executable() (uintptr, error) {
	return pages.Executable()
}

// PagesSingly reports whether the pages Executable drops come back one at
// a time when touched again (pages.NoFaultAround: Linux 6.7 and a
// userfaultfd the seccomp profile allows), and if not, why: they then
// come back with the 64 KiB around each.
func PagesSingly() error {
	return pages.NoFaultAround(nil)
}

// AfterStart collects the garbage of the start-up and returns it to the
// kernel at once (debug.FreeOSMemory) rather than after the scavenger's
// minutes, then calls Executable: in that order, so that the pages the
// collection itself touched (type descriptors of the live heap, stack
// maps) go too. A process at a realtime policy does both on a thread at
// SCHED_OTHER (sched.OffRealtime).
func AfterStart() error {
	var err error
	// Milliseconds of work without a blocking call: off realtime
	// scheduling, where RLIMIT_RTTIME would kill the process for it.
	sched.OffRealtime(func() {
		// No collection starts meanwhile but the one asked for: it
		// would have to stop this goroutine, and realtime threads
		// waiting for one at SCHED_OTHER can keep it off the CPU
		// (docs/design/realtime.md).
		defer holdCollector()()
		debug.FreeOSMemory()
		_, err = Executable()
	})
	return err
}

// AfterCollections drops the executable's pages again, as Executable does,
// right after each collection, until ctx is done. A collection reads, all
// over the executable, the type descriptors of the larger live objects
// and the stack maps of every goroutine's frames, and so maps back pages
// the process does not otherwise use at rest. They stay in the page
// cache: the next collection maps them from there without reading the
// disk. It fails only when the executable's mappings cannot be read.
func AfterCollections(ctx context.Context) error {
	ms, err := pages.Droppable()
	if err != nil {
		return err
	}
	afterEachGC(ctx, func() { _, _ = pages.Drop(ms) })
	return nil
}

// AfterQuietCollections is AfterCollections for a process that serves
// traffic (vipstack lb): after a collection that came at least gap after
// the one before, as collections at rest do, it drops the executable's
// read-only data and pclntab, where the collection read type descriptors
// and stack maps. The text stays mapped: it is what the process runs,
// and its next request would fault it back. While collections follow
// each other under load nothing is dropped: each drop would be paid again
// in page faults on the requests' path. now is the clock the gaps are
// measured with.
func AfterQuietCollections(ctx context.Context, gap time.Duration, now func() time.Time) error {
	ms, err := pages.Droppable()
	if err != nil {
		return err
	}
	data := pages.NotExecutable(ms)
	afterQuietGC(ctx, gap, now, func() { _, _ = pages.Drop(data) })
	return nil
}
