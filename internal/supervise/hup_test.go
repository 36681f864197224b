package supervise

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// runHUP runs script under a supervisor, sends this process a SIGHUP
// once the script has touched dir/started, and waits until the script's
// HUP trap wrote dir/hup; it returns how many times the child crashed.
func runHUP(t *testing.T, script func(started, got string) string) int32 {
	t.Helper()
	dir := t.TempDir()
	started, got := filepath.Join(dir, "started"), filepath.Join(dir, "hup")
	var crashes atomic.Int32
	s := &Supervisor{Path: "/bin/sh", Args: []string{"-c", script(started, got)}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnCrash: func() { crashes.Add(1) }, StopTimeout: 2 * time.Second}
	runSupervisor(t, s)
	wait := func(what string, ok func() bool) {
		t.Helper()
		for end := time.Now().Add(20 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s: not within 20 s (crashes: %d)", what, crashes.Load())
			}
		}
	}
	wait("the child started", func() bool { _, err := os.Stat(started); return err == nil })
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	wait("the child got the SIGHUP", func() bool {
		b, _ := os.ReadFile(got)
		return strings.Contains(string(b), "hup")
	})
	return crashes.Load()
}

// runSupervisor runs s until the test ends.
func runSupervisor(t *testing.T, s *Supervisor) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// TestHUPHeldUntilReady: a SIGHUP that arrives while the child has not yet
// asked for it (a shell that traps HUP only after 1.5 s, longer than the
// old fixed hold of a second that a loaded engine outran) is held until
// the child says it is ready on the descriptor EnvHUPReady names, so the
// child reloads instead of dying of it and being restarted as a crash.
func TestHUPHeldUntilReady(t *testing.T) {
	n := runHUP(t, func(started, got string) string {
		return "touch " + started + "; sleep 1.5; trap 'echo hup >> " + got + "' HUP; " +
			`eval "echo x >&$` + EnvHUPReady + `"; while :; do sleep 0.05; done`
	})
	if n != 0 {
		t.Errorf("the child crashed %d times; want the SIGHUP held until it says it traps it", n)
	}
}

// TestHUPHeldAtStart: a child that never says it is ready (an older
// binary) gets a SIGHUP held at most hupHold after its start.
func TestHUPHeldAtStart(t *testing.T) {
	defer func(d time.Duration) { hupHold = d }(hupHold)
	hupHold = 1500 * time.Millisecond
	n := runHUP(t, func(started, got string) string {
		return "touch " + started + "; sleep 0.2; trap 'echo hup >> " + got + "' HUP; while :; do sleep 0.05; done"
	})
	if n != 0 {
		t.Errorf("the child crashed %d times; want the SIGHUP held until hupHold", n)
	}
}
