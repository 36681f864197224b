package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/memtrim"
)

// EnvChild marks the child process; its value is the supervisor's PID.
const EnvChild = "VIPSTACK_SUPERVISED"

// ExitConfig is the exit status of a child that refuses its configuration
// (flags, variables, or what they ask of the node): the supervisor exits
// with it instead of starting the child again.
const ExitConfig = 2

// supervisorHeadroom is how much the supervisor's memory may grow after
// its start before the Go collector runs (see memtrim.CollectOnGrowth).
const supervisorHeadroom = 8 << 20

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

// hupReadyPipe gives cmd a descriptor to say it handles SIGHUP on; after
// the start, watch closes the supervisor's copy of the writing end and
// returns a channel closed when the child wrote or exited.
func hupReadyPipe(cmd *exec.Cmd) (watch func() <-chan struct{}, err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, w)
	cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", EnvHUPReady, 2+len(cmd.ExtraFiles)))
	return func() <-chan struct{} {
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

// IsChild reports whether this process runs under a supervisor.
func IsChild() bool { return os.Getenv(EnvChild) != "" }

// Supervisor runs one child command.
type Supervisor struct {
	Path string   // executable
	Args []string // arguments, without argv[0]
	Log  *slog.Logger
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
		cmd := exec.Command(s.Path, s.Args...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", EnvChild, os.Getpid()))
		// If the supervisor itself dies, the engine stops gracefully.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		watchReady, err := hupReadyPipe(cmd)
		if err == nil {
			err = r.start(func() (int, error) {
				if err := cmd.Start(); err != nil {
					return 0, err
				}
				return cmd.Process.Pid, nil
			})
		}
		if err != nil {
			s.Log.Error("supervisor: cannot start the engine", "err", err)
			return 1
		}
		s.Log.Info("supervisor: engine started", "pid", cmd.Process.Pid)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if !trimmed {
			trimmed = true
			s.trim()
		}

		stopping := false
		ready := watchReady()
		var heldHUP <-chan time.Time // a SIGHUP held until the child is ready, at most hupHold after the start
		held := false
	wait:
		for {
			select {
			case err = <-done:
				break wait
			case <-ready:
				ready = nil
				if held {
					held, heldHUP = false, nil
					_ = cmd.Process.Signal(syscall.SIGHUP)
				}
			case <-heldHUP:
				held, heldHUP = false, nil
				_ = cmd.Process.Signal(syscall.SIGHUP)
			case sig := <-sigs:
				if sig == syscall.SIGHUP {
					if ready != nil {
						if !held {
							held, heldHUP = true, time.After(max(hupHold-time.Since(started), 0))
						}
						continue
					}
					_ = cmd.Process.Signal(syscall.SIGHUP)
					continue
				}
				stopping = true
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case err = <-done:
				case <-time.After(s.StopTimeout):
					s.Log.Error("supervisor: engine did not stop in time; killing it", "timeout", s.StopTimeout)
					_ = cmd.Process.Kill()
					err = <-done
				}
				break wait
			case <-ctx.Done():
				stopping = true
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case err = <-done:
				case <-time.After(s.StopTimeout):
					_ = cmd.Process.Kill()
					err = <-done
				}
				break wait
			}
		}
		code := exitCode(err)
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
			s.Log.Error("supervisor: the engine refused its configuration; not restarting it", "pid", cmd.Process.Pid, "status", describe(err))
			if s.OnCrash != nil {
				s.OnCrash() // it should hold nothing; make sure
			}
			return ExitConfig
		}
		s.Log.Error("supervisor: engine died; releasing what it held", "pid", cmd.Process.Pid, "status", describe(err))
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
// so that the pages those touch once go too (internal/memtrim).
func (s *Supervisor) trim() {
	runtime.Gosched() // the wait starts
	debug.FreeOSMemory()
	// A supervisor allocates little: collect when it grew, not every two
	// minutes (each collection maps pages back).
	memtrim.CollectOnGrowth(supervisorHeadroom, os.Getenv)
	if _, err := memtrim.Executable(); err != nil {
		s.Log.Debug("supervisor: giving back the start-up's pages", "err", err)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 1
}

func describe(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			// The signal's String() is its description ("killed"); the
			// log wants its name.
			if name := unix.SignalName(ws.Signal()); name != "" {
				return "killed by " + name
			}
			return fmt.Sprintf("killed by signal %d", int(ws.Signal()))
		}
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	return fmt.Sprint(err)
}
