package engine

import (
	"context"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vipstack/vipstack/internal/vrrp/fsm"
	"github.com/vipstack/vipstack/internal/vrrp/transport"
)

// The backstop sends a fast master's advertisements when the engine's
// loop is late for them.
//
// At advert_int 0.01 a backup takes over after 3 x 10 ms + skew of
// silence. On a virtual machine one virtual CPU can stop for 20 to 200 ms
// while the other runs (bench/fastvrrp: perf showed the CPU without a
// single sample through each such silence of a master). A thread asleep
// on that CPU, its timer armed there, wakes only when it runs again, and
// a Go timer is served by whichever thread holds its P: the loop's
// advertisement waits for the stopped CPU even though the other one is
// free. The backstop keeps one thread per CPU (two at most), each pinned
// to its CPU and sleeping on a timer of its own there; whichever wakes
// first after an advertisement fell due, and finds the loop has not sent
// it, sends it on a socket of its own. The loop and the threads claim
// each due time with one compare-and-swap, so each is sent once.
//
// The backstop sends only what the loop last sent (the same bytes, to the
// same destinations) and only for backstopLease after the loop last
// claimed or sent one: a loop that stopped for good (a deadlock) does not
// keep a master alive through its backstop for longer than that.

// backstopBelow is the longest advertisement interval the backstop
// serves: at 100 ms a backup waits 300 ms and the skew, longer than the
// stops of a virtual CPU seen here; at longer intervals the loop's own
// timer suffices.
const backstopBelow = 100 * time.Millisecond

// backstopLease is how long the backstop goes on sending a master's
// advertisements after the loop last claimed or sent one for it.
const backstopLease = time.Second

// backstopNap is the longest a backstop thread sleeps in one system call:
// the runtime's monitor thread (sysmon) takes the P of a goroutine that
// stays 10 ms in one (see backstop.nap).
const backstopNap = 8 * time.Millisecond

// backstopMargin is how late an advertisement must be before a backstop
// thread sends it: the loop's timer is up to a few milliseconds late
// under load, and the thread's wake-ups then find nothing to do.
func backstopMargin(interval time.Duration) time.Duration { return interval / 4 }

// backstopSeams are what the backstop uses of the system: its sockets,
// how its threads sleep and how they are pinned to a CPU. The zero value
// uses the real ones.
type backstopSeams struct {
	listen func(family int) (transport.Conn, error)
	sleep  func(ctx context.Context, d time.Duration) // may return early once ctx ends
	// cpus are the CPUs to pin the threads to, one thread each; pin pins
	// the calling goroutine's thread to one of them, and unpin gives it
	// back the CPUs it had.
	cpus func() []int
	pin  func(cpu int) (unpin func() error, err error)
}

// advertPlan is what a backstop thread sends for one master: the
// advertisement as the loop last encoded it for each destination.
type advertPlan struct {
	family   int
	src      netip.Addr
	ifIndex  int
	dsts     []netip.Addr
	payloads [][]byte // one per destination, checksummed for it
	interval time.Duration
}

// advertSlot is one master's next due time and plan, shared by the loop
// and the threads.
type advertSlot struct {
	due  atomic.Pointer[time.Time]
	plan atomic.Pointer[advertPlan]
	// until is the lease: nothing is sent after it (backstopLease after
	// the loop last sent or claimed).
	until atomic.Pointer[time.Time]
	sent  atomic.Uint64 // advertisements the threads sent
}

// claim takes the advertisement due at or before now, moving the due time
// on as the fsm does (nextAdvertAfter); false when it is not due yet or
// another sender took it.
func (s *advertSlot) claim(now time.Time, interval time.Duration) bool {
	p := s.due.Load()
	if p == nil || now.Before(*p) {
		return false
	}
	next := nextAdvertAfter(*p, now, interval)
	return s.due.CompareAndSwap(p, &next)
}

// nextAdvertAfter is fsm's schedule: an interval after the last due time,
// or after now when that is past already.
func nextAdvertAfter(due, now time.Time, interval time.Duration) time.Time {
	if next := due.Add(interval); next.After(now) {
		return next
	}
	return now.Add(interval)
}

// backstop holds the fast masters' slots and runs the threads.
type backstop struct {
	seams backstopSeams
	now   func() time.Time
	cpus  []int // the threads' CPUs, read once (seams.cpus)

	mu    sync.Mutex
	slots map[string]*advertSlot
	// socks are the threads' sockets by family, one per thread, opened
	// by the loop (set), in the engine's network namespace: a thread is
	// a goroutine of its own, and may run on a thread of another
	// namespace (a test's engine runs in one it entered).
	socks map[int]*[2]transport.Conn
	list  atomic.Pointer[[]*advertSlot] // slots, for the threads
	kick  chan struct{}                 // a slot was added
	run   sync.Once
	ctx   context.Context
}

// addProcs raises GOMAXPROCS by n, once per process (an engine's
// threads end with it, and the next engine of the process starts its
// own), unless $GOMAXPROCS sets it.
func addProcs(n int) {
	procsOnce.Do(func() {
		if os.Getenv("GOMAXPROCS") == "" {
			runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + n)
		}
	})
}

