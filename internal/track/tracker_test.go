package track

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vipstack/vipstack/internal/clock"
)

// guard bounds every wait on the tracker's goroutine so that a broken
// tracker fails the test instead of hanging it. Nothing waits for it to
// pass: the fake clock drives all timers.
const guard = 10 * time.Second

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// probeCall is one Probe in progress. The test answers it on reply, or
// leaves it running until its context is cancelled.
type probeCall struct {
	at    time.Duration // fake clock time, since t0, when Probe was called
	reply chan error
}

// fakeCheck hands every Probe to the test through calls.
type fakeCheck struct {
	clk         *clock.Fake
	calls       chan probeCall
	inflight    atomic.Int32
	maxInflight atomic.Int32
}

func (f *fakeCheck) Probe(ctx context.Context) error {
	n := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for m := f.maxInflight.Load(); n > m && !f.maxInflight.CompareAndSwap(m, n); m = f.maxInflight.Load() {
	}
	c := probeCall{at: f.clk.Now().Sub(t0), reply: make(chan error)}
	f.calls <- c
	select {
	case err := <-c.reply:
		return err
	case <-ctx.Done():
		// reply is unbuffered: once the test's send went through, that
		// answer is what this probe returns, even if the clock then runs
		// past its timeout before the tracker collects it.
		return ctx.Err()
	}
}

type harness struct {
	t       *testing.T
	clk     *clock.Fake
	check   *fakeCheck
	tr      *Tracker
	changes chan Status
	stop    context.CancelFunc
	done    chan struct{}
}

func startTracker(t *testing.T, spec Spec) *harness {
	t.Helper()
	clk := clock.NewFake(t0)
	h := &harness{
		t:       t,
		clk:     clk,
		check:   &fakeCheck{clk: clk, calls: make(chan probeCall)},
		changes: make(chan Status, 16),
		done:    make(chan struct{}),
	}
	h.tr = &Tracker{Spec: spec, Check: h.check, Clock: clk, OnChange: func(s Status) { h.changes <- s }}
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	go func() {
		defer close(h.done)
		h.tr.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-h.done
	})
	return h
}

// nextProbe waits for the tracker to start a probe and checks when.
func (h *harness) nextProbe(wantAt time.Duration) probeCall {
	h.t.Helper()
	select {
	case c := <-h.check.calls:
		if c.at != wantAt {
			h.t.Fatalf("probe started at %v, want %v", c.at, wantAt)
		}
		return c
	case <-time.After(guard):
		h.t.Fatalf("no probe started; want one at %v (fake clock at %v)", wantAt, h.clk.Now().Sub(t0))
		return probeCall{}
	}
}

func (h *harness) nextChange() Status {
	h.t.Helper()
	select {
	case s := <-h.changes:
		return s
	case <-time.After(guard):
		h.t.Fatal("OnChange was not called")
		return Status{}
	}
}

func (h *harness) noChange() {
	h.t.Helper()
	select {
	case s := <-h.changes:
		h.t.Fatalf("unexpected OnChange(%+v)", s)
	default:
	}
}

// step is one move in a tracker scenario: advance the fake clock, answer the
// probe left running (if answer), then, if wantProbe, wait for the probe that must start, check the status it
// starts with (which reflects every earlier probe), and answer it. A step
// with wantChange waits for that OnChange after its reply (or its advance).
type step struct {
	advance    time.Duration
	wantProbe  bool
	wantAt     time.Duration
	wantStatus Status
	reply      string // "ok", an error text, or "" to leave the probe running
	wantChange *Status
	// answer, if set, first answers the probe an earlier step left running.
	answer string
}

