package healthcheck

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/track"
)

// haproxy's defaults (DEF_CHKINTR, DEF_RISETIME, DEF_FALLTIME).
const (
	DefaultInter = 2 * time.Second
	DefaultRise  = 2
	DefaultFall  = 3
)

// Prober runs one check. It must return soon after ctx is done, reporting
// the stage that timed out (L4TOUT, L6TOUT or L7TOUT).
type Prober interface {
	Probe(ctx context.Context) Result
}

// ProberFunc adapts a function to Prober.
type ProberFunc func(ctx context.Context) Result

// Probe calls f.
func (f ProberFunc) Probe(ctx context.Context) Result { return f(ctx) }

// Spec is one server's schedule and thresholds. Zero values mean haproxy's
// defaults.
type Spec struct {
	Name string // for messages, e.g. "masters/m0"
	// Inter is the time between probe starts; 0 means DefaultInter.
	Inter time.Duration
	// Timeout bounds a whole probe (connect, handshake, response); 0 means
	// Inter, haproxy's rule when `timeout check` is not set.
	Timeout time.Duration
	// Rise and Fall are the consecutive successes and failures that change
	// the state; 0 means DefaultRise and DefaultFall.
	Rise, Fall int
	// StartDown starts the server DOWN, needing Rise successes. haproxy
	// starts servers UP; the load balancer sets this on reload to carry a
	// DOWN state over to a restarted checker.
	StartDown bool
	// FastInter is the interval while the state is changing (UP with
	// failures, DOWN with successes) and DownInter the one while DOWN,
	// as haproxy's fastinter and downinter; 0 means Inter.
	FastInter, DownInter time.Duration
	// Spread moves each interval randomly by up to this percentage
	// either way (haproxy's spread-checks); 0: none. Jitter, when set,
	// gives the random fraction in [-1, 1) (tests); nil uses math/rand.
	Spread int
	Jitter func() float64
}

// interval is the time to the next probe in state st, as haproxy's
// srv_getinter picks it: inter while fully UP, downinter while fully
// DOWN, fastinter in between (UP with failures, DOWN with successes, and
// the start, when one failure takes the server DOWN), spread by Spread
// percent.
func (s Spec) interval(st State) time.Duration {
	d := s.inter()
	switch {
	case st.Up && st.Failures == 0 && !st.Pending: // fully UP
	case !st.Up && st.Successes == 0: // fully DOWN
		if s.DownInter > 0 {
			d = s.DownInter
		}
	default: // changing state, or UP at start one failure from DOWN
		if s.FastInter > 0 {
			d = s.FastInter
		}
	}
	if s.Spread > 0 {
		j := s.Jitter
		if j == nil {
			j = func() float64 { return rand.Float64()*2 - 1 }
		}
		d += time.Duration(float64(d) * float64(s.Spread) / 100 * j())
	}
	return d
}

// Validate rejects negative values, naming the field.
func (s Spec) Validate() error {
	var errs []error
	if s.Inter < 0 {
		errs = append(errs, fmt.Errorf("check %q: inter %v: must be positive (0 means %v)", s.Name, s.Inter, DefaultInter))
	}
	if s.Timeout < 0 {
		errs = append(errs, fmt.Errorf("check %q: timeout %v: must be positive (0 means inter)", s.Name, s.Timeout))
	}
	if s.Rise < 0 {
		errs = append(errs, fmt.Errorf("check %q: rise %d: must be at least 1 (0 means %d)", s.Name, s.Rise, DefaultRise))
	}
	if s.Fall < 0 {
		errs = append(errs, fmt.Errorf("check %q: fall %d: must be at least 1 (0 means %d)", s.Name, s.Fall, DefaultFall))
	}
	return errors.Join(errs...)
}

func (s Spec) inter() time.Duration {
	if s.Inter > 0 {
		return s.Inter
	}
	return DefaultInter
}

func (s Spec) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return s.inter()
}

func (s Spec) rise() int {
	if s.Rise > 0 {
		return s.Rise
	}
	return DefaultRise
}

func (s Spec) fall() int {
	if s.Fall > 0 {
		return s.Fall
	}
	return DefaultFall
}

