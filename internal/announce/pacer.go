package announce

import (
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
)

// Pacer spreads announcements at Rate per second (Rate <= 0: no limit),
// using Clock for every wait. Send is called for each
// announcement from a Clock timer callback (with clock.Fake, inside
// Advance), never from Schedule or Cancel, and never twice at once.
//
// SendNow is the one exception: it sends on its caller's goroutine.
//
// Clock and Send are required. Set the exported fields before the first
// Schedule and do not change them afterwards; a Pacer must not be copied after first use. Its methods are
// safe for concurrent use.
//
// With a Rate, announcement k of a busy queue has the slot 1/Rate after
// announcement k-1's slot, not 1/Rate after it actually left, so a timer
// that fires late sends every announcement whose slot has passed and the
// queue keeps its pace (the generic cell rate algorithm, a token bucket in
// other words): Burst is the bucket's depth, how many may leave
// back to back, and so how far behind its slots a late timer can catch
// up. In any window of length d at most Burst-1 + Rate×d (rounded up) go
// out, FirstAtOnce aside. Burst <= 1 spaces every announcement at least 1/Rate after the one
// before, and each late timer then delays the rest of the queue by its
// lateness: a queue of thousands at a millisecond apart loses seconds on
// a busy machine.
//
// FirstAtOnce lets the first announcement of each address in a burst of
// Schedule (the first of its repeat copies) leave as soon as it is due,
// without waiting for the rate; it still counts against the rate, so the
// copies behind it wait the longer. The addresses then all move as soon as
// unpaced, and Rate spreads the repeats.
type Pacer struct {
	Clock       clock.Clock
	Rate        int
	Burst       int
	FirstAtOnce bool
	Send        func(netip.Addr) error
	// OnError, if set, is told about every failed Send; the Pacer carries on
	// with the rest of the queue either way.
	OnError func(addr netip.Addr, err error)
	// Drained, if set, is called after the last announcement of the queue
	// was sent (Send returned), on the pacer's goroutine: a burst is over.
	// It is not called when Cancel empties the queue.
	Drained func()

	mu    sync.Mutex
	queue []pending // sorted by due, then by order of scheduling
	timer clock.Timer
	gen   uint64 // identifies the armed timer; stale callbacks see a newer one
	// tat is, with a Rate, the slot of the next announcement were the
	// bucket empty: one interval after the previous announcement's slot
	// (or after it left, if it left after its slot). The next one may
	// leave Burst-1 intervals before tat.
	tat time.Time

	sendMu sync.Mutex // serializes Send calls
}

type pending struct {
	addr  netip.Addr
	due   time.Time
	first bool // the first copy of addr in its burst
}

// Schedule queues announcements of addrs the way keepalived schedules
// gratuitous ARPs on becoming MASTER: a burst now and, if delay > 0, the
// same burst again delay later (garp_master_delay). Each burst announces
// every address repeat times (garp_master_repeat), cycling through the list
// (a1 a2 ... a1 a2 ...) so the copies of one address are spread out. With
// repeat = 5 and delay = 5s this is keepalived's default: 5 announcements
// per address at once and 5 more 5 s later.
//
// The times are the earliest allowed: with a Rate, the announcements go out
// in queue order at that rate (see Pacer), so a burst that is still
// draining delays the next. repeat <= 0 schedules nothing. Later calls merge into the queue by
// due time.
func (p *Pacer) Schedule(addrs []netip.Addr, repeat int, delay time.Duration) {
	p.schedule(addrs, repeat, delay, false)
}

// ScheduleRest is Schedule for addresses whose first announcement the
// caller already sent with SendNow: the first burst has repeat-1 copies of
// each, the second (after delay) all repeat. A new MASTER announces each
// VIP as soon as the kernel has added it, and leaves the rest to the
// pacer.
func (p *Pacer) ScheduleRest(addrs []netip.Addr, repeat int, delay time.Duration) {
	p.schedule(addrs, repeat, delay, true)
}

