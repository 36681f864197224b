package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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

// parseNoArgs parses args with fs and refuses arguments after the flags;
// false means exit with code: 0 after -h or --help (the flag package
// printed the flags), 2 on a bad flag or argument (it, or the flag
// package, said why).
func parseNoArgs(fs *flag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		return parseExit(err), false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return 2, false
	}
	return 0, true
}

// parseExit is the exit code after flag.FlagSet.Parse failed with err: 0
// when help was asked for (the flags were printed, as asked), 2 for a bad
// flag.
func parseExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

// logLevelFlag is the --log-level and --log-format every long-running
// subcommand has.
type logLevelFlag struct {
	command string // "vipstack vrrp"
	value   *string
	format  *string
}

// addLogLevel adds --log-level and --log-format to fs; help "" says what
// the level sets.
func addLogLevel(fs *flag.FlagSet, command, help string) *logLevelFlag {
	if help == "" {
		help = "debug, info, warn or error"
	}
	return &logLevelFlag{command: command, value: fs.String("log-level", "info", help),
		format: fs.String("log-format", "text", "text (key=value, slog's text form) or json (one object a line, for Loki, Elastic, OpenShift logging)")}
}

// spec is how a supervisor started through supervise.ExecSupervisor logs:
// as this flag's logger with attrs (key, value, ...).
func (f *logLevelFlag) spec(attrs ...string) supervise.Spec {
	return supervise.Spec{LogFormat: *f.format, LogLevel: *f.value, LogAttrs: attrs}
}

// level parses the flag; on a bad value it tells stderr what is accepted.
func (f *logLevelFlag) level(stderr io.Writer) (slog.Level, bool) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(*f.value)); err != nil {
		fmt.Fprintf(stderr, "%s: --log-level %q: want debug, info, warn or error\n", f.command, *f.value)
		return l, false
	}
	return l, true
}

// logger is a logger on stderr at the flag's level, in the flag's format.
func (f *logLevelFlag) logger(stderr io.Writer) (*slog.Logger, bool) {
	l, ok := f.level(stderr)
	if !ok {
		return nil, false
	}
	o := &slog.HandlerOptions{Level: l}
	switch *f.format {
	case "text":
		return slog.New(slog.NewTextHandler(stderr, o)), true
	case "json":
		return slog.New(slog.NewJSONHandler(stderr, o)), true
	}
	fmt.Fprintf(stderr, "%s: --log-format %q: want text or json\n", f.command, *f.format)
	return nil, false
}

// superviseSelf runs `vipstack SUB ARGS...` again as the child of a
// supervisor (internal/supervise) that calls onCrash when the child dies
// without being asked to, unless noSuper is set or this process is that
// child: then ran is false and the caller goes on in this process. With
// noSuper it warns when nothing else would clean up after a crash.
func superviseSelf(ctx context.Context, log *slog.Logger, stderr io.Writer, sub string, args []string, noSuper bool, onCrash func()) (code int, ran bool) {
	if noSuper {
		if w := supervise.NoSupervisorWarning(os.Getpid()); w != "" {
			log.Warn(w)
		}
		return 0, false
	}
	if !supervising(noSuper) {
		return 0, false
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "vipstack %s: cannot find my own executable for the supervisor: %v\n", sub, err)
		return 1, true
	}
	sup := &supervise.Supervisor{Path: self, Args: append([]string{sub}, args...), Log: log, OnCrash: onCrash}
	return sup.Run(ctx), true
}

// execSmallSupervisor replaces this process by the small supervisor of
// the same command (supervise.ExecSupervisor): it runs before the
// packages the command uses initialise (docs/design/memory.md). held, if
// not nil, is a claim the supervisor must hold for its life (its
// descriptor passes through the exec). It returns only when it could
// not; this process then supervises instead.
func execSmallSupervisor(log *slog.Logger, spec supervise.Spec, held io.Closer) {
	if held != nil {
		f, ok := held.(interface{ File() (*os.File, error) })
		if !ok {
			log.Warn("supervisor: no descriptor to pass on; supervising from this process")
			return
		}
		file, err := f.File()
		if err != nil {
			log.Warn("supervisor: cannot pass on what it holds; supervising from this process", "err", err)
			return
		}
		defer file.Close()
		spec.KeepFD = int(file.Fd())
	}
	if err := supervise.ExecSupervisor(spec); err != nil {
		log.Warn("supervisor: cannot run as a small process; supervising from this one", "err", err)
	}
}