func runSteps(t *testing.T, h *harness, steps []step) {
	t.Helper()
	var running probeCall
	for i, st := range steps {
		h.clk.Advance(st.advance)
		if st.answer != "" {
			answer(running, st.answer)
		}
		if st.wantProbe {
			c := h.nextProbe(st.wantAt)
			running = c
			h.noChange()
			if diff := cmp.Diff(st.wantStatus, h.tr.Status()); diff != "" {
				t.Fatalf("step %d: status when the probe at %v started (-want +got):\n%s", i, st.wantAt, diff)
			}
			if st.reply != "" {
				answer(c, st.reply)
			}
		}
		if st.wantChange != nil {
			if diff := cmp.Diff(*st.wantChange, h.nextChange()); diff != "" {
				t.Fatalf("step %d: OnChange (-want +got):\n%s", i, diff)
			}
		}
	}
	if m := h.check.maxInflight.Load(); m != 1 {
		t.Errorf("at most %d probes ran at once, want 1", m)
	}
}

func answer(c probeCall, reply string) {
	if reply == "ok" {
		c.reply <- nil
	} else {
		c.reply <- errors.New(reply)
	}
}

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestTrackerScenario(t *testing.T) {
	const s = time.Second
	spec := Spec{Name: "chk", Interval: 10 * s, Timeout: 4 * s, Rise: 2, Fall: 2}
	h := startTracker(t, spec)
	st := func(ok bool, succ, fail int, reason string, since time.Duration) Status {
		return Status{Name: "chk", OK: ok, Successes: succ, Failures: fail, Reason: reason, Since: at(since)}
	}
	runSteps(t, h, []step{
		// The first probe runs at once, before any time passes.
		{wantProbe: true, wantAt: 0, wantStatus: Status{Name: "chk", OK: true, Pending: true, Reason: "no probe has finished yet", Since: t0}, reply: "ok"},
		{advance: 10 * s, wantProbe: true, wantAt: 10 * s, wantStatus: st(true, 1, 0, "", 0), reply: "exit status 1"},
		// One failure is below fall; a success resets the count.
		{advance: 10 * s, wantProbe: true, wantAt: 20 * s, wantStatus: st(true, 0, 1, "exit status 1", 0), reply: "ok"},
		{advance: 10 * s, wantProbe: true, wantAt: 30 * s, wantStatus: st(true, 1, 0, "", 0), reply: "exit status 1"},
		// The second consecutive failure flips to failing.
		{advance: 10 * s, wantProbe: true, wantAt: 40 * s, wantStatus: st(true, 0, 1, "exit status 1", 0), reply: "exit status 2",
			wantChange: &Status{Name: "chk", OK: false, Failures: 2, Reason: "exit status 2", Since: at(40 * s)}},
		// This probe hangs: the timeout cancels it 4s later and counts a failure.
		{advance: 10 * s, wantProbe: true, wantAt: 50 * s, wantStatus: st(false, 0, 2, "exit status 2", 40*s)},
		{advance: 4 * s},
		{advance: 6 * s, wantProbe: true, wantAt: 60 * s, wantStatus: st(false, 0, 3, "timed out after 4s", 40*s), reply: "ok"},
		// Two consecutive successes (rise 2) flip back to OK.
		{advance: 10 * s, wantProbe: true, wantAt: 70 * s, wantStatus: st(false, 1, 0, "", 40*s), reply: "ok",
			wantChange: &Status{Name: "chk", OK: true, Successes: 2, Since: at(70 * s)}},
		{advance: 10 * s, wantProbe: true, wantAt: 80 * s, wantStatus: st(true, 2, 0, "", 70*s), reply: "ok"},
	})
}

func TestTrackerFirstFailureFlipsAtOnce(t *testing.T) {
	h := startTracker(t, Spec{Name: "chk", Interval: time.Second, Rise: 3, Fall: 3})
	runSteps(t, h, []step{
		{wantProbe: true, wantAt: 0, wantStatus: Status{Name: "chk", OK: true, Pending: true, Reason: "no probe has finished yet", Since: t0}, reply: "down",
			wantChange: &Status{Name: "chk", Failures: 1, Reason: "down", Since: t0}},
		{advance: time.Second, wantProbe: true, wantAt: time.Second, wantStatus: Status{Name: "chk", Failures: 1, Reason: "down", Since: t0}},
	})
}

