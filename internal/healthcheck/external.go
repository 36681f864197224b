package healthcheck

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// External check statuses, haproxy's for `option external-check`.
const (
	PROCOK   = "PROCOK"   // the program exited 0
	PROCERR  = "PROCERR"  // it exited with another status, or was killed
	PROCTOUT = "PROCTOUT" // it ran past the check's timeout (and was sent SIGTERM)
)

// External is haproxy 2.6's `option external-check`: it runs Command
// with Args in the environment Env gives (and no other), and passes when
// the program exits 0. Command is looked up, as execvp looks it up, in
// the PATH of that environment when it has no '/'. A program still
// running when ctx ends gets SIGTERM, as haproxy sends, and the result is
// PROCTOUT; Code is the exit status (-1 when a signal ended it).
// Its output goes nowhere.
type External struct {
	Command string
	Args    []string
	// Env is called at each run (HAPROXY_SERVER_CURCONN changes); nil:
	// an empty environment.
	Env func() []string
}

// killGrace is how long a program may take to exit after SIGTERM before
// it is killed (haproxy sends nothing more; vipstack does not leave a
// check's goroutine waiting on it).
const killGrace = 5 * time.Second

// Probe runs the program once.
func (p External) Probe(ctx context.Context) Result {
	var env []string
	if p.Env != nil {
		env = p.Env()
	}
	path, err := lookExec(p.Command, env)
	if err != nil {
		return Result{Status: PROCERR, Code: 255, Info: err.Error()}
	}
	cmd := exec.Command(path, p.Args...)
	cmd.Args[0] = p.Command
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	if err := cmd.Start(); err != nil {
		return Result{Status: PROCERR, Code: 255, Info: err.Error()}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return exitResult(cmd, err)
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(killGrace):
			_ = cmd.Process.Kill()
			<-done
		}
		return Result{Status: PROCTOUT, Info: "killed (SIGTERM) after the check's timeout"}
	}
}

func exitResult(cmd *exec.Cmd, err error) Result {
	st, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case err == nil:
		return Result{OK: true, Status: PROCOK}
	case st.Signaled():
		return Result{Status: PROCERR, Code: -1, Info: "killed by " + st.Signal().String()}
	default:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return Result{Status: PROCERR, Code: ee.ExitCode(), Info: err.Error()}
		}
		return Result{Status: PROCERR, Code: 255, Info: err.Error()}
	}
}

// lookExec finds command as execvp does with env's PATH: a name with a
// '/' as it is, else the first executable file of that name in PATH's
// directories (an empty entry is the working directory).
func lookExec(command string, env []string) (string, error) {
	if strings.Contains(command, "/") {
		return command, nil
	}
	pathVar := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, dir := range filepath.SplitList(pathVar) {
		if dir == "" {
			dir = "."
		}
		f := filepath.Join(dir, command)
		if fi, err := os.Stat(f); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return f, nil
		}
	}
	return "", &exec.Error{Name: command, Err: exec.ErrNotFound}
}

// IsExternal reports whether status is an external check's.
func IsExternal(status string) bool {
	return status == PROCOK || status == PROCERR || status == PROCTOUT
}