// supervising reports whether superviseSelf will make this process the
// supervisor: then it serves nothing itself, and what the command built
// only to check its configuration should be dropped before, so that the
// supervisor does not keep it for its whole life.
func supervising(noSuper bool) bool { return !noSuper && !supervise.IsChild() }

// atRestGC is the GOGC of a command that serves at rest for long once
// started: its heap is then mostly what the start-up left.
const atRestGC = 50

// trimAtRest gives back the pages and the garbage of the start-up
// (internal/memtrim) once ready is closed, for a command that then serves
// at rest for long (vipstack node, agent, controller, ipfailover, vrrp): its
// collector then runs at GOGC atRestGC, and the executable pages each
// collection maps back are dropped again after it
// (memtrim.AfterCollections). Unless profiles are served (--pprof-addr),
// the heap profiler stops sampling (heapSamplingAtRest). Nothing happens
// if ctx ends first.
func trimAtRest(ctx context.Context, log *slog.Logger, ready <-chan struct{}, profiles bool) {
	go func() {
		select {
		case <-ready:
		case <-ctx.Done():
			return
		}
		heapSamplingAtRest(profiles)
		memtrim.LowerGC(atRestGC, os.Getenv)
		trimNow(log)
		if err := memtrim.AfterCollections(ctx); err != nil {
			log.Debug("giving back the pages collections map", "err", err)
		}
	}()
}

// heapSamplingAtRest turns the heap profiler off for a process at rest
// that serves no profiles. It samples an allocation every 512 KiB and
// unwinds its stack, reading the stack maps (pclntab) of every frame:
// at rest, with the executable's pages dropped after each collection,
// each sample maps back whole page-cache folios all over the binary.
// With 1,000 VRRP instances (allocating about 0.7 MB/s at rest) the
// engine's read-only executable pages stood at 4-8 MiB between
// collections with it, 1.5-4.5 without (docs/design/memory.md). What was
// sampled during the start-up stays in the profile nobody reads.
func heapSamplingAtRest(profiles bool) {
	if !profiles {
		runtime.MemProfileRate = 0
	}
}

// settleAtRest is trimAtRest for an engine whose start-up goes on after
// ready (its VRRP instances take over and announce, twice), and whose
// later bursts (takeovers, reloads) leave garbage too: each burst is given
// back once over (memidle: a few quiet seconds after it). announced
// receives when an instance's announcements are over
// (engine.Options.Announced): paced, they allocate too little to count as
// work, and their queue and garbage stayed with the process (2.5-4.5 MiB
// of freed heap not returned per ipfailover engine at 10,000 VIPs).
func settleAtRest(ctx context.Context, log *slog.Logger, ready <-chan struct{}, profiles bool, announced <-chan struct{}) {
	trimAtRest(ctx, log, ready, profiles)
	go func() {
		select {
		case <-ready:
		case <-ctx.Done():
			return
		}
		memidle.Run(ctx, memidle.Options{Logger: log, Work: announced})
	}()
}

// quietGap is how far apart collections of a serving command (vipstack
// lb) must come for the second to count as one at rest, after which the
// executable's pages it mapped are dropped: under load the collections
// of the loop engine follow each other within a second.
const quietGap = 5 * time.Second

// trimServing is trimNow for a command that serves traffic (vipstack lb),
// and from then on drops the executable's read-only data and pclntab
// after each collection at rest (memtrim.AfterQuietCollections): the
// first collection after the trim otherwise maps back 3.4-5.7 MiB of type
// descriptors and stack maps (docs/design/memory.md), held while the
// balancer idles. Under load they stay mapped. It stops when ctx ends.
func trimServing(ctx context.Context, log *slog.Logger) {
	trimNow(log)
	if err := memtrim.AfterQuietCollections(ctx, quietGap, time.Now); err != nil {
		log.Debug("giving back the pages collections at rest map", "err", err)
	}
}

// trimNow gives back the pages and the garbage of the start-up
// (internal/memtrim) of a command whose start-up is over.
func trimNow(log *slog.Logger) {
	if err := memtrim.AfterStart(); err != nil {
		log.Debug("giving back the start-up's pages", "err", err)
	}
}

// notifyReload asks for the reload signals on c, then tells the
// supervisor, if any, that SIGHUP no longer ends this process
// (supervise.HUPReady): it holds a SIGHUP for a new child until then.
func notifyReload(c chan<- os.Signal, sigs ...os.Signal) {
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
