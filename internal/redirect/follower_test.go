package redirect

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testutil"
)

// waitFor waits for the follower's goroutine, not for a timer.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() error {
		if cond() {
			return nil
		}
		return fmt.Errorf("waiting for %s", what)
	})
}

type fakeRedirect struct {
	mu        sync.Mutex
	calls     []string
	fail      int // fail this many calls first
	failRenew int // fail this many renewals first
}

func (f *fakeRedirect) do(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail > 0 || name == "renew" && f.failRenew > 0 {
		if name == "renew" {
			f.failRenew--
		} else {
			f.fail--
		}
		f.calls = append(f.calls, name+" failed")
		return errors.New("nft: busy")
	}
	f.calls = append(f.calls, name)
	return nil
}

func (f *fakeRedirect) Enable() error        { return f.do("enable") }
func (f *fakeRedirect) Disable() error       { return f.do("disable") }
func (f *fakeRedirect) Renew() error         { return f.do("renew") }
func (f *fakeRedirect) Lease() time.Duration { return 5 * time.Second }

func (f *fakeRedirect) get() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func TestFollower(t *testing.T) {
	fr := &fakeRedirect{fail: 1}
	clk := clock.NewFake(time.Unix(0, 0))
	d := NewFollower(fr, slog.New(slog.NewTextHandler(io.Discard, nil)), clk)
	go d.Run()
	d.Set(true)
	waitFor(t, "the retry to be armed", func() bool { return clk.Pending() == 1 })
	clk.Advance(time.Second) // the retry
	waitFor(t, "the retry", func() bool { return len(fr.get()) == 2 })
	d.Set(true) // no change: nothing to do
	d.Set(false)
	waitFor(t, "the disable", func() bool { return len(fr.get()) == 3 })
	d.Stop()
	want := []string{"enable failed", "enable", "disable", "disable"}
	if diff := cmp.Diff(want, fr.get()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestFollowerRenews: an enabled redirect's lease is renewed every fifth of
// it; a failed renewal enables the redirect again; a disabled one is not
// renewed.
func TestFollowerRenews(t *testing.T) {
	fr := &fakeRedirect{failRenew: 1}
	clk := clock.NewFake(time.Unix(0, 0))
	d := NewFollower(fr, slog.New(slog.NewTextHandler(io.Discard, nil)), clk)
	go d.Run()
	d.Set(true)
	waitFor(t, "the renewal to be armed", func() bool { return clk.Pending() == 1 })
	clk.Advance(999 * time.Millisecond)
	if got := fr.get(); len(got) != 1 {
		t.Fatalf("calls before a fifth of the lease = %q, want only the enable", got)
	}
	clk.Advance(time.Millisecond) // the first renewal fails: enable again
	waitFor(t, "the enable after the failed renewal", func() bool { return len(fr.get()) >= 3 })
	for i := 0; i < 2; i++ {
		waitFor(t, "the next renewal to be armed", func() bool { return clk.Pending() == 1 })
		clk.Advance(time.Second)
		waitFor(t, "a renewal", func() bool { return len(fr.get()) >= 4+i })
	}
	d.Set(false)
	waitFor(t, "the disable", func() bool { return len(fr.get()) >= 6 })
	waitFor(t, "no timer left", func() bool { return clk.Pending() == 0 })
	clk.Advance(10 * time.Second)
	d.Stop()
	want := []string{"enable", "renew failed", "enable", "renew", "renew", "disable", "disable"}
	if diff := cmp.Diff(want, fr.get()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestFollowerRetarget: a reload that moves the frontend gives the
// Follower a new redirect: enabled, it is enabled as the new one (whose
// lease is renewed from then on); disabled, nothing moves until enabled.
func TestFollowerRetarget(t *testing.T) {
	old, moved, later := &fakeRedirect{}, &fakeRedirect{}, &fakeRedirect{}
	clk := clock.NewFake(time.Unix(0, 0))
	d := NewFollower(old, slog.New(slog.NewTextHandler(io.Discard, nil)), clk)
	go d.Run()
	d.Set(true)
	waitFor(t, "the enable", func() bool { return len(old.get()) == 1 })
	d.Retarget(moved)
	waitFor(t, "the enable as the moved redirect", func() bool { return len(moved.get()) == 1 })
	waitFor(t, "its renewal to be armed", func() bool { return clk.Pending() == 1 })
	clk.Advance(time.Second)
	waitFor(t, "the moved redirect's renewal", func() bool { return len(moved.get()) == 2 })
	d.Set(false)
	waitFor(t, "the disable", func() bool { return len(moved.get()) == 3 })
	d.Retarget(later) // disabled: nothing to move
	d.Set(true)
	waitFor(t, "the enable as the later redirect", func() bool { return len(later.get()) == 1 })
	d.Stop()
	for _, c := range []struct {
		name string
		f    *fakeRedirect
		want []string
	}{
		{"old", old, []string{"enable"}},
		{"moved", moved, []string{"enable", "renew", "disable"}},
		{"later", later, []string{"enable", "disable"}},
	} {
		if diff := cmp.Diff(c.want, c.f.get()); diff != "" {
			t.Errorf("%s redirect's calls (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestFollowerLogsFailuresSparingly: a change that keeps failing (no
// CAP_NET_ADMIN, say) is retried every second but logged at the first
// failure and then every FailureLogEvery with the count; the success
// that ends the run says how many failed.
func TestFollowerLogsFailuresSparingly(t *testing.T) {
	fr := &fakeRedirect{fail: 35}
	clk := clock.NewFake(time.Unix(0, 0))
	var logs syncbuf.Buffer
	d := NewFollower(fr, slog.New(slog.NewTextHandler(&logs, nil)), clk)
	go d.Run()
	d.Set(true)
	for i := 1; i <= 35; i++ {
		waitFor(t, "the retry to be armed", func() bool { return clk.Pending() == 1 && len(fr.get()) == i })
		clk.Advance(time.Second)
	}
	waitFor(t, "the enable", func() bool { return slices.Contains(fr.get(), "enable") })
	d.Stop()
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(l, "redirect change") {
			_, msg, _ := strings.Cut(l, "msg=")
			got = append(got, msg)
		}
	}
	want := []string{
		`"redirect change failed; retrying every 1s" enable=true failures=1 err="nft: busy"`,
		`"redirect change failed; retrying every 1s" enable=true failures=31 err="nft: busy"`,
		`"redirect change succeeded after failures" enable=true failures=35`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log (-want +got):\n%s\nfull log:\n%s", diff, logs.String())
	}
}

// TestFollowerState checks the state a Follower reports after each step:
// nothing before a verdict, a failing enable with its count and error,
// in effect once it succeeds, out of effect after a failed renewal until
// enabled again, and after a disable and after Stop.
func TestFollowerState(t *testing.T) {
	fr := &fakeRedirect{fail: 2}
	clk := clock.NewFake(time.Unix(0, 0))
	d := NewFollower(fr, slog.New(slog.NewTextHandler(io.Discard, nil)), clk)
	check := func(step string, want FollowerState) {
		t.Helper()
		if diff := cmp.Diff(want, d.State()); diff != "" {
			t.Errorf("%s: state (-want +got):\n%s", step, diff)
		}
	}
	go d.Run()
	check("before a verdict", FollowerState{})
	d.Set(true)
	waitFor(t, "the first retry to be armed", func() bool { return clk.Pending() == 1 })
	check("the enable failed", FollowerState{Want: "enable", Failures: 1, Err: "nft: busy"})
	clk.Advance(time.Second)
	waitFor(t, "the second failure", func() bool { return len(fr.get()) == 2 })
	waitFor(t, "the second retry to be armed", func() bool { return clk.Pending() == 1 })
	check("the enable failed twice", FollowerState{Want: "enable", Failures: 2, Err: "nft: busy"})
	fr.mu.Lock()
	fr.failRenew = 1
	fr.mu.Unlock()
	clk.Advance(time.Second)
	waitFor(t, "the enable", func() bool { return len(fr.get()) == 3 })
	waitFor(t, "the renewal to be armed", func() bool { return clk.Pending() == 1 })
	check("enabled", FollowerState{Want: "enable", InEffect: true})
	clk.Advance(time.Second) // the renewal fails, the enable after it succeeds
	waitFor(t, "the enable after the failed renewal", func() bool { return len(fr.get()) == 5 })
	waitFor(t, "the renewal to be armed again", func() bool { return clk.Pending() == 1 })
	check("enabled again after a failed renewal", FollowerState{Want: "enable", InEffect: true})
	d.Set(false)
	waitFor(t, "the disable", func() bool { return len(fr.get()) == 6 })
	waitFor(t, "no timer left", func() bool { return clk.Pending() == 0 })
	check("disabled", FollowerState{Want: "disable"})
	d.Set(true)
	waitFor(t, "the enable", func() bool { return len(fr.get()) == 7 })
	waitFor(t, "the renewal to be armed", func() bool { return clk.Pending() == 1 })
	d.Stop()
	check("stopped", FollowerState{Want: "enable"})
	want := []string{"enable failed", "enable failed", "enable", "renew failed", "enable", "disable", "enable", "disable"}
	if diff := cmp.Diff(want, fr.get()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestFollowerRetargetDone checks the channel Retarget returns: closed
// once an enabled redirect is enabled as the new one (not before), at
// once when disabled, and at once after Stop.
func TestFollowerRetargetDone(t *testing.T) {
	old, moved, later, late := &fakeRedirect{}, &blockingRedirect{release: make(chan struct{})}, &fakeRedirect{}, &fakeRedirect{}
	clk := clock.NewFake(time.Unix(0, 0))
	d := NewFollower(old, slog.New(slog.NewTextHandler(io.Discard, nil)), clk)
	go d.Run()
	d.Set(true)
	waitFor(t, "the enable", func() bool { return len(old.get()) == 1 })
	done := d.Retarget(moved)
	waitFor(t, "the enable as the moved redirect to start", func() bool { return moved.started.Load() })
	select {
	case <-done:
		t.Fatal("Retarget's channel closed before the moved redirect was enabled")
	default:
	}
	close(moved.release)
	<-done
	d.Set(false)
	waitFor(t, "the disable", func() bool { return moved.disabled.Load() })
	<-d.Retarget(later) // disabled: nothing to move, done at once
	if got := later.get(); len(got) != 0 {
		t.Errorf("a disabled follower's new redirect got calls %q, want none", got)
	}
	d.Stop()
	<-d.Retarget(late)
}

// blockingRedirect's Enable waits for release.
type blockingRedirect struct {
	release           chan struct{}
	started, disabled atomic.Bool
}

func (b *blockingRedirect) Enable() error {
	b.started.Store(true)
	<-b.release
	return nil
}
func (b *blockingRedirect) Disable() error       { b.disabled.Store(true); return nil }
func (b *blockingRedirect) Renew() error         { return nil }
func (b *blockingRedirect) Lease() time.Duration { return 5 * time.Second }
