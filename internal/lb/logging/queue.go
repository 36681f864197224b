package logging

import (
	"sync"
	"sync/atomic"
	"time"
)

// Queue hands the log messages (connection lines, health checks,
// server state changes) to a goroutine of its own that sends them to
// their targets, so that a slow or blocked target (a full log socket, a
// standard output piped to a container runtime) never holds up the
// relay's loops: haproxy sends its lines as datagrams that the kernel
// drops when the log socket is full, and counts them (show info's
// DroppedLogs). Messages wait in a buffer of up to maxPendingLog bytes; a
// message that does not fit is dropped and counted, as is one a target
// could not take.
type Queue struct {
	mu      sync.Mutex
	pending []byte   // the messages' bytes, guarded by mu
	recs    []logRec // one per message in pending, guarded by mu
	spare   []byte   // the writer's buffers, swapped with pending and recs
	spareR  []logRec
	writing bool // the writer goroutine runs (guarded by mu)
	idle    sync.Cond
	dropped atomic.Uint64
	warned  atomic.Bool
	log     func(dropped uint64)
	pid     int
}

// NewQueue is an empty queue; its messages' syslog headers carry pid,
// and warn, when not nil, is called at the first message dropped with
// the count so far.
func NewQueue(pid int, warn func(dropped uint64)) *Queue {
	q := &Queue{pid: pid, log: warn}
	q.idle.L = &q.mu
	return q
}

// Dropped is the number of messages dropped so far (haproxy's
// DroppedLogs).
func (al *Queue) Dropped() uint64 { return al.dropped.Load() }

// Queued is the number of messages waiting for the writer.
func (al *Queue) Queued() int {
	al.mu.Lock()
	defer al.mu.Unlock()
	return len(al.recs)
}

// logRec is one queued message: n bytes of pending, for to's targets.
type logRec struct {
	to    *Dests
	level int
	at    time.Time
	n     int
}

// maxPendingLog bounds the messages waiting for the writer.
const maxPendingLog = 1 << 20

// add queues msg (without its newline) and makes sure a writer runs.
func (al *Queue) Add(to *Dests, level int, at time.Time, msg []byte) {
	al.mu.Lock()
	if len(al.pending)+len(msg) > maxPendingLog {
		al.mu.Unlock()
		al.drop(1)
		return
	}
	al.pending = append(al.pending, msg...)
	al.recs = append(al.recs, logRec{to: to, level: level, at: at, n: len(msg)})
	start := !al.writing
	al.writing = true
	al.mu.Unlock()
	if start {
		go al.drain()
	}
}

func (al *Queue) drop(n int) {
	if c := al.dropped.Add(uint64(n)); al.warned.CompareAndSwap(false, true) && al.log != nil {
		al.log(c)
	}
}

// drain sends what is pending until nothing is, then ends.
func (al *Queue) drain() {
	var scratch []byte
	al.mu.Lock()
	for len(al.recs) > 0 {
		b, recs := al.pending, al.recs
		al.pending, al.spare = al.spare[:0], nil
		al.recs, al.spareR = al.spareR[:0], nil
		al.mu.Unlock()
		off, failed := 0, 0
		for _, r := range recs {
			var f int
			scratch, f = deliver(r.to, r.level, r.at, b[off:off+r.n], al.pid, scratch)
			failed += f
			off += r.n
		}
		if failed > 0 {
			al.drop(failed)
		}
		clear(recs) // let go of the targets
		al.mu.Lock()
		if cap(b) <= 64<<10 {
			al.spare = b[:0]
		}
		if cap(recs) <= 1024 {
			al.spareR = recs[:0]
		}
	}
	al.writing = false
	if al.idle.L != nil {
		al.idle.Broadcast()
	}
	al.mu.Unlock()
}

// flush waits until the messages queued so far are sent.
func (al *Queue) Flush() {
	al.mu.Lock()
	if al.idle.L == nil {
		al.idle.L = &al.mu
	}
	for al.writing {
		al.idle.Wait()
	}
	al.mu.Unlock()
}
