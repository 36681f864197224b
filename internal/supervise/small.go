package supervise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// EnvSupervisor, in a vipstack process's environment, makes that process
// the supervisor of the command in its own arguments while the binary
// initialises, before the packages only that command uses (package
// supervise/early). Its value is a Spec in JSON; ExecSupervisor sets it.
const EnvSupervisor = "VIPSTACK_SUPERVISOR"

// EnvCleanup marks the short-lived process that such a supervisor runs
// after its child died: the command in its arguments releases what the
// child held, as an in-process supervisor's OnCrash does, and exits
// (IsCleanup).
const EnvCleanup = "VIPSTACK_CRASH_CLEANUP"

// cleanupTimeout bounds a clean-up process; it is killed after that.
const cleanupTimeout = 30 * time.Second

// Spec is what a supervisor started through EnvSupervisor takes from the
// command that started it: how that command logs, and what it holds.
type Spec struct {
	LogFormat string   `json:"logFormat"`          // text or json
	LogLevel  string   `json:"logLevel"`           // debug, info, warn or error
	LogAttrs  []string `json:"logAttrs,omitempty"` // key, value, ...
	// KeepFD, when over 2, is a descriptor the command opened that the
	// supervisor keeps open for its whole life, passed through the exec
	// (vipstack ipfailover's claim of its pool's name); its children do
	// not inherit it.
	KeepFD int `json:"keepFD,omitempty"`
}

// IsCleanup reports whether this process is the clean-up after a crash
// that a supervisor started through EnvSupervisor runs.
func IsCleanup() bool { return os.Getenv(EnvCleanup) != "" }

// ExecSupervisor replaces this process, keeping its pid, by its own
// executable run again with the same arguments as a supervisor
// (RunFromEnv): one that never initialised the packages the command uses,
// nor read its configuration. It returns only when that failed.
func ExecSupervisor(spec Spec) error {
	if _, err := spec.logger(io.Discard); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find my own executable: %w", err)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	if spec.KeepFD > 2 {
		// Go opens every descriptor close-on-exec.
		if _, err := unix.FcntlInt(uintptr(spec.KeepFD), unix.F_SETFD, 0); err != nil {
			return fmt.Errorf("keep descriptor %d open through the exec: %w", spec.KeepFD, err)
		}
	}
	env := append(os.Environ(), EnvSupervisor+"="+string(b))
	err = syscall.Exec(self, os.Args, env) // returns only when it failed
	if spec.KeepFD > 2 {
		syscall.CloseOnExec(spec.KeepFD)
	}
	if err != nil {
		return fmt.Errorf("exec %s: %w", self, err)
	}
	return nil
}

// RunFromEnv is the supervisor ExecSupervisor asked for: it runs
// `SELF ARGS...` (this process's own arguments) as its child until SIGTERM
// or SIGINT, and after each crash runs the same command with EnvCleanup
// set before it starts a new child. ok is false, and nothing happens, when
// this process is not such a supervisor.
func RunFromEnv() (code int, ok bool) {
	v, set := os.LookupEnv(EnvSupervisor)
	if !set || IsChild() || IsCleanup() {
		return 0, false
	}
	os.Unsetenv(EnvSupervisor) // not for the child nor the clean-up
	var spec Spec
	if err := json.Unmarshal([]byte(v), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "vipstack: %s=%q: %v\n", EnvSupervisor, v, err)
		return 1, true
	}
	log, err := spec.logger(os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "vipstack: %s: %v\n", EnvSupervisor, err)
		return 1, true
	}
	if spec.KeepFD > 2 {
		// Held until this process ends; not for the engine nor the
		// clean-up.
		if _, err := unix.FcntlInt(uintptr(spec.KeepFD), unix.F_GETFD, 0); err != nil {
			log.Error("supervisor: the descriptor to keep is not open", "fd", spec.KeepFD, "err", err)
			return 1, true
		}
		syscall.CloseOnExec(spec.KeepFD)
	}
	self, err := os.Executable()
	if err != nil {
		log.Error("supervisor: cannot find my own executable", "err", err)
		return 1, true
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	args := os.Args[1:]
	s := &Supervisor{Path: self, Args: args, Log: log, OnCrash: func() { cleanUp(self, args, log) }}
	return s.Run(ctx), true
}

// cleanUp runs `self ARGS...` with EnvCleanup set and waits for it, at
// most cleanupTimeout.
func cleanUp(self string, args []string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), EnvCleanup+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		log.Error("supervisor: releasing what the engine held failed", "err", err)
	}
}

// logger is the logger spec describes, on w.
func (s Spec) logger(w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s.LogLevel)); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", s.LogLevel)
	}
	if len(s.LogAttrs)%2 != 0 {
		return nil, errors.New("log attributes: want key, value pairs")
	}
	o := &slog.HandlerOptions{Level: l}
	var h slog.Handler
	switch s.LogFormat {
	case "text":
		h = slog.NewTextHandler(w, o)
	case "json":
		h = slog.NewJSONHandler(w, o)
	default:
		return nil, fmt.Errorf("log format %q: want text or json", s.LogFormat)
	}
	attrs := make([]any, len(s.LogAttrs))
	for i, a := range s.LogAttrs {
		attrs[i] = a
	}
	return slog.New(h).With(attrs...), nil
}
