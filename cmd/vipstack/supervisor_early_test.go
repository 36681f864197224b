package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/supervise"
)

// maxInitsBeforeSupervisor bounds how many packages (those with
// initialisation work: GODEBUG=inittrace=1's lines) Go initialises before
// the small supervisor runs. Measured 2026-11-30: 31 in the built binary
// and in this test binary (39 KB allocated before it); 196 and 198
// before the supervisor's path was cut to light imports (1.03 MB). The
// margin is for new dependencies of vipstack whose packages need only
// the runtime's and os's, and so go first. An import of strings in the
// supervisor's path (internal/supervise, internal/memtrim/pages) put it
// 93rd, runtime/debug (fmt) or log/slog 196th: either fails this.
const maxInitsBeforeSupervisor = 50

// TestSmallSupervisorRunsEarly: this test binary (every package vipstack
// links, and supervise/early through package main) run as the small
// supervisor, with Go's trace of each package's initialisation, runs it
// after at most maxInitsBeforeSupervisor packages. The supervisor is
// given a descriptor to keep that is not open, so that it stops at once,
// in its initialisation, with an error (its own init never ends, so the
// trace never names supervise/early). The same binary initialising whole
// must show many more packages, or the count means nothing.
func TestSmallSupervisorRunsEarly(t *testing.T) {
	spec, err := supervise.Spec{LogFormat: "text", LogLevel: "info", KeepFD: 99}.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	trace := func(env ...string) (before int, stderr string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(append(os.Environ(), "GODEBUG=inittrace=1"), env...)
		var b bytes.Buffer
		cmd.Stderr = &b
		_ = cmd.Run()
		re := regexp.MustCompile(`^init \S+ @`)
		for _, line := range strings.Split(b.String(), "\n") {
			if strings.Contains(line, "supervisor: the descriptor to keep is not open") {
				return before, b.String()
			}
			if re.MatchString(line) {
				before++
			}
		}
		return before, b.String()
	}
	n, stderr := trace(supervise.EnvSupervisor + "=" + string(spec))
	if !strings.Contains(stderr, "supervisor: the descriptor to keep is not open") {
		t.Fatalf("the supervisor did not run; stderr:\n%s", tail(stderr))
	}
	whole, _ := trace()
	t.Logf("packages initialised before the supervisor: %d; in the whole initialisation: %d", n, whole)
	if n > maxInitsBeforeSupervisor {
		t.Errorf("the small supervisor ran after %d packages initialised, want at most %d: a heavy import in its path? (go list -deps ./internal/supervise/early)", n, maxInitsBeforeSupervisor)
	}
	if whole < 4*maxInitsBeforeSupervisor {
		t.Errorf("the whole initialisation has %d packages, want well over %d: the trace is not what this test reads", whole, maxInitsBeforeSupervisor)
	}
}
