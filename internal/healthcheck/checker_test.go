package healthcheck

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/clock"
)

// scripted is a prober whose results the test hands out one by one.
type scripted struct {
	next    chan Result
	started chan struct{}
}

func (s scripted) Probe(ctx context.Context) Result {
	s.started <- struct{}{}
	select {
	case r := <-s.next:
		return r
	case <-ctx.Done():
		return Result{Status: L7TOUT, Info: "no response in time"}
	}
}

// view is the part of State a scenario checks.
type view struct {
	Up, Pending         bool
	Successes, Failures int
	Shown               string
	Changed             bool
}

func viewOf(s State, changed bool) view {
	return view{Up: s.Up, Pending: s.Pending, Successes: s.Successes, Failures: s.Failures, Shown: s.String(), Changed: changed}
}

type event struct {
	r       Result
	s       State
	changed bool
}

// harness runs a Checker with a scripted prober on a fake clock and
// reports every probe's outcome on a channel.
type harness struct {
	clk     *clock.Fake
	c       *Checker
	probes  chan Result
	started chan struct{}
	events  chan event
	stop    func()
}

func newHarness(t *testing.T, spec Spec) *harness {
	t.Helper()
	h := &harness{clk: clock.NewFake(time.Unix(1000, 0)), probes: make(chan Result), started: make(chan struct{}, 16), events: make(chan event, 16)}
	var changed bool
	h.c = New(spec, scripted{next: h.probes, started: h.started}, Options{
		Clock:    h.clk,
		OnChange: func(State) { changed = true },
		OnResult: func(r Result, s State) {
			h.events <- event{r: r, s: s, changed: changed}
			changed = false
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.c.Run(ctx); close(done) }()
	h.stop = func() { cancel(); <-done }
	t.Cleanup(h.stop)
	return h
}

// waitStarted waits until a probe is running.
func (h *harness) waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-h.started:
	case <-time.After(10 * time.Second): // a bound on a hang, never a timing
		t.Fatal("no probe started within 10s")
	}
}

// noProbe checks that no probe has started.
func (h *harness) noProbe(t *testing.T, when string) {
	t.Helper()
	select {
	case <-h.started:
		t.Fatalf("a probe started %s", when)
	default:
	}
}

func (h *harness) wait(t *testing.T) event {
	t.Helper()
	select {
	case e := <-h.events:
		return e
	case <-time.After(10 * time.Second): // a bound on a hang, never a timing
		t.Fatal("no probe result within 10s")
	}
	return event{}
}

var (
	pass = Result{OK: true, Status: L7OK, Code: 200}
	fail = Result{Status: L7STS, Code: 500}
)

func TestCheckerHysteresis(t *testing.T) {
	type step struct {
		r    Result
		want view
	}
	tests := []struct {
		name  string
		spec  Spec
		start view
		steps []step
	}{
		{
			name:  "seed: inter 1s fall 2 rise 3, first failure takes it down at once",
			spec:  Spec{Inter: time.Second, Rise: 3, Fall: 2},
			start: view{Up: true, Pending: true, Shown: "UP"},
			steps: []step{
				{fail, view{Failures: 1, Shown: "DOWN", Changed: true}},
				{pass, view{Successes: 1, Shown: "DOWN 1/3"}},
				{pass, view{Successes: 2, Shown: "DOWN 2/3"}},
				{fail, view{Failures: 1, Shown: "DOWN"}},
				{pass, view{Successes: 1, Shown: "DOWN 1/3"}},
				{pass, view{Successes: 2, Shown: "DOWN 2/3"}},
				{pass, view{Up: true, Successes: 3, Shown: "UP", Changed: true}},
				{fail, view{Up: true, Failures: 1, Shown: "UP 1/2"}},
				{pass, view{Up: true, Successes: 1, Shown: "UP"}},
				{fail, view{Up: true, Failures: 1, Shown: "UP 1/2"}},
				{fail, view{Failures: 2, Shown: "DOWN", Changed: true}},
			},
		},
		{
			name:  "first success confirms UP",
			spec:  Spec{Inter: time.Second, Rise: 3, Fall: 2},
			start: view{Up: true, Pending: true, Shown: "UP"},
			steps: []step{
				{pass, view{Up: true, Successes: 1, Shown: "UP"}},
				{fail, view{Up: true, Failures: 1, Shown: "UP 1/2"}},
				{fail, view{Failures: 2, Shown: "DOWN", Changed: true}},
			},
		},
		{
			name:  "haproxy defaults rise 2 fall 3",
			spec:  Spec{},
			start: view{Up: true, Pending: true, Shown: "UP"},
			steps: []step{
				{pass, view{Up: true, Successes: 1, Shown: "UP"}},
				{fail, view{Up: true, Failures: 1, Shown: "UP 2/3"}},
				{fail, view{Up: true, Failures: 2, Shown: "UP 1/3"}},
				{fail, view{Failures: 3, Shown: "DOWN", Changed: true}},
				{pass, view{Successes: 1, Shown: "DOWN 1/2"}},
				{pass, view{Up: true, Successes: 2, Shown: "UP", Changed: true}},
			},
		},
		{
			name:  "StartDown needs rise successes",
			spec:  Spec{Inter: time.Second, Rise: 2, Fall: 2, StartDown: true},
			start: view{Shown: "DOWN"},
			steps: []step{
				{pass, view{Successes: 1, Shown: "DOWN 1/2"}},
				{pass, view{Up: true, Successes: 2, Shown: "UP", Changed: true}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.spec)
			if diff := cmp.Diff(tt.start, viewOf(h.c.State(), false)); diff != "" {
				t.Fatalf("initial state (-want +got):\n%s", diff)
			}
			inter := tt.spec.inter()
			for i, st := range tt.steps {
				if i > 0 {
					h.clk.Advance(inter) // the next probe is due
				}
				h.waitStarted(t)
				h.probes <- st.r
				e := h.wait(t)
				if diff := cmp.Diff(st.want, viewOf(e.s, e.changed)); diff != "" {
					t.Fatalf("step %d (%s): (-want +got):\n%s", i, st.r.Status, diff)
				}
				if diff := cmp.Diff(st.want, viewOf(h.c.State(), e.changed)); diff != "" {
					t.Fatalf("step %d: State() disagrees with the callback (-want +got):\n%s", i, diff)
				}
			}
			s := h.c.State()
			if s.Checks != uint64(len(tt.steps)) {
				t.Errorf("Checks = %d, want %d", s.Checks, len(tt.steps))
			}
		})
	}
}

