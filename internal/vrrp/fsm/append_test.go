package fsm

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestAppendTick: AppendTick appends what Tick returns after what acts
// holds, for a backup that takes over and for a master's advertisements.
func TestAppendTick(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	viaTick, viaAppend := New(v2(true)), New(v2(true))
	viaTick.Start(t0, 100, "")
	viaAppend.Start(t0, 100, "")
	prefix := Action{Kind: SendAdvert, Priority: 7}
	for i, at := range []time.Duration{mdi100 - time.Millisecond, mdi100, mdi100 + sec/2, mdi100 + sec, mdi100 + 2*sec} {
		now := t0.Add(at)
		want := append([]Action{prefix}, viaTick.Tick(now)...)
		got := viaAppend.AppendTick([]Action{prefix}, now)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("tick %d at %v: AppendTick after one action (-Tick +AppendTick):\n%s", i, at, diff)
		}
		if viaTick.State() != viaAppend.State() || viaTick.NextDeadline() != viaAppend.NextDeadline() {
			t.Errorf("tick %d: state %v next %v via Tick, %v next %v via AppendTick", i,
				viaTick.State(), viaTick.NextDeadline(), viaAppend.State(), viaAppend.NextDeadline())
		}
	}
}

// TestMasterTickAllocs: a master's regular advertisement, ticked into a
// reused slice, allocates nothing (one per instance per interval, the
// engine's steady state at rest).
func TestMasterTickAllocs(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	m := New(v2(true))
	m.Start(t0, 100, "")
	m.Tick(t0.Add(mdi100))
	if m.State() != Master {
		t.Fatalf("state %v after the master-down interval, want MASTER", m.State())
	}
	acts := make([]Action, 0, 4)
	now, sent := t0.Add(mdi100), 0
	allocs := testing.AllocsPerRun(100, func() {
		now = now.Add(sec)
		acts = m.AppendTick(acts[:0], now)
		sent += len(acts)
	})
	if sent != 101 { // AllocsPerRun runs the function once more to warm up
		t.Errorf("%d advertisements in 101 intervals, want 101", sent)
	}
	if allocs != 0 {
		t.Errorf("%v allocations per master tick, want 0", allocs)
	}
}
