package supervise

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// EnvSupervisor, in a vipstack process's environment, makes that process
// the supervisor of the command in its own arguments while the binary
// initialises, before the packages only that command uses (package
// supervise/early). Its value is a Spec as MarshalText encodes it;
// ExecSupervisor sets it.
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
	LogFormat string   // text or json
	LogLevel  string   // debug, info, warn or error
	LogAttrs  []string // key, value, ...
	// KeepFD, when over 2, is a descriptor the command opened that the
	// supervisor keeps open for its whole life, passed through the exec
	// (vipstack ipfailover's claim of its pool's name); its children do
	// not inherit it.
	KeepFD int
	// Ledgers and Redirects are what a crash of the child leaves on the
	// node: the VIP ledgers' paths, and (vipstack node) the API VIP
	// redirects. When either is set, the clean-up process gets this
	// Spec, without KeepFD, and releases them from its initialisation
	// (package cleanup/early); otherwise the command releases what it
	// holds from main.
	Ledgers   []string
	Redirects bool
	// StartGC, when over 0, is the GOGC the child starts at, unless GOGC
	// or GOMEMLIMIT is set in the command's environment: a command whose
	// child takes it out (TakeStartGC) and sets its own once started
	// (vipstack vrrp and ipfailover: daemon.AtRestGC).
	StartGC int

	// gcEnv says that the collector settings in the supervisor's
	// environment (GOGC, GOMEMLIMIT) are ExecSupervisor's, not for its
	// children.
	gcEnv bool
	// procsEnv says the same of GOMAXPROCS.
	procsEnv bool
}

// smallHeld is about what the Go runtime of the small supervisor holds
// once its engine started (/memory/classes/total:bytes less what was
// released: 5.1-5.4 MB measured, 2026-11-30). Its GOMEMLIMIT is that plus Headroom: what
// memtrim.CollectOnGrowth would set, which it cannot call (it would
// import runtime/debug, and with it fmt).
const smallHeld = 5 << 20

// childEnv is what the small supervisor sets in its children's
// environment beside its own: the start-up's GOGC (StartGC) unless the
// user set GOGC or GOMEMLIMIT (then ExecSupervisor set neither: gcEnv).
func (s Spec) childEnv() []string {
	if s.StartGC <= 0 || !s.gcEnv {
		return nil
	}
	return []string{"GOGC=" + strconv.Itoa(s.StartGC), EnvStartGC + "=1"}
}

// EnvStartGC, in a child's environment, says that its GOGC is its
// supervisor's (Spec.StartGC) and not the user's.
const EnvStartGC = "VIPSTACK_START_GOGC"

// TakeStartGC takes out of this process's environment the GOGC its
// supervisor set for its start-up (Spec.StartGC), so that the scripts it
// runs do not inherit it and a later memtrim.LowerGC sets the collector
// at rest; the runtime read it as the process started. It reports
// whether there was one.
//
// A collection every few per cent of growth while the engine parses its
// configuration and builds its instances leaves fewer free slots among
// what it keeps: at 1,000 VRRP instances, GOGC 5 for the start-up held
// 0.3 MiB less anonymous memory at rest (docs/design/memory.md).
func TakeStartGC() bool {
	if os.Getenv(EnvStartGC) == "" {
		return false
	}
	os.Unsetenv("GOGC")
	os.Unsetenv(EnvStartGC)
	return true
}

// IsCleanup reports whether this process is the clean-up after a crash
// that a supervisor started through EnvSupervisor runs.
func IsCleanup() bool { return os.Getenv(EnvCleanup) != "" }

// releases reports whether s names what a clean-up releases.
func (s Spec) releases() bool { return len(s.Ledgers) > 0 || s.Redirects }

// cleanupAll is EnvCleanup's value for a clean-up the command does from
// main: its supervisor's Spec named nothing to release.
const cleanupAll = "1"

