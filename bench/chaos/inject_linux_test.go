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

// TestInjectTimesWindow: a fault's window runs from the call that makes
// it to the call that undoes it (a kill must not be seen before its window,
// or the checker calls the death unexplained); a network fault also
// records when those commands returned (Began, Ended), since it took effect
// somewhere in between.
func TestInjectTimesWindow(t *testing.T) {
	const took = 30 * time.Millisecond
	for _, tc := range []struct {
		kind    chaos.Kind
		network bool
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
			f := func(t time.Time) string { return t.Format("05.000") }
			if w.Start.Before(called) || !w.Start.Before(m.began) || !w.End.Before(m.ended) {
				t.Errorf("window %v-%v: want it from the call (%v) to the start of the undoing (ended %v)", f(w.Start), f(w.End), f(called), f(m.ended))
			}
			if !tc.network {
				if !w.Began.IsZero() || !w.Ended.IsZero() {
					t.Errorf("Began %v, Ended %v: want both zero", w.Began, w.Ended)
				}
				return
			}
			if w.Began.Before(m.began) || w.Ended.Before(m.ended) {
				t.Errorf("Began %v, Ended %v: before the fault took effect (%v) or was undone (%v)", f(w.Began), f(w.Ended), f(m.began), f(m.ended))
			}
		})
	}
}
