package testutil

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
)

// LogHold is a log handler that, once armed, holds the goroutine logging
// the next record whose message is msg until Release: code that logs from
// its one loop (GoBGP logs a peer's addition from its server's loop) is so
// held, as a bug in it would hold it. The handlers made from it by
// WithAttrs and WithGroup, as a logger's With makes them, share its state.
type LogHold struct {
	next slog.Handler
	s    *holdState
}

type holdState struct {
	msg     string
	armed   atomic.Bool
	held    atomic.Bool
	release chan struct{}
	once    sync.Once
}

// NewLogHold returns a LogHold passing every record on to next, unarmed.
func NewLogHold(next slog.Handler, msg string) *LogHold {
	return &LogHold{next: next, s: &holdState{msg: msg, release: make(chan struct{})}}
}

// Arm makes the next record with the message hold its goroutine.
func (h *LogHold) Arm() { h.s.armed.Store(true) }

// Held reports whether a goroutine has been held (it may since have been
// released).
func (h *LogHold) Held() bool { return h.s.held.Load() }

// Release lets the held goroutine, and any later one, go on; it may be
// called more than once.
func (h *LogHold) Release() { h.s.once.Do(func() { close(h.s.release) }) }

func (h *LogHold) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l) || h.s.armed.Load()
}

func (h *LogHold) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.s.msg && h.s.armed.CompareAndSwap(true, false) {
		h.s.held.Store(true)
		<-h.s.release
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *LogHold) WithAttrs(as []slog.Attr) slog.Handler {
	return &LogHold{next: h.next.WithAttrs(as), s: h.s}
}

func (h *LogHold) WithGroup(name string) slog.Handler {
	return &LogHold{next: h.next.WithGroup(name), s: h.s}
}
