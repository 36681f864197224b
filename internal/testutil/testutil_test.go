package testutil

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 5, "a\nb\nc"},
		{"", 3, ""},
		{"a\nb\n\n", 1, "b"},
	} {
		if got := Tail(tc.in, tc.n); got != tc.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// TestPoll: Poll returns once f succeeds, and f's last error with the
// time waited when it never does or the context ends.
func TestPoll(t *testing.T) {
	n := 0
	if err := Poll(5*time.Second, func() error {
		if n++; n < 3 {
			return fmt.Errorf("try %d", n)
		}
		return nil
	}); err != nil || n != 3 {
		t.Fatalf("Poll = %v after %d calls, want nil after 3", err, n)
	}
	err := Poll(3*Interval, func() error { return errors.New("never") })
	if err == nil || !strings.Contains(err.Error(), "never") || !strings.Contains(err.Error(), "after 60ms") {
		t.Fatalf("Poll of a condition that never holds = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	if err := PollEvery(ctx, time.Hour, time.Hour, func() error { calls++; return errors.New("no") }); err == nil || calls != 1 {
		t.Fatalf("PollEvery with an ended context = %v after %d calls, want an error after 1", err, calls)
	}
}