func (p *Pacer) schedule(addrs []netip.Addr, repeat int, delay time.Duration, firstSent bool) {
	if repeat <= 0 || len(addrs) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.Clock.Now()
	bursts := [2]time.Time{now, now.Add(delay)}
	n, copies := 1, repeat
	if delay > 0 {
		n, copies = 2, 2*repeat
	}
	if firstSent {
		copies--
	}
	// The queue grown once to its size: append's doublings were 19 MB of
	// garbage while 1,000 instances took over (docs/design/memory.md).
	p.queue = slices.Grow(p.queue, copies*len(addrs))
	for b, at := range bursts[:n] {
		for r := 0; r < repeat; r++ {
			if b == 0 && r == 0 && firstSent {
				continue
			}
			for _, a := range addrs {
				p.queue = append(p.queue, pending{addr: a, due: at, first: r == 0})
			}
		}
	}
	// Stable: equal due times keep the order they were scheduled in.
	slices.SortStableFunc(p.queue, func(x, y pending) int { return x.due.Compare(y.due) })
	p.armLocked(now)
}

// SendNow sends one announcement of addr on the caller's goroutine, at
// once, as a first copy leaves under FirstAtOnce, and counts it against
// the rate. It returns Send's error (also given to OnError).
func (p *Pacer) SendNow(addr netip.Addr) error {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	p.mu.Lock()
	p.tookLocked(p.Clock.Now())
	p.mu.Unlock()
	err := p.Send(addr)
	if err != nil && p.OnError != nil {
		p.OnError(addr, err)
	}
	return err
}

// Cancel drops everything queued (for example on leaving MASTER). A Send
// already in progress finishes; no other follows.
func (p *Pacer) Cancel() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue = nil
	p.gen++
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
}

// Queued reports how many announcements wait to be sent.
func (p *Pacer) Queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}

func (p *Pacer) interval() time.Duration {
	if p.Rate <= 0 {
		return 0
	}
	return time.Second / time.Duration(p.Rate)
}

// nextLocked returns when the head of the queue may go out: when it is
// due, and unless it is a first copy under FirstAtOnce, no earlier than
// Burst-1 intervals before tat.
func (p *Pacer) nextLocked() time.Time {
	t := p.queue[0].due
	if p.FirstAtOnce && p.queue[0].first {
		return t
	}
	if iv := p.interval(); iv > 0 {
		if earliest := p.tat.Add(-time.Duration(max(p.Burst, 1)-1) * iv); earliest.After(t) {
			t = earliest
		}
	}
	return t
}

// tookLocked moves tat on for an announcement leaving at now.
func (p *Pacer) tookLocked(now time.Time) {
	if iv := p.interval(); iv > 0 {
		p.tat = later(p.tat, now).Add(iv)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// armLocked (re)arms the timer for the head of the queue.
func (p *Pacer) armLocked(now time.Time) {
	p.gen++
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	if len(p.queue) == 0 {
		return
	}
	d := p.nextLocked().Sub(now)
	if d < 0 {
		d = 0
	}
	gen := p.gen
	p.timer = p.Clock.AfterFunc(d, func() { p.fire(gen) })
}

// fire sends every announcement that is due, then rearms.
func (p *Pacer) fire(gen uint64) {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	for {
		p.mu.Lock()
		if gen != p.gen {
			p.mu.Unlock()
			return // cancelled or rearmed meanwhile
		}
		now := p.Clock.Now()
		if len(p.queue) == 0 {
			p.timer = nil
			p.mu.Unlock()
			return
		}
		if p.nextLocked().After(now) {
			p.armLocked(now)
			p.mu.Unlock()
			return
		}
		it := p.queue[0]
		p.queue[0] = pending{}
		p.queue = p.queue[1:]
		last := len(p.queue) == 0
		if last {
			p.queue = nil // release the drained backing array
		}
		p.tookLocked(now)
		p.mu.Unlock()

		if err := p.Send(it.addr); err != nil && p.OnError != nil {
			p.OnError(it.addr, err)
		}
		if last && p.Drained != nil {
			p.Drained()
		}
	}
}
