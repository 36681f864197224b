package track

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// hstate is what Hysteresis exposes, for comparison.
type hstate struct {
	OK, Pending         bool
	Successes, Failures int
	Changed             bool
}

func snapshot(h *Hysteresis, changed bool) hstate {
	return hstate{OK: h.OK(), Pending: h.Pending(), Successes: h.Successes(), Failures: h.Failures(), Changed: changed}
}

func TestHysteresis(t *testing.T) {
	const (
		S = true  // success
		F = false // failure
	)
	type step struct {
		in   bool
		want hstate
	}
	tests := []struct {
		name       string
		rise, fall int
		initFail   bool
		resume     *bool // ResumeHysteresis with this OK instead of NewHysteresis
		start      hstate
		steps      []step
	}{
		{
			name:  "defaults rise 1 fall 1",
			start: hstate{OK: true, Pending: true},
			steps: []step{
				{S, hstate{OK: true, Successes: 1}},
				{F, hstate{Failures: 1, Changed: true}},
				{F, hstate{Failures: 2}},
				{S, hstate{OK: true, Successes: 1, Changed: true}},
			},
		},
		{
			name: "zero and negative thresholds mean 1",
			rise: 0, fall: -3,
			start: hstate{OK: true, Pending: true},
			steps: []step{
				{S, hstate{OK: true, Successes: 1}},
				{F, hstate{Failures: 1, Changed: true}},
				{S, hstate{OK: true, Successes: 1, Changed: true}},
			},
		},
		{
			name: "fall counts consecutive failures, a success resets",
			rise: 3, fall: 2,
			start: hstate{OK: true, Pending: true},
			steps: []step{
				{S, hstate{OK: true, Successes: 1}},
				{F, hstate{OK: true, Failures: 1}},
				{S, hstate{OK: true, Successes: 1}},
				{F, hstate{OK: true, Failures: 1}},
				{F, hstate{Failures: 2, Changed: true}},
				{F, hstate{Failures: 3}},
			},
		},
		{
			name: "rise counts consecutive successes, a failure resets",
			rise: 3, fall: 2,
			start: hstate{OK: true, Pending: true},
			steps: []step{
				{S, hstate{OK: true, Successes: 1}},
				{F, hstate{OK: true, Failures: 1}},
				{F, hstate{Failures: 2, Changed: true}},
				{S, hstate{Successes: 1}},
				{S, hstate{Successes: 2}},
				{F, hstate{Failures: 1}},
				{S, hstate{Successes: 1}},
				{S, hstate{Successes: 2}},
				{S, hstate{OK: true, Successes: 3, Changed: true}},
				{S, hstate{OK: true, Successes: 4}},
			},
		},
		{
			// keepalived's INIT state: the first failure is reported at once,
			// whatever fall is.
			name: "first result failing flips at once",
			rise: 2, fall: 3,
			start: hstate{OK: true, Pending: true},
			steps: []step{
				{F, hstate{Failures: 1, Changed: true}},
				{S, hstate{Successes: 1}},
				{S, hstate{OK: true, Successes: 2, Changed: true}},
				{F, hstate{OK: true, Failures: 1}},
				{F, hstate{OK: true, Failures: 2}},
				{F, hstate{Failures: 3, Changed: true}},
			},
		},
		{
			name: "first result succeeding confirms OK without a flip",
			rise: 5, fall: 2,
			start: hstate{OK: true, Pending: true},
			steps: []step{
				{S, hstate{OK: true, Successes: 1}},
				{F, hstate{OK: true, Failures: 1}},
			},
		},
		{
			name: "init_fail needs rise successes",
			rise: 2, fall: 2, initFail: true,
			start: hstate{},
			steps: []step{
				{F, hstate{Failures: 1}},
				{S, hstate{Successes: 1}},
				{S, hstate{OK: true, Successes: 2, Changed: true}},
			},
		},
		{
			name: "init_fail with rise 1",
			rise: 1, fall: 1, initFail: true,
			start: hstate{},
			steps: []step{
				{S, hstate{OK: true, Successes: 1, Changed: true}},
			},
		},
		{
			// keepalived 2.2.7, measured: "VRRP_Script(chk) considered
			// unsuccessful on reload", and the new definition's first
			// success did not lift the weight (rise 2).
			name: "resumed failing needs rise successes",
			rise: 2, fall: 3, resume: &[]bool{false}[0],
			start: hstate{},
			steps: []step{
				{S, hstate{Successes: 1}},
				{S, hstate{OK: true, Successes: 2, Changed: true}},
			},
		},
		{
			// keepalived 2.2.7, measured: "considered successful on
			// reload", then the new definition failed from its first run
			// and was reported failed at its third (fall 3), not its first.
			name: "resumed OK needs fall failures, not one",
			rise: 2, fall: 3, resume: &[]bool{true}[0],
			start: hstate{OK: true},
			steps: []step{
				{F, hstate{OK: true, Failures: 1}},
				{F, hstate{OK: true, Failures: 2}},
				{F, hstate{Failures: 3, Changed: true}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHysteresis(tt.rise, tt.fall, tt.initFail)
			if tt.resume != nil {
				h = ResumeHysteresis(tt.rise, tt.fall, *tt.resume)
			}
			if diff := cmp.Diff(tt.start, snapshot(h, false)); diff != "" {
				t.Fatalf("initial state (-want +got):\n%s", diff)
			}
			for i, st := range tt.steps {
				changed := h.Observe(st.in)
				if diff := cmp.Diff(st.want, snapshot(h, changed)); diff != "" {
					t.Fatalf("step %d: Observe(%v) (-want +got):\n%s", i, st.in, diff)
				}
			}
		})
	}
}
