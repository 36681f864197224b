package track

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
)

// Schedule runs probe at once, then each interval after the previous probe
// started, until ctx is done; it then stops its timers, cancels and waits
// for the probe in flight, and returns. Probes never overlap: a probe due
// while one runs starts as soon as that one finishes. Each probe gets a
// context cancelled after timeout (or when ctx ends). record is called on
// Schedule's goroutine with each result and whether the timeout fired
// before the probe returned; results of a probe cut short by ctx are not
// recorded. Both the VRRP trackers (Tracker) and the load balancer's
// server checks (package healthcheck) run on it.
func Schedule[R any](ctx context.Context, clk clock.Clock, interval, timeout time.Duration,
	probe func(ctx context.Context) R, record func(r R, timedOut bool)) {
	ScheduleFunc(ctx, clk, func() time.Duration { return interval }, func() time.Duration { return timeout }, probe, record)
}

// ScheduleFunc is Schedule with an interval and a timeout that may change
// from probe to probe (haproxy's fastinter and downinter, spread-checks):
// each is read as a probe starts, and the interval once more after each
// result, so that the next probe starts the new interval after the last
// one started (at once if that is past).
func ScheduleFunc[R any](ctx context.Context, clk clock.Clock, intervalOf, timeoutOf func() time.Duration,
	probe func(ctx context.Context) R, record func(r R, timedOut bool)) {
	type outcome struct {
		r        R
		timedOut bool
	}
	results := make(chan outcome, 1) // one probe at a time: never blocks
	ticks := make(chan struct{}, 1)
	var (
		running, due bool
		tick, expire clock.Timer
		cancelProbe  context.CancelFunc
		began        time.Time
		armed        time.Duration
	)
	arm := func(d time.Duration) {
		tick = clk.AfterFunc(d, func() {
			select {
			case ticks <- struct{}{}:
			default:
			}
		})
	}
	start := func() {
		running, due = true, false
		interval, timeout := intervalOf(), timeoutOf()
		began, armed = clk.Now(), interval
		// The next tick is armed before the probe starts, so a test that
		// waits for a result and then advances the clock by interval
		// always triggers the next probe.
		arm(interval)
		pctx, cancel := context.WithCancel(ctx)
		cancelProbe = cancel
		var timedOut atomic.Bool
		expire = clk.AfterFunc(timeout, func() {
			timedOut.Store(true)
			cancel()
		})
		go func() {
			r := probe(pctx)
			results <- outcome{r: r, timedOut: timedOut.Load()}
		}()
	}

	start()
	for {
		select {
		case <-ctx.Done():
			tick.Stop()
			if running {
				expire.Stop()
				cancelProbe()
				<-results
			}
			return
		case <-ticks:
			if running {
				due = true
			} else {
				start()
			}
		case o := <-results:
			running = false
			expire.Stop()
			cancelProbe()
			if ctx.Err() != nil {
				tick.Stop()
				return // cut short by shutdown, not the probe's verdict
			}
			record(o.r, o.timedOut)
			if next := intervalOf(); next != armed && !due {
				// The result changed the interval: the next probe
				// starts that long after this one started.
				tick.Stop()
				select {
				case <-ticks: // the old interval's tick, not yet read
				default:
				}
				armed = next
				if wait := began.Add(next).Sub(clk.Now()); wait > 0 {
					arm(wait)
				} else {
					due = true
				}
			}
			if due {
				start()
			}
		}
	}
}
