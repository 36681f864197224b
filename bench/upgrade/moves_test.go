package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTracker(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples [][]string
		want    tracker
	}{
		{name: "never moves", samples: [][]string{{"a"}, {"a"}, {"a"}},
			want: tracker{last: "a", Path: []string{"a"}}},
		{name: "a gap, then the same holder: no move", samples: [][]string{{"a"}, nil, nil, {"a"}},
			want: tracker{last: "a", Path: []string{"a"}, None: 2}},
		{name: "away and back: two moves", samples: [][]string{{"a"}, {"a", "b"}, {"b"}, nil, {"a"}},
			want: tracker{last: "a", Moves: 2, Path: []string{"a", "b", "a"}, None: 1, Several: 1}},
		{name: "starts without a holder", samples: [][]string{nil, {"b"}, {"c"}},
			want: tracker{last: "c", Moves: 1, Path: []string{"b", "c"}, None: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got tracker
			for _, s := range tc.samples {
				got.add(s)
			}
			if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(tracker{})); d != "" {
				t.Errorf("tracker (-want +got):\n%s", d)
			}
		})
	}
}
