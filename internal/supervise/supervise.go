package supervise

// The small supervisor runs this from the initialisation, and every
// package a package imports is initialised before it: only light ones
// here (no fmt, log/slog, os/exec, x/sys/unix, runtime/debug, not even
// strings: see text.go; docs/design/memory.md).
import (
	"context"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/memtrim/pages"
)

// EnvChild marks the child process; its value is the supervisor's PID.
const EnvChild = "VIPSTACK_SUPERVISED"

// ExitConfig is the exit status of a child that refuses its configuration
// (flags, variables, or what they ask of the node): the supervisor exits
// with it instead of starting the child again.
const ExitConfig = 2

// Headroom is how much a supervisor's memory may grow after its start
// before the Go collector runs (memtrim.CollectOnGrowth in a Settle; the
// small supervisor's GOMEMLIMIT, see ExecSupervisor).
const Headroom = 8 << 20

// A Go program ends on SIGHUP until it asks for the signal (the commands
// do once their configuration is read), and a child killed that way is a
// crash, restarted after a back-off: bench/chaos saw a reload land 13 ms
// after a restart and the engine die of it, and under load 938 ms after.
// So a SIGHUP for a child is held until the child says it takes the signal
// (HUPReady, through the descriptor EnvHUPReady names), or, for a child
// that never says so (an older binary), until hupHold after its start.
var hupHold = 30 * time.Second

// EnvHUPReady names, in a supervised child's environment, the descriptor
// on which the child writes one byte once it handles SIGHUP (HUPReady).
const EnvHUPReady = "VIPSTACK_HUP_READY_FD"

// HUPReady tells this process's supervisor, if it has one, that SIGHUP is
// now handled (call it after signal.Notify for SIGHUP), ends
// CatchHUPEarly's catch, and reports whether a SIGHUP arrived during that
// catch: the caller then reloads once, as it may have read its
// configuration before the change the signal announced. Later calls, and
// calls in a process without a supervisor, tell nothing.
func HUPReady() (early bool) {
	early = endEarlyHUP()
	v := os.Getenv(EnvHUPReady)
	if v == "" {
		return early
	}
	os.Unsetenv(EnvHUPReady) // not for the children it starts
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return early
	}
	f := os.NewFile(uintptr(fd), "hup-ready")
	_, _ = f.Write([]byte{1})
	_ = f.Close()
	return early
}

// hupReadyPipe is a pipe for a child to say it handles SIGHUP on: the
// child gets w (at descriptor 3, which EnvHUPReady names); after the
// start, watch closes the supervisor's copy of w and returns a channel
// closed when the child wrote or exited.
func hupReadyPipe() (w *os.File, watch func() <-chan struct{}, err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	return w, func() <-chan struct{} {
		w.Close()
		ready := make(chan struct{})
		go func() {
			defer close(ready)
			defer r.Close()
			_, _ = r.Read(make([]byte, 1)) // a byte, or EOF when the child is gone
		}()
		return ready
	}, nil
}

// startProcess starts path with args (without argv[0]) and env, its
// standard input /dev/null, its output and errors this process's, extra
// (if not nil) at descriptor 3, and deathSig sent to it when this process
// dies.
func startProcess(path string, args, env []string, extra *os.File, deathSig syscall.Signal) (*os.Process, error) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer null.Close()
	files := []*os.File{null, os.Stdout, os.Stderr}
	if extra != nil {
		files = append(files, extra)
	}
	return os.StartProcess(path, append([]string{path}, args...), &os.ProcAttr{
		Env: env, Files: files, Sys: &syscall.SysProcAttr{Pdeathsig: deathSig}})
}

// withEnv is env with each of kvs ("KEY=value") set, replacing any entry
// of the same key (a process reads the first of duplicates).
func withEnv(env []string, kvs ...string) []string {
	out := make([]string, 0, len(env)+len(kvs))
	for _, e := range env {
		k, _, _ := cut(e, '=')
		keep := true
		for _, kv := range kvs {
			if kk, _, _ := cut(kv, '='); kk == k {
				keep = false
			}
		}
		if keep {
			out = append(out, e)
		}
	}
	return append(out, kvs...)
}

// waited is what os.Process.Wait returned.
type waited struct {
	ps  *os.ProcessState
	err error
}

// IsChild reports whether this process runs under a supervisor.
func IsChild() bool { return os.Getenv(EnvChild) != "" }

