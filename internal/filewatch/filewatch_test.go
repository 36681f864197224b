package filewatch

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestWatch steps the watcher on a fake clock through edits of the file
// and checks, after each check of the file, how many changes it reported
// and what it logged.
func TestWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := time.Unix(1_700_000_000, 0)
	var changes atomic.Int32
	var logs syncbuf.Buffer
	clk := clock.NewFake(base)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Watch(ctx, clk, path, time.Second, func() { changes.Add(1) }, slog.New(slog.NewTextHandler(&logs, nil)))
	}()
	defer func() { cancel(); <-done }()

	steps := []struct {
		name        string
		edit        func() error
		wantChanges int32
		wantLog     string
	}{
		{name: "unchanged", edit: func() error { return nil }, wantChanges: 0},
		{name: "size changes", edit: func() error { return os.WriteFile(path, []byte("two!"), 0o644) }, wantChanges: 1},
		{name: "same size, new mtime", edit: func() error {
			if err := os.WriteFile(path, []byte("tw0!"), 0o644); err != nil {
				return err
			}
			return os.Chtimes(path, base, base.Add(time.Hour))
		}, wantChanges: 2},
		{name: "removed: logged, not a change", edit: func() error { return os.Remove(path) }, wantChanges: 2,
			wantLog: "configuration file unreadable; keeping the running configuration"},
		{name: "still missing: logged once", edit: func() error { return nil }, wantChanges: 2},
		{name: "back: a change", edit: func() error { return os.WriteFile(path, []byte("three"), 0o644) }, wantChanges: 3},
	}
	for i, s := range steps {
		// The watcher arms its next timer once it is done with a check.
		testutil.Eventually(t, 10*time.Second, func() error {
			if clk.Pending() != 1 {
				return fmt.Errorf("step %q: waiting for the watcher's timer", s.name)
			}
			return nil
		})
		if err := s.edit(); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		testutil.Eventually(t, 10*time.Second, func() error {
			if clk.Pending() != 1 {
				return fmt.Errorf("step %q: waiting for the check", s.name)
			}
			return nil
		})
		if got := changes.Load(); got != s.wantChanges {
			t.Fatalf("step %d %q: %d changes; want %d", i, s.name, got, s.wantChanges)
		}
		if s.wantLog != "" && !strings.Contains(logs.String(), s.wantLog) {
			t.Fatalf("step %d %q: log lacks %q:\n%s", i, s.name, s.wantLog, logs.String())
		}
	}
	if n := strings.Count(logs.String(), "unreadable"); n != 1 {
		t.Errorf("logged the unreadable file %d times; want once:\n%s", n, logs.String())
	}
}
