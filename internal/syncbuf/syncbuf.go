// Package syncbuf is a byte buffer that goroutines may write and read at
// once: the destination of a process's or a logger's output that a test or
// a harness reads while it runs.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer collects writes under a lock. With Limit > 0, writes past Limit
// bytes are dropped (and reported as written), so a chatty process cannot
// grow it without bound. The zero value is ready to use.
type Buffer struct {
	Limit int

	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p, unless the buffer already holds Limit bytes.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Limit > 0 && s.b.Len() > s.Limit {
		return len(p), nil
	}
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