// Supervisor runs one child command.
type Supervisor struct {
	Path string   // executable
	Args []string // arguments, without argv[0]
	Log  Logger   // a *slog.Logger, or the small supervisor's lineLogger
	// OnCrash runs right after the child died without being asked to (a
	// signal or a non-zero exit), before any restart. It releases what the
	// child held.
	OnCrash func()
	// StopTimeout bounds how long a stopping child may take before it is
	// killed (and OnCrash runs). Default 10 s.
	StopTimeout time.Duration
	// MaxBackoff caps the delay between restarts. Default 30 s.
	MaxBackoff time.Duration
	// Reap makes the supervisor reap every other process that becomes its
	// child (see reaper). It always does when it is process 1, the only
	// process orphans are handed to unless another is a subreaper.
	Reap bool
	// ChildEnv are KEY=value entries set in each child's environment
	// beside this process's (not in a clean-up's).
	ChildEnv []string
	// Settle, if set, runs once, after the first child started and the
	// wait for it began, before the supervisor drops the pages of its
	// executable: it gives back the start-up's heap and sets the collector
	// for a process that from then on only waits (memtrim.Settle). Nil
	// (the small supervisor, which cannot import runtime/debug) runs no
	// collection: one would free the start-up's garbage but not give it
	// back to the kernel (its collector is off, see ExecSupervisor, so
	// the scavenger keeps the pages), and its own bookkeeping (mark bits,
	// work buffers, a worker's stack) stayed resident: 1.4 MiB anonymous
	// without it, 1.7 with it (docs/design/memory.md).
	Settle func()
}

