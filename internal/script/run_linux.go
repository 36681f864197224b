package script

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// outputDrain bounds how long Run keeps reading output after the script
// exited, for when a background child it left still holds the pipe open.
const outputDrain = 100 * time.Millisecond

// Run runs argv and waits for it, at most timeout (0 or less: no timeout of
// its own, only ctx). env entries ("KEY=value") are added to the minimal
// environment PATH=DefaultPath and override it; a bare argv[0] is searched in
// the resulting PATH. Under Security.Enforce the script is checked (see
// Security.Check) before every run and refused if insecure.
//
// On timeout or cancellation the script's process group gets SIGTERM, then
// SIGKILL after KillGrace if the script is still there; once the script is
// gone its process group is SIGKILLed in any case, so nothing it started
// survives.
func (r Runner) Run(ctx context.Context, argv []string, timeout time.Duration, env []string) Result {
	res := Result{ExitCode: -1}
	runCtx, cancel := context.WithCancel(ctx)
	if timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()

	cmd, err := r.command(runCtx, argv, nil, env)
	if err != nil {
		res.Err = err
		return res
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		res.Err = fmt.Errorf("script %q: output pipe: %w", argv[0], err)
		return res
	}
	defer pr.Close()
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = r.killGrace()

	err = r.start(cmd)
	pw.Close()
	if err != nil {
		res.Err = startError(fmt.Sprintf("script %q", argv[0]), cmd, err)
		return res
	}
	out := make(chan string, 1)
	go func() { out <- readCapped(pr, OutputLimit) }()

	waitErr := cmd.Wait()
	if runCtx.Err() != nil {
		// The leader is gone (SIGTERM, or SIGKILL after WaitDelay); make
		// sure the rest of its group is too, as keepalived does.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	_ = pr.SetReadDeadline(time.Now().Add(outputDrain))
	res.Output = <-out

	switch {
	case ctx.Err() != nil:
		res.Err = fmt.Errorf("script %q: %w", argv[0], context.Cause(ctx))
	case runCtx.Err() != nil:
		res.TimedOut = true
	}
	ps := cmd.ProcessState
	if ps == nil {
		if res.Err == nil {
			res.Err = fmt.Errorf("script %q: wait: %w", argv[0], waitErr)
		}
		return res
	}
	ws := ps.Sys().(syscall.WaitStatus)
	switch {
	case ws.Exited():
		res.ExitCode = ws.ExitStatus()
	case ws.Signaled():
		res.Signal = ws.Signal().String()
	}
	return res
}

// Notify starts argv with extra appended (for keepalived's notify script:
// "INSTANCE"|"GROUP", name, state, priority) and does not wait for it; a
// goroutine reaps it. Output goes to /dev/null. It returns an error only if
// the script could not be started.
func (r Runner) Notify(argv []string, extra ...string) error {
	cmd, err := r.command(context.Background(), argv, extra, nil)
	if err != nil {
		return err
	}
	if err := r.start(cmd); err != nil {
		return startError(fmt.Sprintf("notify script %q", argv[0]), cmd, err)
	}
	go func() { _ = cmd.Wait() }()
	return nil
}

// command builds the exec.Cmd for argv: resolved and checked under
// r.Security, in its own process group, as the script user, with SIGTERM on
// vipstack's death, stdin from /dev/null and a minimal environment.
func (r Runner) command(ctx context.Context, argv, extra, env []string) (*exec.Cmd, error) {
	childEnv := append([]string{"PATH=" + DefaultPath}, env...)
	path, id, err := r.Security.resolve(argv, envPath(childEnv))
	if err != nil {
		return nil, err
	}
	args := append(append([]string{}, argv[1:]...), extra...)
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = childEnv
	cmd.Dir = "/"
	attr := &syscall.SysProcAttr{
		Setpgid: true,
		// keepalived sets PR_SET_PDEATHSIG to SIGTERM. Go delivers it when
		// the OS thread that started the child exits, which only happens
		// if a goroutine exits while locked to its thread; vipstack's
		// namespace helpers unlock before returning.
		Pdeathsig: syscall.SIGTERM,
	}
	if int(id.UID) != os.Geteuid() || int(id.GID) != os.Getegid() {
		// Groups is empty: supplementary groups are dropped, as keepalived.
		attr.Credential = &syscall.Credential{Uid: id.UID, Gid: id.GID}
	}
	cmd.SysProcAttr = attr
	return cmd, nil
}

// startError explains a failed start. When the script was to run as
// another user and the kernel refused (EPERM), the cause is almost always
// that vipstack runs without CAP_SETUID and CAP_SETGID (docs/security.md:
// the VRRP engine needs only NET_ADMIN, NET_RAW and NET_BIND_SERVICE
// otherwise), so the error says so.
func startError(what string, cmd *exec.Cmd, err error) error {
	if c := cmd.SysProcAttr.Credential; c != nil && errors.Is(err, syscall.EPERM) {
		return fmt.Errorf("%s: start as script_user uid:gid %d:%d: %w; switching to another user needs CAP_SETUID and CAP_SETGID: grant them, or set script_user to the user vipstack runs as",
			what, c.Uid, c.Gid, err)
	}
	return fmt.Errorf("%s: start: %w", what, err)
}

// envPath returns the last PATH in env, which is the one exec gives the
// child.
func envPath(env []string) string {
	p := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			p = v
		}
	}
	return p
}

// readCapped keeps the first limit bytes of r and discards the rest until
// EOF or a read error (the drain deadline).
func readCapped(r io.Reader, limit int) string {
	var b strings.Builder
	_, _ = io.Copy(&b, io.LimitReader(r, int64(limit)))
	_, err := io.Copy(io.Discard, r)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, os.ErrClosed) {
		fmt.Fprintf(&b, "\n[output read error: %v]", err)
	}
	return b.String()
}
