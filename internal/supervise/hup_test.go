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

// TestHUPHeldAtStart: a SIGHUP that arrives while the child has not yet
// asked for it (here: a shell that traps HUP only after 300 ms) is held
// until hupHold after the start, so the child reloads instead of dying of
// it and being restarted as a crash.
func TestHUPHeldAtStart(t *testing.T) {
	dir := t.TempDir()
	started, got := filepath.Join(dir, "started"), filepath.Join(dir, "hup")
	script := "touch " + started + "; sleep 0.3; trap 'echo hup >> " + got + "' HUP; while :; do sleep 0.05; done"
	var crashes atomic.Int32
	s := &Supervisor{Path: "/bin/sh", Args: []string{"-c", script}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnCrash: func() { crashes.Add(1) }, StopTimeout: 2 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	wait := func(what string, ok func() bool) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s: not within 10 s (crashes: %d)", what, crashes.Load())
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
	if n := crashes.Load(); n != 0 {
		t.Errorf("the child crashed %d times; want the SIGHUP held until it traps it", n)
	}
}