// Run starts the child and keeps it running until ctx is done (or SIGTERM /
// SIGINT arrives), forwarding SIGHUP. It returns the exit code to use.
func (s *Supervisor) Run(ctx context.Context) int {
	if s.StopTimeout == 0 {
		s.StopTimeout = 10 * time.Second
	}
	if s.MaxBackoff == 0 {
		s.MaxBackoff = 30 * time.Second
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	endEarlyHUP() // the child reads its configuration when it starts

	r := &reaper{log: s.Log}
	if s.Reap || os.Getpid() == 1 {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { defer close(done); r.run(stop) }()
		defer func() { close(stop); <-done }()
	}

	backoff := time.Second
	trimmed := false
	for {
		started := time.Now()
		w, watchReady, err := hupReadyPipe()
		var proc *os.Process
		if err == nil {
			env := withEnv(os.Environ(), append([]string{EnvChild + "=" + strconv.Itoa(os.Getpid()), EnvHUPReady + "=3"}, s.ChildEnv...)...)
			err = r.start(func() (int, error) {
				// If the supervisor itself dies, the engine stops gracefully.
				p, err := startProcess(s.Path, s.Args, env, w, syscall.SIGTERM)
				if err != nil {
					w.Close()
					return 0, err
				}
				proc = p
				return p.Pid, nil
			})
		}
		if err != nil {
			s.Log.Error("supervisor: cannot start the engine", "err", err)
			return 1
		}
		s.Log.Info("supervisor: engine started", "pid", proc.Pid)
		done := make(chan waited, 1)
		go func() {
			ps, err := proc.Wait()
			done <- waited{ps, err}
		}()
		if !trimmed {
			trimmed = true
			s.trim()
		}

		stopping := false
		ready := watchReady()
		var heldHUP <-chan time.Time // a SIGHUP held until the child is ready, at most hupHold after the start
		held := false
		var end waited
	wait:
		for {
			select {
			case end = <-done:
				break wait
			case <-ready:
				ready = nil
				// The child's start-up is over, and so is what the
				// supervisor ran alongside it (the wait, the pipe): drop
				// the pages those mapped back since the first trim.
				s.dropPages()
				if held {
					held, heldHUP = false, nil
					_ = proc.Signal(syscall.SIGHUP)
				}
			case <-heldHUP:
				held, heldHUP = false, nil
				_ = proc.Signal(syscall.SIGHUP)
			case sig := <-sigs:
				if sig == syscall.SIGHUP {
					if ready != nil {
						if !held {
							held, heldHUP = true, time.After(max(hupHold-time.Since(started), 0))
						}
						continue
					}
					_ = proc.Signal(syscall.SIGHUP)
					continue
				}
				stopping = true
				_ = proc.Signal(syscall.SIGTERM)
				select {
				case end = <-done:
				case <-time.After(s.StopTimeout):
					s.Log.Error("supervisor: engine did not stop in time; killing it", "timeout", s.StopTimeout)
					_ = proc.Kill()
					end = <-done
				}
				break wait
			case <-ctx.Done():
				stopping = true
				_ = proc.Signal(syscall.SIGTERM)
				select {
				case end = <-done:
				case <-time.After(s.StopTimeout):
					_ = proc.Kill()
					end = <-done
				}
				break wait
			}
		}
		code := exitCode(end.ps, end.err)
		if stopping && code == 0 {
			return 0
		}
		if code == 0 {
			// The engine exited on its own and cleanly: nothing to release.
			return 0
		}
		if code == ExitConfig && !stopping {
			// A configuration the engine refuses: starting it again would
			// fail the same way, in a loop that hides the error behind a
			// running process.
			s.Log.Error("supervisor: the engine refused its configuration; not restarting it", "pid", proc.Pid, "status", describe(end.ps, end.err))
			if s.OnCrash != nil {
				s.OnCrash() // it should hold nothing; make sure
			}
			return ExitConfig
		}
		s.Log.Error("supervisor: engine died; releasing what it held", "pid", proc.Pid, "status", describe(end.ps, end.err))
		if s.OnCrash != nil {
			s.OnCrash()
		}
		if stopping {
			return 1
		}
		if time.Since(started) > 2*s.MaxBackoff {
			backoff = time.Second
		}
		s.Log.Info("supervisor: restarting the engine", "in", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return 1
		case sig := <-sigs:
			if sig != syscall.SIGHUP {
				return 1
			}
		}
		backoff = min(2*backoff, s.MaxBackoff)
	}
}

// trim gives back what the supervisor's start-up touched (every linked
// package's initialisation, the configuration the command checked): from
// here it only waits. Last, once it has logged and its first wait runs,
// so that the pages those touch once go too (internal/memtrim). The
// pages mapped back while the child starts (the wait, the ready pipe:
// 1.1 MiB of 2.5 with 1,000 VRRP instances) are dropped again when the
// child says it is ready.
func (s *Supervisor) trim() {
	runtime.Gosched() // the wait starts
	if s.Settle != nil {
		s.Settle()
	}
	s.dropPages()
}

// dropExecutablePages is pages.Executable; tests count the calls.
var dropExecutablePages = pages.Executable

// dropPages drops this process's page-table entries for its executable's
// read-only mappings (internal/memtrim/pages).
func (s *Supervisor) dropPages() {
	if _, err := dropExecutablePages(); err != nil {
		s.Log.Debug("supervisor: giving back the executable's pages", "err", err)
	}
}

// exitCode is the exit code a shell would give for a child that ended
// as ps says: its exit status, or 128 plus the signal that killed it; 1
// when waiting for it failed.
func exitCode(ps *os.ProcessState, err error) int {
	if err != nil || ps == nil {
		return 1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// describe says how a child ended, for the log: "exit status 3", or
// "killed by SIGKILL" (the signal's name; its String is a description).
func describe(ps *os.ProcessState, err error) string {
	switch {
	case err != nil:
		return err.Error()
	case ps == nil:
		return "not waited for"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by " + signalName(ws.Signal())
	}
	return "exit status " + strconv.Itoa(ps.ExitCode())
}

// signalName is a signal's name, "SIGKILL"; "signal N" for one without
// a name (real-time signals).
func signalName(sig syscall.Signal) string {
	for _, n := range []struct {
		sig  syscall.Signal
		name string
	}{
		{syscall.SIGHUP, "SIGHUP"}, {syscall.SIGINT, "SIGINT"}, {syscall.SIGQUIT, "SIGQUIT"}, {syscall.SIGILL, "SIGILL"},
		{syscall.SIGTRAP, "SIGTRAP"}, {syscall.SIGABRT, "SIGABRT"}, {syscall.SIGBUS, "SIGBUS"}, {syscall.SIGFPE, "SIGFPE"},
		{syscall.SIGKILL, "SIGKILL"}, {syscall.SIGUSR1, "SIGUSR1"}, {syscall.SIGSEGV, "SIGSEGV"}, {syscall.SIGUSR2, "SIGUSR2"},
		{syscall.SIGPIPE, "SIGPIPE"}, {syscall.SIGALRM, "SIGALRM"}, {syscall.SIGTERM, "SIGTERM"}, {syscall.SIGSTKFLT, "SIGSTKFLT"},
		{syscall.SIGCHLD, "SIGCHLD"}, {syscall.SIGCONT, "SIGCONT"}, {syscall.SIGSTOP, "SIGSTOP"}, {syscall.SIGTSTP, "SIGTSTP"},
		{syscall.SIGTTIN, "SIGTTIN"}, {syscall.SIGTTOU, "SIGTTOU"}, {syscall.SIGURG, "SIGURG"}, {syscall.SIGXCPU, "SIGXCPU"},
		{syscall.SIGXFSZ, "SIGXFSZ"}, {syscall.SIGVTALRM, "SIGVTALRM"}, {syscall.SIGPROF, "SIGPROF"}, {syscall.SIGWINCH, "SIGWINCH"},
		{syscall.SIGIO, "SIGIO"}, {syscall.SIGPWR, "SIGPWR"}, {syscall.SIGSYS, "SIGSYS"},
	} {
		if n.sig == sig {
			return n.name
		}
	}
	return "signal " + strconv.Itoa(int(sig))
}
