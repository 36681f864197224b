package engine

import (
	"net/netip"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/peers"
)

// simStall stops an engine on the segment as SIGSTOP stops a process:
// while stopped, its timers do not fire and its sockets hand it nothing
// (what arrives waits in the socket, as in the kernel's buffer). On resume
// the timers go first and the sockets an instant later, the worst order:
// a timer long overdue is taken before the packets queued meanwhile. An
// engine is stalled through its clock (stallClock) and its node's sockets
// (simNode.stall).
type simStall struct {
	mu      sync.Mutex
	stopped [2]bool          // the timers', the sockets'
	resume  [2]chan struct{} // closed on resume
	done    chan struct{}    // closed at the test's end
}

const (
	stallTimers = iota
	stallSockets
)

func newSimStall(t *testing.T) *simStall {
	s := &simStall{done: make(chan struct{})}
	t.Cleanup(func() { close(s.done) })
	return s
}

func (s *simStall) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.stopped {
		s.stopped[i], s.resume[i] = true, make(chan struct{})
	}
}

// stoppedWhole reports whether both the timers and the sockets are
// stopped (stop), as for a process stopped whole: its backstop threads
// send nothing then either.
func (s *simStall) stoppedWhole() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped[stallTimers] && s.stopped[stallSockets]
}

// stopSockets stops only the node's sockets: what arrives waits, as
// for a reader whose thread waits for a CPU, while the timers run.
func (s *simStall) stopSockets() { s.stopPart(stallSockets) }

// contSockets resumes the sockets stopSockets stopped.
func (s *simStall) contSockets() { s.contPart(stallSockets) }

// stopTimers stops only the engine's timers, as for a loop whose thread
// waits for a stopped CPU; its backstop threads run on.
func (s *simStall) stopTimers() { s.stopPart(stallTimers) }

// contTimers resumes the timers stopTimers stopped.
func (s *simStall) contTimers() { s.contPart(stallTimers) }

func (s *simStall) stopPart(what int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped[what], s.resume[what] = true, make(chan struct{})
}

func (s *simStall) contPart(what int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped[what] = false
	close(s.resume[what])
}

// cont resumes the timers, lets the engine take what fired (in the
// bubble), then resumes the sockets.
func (s *simStall) cont() {
	for i := range s.stopped {
		s.mu.Lock()
		s.stopped[i] = false
		close(s.resume[i])
		s.mu.Unlock()
		synctest.Wait()
	}
}

// wait returns once the timers (stallTimers) or the sockets
// (stallSockets) run; false when the test has ended.
func (s *simStall) wait(what int) bool {
	s.mu.Lock()
	if !s.stopped[what] {
		s.mu.Unlock()
		return true
	}
	r := s.resume[what]
	s.mu.Unlock()
	select {
	case <-r:
		return true
	case <-s.done:
		return false
	}
}

// stallClock is the real clock (virtual in the bubble) whose timers hold
// their firing while s is stopped.
type stallClock struct{ s *simStall }

func (c stallClock) Now() time.Time { return time.Now() }

func (c stallClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return clock.Real{}.AfterFunc(d, func() {
		if c.s.wait(stallTimers) {
			f()
		}
	})
}

func (c stallClock) NewTimer(d time.Duration) clock.Timer {
	t := &stallTimer{inner: time.NewTimer(d), out: make(chan time.Time, 1), s: c.s}
	go t.forward()
	return t
}

type stallTimer struct {
	inner *time.Timer
	out   chan time.Time
	s     *simStall
}

func (t *stallTimer) forward() {
	for {
		select {
		case v := <-t.inner.C:
			if !t.s.wait(stallTimers) {
				return
			}
			select {
			case t.out <- v:
			default:
			}
		case <-t.s.done:
			return
		}
	}
}

func (t *stallTimer) C() <-chan time.Time { return t.out }

func (t *stallTimer) Stop() bool {
	r := t.inner.Stop()
	select {
	case <-t.out:
	default:
	}
	return r
}

func (t *stallTimer) Reset(d time.Duration) bool {
	r := t.inner.Reset(d)
	select {
	case <-t.out:
	default:
	}
	return r
}

// TestStall: a backup stopped for longer than its master-down interval
// (5 s; SIGSTOP in namespaces) must not become a second master when it
// wakes while the master lives, though its master-down timer is long
// overdue and fires before its socket passes on the master's advert that
// waits there: the engine reads what is queued before acting on a late
// timer. A stalled master
// resolves to one master after it wakes.
func TestStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		n1, n2 := seg.node("node1", "198.18.0.1/24"), seg.node("node2", "198.18.0.2/24")
		nodes := []*simNode{n1, n2}
		vip := netip.MustParseAddr("198.18.0.100")
		c := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 51, VIP: netip.PrefixFrom(vip, 32)}
		var stalls []*simStall
		var logs []interface{ String() string }
		for i, n := range nodes {
			st := newSimStall(t)
			stalls = append(stalls, st)
			n.stall = st
			c.Priority = 150 - 50*i
			e, log := simEngine(t, n, simConf(t, c, n.name), nil, func(o *Options) { o.Clock = stallClock{st} })
			logs = append(logs, log)
			simRun(t, e)
		}
		simWaitSole(t, nodes, vip, n1, time.Second, 20*time.Second, "start")

		stalls[1].stop()
		time.Sleep(5 * time.Second) // the stall being tested
		synctest.Wait()
		stalls[1].cont()
		simNeverHolds(t, nodes, vip, n1, 2*time.Second, "the backup woke from a 5 s stall while the master was alive")
		// Virtual time shows no VIP held and dropped within one instant:
		// the state changes do.
		if strings.Contains(logs[1].String(), "to=MASTER") {
			t.Errorf("the backup became master, if only for an instant, on waking from the stall")
		}
		if !strings.Contains(logs[1].String(), "timer fired late; reading queued packets before deciding") {
			t.Errorf("the backup did not log its late timer")
		}

		stalls[0].stop()
		// The stalled master still holds its VIP, as a stopped process's
		// addresses stay: node2 takes it too.
		simWaitFor(t, "master stalled: node2 takes over", func() (bool, string) { return n2.has(simLinkName, vip), "not yet" })
		stalls[0].cont()
		simWaitSole(t, nodes, vip, n1, time.Second, 20*time.Second, "master woke: one master again (node1 preempts)")
	})
}
