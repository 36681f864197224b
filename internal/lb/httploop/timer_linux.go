package httploop

import (
	"container/heap"
	"time"
)

// timerHeap holds the connections with a deadline, earliest key first.
// A connection's deadline moves on every byte (inactivity timeouts);
// its key in the heap moves only when the deadline comes earlier, or
// when the key is reached and the deadline lies later: then it is put
// back with that deadline (see due). So activity costs no heap work.
type timerHeap []*conn

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].hkey.Before(h[j].hkey) }
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx, h[j].hidx = i, j
}
func (h *timerHeap) Push(x any) {
	c := x.(*conn)
	c.hidx = len(*h)
	*h = append(*h, c)
}
func (h *timerHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	c.hidx = -1
	return c
}

// arm sets c's deadline (zero: none).
func (h *timerHeap) arm(c *conn, d time.Time) {
	c.deadline = d
	switch {
	case d.IsZero():
	case c.hidx < 0:
		c.hkey = d
		heap.Push(h, c)
	case d.Before(c.hkey):
		c.hkey = d
		heap.Fix(h, c.hidx)
	}
}

// remove takes c out.
func (h *timerHeap) remove(c *conn) {
	if c.hidx >= 0 {
		heap.Remove(h, c.hidx)
	}
	c.deadline = time.Time{}
}

// due returns a connection whose deadline passed at now, taken out of
// the heap, or nil.
func (h *timerHeap) due(now time.Time) *conn {
	for len(*h) > 0 {
		c := (*h)[0]
		if c.hkey.After(now) {
			return nil
		}
		switch {
		case c.deadline.IsZero():
			heap.Pop(h)
		case c.deadline.After(now):
			c.hkey = c.deadline
			heap.Fix(h, 0)
		default:
			heap.Pop(h)
			c.deadline = time.Time{}
			return c
		}
	}
	return nil
}

// wait is epoll_wait's timeout until the first key, in milliseconds
// rounded up (-1: no timer).
func (h timerHeap) wait(now time.Time) int {
	if len(h) == 0 {
		return -1
	}
	d := h[0].hkey.Sub(now)
	if d <= 0 {
		return 0
	}
	return int((d + time.Millisecond - 1) / time.Millisecond)
}
