package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAddGap(t *testing.T) {
	var s soakStats
	for _, g := range []time.Duration{10 * time.Millisecond, 10500 * time.Microsecond, 10501 * time.Microsecond, 13 * time.Millisecond, 46 * time.Millisecond, 47 * time.Millisecond, time.Second} {
		s.addGap(g)
	}
	want := [nGapBounds + 1]int{2, 1, 0, 1, 0, 0, 0, 1, 2}
	if diff := cmp.Diff(want, s.gaps); diff != "" {
		t.Errorf("buckets (-want +got):\n%s", diff)
	}
}

func TestOverlapping(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	a := []span{{at(0), at(50)}, {at(100), at(160)}, {at(300), at(350)}}
	b := []span{{at(40), at(90)}, {at(200), at(260)}, {at(340), at(400)}}
	if got := overlapping(a, b); got != 2 {
		t.Errorf("overlapping = %d, want 2 (the first and the third)", got)
	}
}
