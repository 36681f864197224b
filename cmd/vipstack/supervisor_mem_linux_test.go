package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/memtrim"
	"github.com/vipstack/vipstack/internal/procfs"
	"github.com/vipstack/vipstack/internal/supervise"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestTrimHelperProcess is the supervisor of TestSupervisorIsSmall, this
// test binary run again (it links and initialises every package vipstack
// does), and, run again by that supervisor (or by the small one of
// TestSmallSupervisorOfItself), its engine, which only waits for SIGTERM,
// and its clean-up after a crash, which says so.
func TestTrimHelperProcess(t *testing.T) {
	if os.Getenv("VIPSTACK_TRIM_HELPER") == "" {
		t.Skip("helper process for TestSupervisorIsSmall")
	}
	if supervise.IsCleanup() {
		fmt.Printf("clean-up ran pid=%d\n", os.Getpid())
		os.Exit(0)
	}
	if name := os.Getenv("VIPSTACK_CLAIM_HELPER"); name != "" && !supervise.IsChild() {
		// As vipstack ipfailover: claim a name, then become the small
		// supervisor, which must hold the claim.
		ln, err := net.Listen("unix", "@"+name)
		if err != nil {
			fmt.Printf("claim failed: %v\n", err)
			os.Exit(1)
		}
		execSmallSupervisor(slog.New(slog.NewTextHandler(os.Stdout, nil)), supervise.Spec{LogFormat: "text", LogLevel: "info"}, ln)
		fmt.Println("exec failed")
		os.Exit(1)
	}
	if supervise.IsChild() {
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		fmt.Printf("engine ready pid=%d GOGC=%q GOMEMLIMIT=%q GOMAXPROCS=%q\n", os.Getpid(), os.Getenv("GOGC"), os.Getenv("GOMEMLIMIT"), os.Getenv("GOMAXPROCS"))
		<-term
		os.Exit(0)
	}
	s := &supervise.Supervisor{Path: os.Args[0], Args: []string{"-test.run=^TestTrimHelperProcess$"},
		Log: slog.New(slog.NewTextHandler(os.Stdout, nil)), Settle: func() { memtrim.Settle(supervise.Headroom, os.Getenv) }}
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

// TestSmallSupervisorOfItself: with supervise.EnvSupervisor set, this test
// binary (which links and initialises every package vipstack does, and
// package supervise/early through package main) becomes the supervisor
// while it initialises, before the packages only its engine uses: it keeps
// a fraction of the anonymous memory its engine, the same binary fully
// initialised, does. A crash of the engine runs the clean-up process, then
// a new engine. The collector settings ExecSupervisor gives the
// supervisor (GOGC, GOMEMLIMIT) are not its engine's.
func TestSmallSupervisorOfItself(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestTrimHelperProcess$")
	cmd.Env = append(os.Environ(), "VIPSTACK_TRIM_HELPER=1", "GOGC=off", "GOMEMLIMIT=13MiB", "GOMAXPROCS=1",
		supervise.EnvSupervisor+`=format="text" level="info" gcenv=true procsenv=true`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout // the supervisor logs on stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(out)
	var lines []string
	// next reads lines until one starts with prefix and returns the pid
	// it names.
	next := func(prefix string) int {
		t.Helper()
		for sc.Scan() {
			lines = append(lines, sc.Text())
			var pid int
			if strings.HasPrefix(sc.Text(), prefix) {
				fmt.Sscanf(strings.TrimPrefix(sc.Text(), prefix), "%d", &pid)
				return pid
			}
		}
		t.Fatalf("no line %q from the helper:\n%s", prefix, strings.Join(lines, "\n"))
		return 0
	}
	engine := next("engine ready pid=")
	if l := lines[len(lines)-1]; !strings.HasSuffix(l, `GOGC="" GOMEMLIMIT="" GOMAXPROCS=""`) {
		t.Errorf("the engine has the supervisor's runtime settings: %q", l)
	}
	// The supervisor trims once its engine started, and a loaded machine
	// may take a while to run it: read both again until the supervisor
	// holds at most two thirds, for 20 s at most. Measured: 0.26 (2.1 MB
	// against 8.0) since it runs after 31 packages (39 KB of allocations,
	// TestSmallSupervisorRunsEarly); 0.45-0.51 when it ran after 198 (1.2
	// MB); one that initialised everything would hold as much as its
	// engine.
	var sup, eng int
	err = testutil.Poll(20*time.Second, func() error {
		sup, eng = procKiB(t, cmd.Process.Pid, "RssAnon"), procKiB(t, engine, "RssAnon")
		if 3*sup > 2*eng {
			return fmt.Errorf("the supervisor's anonymous RSS is %d kB, want at most two thirds of its engine's %d kB", sup, eng)
		}
		return nil
	})
	t.Logf("anonymous RSS: supervisor %d kB, engine %d kB", sup, eng)
	if err != nil {
		t.Error(err)
	}
	if err := syscall.Kill(engine, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	next("clean-up ran pid=")
	if again := next("engine ready pid="); again == engine {
		t.Fatalf("the engine after the crash has the old pid %d", again)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the supervisor stopped with %v, want exit 0\n%s", err, strings.Join(lines, "\n"))
	}
}

// procKiB is a "Name: N kB" field of /proc/PID/status.
func procKiB(t *testing.T, pid int, field string) int {
	t.Helper()
	n, err := procfs.StatusKiB(pid, field)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSmallSupervisorHoldsClaim: a command that claimed a name (vipstack
// ipfailover's pool name, an abstract Unix socket) and then execs the small
// supervisor keeps the claim in the supervisor, through the exec, for the
// supervisor's whole life; its engine does not inherit it, and the name is
// free once the supervisor stopped.
func TestSmallSupervisorHoldsClaim(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := fmt.Sprintf("vipstack-test-claim-%d", os.Getpid())
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestTrimHelperProcess$")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOMAXPROCS=") && !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "VIPSTACK_TRIM_HELPER=1", "VIPSTACK_CLAIM_HELPER="+name)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(out)
	var lines []string
	engine := 0
	for engine == 0 && sc.Scan() {
		lines = append(lines, sc.Text())
		fmt.Sscanf(sc.Text(), "engine ready pid=%d", &engine)
	}
	if engine == 0 {
		t.Fatalf("no engine started:\n%s", strings.Join(lines, "\n"))
	}
	go func() { // keep the pipe drained
		for sc.Scan() {
		}
	}()
	if procfs.PPid(engine) != cmd.Process.Pid {
		t.Fatalf("the engine %d is not the child of the process started (%d)", engine, cmd.Process.Pid)
	}
	// ExecSupervisor started the supervisor with its runtime settings
	// (environ is the environment the exec gave it), and they are not
	// the engine's.
	start, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GOMAXPROCS=1", "GOGC=off"} {
		if !slices.Contains(strings.Split(string(start), "\x00"), want) {
			t.Errorf("the supervisor started without %s", want)
		}
	}
	if l := lines[len(lines)-1]; !strings.HasSuffix(l, `GOGC="" GOMEMLIMIT="" GOMAXPROCS=""`) {
		t.Errorf("the engine has the supervisor's runtime settings: %q", l)
	}
	if ln, err := net.Listen("unix", "@"+name); err == nil {
		ln.Close()
		t.Fatal("the name is free while the supervisor runs; want it held")
	}
	if sockets(t, engine) != 0 {
		t.Errorf("the engine inherited %d sockets; want none (the claim stays in the supervisor)", sockets(t, engine))
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the supervisor stopped with %v, want exit 0", err)
	}
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatalf("the name is still held after the supervisor stopped: %v", err)
	}
	ln.Close()
}

// sockets counts the sockets among process pid's open descriptors.
func sockets(t *testing.T, pid int) int {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink(dir + "/" + fd.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}
