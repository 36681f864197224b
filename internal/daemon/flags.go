package daemon

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/vipstack/vipstack/internal/logfmt"
	"github.com/vipstack/vipstack/internal/supervise"
)

// ParseNoArgs parses args with fs and refuses arguments after the flags;
// false means exit with code: 0 after -h or --help (the flag package
// printed the flags), 2 on a bad flag or argument (it, or the flag
// package, said why).
func ParseNoArgs(fs *flag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		return ParseExit(err), false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return 2, false
	}
	return 0, true
}

// ParseExit is the exit code after flag.FlagSet.Parse failed with err: 0
// when help was asked for (the flags were printed, as asked), 2 for a bad
// flag.
func ParseExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

// LogFlags are the --log-level and --log-format every long-running
// subcommand has.
type LogFlags struct {
	Command string // "vipstack vrrp"
	Value   *string
	Format  *string
}

// AddLogFlags adds --log-level and --log-format to fs; help "" says what
// the level sets.
func AddLogFlags(fs *flag.FlagSet, command, help string) *LogFlags {
	if help == "" {
		help = "debug, info, warn or error"
	}
	return &LogFlags{Command: command, Value: fs.String("log-level", "info", help),
		Format: fs.String("log-format", "text", "text (key=value, slog's text form) or json (one object a line, for Loki, Elastic, OpenShift logging)")}
}

// Spec is how a supervisor started through supervise.ExecSupervisor logs:
// as these flags' logger with attrs (key, value, ...).
func (f *LogFlags) Spec(attrs ...string) supervise.Spec {
	return supervise.Spec{LogFormat: *f.Format, LogLevel: *f.Value, LogAttrs: attrs}
}

// Level parses the level; on a bad value it tells stderr what is accepted.
func (f *LogFlags) Level(stderr io.Writer) (slog.Level, bool) {
	l, err := logfmt.ParseLevel(*f.Value)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --log-level %v\n", f.Command, err)
		return l, false
	}
	return l, true
}

// Logger is a logger on stderr at the flags' level, in their format.
func (f *LogFlags) Logger(stderr io.Writer) (*slog.Logger, bool) {
	l, ok := f.Level(stderr)
	if !ok {
		return nil, false
	}
	h, err := logfmt.NewHandler(stderr, *f.Format, l)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --log-format %v\n", f.Command, err)
		return nil, false
	}
	return slog.New(h), true
}

// RequireLoopback rejects listen addresses that are not on loopback.
func RequireLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return errors.New("the status endpoint listens on loopback only (127.0.0.1:PORT or [::1]:PORT)")
	}
	return nil
}
