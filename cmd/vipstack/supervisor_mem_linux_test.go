package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/supervise"
)

// TestTrimHelperProcess is the supervisor of TestSupervisorIsSmall, this
// test binary run again (it links and initialises every package vipstack
// does), and, run again by that supervisor, its engine, which only waits
// for SIGTERM.
func TestTrimHelperProcess(t *testing.T) {
	if os.Getenv("VIPSTACK_TRIM_HELPER") == "" {
		t.Skip("helper process for TestSupervisorIsSmall")
	}
	if supervise.IsChild() {
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		fmt.Printf("engine ready pid=%d\n", os.Getpid())
		<-term
		os.Exit(0)
	}
	s := &supervise.Supervisor{Path: os.Args[0], Args: []string{"-test.run=^TestTrimHelperProcess$"},
		Log: slog.New(slog.NewTextHandler(os.Stdout, nil))}
	os.Exit(s.Run(context.Background()))
}

// TestSupervisorIsSmall: the supervisor gives back what its start-up
// touched once the engine runs (internal/memtrim), so it keeps resident at
// most a third of the executable pages its engine, the same binary through
// the same start-up, does. Without the trim the two are about equal (the
// soak saw a supervisor at 74 MiB RSS).
func TestSupervisorIsSmall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestTrimHelperProcess$")
	cmd.Env = append(os.Environ(), "VIPSTACK_TRIM_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // the supervisor stops its engine
		_ = cmd.Wait()
	}()
	var started, ready bool
	var lines []string
	sc := bufio.NewScanner(out)
	for !(started && ready) && sc.Scan() {
		lines = append(lines, sc.Text())
		started = started || strings.Contains(sc.Text(), "supervisor: engine started")
		ready = ready || strings.HasPrefix(sc.Text(), "engine ready pid=")
	}
	if !started || !ready {
		t.Fatalf("the helper did not report its engine started and ready:\n%s", strings.Join(lines, "\n"))
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	engine := 0
	for _, l := range lines {
		fmt.Sscanf(l, "engine ready pid=%d", &engine)
	}
	sup := exeResident(t, cmd.Process.Pid, exe)
	eng := exeResident(t, engine, exe)
	t.Logf("executable pages resident: supervisor %d kB, engine %d kB", sup, eng)
	if eng == 0 || 3*sup > eng {
		t.Errorf("supervisor keeps %d kB of the executable resident, want at most a third of the engine's %d kB", sup, eng)
	}
}

// exeResident sums the resident kB of process pid's mappings of exe.
func exeResident(t *testing.T, pid int, exe string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps")
	if err != nil {
		t.Fatal(err)
	}
	kb, in := 0, false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 6 && strings.Contains(f[0], "-"):
			in = strings.Join(f[5:], " ") == exe
		case in && len(f) >= 2 && f[0] == "Rss:":
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			kb += n
		}
	}
	return kb
}
