package clock

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Clock tells the time and makes timers. Production code uses Real; tests
// use a *Fake and move it with Advance.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
	// NewTimer returns a timer whose channel receives the time once d has passed.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer that vipstack uses.
type Timer interface {
	// C is nil for timers made by AfterFunc.
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// Real is the wall clock.
type Real struct{}

func (Real) Now() time.Time { return time.Now() }

func (Real) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{t: time.AfterFunc(d, f)}
}

func (Real) NewTimer(d time.Duration) Timer { return realTimer{t: time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// Fake is a manual clock for tests. Timers fire only inside Advance, in
// deadline order, each seeing Now() equal to its own deadline.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	seq    int
}

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	return f.add(d, fn, nil)
}

func (f *Fake) NewTimer(d time.Duration) Timer {
	return f.add(d, nil, make(chan time.Time, 1))
}

func (f *Fake) add(d time.Duration, fn func(), ch chan time.Time) *fakeTimer {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	t := &fakeTimer{clock: f, fn: fn, ch: ch, when: f.now.Add(d), seq: f.seq, active: true}
	f.timers = append(f.timers, t)
	return t
}

// Advance moves the clock forward by d, firing every timer that falls due,
// in order. AfterFunc callbacks run synchronously, so a test sees their
// effects as soon as Advance returns.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	end := f.now.Add(d)
	f.mu.Unlock()
	for {
		f.mu.Lock()
		next := f.nextDueLocked(end)
		if next == nil {
			f.now = end
			f.mu.Unlock()
			return
		}
		f.now = next.when
		next.active = false
		f.removeLocked(next)
		fn, ch, when := next.fn, next.ch, next.when
		f.mu.Unlock()
		if fn != nil {
			fn()
		} else {
			select {
			case ch <- when:
			default:
			}
		}
	}
}

// Pending reports how many timers are armed.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

func (f *Fake) nextDueLocked(end time.Time) *fakeTimer {
	var due []*fakeTimer
	for _, t := range f.timers {
		if !t.when.After(end) {
			due = append(due, t)
		}
	}
	if len(due) == 0 {
		return nil
	}
	sort.Slice(due, func(i, j int) bool {
		if due[i].when.Equal(due[j].when) {
			return due[i].seq < due[j].seq
		}
		return due[i].when.Before(due[j].when)
	})
	return due[0]
}

func (f *Fake) removeLocked(t *fakeTimer) {
	for i, x := range f.timers {
		if x == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			return
		}
	}
}

type fakeTimer struct {
	clock  *Fake
	fn     func()
	ch     chan time.Time
	when   time.Time
	seq    int
	active bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	f := t.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	was := t.active
	t.active = false
	f.removeLocked(t)
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	f := t.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	was := t.active
	f.removeLocked(t)
	f.seq++
	t.when, t.seq, t.active = f.now.Add(d), f.seq, true
	f.timers = append(f.timers, t)
	return was
}

// Sleep waits d of wall-clock time or until ctx ends, whichever comes
// first, and returns ctx's error in the second case.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
