package lbcli

import (
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lbstats "github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestSocketsFollowReloads: Prepare opens new addresses only, Abort
// closes them and leaves the running set as it was, Commit serves them,
// changes levels and modes in place and closes the addresses dropped.
func TestSocketsFollowReloads(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.sock"), filepath.Join(dir, "b.sock")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := NewSockets(&fakeLB{admin: map[string]lbstats.AdminState{}}, "test", time.Now(), quiet)
	t.Cleanup(s.Close)
	apply := func(specs ...lbconfig.StatsSocket) {
		t.Helper()
		c, err := s.Prepare(specs)
		if err != nil {
			t.Fatal(err)
		}
		c.Commit()
	}
	unix := func(path, level string, mode uint32) lbconfig.StatsSocket {
		return lbconfig.StatsSocket{Network: "unix", Address: path, Level: level, Mode: mode}
	}

	apply(unix(a, "user", 0o600))
	if got := ask(t, a, "show cli level\n"); got != "user\n\n" {
		t.Fatalf("a: %q", got)
	}
	if fi, err := os.Stat(a); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("a's mode: %v %v, want 0600", fi.Mode(), err)
	}

	// A reload that adds b but is then aborted (the LB refused the new
	// configuration): b closed and gone, a as it was.
	c, err := s.Prepare([]lbconfig.StatsSocket{unix(a, "admin", 0o660), unix(b, "user", 0)})
	if err != nil {
		t.Fatal(err)
	}
	c.Abort()
	if _, err := os.Stat(b); !os.IsNotExist(err) {
		t.Errorf("b after an aborted reload: %v, want no file", err)
	}
	if got := ask(t, a, "show cli level\n"); got != "user\n\n" {
		t.Errorf("a after an aborted reload: %q, want user still", got)
	}

	// Committed: a at admin and 0660, b served.
	apply(unix(a, "admin", 0o660), unix(b, "operator", 0))
	if got := ask(t, a, "show cli level\n"); got != "admin\n\n" {
		t.Errorf("a after the reload: %q, want admin", got)
	}
	if fi, err := os.Stat(a); err != nil || fi.Mode().Perm() != 0o660 {
		t.Errorf("a's mode after the reload: %v %v, want 0660", fi.Mode(), err)
	}
	if got := ask(t, b, "show cli level\n"); got != "operator\n\n" {
		t.Errorf("b: %q, want operator", got)
	}

	// A reload without a: its socket closes and its file goes.
	apply(unix(b, "operator", 0))
	if _, err := net.Dial("unix", a); err == nil {
		t.Error("a still answers after the reload that dropped it")
	}
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Errorf("a's file after it was dropped: %v, want none", err)
	}
}

func TestListenRefuses(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	// A live socket another process (here: another listener) answers on.
	live := filepath.Join(dir, "live.sock")
	ln, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	// A regular file.
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A stale socket file: its listener is gone.
	stale := filepath.Join(dir, "stale.sock")
	sl, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	sl.(*net.UnixListener).SetUnlinkOnClose(false)
	sl.Close()

	s := NewSockets(&fakeLB{admin: map[string]lbstats.AdminState{}}, "test", time.Now(), quiet)
	t.Cleanup(s.Close)
	for _, tt := range []struct {
		path, want string
	}{
		{live, "another process answers on it"},
		{file, "the path exists and is not a socket"},
		{filepath.Join(dir, "no", "such", "dir.sock"), "no such file or directory"},
	} {
		_, err := s.Prepare([]lbconfig.StatsSocket{{Network: "unix", Address: tt.path}})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path) {
			t.Errorf("%s: %v, want an error naming it and saying %q", tt.path, err, tt.want)
		}
	}
	// Two sockets, the second refused: the first is closed again.
	first := filepath.Join(dir, "first.sock")
	if _, err := s.Prepare([]lbconfig.StatsSocket{{Network: "unix", Address: first}, {Network: "unix", Address: file}}); err == nil {
		t.Fatal("a set with a bad socket was prepared")
	}
	if _, err := os.Stat(first); !os.IsNotExist(err) {
		t.Errorf("the first socket of a refused set: %v, want no file", err)
	}
	// The stale one is replaced and served.
	c, err := s.Prepare([]lbconfig.StatsSocket{{Network: "unix", Address: stale}})
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	c.Commit()
	if got := ask(t, stale, "show version\n"); got != "test\n\n" {
		t.Errorf("the replaced stale socket answers %q", got)
	}
}
