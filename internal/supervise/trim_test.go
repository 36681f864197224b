package supervise

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestPagesDroppedAgainWhenReady: the supervisor drops its executable's
// pages once its child started, and again when the child says it is
// ready (what the wait and the ready pipe mapped back in between); a
// child that never says so gets the first drop only.
func TestPagesDroppedAgainWhenReady(t *testing.T) {
	var drops atomic.Int32
	defer func(f func() (uintptr, error)) { dropExecutablePages = f }(dropExecutablePages)
	dropExecutablePages = func() (uintptr, error) { drops.Add(1); return 0, nil }

	for _, c := range []struct {
		name  string
		ready bool
		want  int32
	}{
		{"says it is ready", true, 2},
		{"never says it is ready", false, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			drops.Store(0)
			started := filepath.Join(t.TempDir(), "started")
			script := "touch " + started + "; "
			if c.ready {
				script += "sleep 0.3; " + `eval "echo x >&$` + EnvHUPReady + `"; `
			}
			script += "while :; do sleep 0.05; done"
			s := &Supervisor{Path: "/bin/sh", Args: []string{"-c", script}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), StopTimeout: 2 * time.Second}
			runSupervisor(t, s)
			for end := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				_, err := os.Stat(started)
				if err == nil && drops.Load() >= c.want {
					break
				}
				if time.Now().After(end) {
					t.Fatalf("%d drops of the executable's pages within 20 s, want %d", drops.Load(), c.want)
				}
			}
			time.Sleep(time.Second) // the ready child's signal came 0.3 s after its start
			if got := drops.Load(); got != c.want {
				t.Errorf("%d drops of the executable's pages, want %d", got, c.want)
			}
		})
	}
}

// TestChildEnv: each child gets ChildEnv beside the supervisor's
// environment.
func TestChildEnv(t *testing.T) {
	t.Setenv("VIPSTACK_TEST_KEEP", "kept")
	out := filepath.Join(t.TempDir(), "env")
	script := `echo "$GOGC $` + EnvStartGC + ` $VIPSTACK_TEST_KEEP" > ` + out + `.tmp; mv ` + out + `.tmp ` + out + `; while :; do sleep 0.05; done`
	s := &Supervisor{Path: "/bin/sh", Args: []string{"-c", script}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		StopTimeout: 2 * time.Second, ChildEnv: Spec{StartGC: 5, gcEnv: true}.childEnv()}
	runSupervisor(t, s)
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(out)
		if err == nil {
			if got, want := string(b), "5 1 kept\n"; got != want {
				t.Errorf("the child's GOGC, mark and other variable: %q, want %q", got, want)
			}
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the child wrote no %s within 20 s", out)
		}
	}
}
