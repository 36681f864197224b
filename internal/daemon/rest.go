package daemon

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/k8s/memidle"
	"github.com/vipstack/vipstack/internal/memtrim"
	"github.com/vipstack/vipstack/internal/supervise"
)

// AtRestGC is the GOGC of a command that serves at rest for long once
// started: its heap is then mostly what the start-up left.
const AtRestGC = 50

// StartGC is the GOGC the small supervisor starts the VRRP and ipfailover
// engines at (supervise.Spec.StartGC), until TrimAtRest sets AtRestGC.
const StartGC = 5

// TrimAtRest gives back the pages and the garbage of the start-up
// (internal/memtrim) once ready is closed, for a command that then serves
// at rest for long (vipstack node, agent, controller, ipfailover, vrrp): its
// collector then runs at GOGC AtRestGC, and the executable pages each
// collection maps back are dropped again after it
// (memtrim.AfterCollections). Unless profiles are served (--pprof-addr),
// the heap profiler stops sampling (HeapSamplingAtRest). Nothing happens
// if ctx ends first.
func TrimAtRest(ctx context.Context, log *slog.Logger, ready <-chan struct{}, profiles bool) {
	go func() {
		select {
		case <-ready:
		case <-ctx.Done():
			return
		}
		HeapSamplingAtRest(profiles)
		memtrim.LowerGC(AtRestGC, os.Getenv)
		TrimNow(log)
		if err := memtrim.AfterCollections(ctx); err != nil {
			log.Debug("giving back the pages collections map", "err", err)
		}
	}()
}

// HeapSamplingAtRest turns the heap profiler off for a process that
// serves no profiles. It samples an allocation every 512 KiB and unwinds
// its stack, reading the stack maps (pclntab) of every frame: at rest,
// with the executable's pages dropped after each collection, each sample
// maps back whole page-cache folios all over the binary. With 1,000 VRRP
// instances (allocating about 0.7 MB/s at rest) the engine's read-only
// executable pages stood at 4-8 MiB between collections with it, 1.5-4.5
// without (docs/design/memory.md). A command calls it as soon as its
// flags are read, too: the samples of its start-up, their stacks and the
// profiler's hash table stay for the process's life (0.7 MiB of the
// engine's at 1,000 instances), for a profile nobody can read.
func HeapSamplingAtRest(profiles bool) {
	if !profiles {
		runtime.MemProfileRate = 0
	}
}

// OneProcessor has this process run its Go code on one processor
// (GOMAXPROCS 1) unless $GOMAXPROCS sets the number (env reads it), and
// returns the number it runs on: for vipstack ipfailover's engine,
// whose work is one loop, as keepalived's VRRP process is one thread.
// Each processor keeps caches and a collector worker of its own: a
// second one kept 0.6 to 1.4 MiB more resident in an ipfailover engine
// at 10,000 VIPs (docs/design/memory.md). Blocking system calls still
// run on threads of their own, and the backstop of fast adverts adds the
// processors its threads need (engine.addProcs). vipstack vrrp does
// not call it: its configuration may set a realtime priority and a limit
// on a realtime thread's time without blocking, which one thread running
// all of the engine's Go code was not shown to keep clear of, for 0.2
// MiB saved at 1,000 instances (docs/design/memory.md).
func OneProcessor(env func(string) string) int {
	if env("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	return runtime.GOMAXPROCS(0)
}

// SettleAtRest is TrimAtRest for an engine whose start-up goes on after
// ready (its VRRP instances take over and announce, twice), and whose
// later bursts (takeovers, reloads) leave garbage too: each burst is given
// back once over (memidle: a few quiet seconds after it). work receives
// after bursts that allocate too little per second to count as work by
// themselves: when an instance's announcements are over
// (engine.Options.Announced; paced, their queue and garbage stayed with
// the process, 2.5-4.5 MiB of freed heap per ipfailover engine at 10,000
// VIPs), and when a scrape or a status request was answered
// (serve.Served; the collection it starts maps back the executable's
// pages that the trim dropped).
func SettleAtRest(ctx context.Context, log *slog.Logger, ready <-chan struct{}, profiles bool, work <-chan struct{}) {
	TrimAtRest(ctx, log, ready, profiles)
	go func() {
		select {
		case <-ready:
		case <-ctx.Done():
			return
		}
		memidle.Run(ctx, memidle.Options{Logger: log, Work: work})
	}()
}

// QuietGap is how far apart collections of a serving command (vipstack
// lb) must come for the second to count as one at rest, after which the
// executable's pages it mapped are dropped: under load the collections
// of the loop engine follow each other within a second.
const QuietGap = 5 * time.Second

// TrimServing is TrimNow for a command that serves traffic (vipstack lb),
// and from then on drops the executable's read-only data and pclntab
// after each collection at rest (memtrim.AfterQuietCollections): the
// first collection after the trim otherwise maps back 3.4-5.7 MiB of type
// descriptors and stack maps (docs/design/memory.md), held while the
// balancer idles. Under load they stay mapped. It stops when ctx ends.
func TrimServing(ctx context.Context, log *slog.Logger) {
	TrimNow(log)
	if err := memtrim.AfterQuietCollections(ctx, QuietGap, time.Now); err != nil {
		log.Debug("giving back the pages collections at rest map", "err", err)
	}
}

// TrimNow gives back the pages and the garbage of the start-up
// (internal/memtrim) of a command whose start-up is over.
func TrimNow(log *slog.Logger) {
	if err := memtrim.AfterStart(); err != nil {
		log.Debug("giving back the start-up's pages", "err", err)
	}
	if err := memtrim.PagesSingly(); err != nil {
		log.Debug("the executable's pages come back 64 KiB at a time", "err", err)
	}
}

// NotifyReload asks for the reload signals on c, then tells the
// supervisor, if any, that SIGHUP no longer ends this process
// (supervise.HUPReady): it holds a SIGHUP for a new child until then.
func NotifyReload(c chan<- os.Signal, sigs ...os.Signal) {
	signal.Notify(c, sigs...)
	if supervise.HUPReady() {
		// A SIGHUP came while this process started (CatchHUPEarly):
		// reload once, as it may have read what the signal changed.
		select {
		case c <- syscall.SIGHUP:
		default:
		}
	}
}