var procsOnce sync.Once

func newBackstop(ctx context.Context, seams backstopSeams, now func() time.Time) *backstop {
	var cpus []int
	if seams.cpus != nil {
		cpus = seams.cpus()
	}
	return &backstop{seams: seams, now: now, cpus: cpus, slots: map[string]*advertSlot{}, socks: map[int]*[2]transport.Conn{}, kick: make(chan struct{}, 1), ctx: ctx}
}

// claim reports whether the loop should send name's advertisement due at
// now: true unless a thread sent it already. Either way it renews the
// lease: the loop is alive.
func (b *backstop) claim(name string, now time.Time) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	s := b.slots[name]
	b.mu.Unlock()
	if s == nil {
		return true
	}
	plan := s.plan.Load()
	if plan == nil {
		return true
	}
	until := now.Add(backstopLease)
	s.until.Store(&until)
	return s.claim(now, plan.interval)
}

// set records what the loop just sent for name and when the next is due,
// and starts the threads on first use. It fails when the threads'
// sockets for the plan's family cannot be opened; nothing is served then.
func (b *backstop) set(name string, plan *advertPlan, due time.Time) error {
	if b.seams.listen == nil || len(b.cpus) < 2 {
		return nil // no threads would run (start)
	}
	b.mu.Lock()
	if b.socks[plan.family] == nil {
		var pair [2]transport.Conn
		for i := range pair {
			c, err := b.seams.listen(plan.family)
			if err != nil {
				if i > 0 {
					pair[0].Close()
				}
				b.mu.Unlock()
				return err
			}
			pair[i] = c
		}
		b.socks[plan.family] = &pair
	}
	s := b.slots[name]
	if s == nil {
		s = &advertSlot{}
		b.slots[name] = s
		b.publish()
	}
	b.mu.Unlock()
	until := b.now().Add(backstopLease)
	s.until.Store(&until)
	s.plan.Store(plan)
	s.due.Store(&due)
	b.run.Do(b.start)
	select {
	case b.kick <- struct{}{}:
	default:
	}
	return nil
}

// remove stops the backstop for name (no longer a fast master) and
// returns how many advertisements the threads sent for it.
func (b *backstop) remove(name string) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.slots[name]
	if s == nil {
		return 0
	}
	s.plan.Store(nil)
	delete(b.slots, name)
	b.publish()
	return s.sent.Load()
}

// serving is how many masters the backstop serves, and how many
// advertisements its threads sent for them.
func (b *backstop) serving() (masters int, sent uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.slots {
		sent += s.sent.Load()
	}
	return len(b.slots), sent
}

// publish copies the slots for the threads; b.mu is held.
func (b *backstop) publish() {
	l := make([]*advertSlot, 0, len(b.slots))
	for _, s := range b.slots {
		l = append(l, s)
	}
	b.list.Store(&l)
}

// start runs one thread per CPU the seams name (none with one CPU or
// fewer: a thread on the loop's only CPU waits for it as the loop does).
func (b *backstop) start() {
	cpus := b.cpus
	if len(cpus) < 2 {
		return
	}
	// A thread that wakes needs a P to run Go code, and the P it slept
	// beside may be held by a thread on the stopped CPU: one more P per
	// thread keeps one free for it.
	addProcs(2)
	for i, cpu := range cpus[:2] {
		go b.thread(i, cpu)
	}
}

// sock is thread i's socket for family, if open.
func (b *backstop) sock(i, family int) transport.Conn {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.socks[family]; p != nil {
		return p[i]
	}
	return nil
}

// thread is backstop thread i, asleep on cpu between advertisements, until
// the engine stops.
func (b *backstop) thread(i, cpu int) {
	for b.ctx.Err() == nil {
		wake, any := b.nextWake(b.now())
		if !any {
			// Nothing to serve: wait for a new master, or for a lease the
			// loop renews (claim does not kick), checked every lease.
			t := time.NewTimer(backstopLease)
			select {
			case <-b.kick:
			case <-t.C:
			case <-b.ctx.Done():
				t.Stop()
				return
			}
			t.Stop()
			continue
		}
		if !b.nap(i, cpu, wake) {
			return
		}
	}
}

