package stats

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Session rates, the last session's age and the average times of the
// stats, counted as haproxy 2.6.12 counts them. Measured with haproxy
// 2.6.12 in TCP mode on loopback (five clients at once to a server that
// answers 200 ms after the connect and closes, then idle; a backend of one
// answering and one refusing server with `retries 0`, four clients; a
// server with weight 0 and a backend nobody uses):
//
//   - rate is the sessions of the last second, haproxy's freq_ctr: a
//     count for the current period of 1 s and the one before; the period
//     starts at the first session after more than a period without one
//     and rolls over a period at a time. It reads as curr + prev*left/1s,
//     left the part of the current period still to come, truncated:
//     measured 5 for 0.6 s after the five clients, 3 at 1.1 s, 0 at 1.6 s.
//     rate_max is the highest count a period reached (5, and 5 after).
//   - The frontend counts its clients (rate, rate_max) and the same as
//     connections (conn_rate, conn_rate_max, conn_tot: equal in TCP mode);
//     its req_rate and req_rate_max are 0, its rate_lim 0 (no limit). A
//     backend counts each client once (4 for the four clients above), a
//     server each time it is picked, as its lbtot does (2 and 2), not its
//     retries (one client refused 4 times by one server, `retries 3`:
//     stot 4, lbtot 1, rate_max 1).
//   - lastsess is the seconds since the last session on the wall clock's
//     second (now's second minus the session's: 0, then 1 at 0.6 s and
//     1.1 s, 2 at 1.6 s), -1 for a server or backend that never had one
//     (the weight-0 server, the unused backend); a frontend has none.
//     The HTML page shows -1 as "?".
//   - qtime, ctime, rtime and ttime are the average queue, connect,
//     response and total times in ms of the sessions that connected: the
//     server's and backend's, none on a frontend; qtime_max ... ttime_max
//     their maxima. In TCP mode rtime is 0. The total runs from the
//     accept to the close (203 ms for the five clients, max 206; ctime
//     1, max 2). The average is haproxy's swrate over its last 1024
//     sessions ("Max / Avg over last 1024 success. conn." on the HTML
//     page): until 1024 sessions the plain sum of the samples divided,
//     rounded up, by the sessions the server (or backend) was picked for,
//     lbtot, failed connects included, so a failed session lowers the
//     average (measured: the backend of one answering and one refusing
//     server gives ttime 101 for two sessions of 203 ms over lbtot 4, the
//     answering server 202, the refusing one 0); from then on each sample
//     replaces 1/1024 of the sum.
//
// The counters cost a few atomic operations per connection, never per read
// or write, and read no clock: the event loop's reading of its batch
// (loop.stamp).

// timeSamples is haproxy's TIME_STATS_SAMPLES: the averages' window.
const timeSamples = 1024

// ratePeriod is a rate's period, in ms.
const ratePeriod = 1000

// RateCounter is haproxy's freq_ctr over a 1 s period and its maximum
// (sps_max, cps_max). add is lock-free: an atomic load and add while the
// period runs; the first add of a new period rotates it, holding the
// period's start odd (the lock bit; starts are even ms, as haproxy's).
type RateCounter struct {
	start      atomic.Int64 // the current period's start, Unix ms
	curr, prev atomic.Int64
	max        atomic.Int64
}

// add counts an event at now.
func (r *RateCounter) Add(now time.Time) {
	ms := now.UnixMilli()
	for {
		t := r.start.Load()
		if t&1 == 0 && ms-t < ratePeriod {
			StoreMax(&r.max, r.curr.Add(1))
			return
		}
		if t&1 != 0 {
			runtime.Gosched() // another adder rotates: a few stores
			continue
		}
		if !r.start.CompareAndSwap(t, t|1) {
			continue
		}
		if ms-t >= ratePeriod {
			r.prev.Store(r.curr.Load())
			r.curr.Add(-r.prev.Load()) // adds racing the rotation stay counted
			t += ratePeriod
			if ms-t >= ratePeriod { // more than a period without an event
				r.prev.Store(0)
				t = ms
			}
			t &^= 1
		}
		r.start.Store(t)
	}
}

// read is the rate at now: the current period's count and the part of
// the previous one's that its remaining time weighs.
func (r *RateCounter) Read(now time.Time) uint64 {
	t := r.start.Load() &^ 1
	curr, past := r.curr.Load(), r.prev.Load()
	left := t + ratePeriod - now.UnixMilli()
	if left < 0 { // the period is over: the last count becomes the past
		left += ratePeriod
		past, curr = curr, 0
		if left < 0 {
			return 0
		}
	}
	return uint64(max((past*left+curr*ratePeriod)/ratePeriod, 0))
}