// CleanupSpec returns the Spec of this process when it is a clean-up
// whose supervisor named what to release (Spec.Ledgers, Spec.Redirects).
// ok is false in any other process; err says why a value is unreadable.
func CleanupSpec() (spec Spec, ok bool, err error) {
	v := os.Getenv(EnvCleanup)
	if v == "" || v == cleanupAll {
		return Spec{}, false, nil
	}
	if err := spec.UnmarshalText([]byte(v)); err != nil {
		return Spec{}, true, err
	}
	if !spec.releases() {
		return Spec{}, true, errors.New(strconv.Quote(v) + ": names nothing to release: want a ledger or redirects=true")
	}
	return spec, true, nil
}

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
		return &opError{op: "cannot find my own executable", err: err}
	}
	if spec.KeepFD > 2 {
		// Go opens every descriptor close-on-exec.
		if err := fcntl(spec.KeepFD, syscall.F_SETFD, 0); err != nil {
			return &opError{op: "keep descriptor " + strconv.Itoa(spec.KeepFD) + " open through the exec", err: err}
		}
	}
	env := os.Environ()
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		// The small supervisor allocates little: it collects when it grew
		// by Headroom, not every two minutes (each collection maps pages
		// back, see memtrim.CollectOnGrowth). GOGC or GOMEMLIMIT set by
		// the user wins, as there.
		spec.gcEnv = true
		env = withEnv(env, "GOGC=off", "GOMEMLIMIT="+strconv.Itoa(smallHeld+Headroom))
	}
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		// The supervisor only waits: one processor runs its Go code. Each
		// processor has its own caches and collector worker; a second
		// kept about 0.3 MiB more resident (bench/ipfailover's
		// supervisor, 2026-12-01). GOMAXPROCS set by the user wins.
		spec.procsEnv = true
		env = withEnv(env, "GOMAXPROCS=1")
	}
	b, err := spec.MarshalText()
	if err != nil {
		return err
	}
	env = withEnv(env, EnvSupervisor+"="+string(b))
	err = syscall.Exec(self, os.Args, env) // returns only when it failed
	if spec.KeepFD > 2 {
		syscall.CloseOnExec(spec.KeepFD)
	}
	if err != nil {
		return &os.PathError{Op: "exec", Path: self, Err: err}
	}
	return nil
}

// opError is err with what failed, as fmt.Errorf("%s: %w", op, err)
// makes it (this package does without fmt: see lineLogger).
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return e.op + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

// fcntl runs fcntl(2) on fd.
func fcntl(fd, cmd, arg int) error {
	if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), uintptr(arg)); e != 0 {
		return e
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
	if err := spec.UnmarshalText([]byte(v)); err != nil {
		os.Stderr.WriteString("vipstack: " + EnvSupervisor + "=" + strconv.Quote(v) + ": " + err.Error() + "\n")
		return 1, true
	}
	if spec.gcEnv {
		// Read by this process's runtime as it started; not for the
		// engine nor the clean-up.
		os.Unsetenv("GOGC")
		os.Unsetenv("GOMEMLIMIT")
	}
	if spec.procsEnv {
		os.Unsetenv("GOMAXPROCS") // as gcEnv's
	}
	log, err := spec.logger(os.Stderr)
	if err != nil {
		os.Stderr.WriteString("vipstack: " + EnvSupervisor + ": " + err.Error() + "\n")
		return 1, true
	}
	if spec.KeepFD > 2 {
		// Held until this process ends; not for the engine nor the
		// clean-up.
		if err := fcntl(spec.KeepFD, syscall.F_GETFD, 0); err != nil {
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
	release := cleanupAll
	if spec.releases() {
		b, err := Spec{LogFormat: spec.LogFormat, LogLevel: spec.LogLevel, LogAttrs: spec.LogAttrs, Ledgers: spec.Ledgers, Redirects: spec.Redirects}.MarshalText()
		if err != nil {
			log.Error("supervisor: cannot encode what a clean-up releases", "err", err)
			return 1, true
		}
		release = string(b)
	}
	s := &Supervisor{Path: self, Args: args, Log: log, OnCrash: func() { cleanUp(self, args, release, log) }}
	s.ChildEnv = spec.childEnv()
	return s.Run(ctx), true
}

// cleanUp runs `self ARGS...` with EnvCleanup set to release and waits
// for it, at most cleanupTimeout.
func cleanUp(self string, args []string, release string, log Logger) {
	p, err := startProcess(self, args, withEnv(os.Environ(), EnvCleanup+"="+release), nil, syscall.SIGKILL)
	if err != nil {
		log.Error("supervisor: releasing what the engine held failed", "err", err)
		return
	}
	kill := time.AfterFunc(cleanupTimeout, func() { _ = p.Kill() })
	ps, err := p.Wait()
	if !kill.Stop() && err == nil {
		err = errors.New("killed after " + cleanupTimeout.String())
	}
	if err == nil && !ps.Success() {
		err = errors.New(describe(ps, nil))
	}
	if err != nil {
		log.Error("supervisor: releasing what the engine held failed", "err", err)
	}
}

// logger is the logger spec describes, on w: the lines slog's text or
// JSON handler would print, at its level, with its attributes.
func (s Spec) logger(w io.Writer) (*lineLogger, error) {
	l, err := parseLevel(s.LogLevel)
	if err != nil {
		return nil, err
	}
	if len(s.LogAttrs)%2 != 0 {
		return nil, errors.New("log attributes: want key, value pairs")
	}
	if s.LogFormat != "text" && s.LogFormat != "json" {
		return nil, errors.New("log format " + strconv.Quote(s.LogFormat) + ": want text or json")
	}
	return &lineLogger{w: w, json: s.LogFormat == "json", level: l, attrs: s.LogAttrs, now: time.Now}, nil
}