// State is a checker's view of its server.
type State struct {
	Up bool
	// Pending is set until the first probe finishes (unless StartDown):
	// haproxy's "up, but will fall down at first failure".
	Pending bool
	// Successes and Failures count consecutive results.
	Successes, Failures int
	Rise, Fall          int
	// Last is the last probe's result; its Status is "" before the first.
	Last Result
	// Since is when Up last flipped, or when the checker started.
	Since time.Time
	// Checks and Failed count probes; Downs counts UP to DOWN transitions
	// (haproxy's chkfail and chkdown).
	Checks, Failed, Downs uint64
}

// String is the state as haproxy's stats page shows it: "UP", "DOWN",
// "UP 2/3" while going down (2 more failures to DOWN out of fall 3) and
// "DOWN 1/2" while coming up (1 success of rise 2).
func (s State) String() string {
	switch {
	case s.Up && s.Failures > 0:
		return fmt.Sprintf("UP %d/%d", s.Fall-s.Failures, s.Fall)
	case s.Up:
		return "UP"
	case s.Successes > 0:
		return fmt.Sprintf("DOWN %d/%d", s.Successes, s.Rise)
	}
	return "DOWN"
}

// Options are a Checker's hooks.
type Options struct {
	// Clock drives the schedule and the probe timeout; nil means
	// clock.Real{}.
	Clock clock.Clock
	// OnChange is called from Run's goroutine as soon as Up flips, with the
	// new state, before OnResult.
	OnChange func(State)
	// OnResult is called from Run's goroutine after every probe.
	OnResult func(Result, State)
}

// Checker probes one server on its schedule and keeps its UP/DOWN state.
type Checker struct {
	spec   Spec
	prober Prober
	opts   Options

	mu    sync.Mutex
	state State
}

// New returns a checker; nothing runs until Run.
func New(spec Spec, p Prober, opts Options) *Checker {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	c := &Checker{spec: spec, prober: p, opts: opts}
	c.state = State{Up: !spec.StartDown, Pending: !spec.StartDown, Rise: spec.rise(), Fall: spec.fall(), Since: opts.Clock.Now()}
	return c
}

// Spec returns the checker's spec.
func (c *Checker) Spec() Spec { return c.spec }

// State returns the current state. It is safe for concurrent use.
func (c *Checker) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Up reports whether the server is up.
func (c *Checker) Up() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state.Up
}

// Run probes at once, then every Inter after the previous probe started,
// until ctx is done; then it cancels the probe in flight, waits for it and
// returns. Run it once.
func (c *Checker) Run(ctx context.Context) {
	clk := c.opts.Clock
	timeout := c.spec.timeout()
	h := track.NewHysteresis(c.spec.rise(), c.spec.fall(), c.spec.StartDown)
	intervalOf := func() time.Duration { return c.spec.interval(c.State()) }
	if c.spec.FastInter == 0 && c.spec.DownInter == 0 && c.spec.Spread == 0 {
		inter := c.spec.inter()
		intervalOf = func() time.Duration { return inter }
	}
	track.ScheduleFunc(ctx, clk, intervalOf, func() time.Duration { return timeout }, func(pctx context.Context) Result {
		began := clk.Now()
		r := c.prober.Probe(pctx)
		if r.Duration == 0 {
			r.Duration = clk.Now().Sub(began)
		}
		return r
	}, func(r Result, _ bool) {
		c.record(h, r, clk.Now())
	})
}

func (c *Checker) record(h *track.Hysteresis, r Result, now time.Time) {
	changed := h.Observe(r.OK)
	c.mu.Lock()
	s := c.state
	s.Up, s.Pending = h.OK(), h.Pending()
	s.Successes, s.Failures = h.Successes(), h.Failures()
	s.Last = r
	s.Checks++
	if !r.OK {
		s.Failed++
	}
	if changed {
		s.Since = now
		if !s.Up {
			s.Downs++
		}
	}
	c.state = s
	c.mu.Unlock()
	if changed && c.opts.OnChange != nil {
		c.opts.OnChange(s)
	}
	if c.opts.OnResult != nil {
		c.opts.OnResult(r, s)
	}
}
