package memidle

import (
	"context"
	"log/slog"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/memtrim"
)

// Defaults of Options.
const (
	DefaultPeriod = time.Second
	DefaultBusy   = 2 << 20 // bytes allocated in one period
	DefaultQuiet  = 3       // periods
	DefaultGap    = 10      // periods
)

// Options configure Run.
type Options struct {
	Clock clock.Clock // default clock.Real
	// Period is how often the bytes allocated are read (DefaultPeriod).
	Period time.Duration
	// Busy is how many bytes allocated in one period count as work
	// (DefaultBusy); at rest the agents and the controller allocate a
	// few hundred kB a second.
	Busy uint64
	// Quiet is how many periods without work after some work Run waits
	// before it trims (DefaultQuiet).
	Quiet int
	// Gap is how many periods at least lie between two trims
	// (DefaultGap): a trim maps nothing back, but it collects the heap
	// and every page the process runs afterwards faults back in.
	Gap int
	// Allocated returns the bytes allocated since the process started;
	// default the Go runtime's /gc/heap/allocs:bytes.
	Allocated func() uint64
	// Trim gives the memory back; default memtrim.AfterStart (the freed
	// heap to the kernel, the executable's pages out of the page tables).
	Trim func() error
	// Live returns the live heap after the trim's collection, and Limit
	// the soft memory limit (math.MaxInt64: none); defaults: the Go
	// runtime's. Run warns when the live heap is over half the limit.
	Live  func() uint64
	Limit func() int64
	// Work, if set, receives when a burst of work ended that allocated
	// too little per period to count (a VRRP engine's paced gratuitous
	// ARPs after a takeover, whose garbage and freed queue are still
	// to give back): it counts as work, so the trim follows Quiet
	// periods later.
	Work   <-chan struct{}
	Logger *slog.Logger
}

// State is what step remembers between periods.
type State struct {
	Busy  bool // work was seen since the last trim
	Quiet int  // periods without work since then
	Since int  // periods since the last trim
}

// worked is s after work that Run was told of (Options.Work).
func (s State) worked() State {
	s.Busy, s.Quiet = true, 0
	return s
}

// step is one period with delta bytes allocated: it returns the next state
// and whether to trim now.
func step(s State, delta uint64, o Options) (State, bool) {
	s.Since++
	if delta >= o.Busy {
		s.Busy, s.Quiet = true, 0
		return s, false
	}
	if !s.Busy {
		return s, false
	}
	s.Quiet++
	if s.Quiet >= o.Quiet && s.Since >= o.Gap {
		return State{}, true
	}
	return s, false
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Period <= 0 {
		o.Period = DefaultPeriod
	}
	if o.Busy == 0 {
		o.Busy = DefaultBusy
	}
	if o.Quiet <= 0 {
		o.Quiet = DefaultQuiet
	}
	if o.Gap <= 0 {
		o.Gap = DefaultGap
	}
	if o.Allocated == nil {
		o.Allocated = allocated
	}
	if o.Trim == nil {
		o.Trim = memtrim.AfterStart
	}
	if o.Live == nil {
		o.Live = func() uint64 { return sample("/gc/heap/live:bytes") }
	}
	if o.Limit == nil {
		o.Limit = func() int64 { return debug.SetMemoryLimit(-1) }
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Run trims once after each burst of work, when Quiet periods in a row
// allocated less than Busy bytes each and Gap periods have passed since
// the last trim, until ctx ends. Its own start counts as a trim: the
// command trims once started (memtrim), and Run takes the bursts after. A
// process at rest is not trimmed again, so the pages it runs stay mapped.
func Run(ctx context.Context, o Options) {
	o = o.withDefaults()
	var s State
	warned := false
	last := o.Allocated()
	t := o.Clock.NewTimer(o.Period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.Work:
			s = s.worked()
			continue
		case <-t.C():
		}
		now := o.Allocated()
		var trim bool
		s, trim = step(s, now-last, o)
		if trim {
			if err := o.Trim(); err != nil {
				o.Logger.Debug("giving back the memory of a burst of work", "err", err)
			}
			if live, limit := o.Live(), o.Limit(); overHalf(live, limit) && !warned {
				o.Logger.Warn("the live heap is over half the memory limit: the collector runs often near the limit; raise --memory-limit",
					"live_bytes", live, "limit_bytes", limit)
				warned = true
			} else if !overHalf(live, limit) {
				warned = false
			}
			// What the trim itself allocated is not work.
			now = o.Allocated()
		}
		last = now
		t.Reset(o.Period)
	}
}

// overHalf reports whether live is over half a set limit.
func overHalf(live uint64, limit int64) bool {
	return limit > 0 && limit != math.MaxInt64 && live > uint64(limit)/2
}

// allocated is the Go runtime's count of bytes allocated on the heap.
func allocated() uint64 { return sample("/gc/heap/allocs:bytes") }

// sample reads one of the Go runtime's counters; 0 when it has none.
func sample(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
