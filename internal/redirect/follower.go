package redirect

import (
	"log/slog"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
)

// Toggler is what a Follower drives: a *Redirect, or a fake in tests.
type Toggler interface {
	Enable() error
	Disable() error
	// Renew keeps an enabled redirect in effect for another Lease.
	Renew() error
	Lease() time.Duration
}

// RenewsPerLease is how many times a Follower renews an enabled
// redirect's lease within one lease: a renewal can be late by four fifths
// of the lease before the redirect lapses.
const RenewsPerLease = 5

// FailureLogEvery is how often a Follower whose changes keep failing logs
// it again, with the count; the first failure, and one with another
// error, are logged at once.
const FailureLogEvery = 30 * time.Second

// Follower applies the monitor's verdict to the redirect, one change
// at a time and off the LB's goroutines, retrying failures every second,
// and renews the lease of the redirect while it is enabled: if this
// process dies without removing the redirect, it lapses within a lease.
type Follower struct {
	r       Toggler
	log     *slog.Logger
	clk     clock.Clock
	want    chan bool        // latest verdict, capacity 1
	target  chan retargeting // latest Retarget, capacity 1
	quit    chan struct{}
	stopped chan struct{}

	mu    sync.Mutex
	state FollowerState
}

// FollowerState is what a Follower has done, for a status report.
type FollowerState struct {
	// Want is the verdict it follows: "enable" (the load balancer is
	// healthy), "disable", or "" before the first one.
	Want string
	// InEffect is true while the redirect is installed: its last change
	// was an enable that succeeded, and no renewal failed since.
	InEffect bool
	// Failures counts the changes that failed in a row (retried every
	// second), and Err is the last one's error; 0 and "" once one
	// succeeds.
	Failures int
	Err      string
}

// State returns what the Follower has done so far.
func (d *Follower) State() FollowerState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state
}

func (d *Follower) setState(f func(*FollowerState)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(&d.state)
}

// NewFollower returns a Follower for r; nil clk means the real clock. The
// clock times retries and renewals, while a *Redirect's lease runs on the
// kernel's clock: only a test with a fake Toggler should pass a fake one.
func NewFollower(r Toggler, log *slog.Logger, clk clock.Clock) *Follower {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Follower{r: r, log: log, clk: clk, want: make(chan bool, 1), target: make(chan retargeting, 1), quit: make(chan struct{}), stopped: make(chan struct{})}
}

// retargeting is one Retarget: the new redirect, and a channel closed once
// it is dealt with.
type retargeting struct {
	r    Toggler
	done chan struct{}
}

// Set records the newest verdict; it never blocks. OnHealthy calls are
// serialized, so the newest one wins.
func (d *Follower) Set(healthy bool) {
	select {
	case <-d.want:
	default:
	}
	d.want <- healthy
}

// Retarget makes r the redirect the Follower drives from now on (a reload
// moved the frontend to another port): an enabled redirect is enabled
// again as r, which replaces the table of the same VIP in one transaction.
// It never blocks; the newest call wins. The channel it returns is closed
// once the Follower has dealt with r (enabled it, or tried to and will
// retry; at once when disabled), or a newer Retarget replaced it, or the
// Follower stopped: a caller that closes the old frontend waits for it, so
// that the redirect never points at a port nothing listens on.
func (d *Follower) Retarget(r Toggler) <-chan struct{} {
	rt := retargeting{r: r, done: make(chan struct{})}
	select {
	case old := <-d.target:
		close(old.done)
	default:
	}
	select {
	case <-d.stopped:
		close(rt.done)
	default:
		d.target <- rt
	}
	return rt.done
}

