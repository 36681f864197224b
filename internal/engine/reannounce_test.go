package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestReannouncer feeds the reannouncer advertisements from lower-priority
// masters at the given offsets, ticks it every millisecond for 5 s, and
// checks when it announces: "now@T" for an immediate announcement at the
// advertisement at T, "follow-up@T" for the one after the settle time.
func TestReannouncer(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		adverts []time.Duration
		want    string
	}{
		{name: "one router", adverts: []time.Duration{0},
			want: "now@0s follow-up@100ms"},
		// Three masters at once (the demo's DNS VIP): the second loser's
		// advert falls inside the second and is answered by the follow-up,
		// which it can no longer overtake.
		{name: "two losers a millisecond apart", adverts: []time.Duration{0, 1 * ms},
			want: "now@0s follow-up@101ms"},
		{name: "a second advert after the follow-up, within the second", adverts: []time.Duration{0, 300 * ms},
			want: "now@0s follow-up@100ms follow-up@400ms"},
		{name: "a second advert after the second", adverts: []time.Duration{0, 1500 * ms},
			want: "now@0s follow-up@100ms now@1.5s follow-up@1.6s"},
		// A router that keeps advertising every 50 ms for 3 s: one
		// announcement a second, and one after it stops.
		{name: "flood", adverts: every(0, 3*time.Second, 50*ms),
			want: "now@0s now@1s now@2s now@3s follow-up@3.1s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
			var r reannouncer
			var got []string
			next := 0
			for at := time.Duration(0); at <= 5*time.Second; at += ms {
				now := start.Add(at)
				for next < len(tc.adverts) && tc.adverts[next] <= at {
					if r.heard(now) {
						got = append(got, fmt.Sprintf("now@%v", at))
					}
					next++
				}
				if d := r.deadline(); !d.IsZero() && d.Before(now) {
					t.Fatalf("at %v the follow-up due at %v was not taken", at, d.Sub(start))
				}
				if r.fire(now) {
					got = append(got, fmt.Sprintf("follow-up@%v", at))
				}
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("announcements:\n got %s\nwant %s", g, tc.want)
			}
		})
	}
}

// TestReannouncerCancel: leaving master drops the follow-up.
func TestReannouncerCancel(t *testing.T) {
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	var r reannouncer
	r.heard(now)
	r.cancel()
	if !r.deadline().IsZero() || r.fire(now.Add(time.Second)) {
		t.Fatal("a cancelled follow-up still fired")
	}
}

func every(from, to, step time.Duration) []time.Duration {
	var out []time.Duration
	for at := from; at <= to; at += step {
		out = append(out, at)
	}
	return out
}