func TestCheckerTimeout(t *testing.T) {
	h := newHarness(t, Spec{Inter: time.Second, Timeout: 300 * time.Millisecond, Rise: 1, Fall: 1})
	h.waitStarted(t) // the first probe starts at once
	h.probes <- pass
	h.wait(t)

	h.clk.Advance(999 * time.Millisecond)
	h.noProbe(t, "before inter passed")

	// At inter the next probe starts; it hangs and the timeout fails it
	// 300ms later on the fake clock.
	h.clk.Advance(time.Millisecond)
	h.waitStarted(t)
	h.clk.Advance(299 * time.Millisecond)
	select {
	case e := <-h.events:
		t.Fatalf("probe ended before its timeout: %+v", e.r)
	default:
	}
	h.clk.Advance(time.Millisecond)
	e := h.wait(t)
	want := Result{Status: L7TOUT, Info: "no response in time", Duration: 300 * time.Millisecond}
	if diff := cmp.Diff(want, e.r); diff != "" {
		t.Fatalf("timed-out probe (-want +got):\n%s", diff)
	}
	if e.s.Up || !e.changed || e.s.Downs != 1 || e.s.Failed != 1 || e.s.Checks != 2 {
		t.Fatalf("after a timeout with fall 1: %+v changed=%v, want DOWN, changed, Downs 1, Failed 1, Checks 2", e.s, e.changed)
	}
}

func TestCheckerNoOverlap(t *testing.T) {
	h := newHarness(t, Spec{Inter: time.Second, Timeout: 10 * time.Second, Rise: 1, Fall: 1})
	h.waitStarted(t)
	// The probe outlasts two intervals: no second probe starts meanwhile.
	h.clk.Advance(time.Second)
	h.clk.Advance(time.Second)
	h.noProbe(t, "while the previous one was running")
	h.probes <- pass
	h.wait(t)
	// The overdue probe starts as soon as the slow one ends, without
	// waiting for another tick.
	h.waitStarted(t)
	h.probes <- fail
	if e := h.wait(t); e.s.Up {
		t.Fatalf("after a failure with fall 1: %+v, want DOWN", e.s)
	}
}

func TestCheckerStopsCleanly(t *testing.T) {
	h := newHarness(t, Spec{Inter: time.Second})
	h.waitStarted(t)
	h.probes <- pass
	h.wait(t)
	h.clk.Advance(time.Second)
	h.waitStarted(t) // a probe is now in flight and hangs
	h.stop()         // cancels it and returns
	if n := h.clk.Pending(); n != 0 {
		t.Errorf("%d timers still armed after Run returned", n)
	}
	select {
	case e := <-h.events:
		t.Fatalf("a probe cut short by shutdown was recorded: %+v", e.r)
	default:
	}
}

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{name: "zero is defaults", spec: Spec{Name: "b/s"}},
		{name: "negatives", spec: Spec{Name: "b/s", Inter: -1, Timeout: -1, Rise: -1, Fall: -2},
			want: `check "b/s": inter -1ns: must be positive (0 means 2s)` + "\n" +
				`check "b/s": timeout -1ns: must be positive (0 means inter)` + "\n" +
				`check "b/s": rise -1: must be at least 1 (0 means 2)` + "\n" +
				`check "b/s": fall -2: must be at least 1 (0 means 3)`},
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
