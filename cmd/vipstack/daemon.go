package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/vipstack/vipstack/internal/supervise"
)

// parseNoArgs parses args with fs and refuses arguments after the flags;
// false means exit 2 (the flag package, or it, said why).
func parseNoArgs(fs *flag.FlagSet, args []string, stderr io.Writer) bool {
	if err := fs.Parse(args); err != nil {
		return false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return false
	}
	return true
}

// logLevelFlag is the --log-level every long-running subcommand has.
type logLevelFlag struct {
	command string // "vipstack vrrp"
	value   *string
}

// addLogLevel adds --log-level to fs; help "" says what it sets.
func addLogLevel(fs *flag.FlagSet, command, help string) *logLevelFlag {
	if help == "" {
		help = "debug, info, warn or error"
	}
	return &logLevelFlag{command: command, value: fs.String("log-level", "info", help)}
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

// logger is a text logger on stderr at the flag's level.
func (f *logLevelFlag) logger(stderr io.Writer) (*slog.Logger, bool) {
	l, ok := f.level(stderr)
	if !ok {
		return nil, false
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: l})), true
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
	if supervise.IsChild() {
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
