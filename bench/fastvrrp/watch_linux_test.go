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