func TestTrackerInitFail(t *testing.T) {
	h := startTracker(t, Spec{Name: "chk", Interval: time.Second, Rise: 2, InitFail: true})
	if diff := cmp.Diff(Status{Name: "chk", Reason: "init_fail: no probe has finished yet"}, (&Tracker{Spec: h.tr.Spec}).Status()); diff != "" {
		t.Errorf("Status before Run (-want +got):\n%s", diff)
	}
	runSteps(t, h, []step{
		{wantProbe: true, wantAt: 0, wantStatus: Status{Name: "chk", Reason: "init_fail: no probe has finished yet", Since: t0}, reply: "ok"},
		{advance: time.Second, wantProbe: true, wantAt: time.Second, wantStatus: Status{Name: "chk", Successes: 1, Since: t0}, reply: "ok",
			wantChange: &Status{Name: "chk", OK: true, Successes: 2, Since: t0.Add(time.Second)}},
	})
}

// TestTrackerSlowProbeDoesNotPileUp checks that a probe still running when
// the next one is due delays it until it finishes (no overlap, no backlog:
// missed turns collapse into one probe), and that the schedule then counts
// from that delayed start.
func TestTrackerSlowProbeDoesNotPileUp(t *testing.T) {
	const s = time.Second
	h := startTracker(t, Spec{Name: "slow", Interval: 10 * s, Timeout: 25 * s, Fall: 2})
	st := func(succ, fail int, reason string) Status {
		return Status{Name: "slow", OK: true, Successes: succ, Failures: fail, Reason: reason, Since: t0}
	}
	runSteps(t, h, []step{
		{wantProbe: true, wantAt: 0, wantStatus: Status{Name: "slow", OK: true, Pending: true, Reason: "no probe has finished yet", Since: t0}},
		// Due at 10s, but the first probe is still running.
		{advance: 10 * s},
		// It finishes at 15s and the delayed probe starts at once.
		{advance: 5 * s, answer: "ok", wantProbe: true, wantAt: 15 * s, wantStatus: st(1, 0, ""), reply: "ok"},
		{advance: 10 * s, wantProbe: true, wantAt: 25 * s, wantStatus: st(2, 0, "")},
		// Due at 35s; still running until its 25s timeout at 50s.
		{advance: 10 * s},
		{advance: 15 * s, wantProbe: true, wantAt: 50 * s, wantStatus: st(0, 1, "timed out after 25s"), reply: "ok"},
		{advance: 10 * s, wantProbe: true, wantAt: 60 * s, wantStatus: st(1, 0, "")},
	})
}

func TestTrackerStops(t *testing.T) {
	h := startTracker(t, Spec{Name: "chk", Interval: time.Second})
	h.nextProbe(0) // left running: Run must cancel it and wait for it
	h.stop()
	select {
	case <-h.done:
	case <-time.After(guard):
		t.Fatal("Run did not return after its context was cancelled")
	}
	if n := h.clk.Pending(); n != 0 {
		t.Errorf("%d fake timers still armed after Run returned, want 0", n)
	}
	if n := h.check.inflight.Load(); n != 0 {
		t.Errorf("%d probes still running after Run returned, want 0", n)
	}
}

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{name: "zero is keepalived's defaults", spec: Spec{Name: "a"}},
		{name: "all set", spec: Spec{Name: "a", Interval: 2 * time.Second, Timeout: 3 * time.Second, Rise: 3, Fall: 2, InitFail: true}},
		{name: "negatives", spec: Spec{Name: "a", Interval: -1, Timeout: -time.Second, Rise: -1, Fall: -2}, want: `track "a": interval -1ns: must be positive (0 means 1s)
track "a": timeout -1s: must be positive (0 means the interval)
track "a": rise -1: must be at least 1 (0 means 1)
track "a": fall -2: must be at least 1 (0 means 1)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := tt.spec.Validate(); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}