// Inherit takes over old's counts (a reload's renamed server).
func (r *RateCounter) Inherit(old *RateCounter) {
	r.start.Store(old.start.Load() &^ 1)
	r.curr.Store(old.curr.Load())
	r.prev.Store(old.prev.Load())
	r.max.Store(old.max.Load())
}

// LastSession is the Unix second of the last session, 0 for none.
type LastSession struct{ sec atomic.Int64 }

func (l *LastSession) Set(now time.Time) { l.sec.Store(now.Unix()) }

// age is haproxy's lastsess: now's second minus the session's, -1 for
// none.
func (l *LastSession) Age(now time.Time) int64 {
	s := l.sec.Load()
	if s == 0 {
		return -1
	}
	return max(now.Unix()-s, 0)
}

// SessionTimes are the sums and maxima of the queue, connect and total
// times (ms) of the sessions that connected (the response time is 0 in
// TCP mode and not kept).
type SessionTimes struct {
	q, c, t          atomic.Uint64
	qmax, cmax, tmax atomic.Int64
}

// add counts a session's times; picked is the sessions picked so far
// (lbtot): until it passes timeSamples the sums are plain sums, as
// haproxy's swrate_add_dynamic with a window of 0.
func (st *SessionTimes) Add(picked uint64, q, c, t int64) {
	n := uint64(0)
	if picked > timeSamples {
		n = timeSamples
	}
	swrateAdd(&st.q, n, uint64(q))
	swrateAdd(&st.c, n, uint64(c))
	swrateAdd(&st.t, n, uint64(t))
	StoreMax(&st.qmax, q)
	StoreMax(&st.cmax, c)
	StoreMax(&st.tmax, t)
}

// swrateAdd is haproxy's swrate_add_dynamic: the sum loses 1/n of itself
// (rounded up; nothing for n 0) and gains v. haproxy's sums are 32 bits
// and wrap; these are 64 (the same until 4 billion ms are summed).
func swrateAdd(sum *atomic.Uint64, n, v uint64) {
	for {
		old := sum.Load()
		next := old + v
		if n > 0 {
			next -= (old + n - 1) / n
		}
		if sum.CompareAndSwap(old, next) {
			return
		}
	}
}

// swrateAvg is haproxy's average of a sum over the window that picked
// sessions give: picked while under timeSamples (and above 0), rounded up.
func swrateAvg(sum, picked uint64) uint64 {
	n := uint64(timeSamples)
	if picked > 0 && picked < timeSamples {
		n = picked
	}
	return (sum + n - 1) / n
}

// Inherit takes over old's sums and maxima (a reload's renamed server),
// adding them to what the connections moved from old may have counted
// on st already.
func (st *SessionTimes) Inherit(old *SessionTimes) {
	st.q.Add(old.q.Load())
	st.c.Add(old.c.Load())
	st.t.Add(old.t.Load())
	StoreMax(&st.qmax, old.qmax.Load())
	StoreMax(&st.cmax, old.cmax.Load())
	StoreMax(&st.tmax, old.tmax.Load())
}

// TimeStats are the average and maximum times of a server's or backend's
// sessions that connected, in ms (haproxy's qtime, ctime, ttime and their
// _max; rtime is 0 in TCP mode).
type TimeStats struct {
	QueueMS      uint64 `json:"queue_ms"`
	ConnectMS    uint64 `json:"connect_ms"`
	TotalMS      uint64 `json:"total_ms"`
	MaxQueueMS   uint64 `json:"max_queue_ms"`
	MaxConnectMS uint64 `json:"max_connect_ms"`
	MaxTotalMS   uint64 `json:"max_total_ms"`
}

// stats reads the averages over the window that picked sessions give.
func (st *SessionTimes) Stats(picked uint64) TimeStats {
	return TimeStats{
		QueueMS: swrateAvg(st.q.Load(), picked), ConnectMS: swrateAvg(st.c.Load(), picked),
		TotalMS:    swrateAvg(st.t.Load(), picked),
		MaxQueueMS: uint64(st.qmax.Load()), MaxConnectMS: uint64(st.cmax.Load()), MaxTotalMS: uint64(st.tmax.Load()),
	}
}

// MsBetween is b-a in whole ms, 0 if b is before a (times from two
// loops' batches).
func MsBetween(a, b time.Time) int64 {
	return max(b.Sub(a).Milliseconds(), 0)
}

// StoreMax raises m to v if v is larger.
func StoreMax(m *atomic.Int64, v int64) {
	for {
		old := m.Load()
		if v <= old || m.CompareAndSwap(old, v) {
			return
		}
	}
}

// Max is the most a period counted (haproxy's rate_max).
func (r *RateCounter) Max() uint64 { return uint64(r.max.Load()) }

// Inherit keeps the later of l's and old's last sessions (a reload's
// renamed server).
func (l *LastSession) Inherit(old *LastSession) { StoreMax(&l.sec, old.sec.Load()) }
