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
	)
	start := func() {
		running, due = true, false
		// The next tick is armed before the probe starts, so a test that
		// waits for a result and then advances the clock by interval
		// always triggers the next probe.
		tick = clk.AfterFunc(interval, func() {
			select {
			case ticks <- struct{}{}:
			default:
			}
		})
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
			if due {
				start()
			}
		}
	}
}
