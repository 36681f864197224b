package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEarlyHUPHelperProcess is TestCatchHUPEarly's process, the test
// binary run again: with "catch" it calls CatchHUPEarly first; with
// "send" it sends itself a SIGHUP before it handles the signal; then it
// asks for SIGHUP as a daemon does, and prints what HUPReady said.
func TestEarlyHUPHelperProcess(t *testing.T) {
	mode := os.Getenv("VIPSTACK_EARLYHUP_HELPER")
	if mode == "" {
		t.Skip("helper process for TestCatchHUPEarly")
	}
	if strings.Contains(mode, "catch") {
		CatchHUPEarly()
	}
	if strings.Contains(mode, "send") {
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			fmt.Println("kill:", err)
			os.Exit(3)
		}
		// Until the catch holds it (or, without the catch, until the
		// signal ends this process), at most 5 s.
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && !earlyHUPPending(); {
			time.Sleep(time.Millisecond)
		}
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGHUP)
	fmt.Printf("early %v\n", HUPReady())
	os.Exit(0)
}

// TestCatchHUPEarly: a SIGHUP sent before a process handles it ends the
// process (Go's default) unless CatchHUPEarly ran; with it, the process
// lives and HUPReady says one came, so the daemon reloads once.
func TestCatchHUPEarly(t *testing.T) {
	for _, tc := range []struct {
		mode   string
		want   string // the helper's output
		killed bool   // by SIGHUP instead
	}{
		{mode: "catch,send", want: "early true"},
		{mode: "catch", want: "early false"},
		{mode: "send", killed: true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			args := []string{os.Args[0], "-test.run=^TestEarlyHUPHelperProcess$"}
			if hupIgnored() {
				// Under nohup the helper would inherit SIG_IGN, which
				// Go keeps: give it the default back.
				args = append([]string{"env", "--default-signal=HUP"}, args...)
			}
			cmd := exec.CommandContext(ctx, args[0], args[1:]...)
			cmd.Env = append(os.Environ(), "VIPSTACK_EARLYHUP_HELPER="+tc.mode)
			out, err := cmd.Output()
			var ee *exec.ExitError
			switch {
			case tc.killed:
				if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGHUP {
					t.Errorf("helper without the catch: %v, want killed by SIGHUP\n%s", err, out)
				}
			case err != nil:
				t.Errorf("helper: %v\n%s", err, out)
			case !strings.Contains(string(out), tc.want):
				t.Errorf("helper printed %q, want %q", out, tc.want)
			}
		})
	}
}

// hupIgnored reports whether this process started with SIGHUP ignored
// (nohup), from /proc/self/status; false where that cannot be read.
func hupIgnored() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<(syscall.SIGHUP-1)) != 0
		}
	}
	return false
}

// earlyHUPPending reports whether CatchHUPEarly's catch holds a SIGHUP.
func earlyHUPPending() bool {
	earlyHUP.mu.Lock()
	defer earlyHUP.mu.Unlock()
	return len(earlyHUP.c) > 0
}
