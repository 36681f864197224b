package main

import (
	"testing"
	"time"
)

func TestPct(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		in   []time.Duration
		q    int
		want time.Duration
	}{
		{name: "none", in: nil, q: 50, want: 0},
		{name: "one", in: []time.Duration{7 * ms}, q: 50, want: 7 * ms},
		{name: "median of odd", in: []time.Duration{30 * ms, 10 * ms, 20 * ms}, q: 50, want: 20 * ms},
		{name: "median of even: the lower", in: []time.Duration{40 * ms, 10 * ms, 30 * ms, 20 * ms}, q: 50, want: 20 * ms},
		{name: "max", in: []time.Duration{40 * ms, 10 * ms, 30 * ms}, q: 100, want: 40 * ms},
		{name: "p99 of 100 is the 99th", in: func() []time.Duration {
			var d []time.Duration
			for i := 1; i <= 100; i++ {
				d = append(d, time.Duration(i)*ms)
			}
			return d
		}(), q: 99, want: 99 * ms},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pct(tc.in, tc.q); got != tc.want {
				t.Errorf("pct(%v, %d) = %v, want %v", tc.in, tc.q, got, tc.want)
			}
		})
	}
}
