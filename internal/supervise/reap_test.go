package supervise

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestReapHelperProcess is the supervisor of TestReapsOrphans, the test
// binary run again: a subreaper, as process 1 is, so that the orphans its
// engine leaves become its children. It prints the zombies among its
// children while the engine still runs, then Run's exit code.
func TestReapHelperProcess(t *testing.T) {
	reap := os.Getenv("VIPSTACK_REAP_HELPER")
	if reap == "" {
		t.Skip("helper process for TestReapsOrphans")
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Println("prctl:", err)
		os.Exit(3)
	}
	// The engine: leaves six orphans that exit after 50 ms, then runs on
	// for 1.5 s and exits 0.
	s := &Supervisor{Path: "/bin/sh", Args: []string{"-c", "for i in 1 2 3 4 5 6; do (sleep 0.05 &); done; sleep 1.5; exit 0"},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Reap: reap == "on"}
	go func() {
		time.Sleep(time.Second) // the orphans exited 950 ms ago; the engine runs
		fmt.Printf("zombies %d\n", zombieChildren())
	}()
	code := s.Run(context.Background())
	fmt.Printf("code %d\n", code)
	os.Exit(0)
}

// zombieChildren counts this process's children that exited and were not
// reaped, from /proc.
func zombieChildren() int {
	self := strconv.Itoa(os.Getpid())
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces; split after ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[0] == "Z" && f[1] == self {
			n++
		}
	}
	return n
}

// TestReapsOrphans: a supervisor that reaps (as process 1 does) leaves no
// zombie of the orphans its engine's scripts leave behind, and still gets
// its engine's own exit status (Run returns 0 for an engine that exited
// 0: had the reaper taken the engine, Wait would fail and Run restart it).
// Without reaping the six orphans stay zombies; that run is the check that
// the test sees them.
func TestReapsOrphans(t *testing.T) {
	for _, tc := range []struct {
		reap        string
		wantZombies int
	}{{"on", 0}, {"off", 6}} {
		t.Run("reap "+tc.reap, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestReapHelperProcess$")
			cmd.Env = append(os.Environ(), "VIPSTACK_REAP_HELPER="+tc.reap)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("helper: %v\n%s", err, out)
			}
			var zombies, code = -1, -1
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			for sc.Scan() {
				fmt.Sscanf(sc.Text(), "zombies %d", &zombies)
				fmt.Sscanf(sc.Text(), "code %d", &code)
			}
			if zombies != tc.wantZombies || code != 0 {
				t.Errorf("zombies %d, Run's code %d; want %d zombies, code 0\n%s", zombies, code, tc.wantZombies, out)
			}
		})
	}
}

// TestReapLeavesTheEngine: the reaper runs while the engine has exited and
// nobody has waited for it yet; the engine stays for its Wait, which gets
// its exit status.
func TestReapLeavesTheEngine(t *testing.T) {
	r := &reaper{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cmd := exec.Command("/bin/sh", "-c", "exit 7")
	if err := r.start(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	}); err != nil {
		t.Fatal(err)
	}
	stat := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b, _ := os.ReadFile(stat)
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && strings.HasPrefix(string(b[i+1:]), " Z") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the engine did not exit within 10 s")
		}
	}
	r.reap()
	err := cmd.Wait()
	if code := exitCode(cmd.ProcessState, nil); code != 7 {
		t.Fatalf("the engine's Wait after a reap: %v (code %d), want exit status 7", err, code)
	}
}

func TestNoSupervisorWarning(t *testing.T) {
	if got := NoSupervisorWarning(1); !strings.Contains(got, "not reaped") {
		t.Errorf("as process 1: %q, want a warning that orphans are not reaped", got)
	}
	if got := NoSupervisorWarning(4242); got != "" {
		t.Errorf("as process 4242: %q, want none", got)
	}
}
