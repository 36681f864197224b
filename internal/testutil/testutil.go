// Package testutil holds the helpers the tests of several packages share:
// the one way they poll for a condition, and the last lines of a log to
// print on failure, and the goroutines of a Go process that hung.
package testutil

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Interval is how often Poll and Eventually look again.
const Interval = 20 * time.Millisecond

// PollEvery calls f every interval until it returns nil, timeout passes or
// ctx ends; it then returns nil or f's last error with the time waited.
// Tests poll what another process or goroutine does (addresses, files,
// endpoints, the API server), never a timer of the code under test: the
// timeout only ends a test that would otherwise hang.
func PollEvery(ctx context.Context, interval, timeout time.Duration, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %v: %w", timeout, err)
		case <-tick.C:
		}
	}
}

// Poll is PollEvery at Interval.
func Poll(timeout time.Duration, f func() error) error {
	return PollEvery(context.Background(), Interval, timeout, f)
}

// Eventually is Poll failing t with f's last error.
func Eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	if err := Poll(timeout, f); err != nil {
		t.Fatal(err)
	}
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// Goroutines picks, from the log of a Go process that SIGQUIT ended (its
// runtime writes every goroutine's stack to standard error), the
// goroutines whose stack has a frame naming pkg, each as its header
// ("goroutine 42 [chan receive, 3 minutes]:") and its functions, without
// the file lines and arguments, for a test to say where a process hung.
// It returns "" when the log holds no dump.
func Goroutines(log, pkg string) string {
	i := strings.LastIndex(log, "SIGQUIT: quit")
	if i < 0 {
		return ""
	}
	var out strings.Builder
	for _, block := range strings.Split(log[i:], "\n\n") {
		block = strings.TrimSpace(block)
		if !strings.HasPrefix(block, "goroutine ") || !strings.Contains(block, pkg) {
			continue
		}
		for j, line := range strings.Split(block, "\n") {
			switch {
			case j == 0:
			case strings.HasPrefix(line, "\t"):
				continue
			default:
				if k := strings.LastIndex(line, "("); k > 0 && strings.HasSuffix(line, ")") {
					line = line[:k]
				}
				line = "  " + line
			}
			out.WriteString(line + "\n")
		}
	}
	return out.String()
}
