package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/chaos"
)

// slowMode is a mode whose faults take a while to begin and to end, as a
// command started under load does; it records when each took effect.
type slowMode struct {
	mode         // the rest is not called
	took         time.Duration
	began, ended time.Time
}

func (m *slowMode) free(int, chaos.Kind) bool { return true }
func (m *slowMode) guarded(int) bool          { return false }
func (m *slowMode) fault(context.Context, chaos.Fault, int) (begin, end func() error, err error) {
	begin = func() error { time.Sleep(m.took); m.began = time.Now(); return nil }
	end = func() error { time.Sleep(m.took); m.ended = time.Now(); return nil }
	return begin, end, nil
}

// TestInjectTimesWindow: a network fault's window runs from when the
// command that makes it returns to when the one that ends it returns; a
// process fault's from the call on (a kill must not be seen before its
// window, or the checker calls the death unexplained).
func TestInjectTimesWindow(t *testing.T) {
	const took = 30 * time.Millisecond
	for _, tc := range []struct {
		kind     chaos.Kind
		atEffect bool
	}{
		{chaos.Cut, true},
		{chaos.IfDown, true},
		{chaos.Loss, true},
		{chaos.Stall, false},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			m := &slowMode{took: took}
			r := &runner{m: m, cfg: chaos.Config{Nodes: []string{"n1", "n2"}}, out: io.Discard,
				injected: map[chaos.Kind]int{}, undo: map[int]func() error{},
				busy: make([]time.Time, 2), disrupted: make([]bool, 2)}
			called := time.Now()
			r.inject(context.Background(), chaos.Fault{Seq: 1, Kind: tc.kind, Node: 0, HolderOf: -1, Percent: 30, For: 10 * time.Millisecond})
			if len(r.windows) != 1 || len(r.failed) != 0 {
				t.Fatalf("windows %v, failed %v", r.windows, r.failed)
			}
			w := r.windows[0]
			if tc.atEffect {
				if w.Start.Before(m.began) || w.End.Before(m.ended) {
					t.Errorf("window %v-%v starts or ends before the fault took effect (%v) or ended (%v)",
						w.Start.Format("05.000"), w.End.Format("05.000"), m.began.Format("05.000"), m.ended.Format("05.000"))
				}
				return
			}
			if !w.Start.Before(m.began) || w.Start.Before(called) || !w.End.Before(m.ended) {
				t.Errorf("window %v-%v: want it from the call (%v) to the start of the undoing (ended %v)",
					w.Start.Format("05.000"), w.End.Format("05.000"), called.Format("05.000"), m.ended.Format("05.000"))
			}
		})
	}
}