func (d *Follower) Run() {
	defer close(d.stopped)
	var (
		enabled, known, target bool
		retry, renew           clock.Timer
		retryC, renewC         <-chan time.Time
	)
	every := d.r.Lease() / RenewsPerLease
	// Failed changes in a row: the first is logged, then one line every
	// FailureLogEvery with the count (a redirect that cannot work, say
	// without CAP_NET_ADMIN, logged a line a second).
	var (
		failures  int
		failedMsg string
		loggedAt  time.Time
	)
	stopRenew := func() {
		if renew != nil {
			renew.Stop()
			renew, renewC = nil, nil
		}
	}
	apply := func() {
		if known && enabled == target {
			return
		}
		var err error
		stopRenew()
		want := "disable"
		if target {
			want = "enable"
		}
		if target {
			err = d.r.Enable()
		} else {
			err = d.r.Disable()
		}
		if err != nil {
			known = false
			failures++
			d.setState(func(s *FollowerState) {
				*s = FollowerState{Want: want, Failures: failures, Err: err.Error()}
			})
			now := d.clk.Now()
			if failures == 1 || err.Error() != failedMsg || now.Sub(loggedAt) >= FailureLogEvery {
				d.log.Error("redirect change failed; retrying every 1s", "enable", target, "failures", failures, "err", err)
				failedMsg, loggedAt = err.Error(), now
			}
			retry = d.clk.NewTimer(time.Second)
			retryC = retry.C()
			return
		}
		if failures > 0 {
			d.log.Info("redirect change succeeded after failures", "enable", target, "failures", failures)
			failures = 0
		}
		enabled, known = target, true
		d.setState(func(s *FollowerState) { *s = FollowerState{Want: want, InEffect: target} })
		if target {
			renew = d.clk.NewTimer(every)
			renewC = renew.C()
			d.log.Info("redirect enabled: a server is UP", append(describe(d.r), "lease", d.r.Lease())...)
		} else {
			d.log.Info("redirect disabled: the load balancer is not healthy (no server is UP and checked)", describe(d.r)...)
		}
	}
	retarget := func(rt retargeting) {
		defer close(rt.done)
		r := rt.r
		d.r = r
		every = r.Lease() / RenewsPerLease
		if enabled || !known {
			// Enabled (or unknown): enable as the new one. Disabled:
			// nothing to move.
			known = false
			if retry != nil {
				retry.Stop()
				retry, retryC = nil, nil
			}
			apply()
		}
	}
	for {
		// A pending Retarget goes first: a verdict that comes with it
		// is for the new redirect.
		select {
		case r := <-d.target:
			retarget(r)
			continue
		default:
		}
		select {
		case target = <-d.want:
			if retry != nil {
				retry.Stop()
				retry, retryC = nil, nil
			}
			apply()
		case r := <-d.target:
			retarget(r)
		case <-retryC:
			retry, retryC = nil, nil
			apply()
		case <-renewC:
			renew, renewC = nil, nil
			if err := d.r.Renew(); err != nil {
				// The table went (removed by hand, a sweep): build it again.
				d.log.Warn("renewing the redirect's lease failed; enabling it again", "err", err)
				d.setState(func(s *FollowerState) { s.InEffect = false })
				known = false
				apply()
				break
			}
			renew = d.clk.NewTimer(every)
			renewC = renew.C()
		case <-d.quit:
			select {
			case rt := <-d.target:
				close(rt.done)
			default:
			}
			if retry != nil {
				retry.Stop()
			}
			stopRenew()
			err := d.r.Disable()
			d.setState(func(s *FollowerState) { s.InEffect = false })
			if err != nil {
				d.log.Error("removing the redirect on exit failed", "err", err)
			} else if known && enabled {
				d.log.Info("redirect removed")
			}
			return
		}
	}
}

// describe is the log attributes of the redirect a Follower drives now:
// its frontend port when it has one (a Retarget changes it, so it is not
// baked into the Follower's logger).
func describe(r Toggler) []any {
	if p, ok := r.(interface{ ToPort() uint16 }); ok {
		return []any{"to_port", p.ToPort()}
	}
	return nil
}

// Stop removes the redirect and waits for that.
func (d *Follower) Stop() {
	select {
	case <-d.quit:
	default:
		close(d.quit)
	}
	<-d.stopped
}