// nap sleeps until wake, backstopNap at most, on a thread locked to this
// goroutine and pinned to cpu, so that the timer is armed on that CPU and
// wakes the thread there; then it sends what is due on that thread, unpins
// it and lets it go. While it is locked the runtime starts no thread from
// it (its template thread does), so the pin does not spread, and it is
// unpinned before it runs any other goroutine. False when the thread could
// not be pinned or unpinned: the thread then ends with its goroutine (a
// thread still pinned must not run other goroutines), and the backstop
// runs on one thread fewer.
//
// The thread is let go, and the goroutine goes once through the scheduler,
// at every nap. A goroutine locked to its thread for good, looping over
// system calls, never changes its P's schedtick, and sysmon takes the P of
// a goroutine on one schedtick for 10 ms each time it finds it in a system
// call, and after each such take wakes every 20 us for a while: 3,500
// times a second, 11 % of a CPU, on a master at advert_int 0.01 with the
// threads locked for good (docs/design/realtime.md). Unlocked, the
// goroutine's Gosched is a turn through the scheduler, which changes the
// schedtick; the goroutine usually comes back on the same thread at once.
// Another thread may take it first from the global queue, and a thread
// whose CPU stops then holds it: the other backstop thread, on the other
// CPU, still wakes on its own.
func (b *backstop) nap(i, cpu int, wake time.Time) bool {
	runtime.LockOSThread()
	unpin, err := b.seams.pin(cpu)
	if err != nil {
		runtime.UnlockOSThread() // not pinned: the thread is as it was
		return false
	}
	if d := wake.Sub(b.now()); d > 0 {
		b.seams.sleep(b.ctx, min(d, backstopNap))
	}
	b.sendDue(i)
	if unpin() != nil {
		return false // still locked: the thread ends with the goroutine
	}
	runtime.UnlockOSThread()
	runtime.Gosched()
	return true
}

// nextWake is the earliest due time plus its margin among the slots
// whose lease runs at now.
func (b *backstop) nextWake(now time.Time) (time.Time, bool) {
	var wake time.Time
	any := false
	for _, s := range b.slotList() {
		p, plan, until := s.due.Load(), s.plan.Load(), s.until.Load()
		if p == nil || plan == nil || until == nil || now.After(*until) {
			continue
		}
		w := p.Add(backstopMargin(plan.interval))
		if !any || w.Before(wake) {
			wake, any = w, true
		}
	}
	return wake, any
}

func (b *backstop) slotList() []*advertSlot {
	if l := b.list.Load(); l != nil {
		return *l
	}
	return nil
}

// sendDue sends every advertisement due more than its margin ago that no
// one else has claimed, on thread i's sockets.
func (b *backstop) sendDue(i int) {
	now := b.now()
	for _, s := range b.slotList() {
		plan, until := s.plan.Load(), s.until.Load()
		if plan == nil || until == nil || now.After(*until) {
			continue
		}
		p := s.due.Load()
		if p == nil || now.Before(p.Add(backstopMargin(plan.interval))) {
			continue
		}
		// The socket first: an advertisement claimed is the thread's to
		// send, and the loop will not send it.
		c := b.sock(i, plan.family)
		if c == nil || !s.claim(now, plan.interval) {
			continue
		}
		for j, dst := range plan.dsts {
			_ = c.WritePacket(plan.payloads[j], plan.src, dst, plan.ifIndex)
		}
		s.sent.Add(1)
	}
}

// stop ends the backstop for every master: the engine's loop has ended
// (shutdown, or a hand-over to a successor that advertises itself).
func (b *backstop) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, s := range b.slots {
		s.plan.Store(nil)
		delete(b.slots, name)
	}
	b.publish()
	for fam, p := range b.socks {
		for _, c := range p {
			c.Close()
		}
		delete(b.socks, fam)
	}
}

// backstopSeams is Options.backstop, or the real seams.
func (e *Engine) backstopSeams() backstopSeams {
	switch {
	case e.opts.backstop != nil:
		return *e.opts.backstop
	case e.opts.Listen != nil:
		// Sockets of a test's own: no threads with real ones beside them.
		return backstopSeams{cpus: func() []int { return nil }}
	}
	return realBackstopSeams()
}

// backstopAdvert records, after the loop sent in's advertisement, what a
// backstop thread would send for it next: for a master advertising every
// backstopBelow or faster, at a priority above 0; any other instance
// leaves the backstop. payloads are the advertisement as sent to each of
// in.dsts.
func (e *Engine) backstopAdvert(in *instance, prio uint8, payloads [][]byte) {
	if e.bs == nil {
		return
	}
	if in.fsm.State() != fsm.Master || prio == 0 || in.cfg.AdvertInterval > backstopBelow || len(payloads) != len(in.dsts) {
		e.leaveBackstop(in)
		return
	}
	plan := &advertPlan{family: in.family, src: in.src, ifIndex: in.ifIndex, dsts: in.dsts, payloads: payloads, interval: in.cfg.AdvertInterval}
	if err := e.bs.set(in.cfg.Name, plan, in.fsm.NextDeadline()); err != nil && !e.backstopFailed {
		e.backstopFailed = true
		e.log.Warn("no backstop for fast masters' advertisements: cannot open its sockets; the loop alone sends them", "instance", in.cfg.Name, "err", err)
	}
}

// leaveBackstop stops the backstop for in, logging what it sent.
func (e *Engine) leaveBackstop(in *instance) {
	if e.bs == nil {
		return
	}
	if n := e.bs.remove(in.cfg.Name); n > 0 {
		e.log.Info("backstop threads sent advertisements while the engine's loop was late", "instance", in.cfg.Name, "adverts", n)
	}
}
