package engine

import (
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/vrrp/transport"
)

// TestTakeoverReadsQueued: at advert_int 0.01 a backup whose socket
// reader waits (its thread waiting for a CPU) while its Master_Down timer
// runs out, with the master's advertisements queued on its socket, reads
// them before it takes over, and stays backup: the reader is let go
// within queuedGrace of the timer. A reader that stays stopped past the
// grace does not hold the takeover back.
func TestTakeoverReadsQueued(t *testing.T) {
	for _, tc := range []struct {
		name     string
		resume   bool // let the reader go once the takeover waits for it
		takeover bool
	}{
		{"reader-delayed", true, false},
		{"reader-stopped", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newFastPair(t, 10*time.Millisecond)
				st, backupLog := p.stalls[1], p.logs[1]
				before := strings.Count(backupLog.String(), "to=MASTER")

				st.stopSockets()
				const waiting = "a takeover is due while a packet waits in a VRRP socket"
				for i := 0; i < 100 && !strings.Contains(backupLog.String(), waiting); i++ {
					time.Sleep(time.Millisecond)
					synctest.Wait()
				}
				if !strings.Contains(backupLog.String(), waiting) {
					t.Fatalf("the backup's takeover never waited for the queued advertisements:\n%s", backupLog)
				}
				if tc.resume {
					st.contSockets()
				} else {
					time.Sleep(100 * time.Millisecond)
					synctest.Wait()
					st.contSockets()
				}
				time.Sleep(time.Second)
				synctest.Wait()
				took := strings.Count(backupLog.String(), "to=MASTER") > before
				if took != tc.takeover {
					t.Errorf("the backup took over: %v, want %v; its log:\n%s", took, tc.takeover, backupLog)
				}
				p.settled(t, "after the stall")
			})
		})
	}
}

// TestWholeMachineStop: at advert_int 0.01 the master and the backup
// stop together for 60 ms (a virtual machine descheduled), and the
// backup runs again an instant before the master: its Master_Down timer
// is overdue and nothing is queued, the master not having sent while
// stopped. A timer that late (over lateLimit, 4.5 ms here) says the
// backup was stopped too: it reads for lateGrace, hears the master's
// advertisement as the master wakes, and stays backup.
func TestWholeMachineStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFastPair(t, 10*time.Millisecond)
		stalls, logs := p.stalls, p.logs

		stalls[0].stop()
		stalls[1].stop()
		time.Sleep(60 * time.Millisecond)
		synctest.Wait()
		stalls[1].cont() // the backup first: its timer fires, nothing queued
		stalls[0].cont()
		time.Sleep(time.Second)
		synctest.Wait()
		if p.backupTookOver() {
			t.Errorf("the backup took over on waking with the master:\n%s", logs[1])
		}
		if !strings.Contains(logs[1].String(), "timer fired late; reading queued packets before deciding") {
			t.Errorf("the backup did not log its late timer")
		}
		p.settled(t, "after the stop")
	})
}

// TestTakeoverWaitsInFlight: a takeover due at advert_int 0.01 waits
// inFlightWait for an advertisement in flight; one at advert_int 1 does
// not wait at all.
func TestTakeoverWaitsInFlight(t *testing.T) {
	for _, tc := range []struct {
		mdi  time.Duration
		want time.Duration
	}{
		{3*10*time.Millisecond + 6093750*time.Nanosecond, 2255859 * time.Nanosecond},
		{3*100*time.Millisecond + 60937500*time.Nanosecond, 5 * time.Millisecond},
		{3*time.Second + 609375*time.Microsecond, 0},
	} {
		if got := inFlightWait(tc.mdi); got != tc.want {
			t.Errorf("inFlightWait(%v) = %v, want %v", tc.mdi, got, tc.want)
		}
	}
}

// TestTakeoverHearsInFlight: the master's advertisement arrives a
// millisecond after the backup's Master_Down timer (the master and the
// backup stopped together for less than lateLimit's worth of lateness):
// the backup waits inFlightWait, hears it and stays backup.
func TestTakeoverHearsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFastPair(t, 10*time.Millisecond)
		seg, n1, st := p.seg, p.nodes[0], p.stalls[0]
		// Stop the master whole right after it sent an advertisement
		// (the segment's drop hook sees it pass), and resume it 37 ms
		// later: the backup's timer runs out at 36.1 ms, the master's
		// overdue advertisement goes out as it resumes.
		var mu sync.Mutex
		var last time.Time
		seg.mu.Lock()
		seg.drop = func(from, _ *simNode, _ transport.Packet) bool {
			if from == n1 {
				mu.Lock()
				last = time.Now()
				mu.Unlock()
			}
			return false
		}
		seg.mu.Unlock()
		for i := 0; i < 150; i++ {
			time.Sleep(100 * time.Microsecond)
			synctest.Wait()
			mu.Lock()
			sent := !last.IsZero() && time.Since(last) < 100*time.Microsecond
			mu.Unlock()
			if sent {
				break
			}
		}
		st.stop()
		time.Sleep(37 * time.Millisecond)
		synctest.Wait()
		st.cont()
		time.Sleep(time.Second)
		synctest.Wait()
		if p.backupTookOver() {
			t.Errorf("the backup took over though the master's advertisement came within inFlightWait:\n%s", p.logs[1])
		}
	})
}

// fastPair is a master (node1, priority 150) and a backup (node2, 100) at
// VRRPv3 on one segment, each node's clock and sockets obeying a simStall
// of its own, logging at debug level, settled with node1 the VIP's sole
// holder and a second more.
type fastPair struct {
	seg     *simSegment
	nodes   []*simNode // master, backup
	vip     netip.Addr
	stalls  []*simStall
	engines []*Engine
	logs    []*syncbuf.Buffer
}

// newFastPair starts a fastPair advertising every interval; call it in
// a synctest bubble.
func newFastPair(t *testing.T, interval time.Duration) *fastPair {
	t.Helper()
	p := &fastPair{seg: &simSegment{}, vip: netip.MustParseAddr("198.18.0.100")}
	p.nodes = []*simNode{p.seg.node("node1", "198.18.0.1/24"), p.seg.node("node2", "198.18.0.2/24")}
	c := peers.Conf{Version: 3, Interval: interval, VRID: 51, VIP: netip.PrefixFrom(p.vip, 32)}
	for i, n := range p.nodes {
		st := newSimStall(t)
		n.stall = st
		log := new(syncbuf.Buffer)
		c.Priority = 150 - 50*i
		e, _ := simEngine(t, n, simConf(t, c, n.name), nil, func(o *Options) {
			o.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
			o.Clock = stallClock{st}
		})
		p.stalls, p.engines, p.logs = append(p.stalls, st), append(p.engines, e), append(p.logs, log)
		simRun(t, e)
	}
	simWaitSole(t, p.nodes, p.vip, p.nodes[0], 5*interval, 20*time.Second, "start")
	time.Sleep(time.Second)
	synctest.Wait()
	return p
}

// settled waits until node1 alone holds the VIP again.
func (p *fastPair) settled(t *testing.T, why string) {
	t.Helper()
	simWaitSole(t, p.nodes, p.vip, p.nodes[0], 100*time.Millisecond, 5*time.Second, why)
}

// backupTookOver reports whether the backup logged a takeover.
func (p *fastPair) backupTookOver() bool { return strings.Contains(p.logs[1].String(), "to=MASTER") }
