package logging

import (
	"bytes"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lb/logging/logtest"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// bound is how long a test waits for something that should happen at
// once before failing: a guard against hangs, never a timing assertion.
const bound = 10 * time.Second

// TestAccessLogAddNeverBlocks: queuing a line returns while the writer is
// blocked (the relay's loops queue them); past the buffer, lines are
// dropped and counted. The writer takes the buffer whole before its
// blocked write, so up to twice the buffer (20 of these 100 kB lines) is
// accepted when it starts late: 30 lines always overflow (20 did not
// when the writer took a full buffer, seen once).
func TestAccessLogAddNeverBlocks(t *testing.T) {
	const lines = 30
	w := logtest.NewGateWriter()
	al := NewQueue(0, nil)
	to := &Dests{{sink: &Sink{network: "stdout", w: w}, raw: true, level: lbconfig.LevelDebug}}
	done := make(chan struct{})
	go func() {
		for range lines {
			al.Add(to, lbconfig.LevelInfo, time.Time{}, bytes.Repeat([]byte("x"), 100_000))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(bound):
		close(w.Open)
		t.Fatal("queuing a line waited for the blocked writer")
	}
	close(w.Open)
	al.Flush()
	if got, dropped := w.Lines(), al.dropped.Load(); got+int(dropped) != lines || dropped < lines-2*maxPendingLog/100_000 {
		t.Errorf("%d lines written, %d dropped; want %d in all, at least %d dropped", got, dropped, lines, lines-2*maxPendingLog/100_000)
	}
}
