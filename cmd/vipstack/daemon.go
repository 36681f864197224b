package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/vipstack/vipstack/internal/memtrim"
	"github.com/vipstack/vipstack/internal/supervise"
)

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
	sup := &supervise.Supervisor{Path: self, Args: append([]string{sub}, args...), Log: log, OnCrash: onCrash,
		Settle: func() { memtrim.Settle(supervise.Headroom, os.Getenv) }}
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
