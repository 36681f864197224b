package track

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/script"
)

// DefaultInterval is keepalived's vrrp_script interval default.
const DefaultInterval = time.Second

// Check is one probe.
type Check interface {
	// Probe returns nil on success, or an error saying why the check failed
	// (exit status, timeout, ...). It must return soon after ctx is done.
	Probe(ctx context.Context) error
}

// ScriptCheck adapts a script.Runner to Check: the script succeeds when it
// exits 0, as a keepalived vrrp_script.
type ScriptCheck struct {
	Runner script.Runner
	Argv   []string
	// Timeout is the script's own timeout (see script.Runner.Run); 0 leaves
	// it to the Tracker's Spec.Timeout, which cancels the probe's context.
	Timeout time.Duration
	// Env ("KEY=value") is added to the script's minimal environment.
	Env []string
}

// Probe runs the script once.
func (c ScriptCheck) Probe(ctx context.Context) error {
	r := c.Runner.Run(ctx, c.Argv, c.Timeout, c.Env)
	if r.Err != nil {
		return r.Err
	}
	name := fmt.Sprintf("script %q", c.Argv[0])
	switch {
	case r.TimedOut:
		return fmt.Errorf("%s timed out after %v%s", name, c.Timeout, outputNote(r.Output))
	case r.Signal != "":
		return fmt.Errorf("%s killed by signal: %s%s", name, r.Signal, outputNote(r.Output))
	case r.ExitCode != 0:
		return fmt.Errorf("%s: exit status %d%s", name, r.ExitCode, outputNote(r.Output))
	}
	return nil
}

// outputNote quotes the first line of a script's output for a failure
// reason.
func outputNote(out string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	if line == "" {
		return ""
	}
	if len(line) > 200 {
		line = line[:200] + "..."
	}
	return fmt.Sprintf(" (output: %q)", line)
}

// Spec is a vrrp_script's schedule and thresholds. Zero values mean
// keepalived's defaults.
type Spec struct {
	Name string
	// Interval is the time between probe starts; 0 means DefaultInterval.
	Interval time.Duration
	// Timeout is how long a probe may run before it counts as failed and
	// its context is cancelled; 0 means Interval, as in keepalived.
	Timeout time.Duration
	// Rise and Fall are the consecutive successes and failures that change
	// the state; 0 means 1.
	Rise, Fall int
	// InitFail starts the check failing (keepalived init_fail).
	InitFail bool
}

// Validate rejects negative values, naming the field.
func (s Spec) Validate() error {
	var errs []error
	if s.Interval < 0 {
		errs = append(errs, fmt.Errorf("track %q: interval %v: must be positive (0 means %v)", s.Name, s.Interval, DefaultInterval))
	}
	if s.Timeout < 0 {
		errs = append(errs, fmt.Errorf("track %q: timeout %v: must be positive (0 means the interval)", s.Name, s.Timeout))
	}
	if s.Rise < 0 {
		errs = append(errs, fmt.Errorf("track %q: rise %d: must be at least 1 (0 means 1)", s.Name, s.Rise))
	}
	if s.Fall < 0 {
		errs = append(errs, fmt.Errorf("track %q: fall %d: must be at least 1 (0 means 1)", s.Name, s.Fall))
	}
	return errors.Join(errs...)
}

func (s Spec) interval() time.Duration {
	if s.Interval > 0 {
		return s.Interval
	}
	return DefaultInterval
}

func (s Spec) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return s.interval()
}

// Status is a tracker's state.
type Status struct {
	Name string
	OK   bool
	// Pending is set until the first probe finishes, unless InitFail
	// (keepalived's INIT script state: the first result decides).
	Pending bool
	// Reason is the last probe's error, "" if it succeeded.
	Reason string
	// Since is when OK last flipped, or when Run started.
	Since time.Time
	// Successes and Failures count consecutive results.
	Successes, Failures int
}

// Tracker runs one Check on its schedule: the first probe at once when Run
// starts, then each probe Interval after the previous one started. Probes
// never overlap: if a probe is still running when the next is due, the next
// one starts as soon as it finishes (keepalived instead skips that turn and
// waits for the next one; the two differ only for probes that outlast the
// interval, which Timeout <= Interval, the default, prevents).
type Tracker struct {
	Spec  Spec
	Check Check
	// Clock drives the schedule and the timeout; nil means clock.Real{}.
	Clock clock.Clock
	// OnChange is called from Run's goroutine each time OK flips, with the
	// new Status. It should return quickly: the next probe waits for it.
	OnChange func(Status)
	// Resume, when set, is the state of the check this one replaces on a
	// reload (its script, interval, weight, rise or fall changed). The
	// tracker starts in it instead of the initial state: OK, Reason and
	// Since carried over, not pending (see ResumeHysteresis). keepalived
	// 2.2.7 does the same for a vrrp_script of the same name.
	Resume *Status

	mu      sync.Mutex
	status  Status
	started bool
}

type outcome struct {
	err      error
	timedOut bool
}

// Run probes until ctx is done, then stops its timers, waits for the
// in-flight probe (whose context is cancelled) and returns. Run it once.
func (t *Tracker) Run(ctx context.Context) {
	clk := t.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	interval, timeout := t.Spec.interval(), t.Spec.timeout()
	h := NewHysteresis(t.Spec.Rise, t.Spec.Fall, t.Spec.InitFail)
	if t.Resume != nil {
		h = ResumeHysteresis(t.Spec.Rise, t.Spec.Fall, t.Resume.OK)
	}
	t.mu.Lock()
	t.status = t.initial(clk.Now())
	t.started = true
	t.mu.Unlock()

	Schedule(ctx, clk, interval, timeout, t.Check.Probe, func(err error, timedOut bool) {
		t.record(h, outcome{err: err, timedOut: timedOut}, timeout, clk)
	})
}

func (t *Tracker) initial(now time.Time) Status {
	if r := t.Resume; r != nil {
		return Status{Name: t.Spec.Name, OK: r.OK, Since: r.Since, Reason: r.Reason}
	}
	s := Status{Name: t.Spec.Name, OK: !t.Spec.InitFail, Pending: !t.Spec.InitFail, Since: now, Reason: "no probe has finished yet"}
	if t.Spec.InitFail {
		s.Reason = "init_fail: no probe has finished yet"
	}
	return s
}

// record feeds one probe outcome to h, updates the status and calls
// OnChange if OK flipped.
func (t *Tracker) record(h *Hysteresis, o outcome, timeout time.Duration, clk clock.Clock) {
	reason := ""
	switch {
	case o.err == nil:
	case o.timedOut && (errors.Is(o.err, context.Canceled) || errors.Is(o.err, context.DeadlineExceeded)):
		// The probe gave up because the timeout cancelled it. Any other
		// error is the probe's own verdict, even if it came late.
		reason = fmt.Sprintf("timed out after %v", timeout)
	default:
		reason = o.err.Error()
	}
	changed := h.Observe(o.err == nil)
	t.mu.Lock()
	s := t.status
	s.OK, s.Pending, s.Reason = h.OK(), h.Pending(), reason
	s.Successes, s.Failures = h.Successes(), h.Failures()
	if changed {
		s.Since = clk.Now()
	}
	t.status = s
	t.mu.Unlock()
	if changed && t.OnChange != nil {
		t.OnChange(s)
	}
}

// Status returns the current state; before Run, the initial one. It is safe
// for concurrent use.
func (t *Tracker) Status() Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.started {
		return t.initial(time.Time{})
	}
	return t.status
}
