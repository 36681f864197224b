package engine

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAddrQueue: the watcher tells the loop only when the queue was
// empty, and the loop takes every change queued since, in order; after a
// take the next change tells the loop again.
func TestAddrQueue(t *testing.T) {
	a := addrEvent{prefix: netip.MustParsePrefix("198.18.0.1/32"), added: true}
	b := addrEvent{prefix: netip.MustParsePrefix("198.18.0.2/32")}
	all := addrEvent{}
	var q addrQueue
	steps := []struct {
		put      *addrEvent // nil: take
		wantTell bool
		wantTake []addrEvent
	}{
		{put: &a, wantTell: true},
		{put: &b},
		{put: &all},
		{wantTake: []addrEvent{a, b, all}},
		{wantTake: nil},
		{put: &b, wantTell: true},
		{wantTake: []addrEvent{b}},
	}
	for i, s := range steps {
		if s.put != nil {
			if got := q.put(*s.put); got != s.wantTell {
				t.Errorf("step %d: put(%v) = %v, want %v", i, *s.put, got, s.wantTell)
			}
			continue
		}
		if diff := cmp.Diff(s.wantTake, q.take(), cmp.AllowUnexported(addrEvent{}), cmp.Comparer(func(x, y netip.Prefix) bool { return x == y })); diff != "" {
			t.Errorf("step %d: take (-want +got):\n%s", i, diff)
		}
	}
}
