package httpproxy

import (
	"testing"
	"time"
)

// TestNextDeadline: a Read moves the socket's deadline only when the one
// armed would end the connection before the inactivity timeout or more
// than idle/idleSlack after it, and never past the user's deadline.
func TestNextDeadline(t *testing.T) {
	now := time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
	idle := 1000 * time.Second // slack: 1 s
	due := now.Add(idle)
	for _, tc := range []struct {
		name        string
		user, armed time.Time
		want        time.Time
		wantMove    bool
	}{
		{name: "nothing armed", want: due.Add(time.Second), wantMove: true},
		{name: "armed before the timeout", armed: due.Add(-time.Millisecond), want: due.Add(time.Second), wantMove: true},
		{name: "armed at the timeout", armed: due, want: due},
		{name: "armed within the slack", armed: due.Add(time.Second), want: due.Add(time.Second)},
		{name: "armed beyond the slack", armed: due.Add(2 * time.Second), want: due.Add(time.Second), wantMove: true},
		{name: "user first, not armed", user: now.Add(time.Second), armed: due, want: now.Add(time.Second), wantMove: true},
		{name: "user first, armed", user: now.Add(time.Second), armed: now.Add(time.Second), want: now.Add(time.Second)},
		{name: "user past (an aborted read)", user: now.Add(-time.Hour), armed: now.Add(-time.Hour), want: now.Add(-time.Hour)},
		{name: "user within the slack bounds it", user: due.Add(time.Millisecond), want: due.Add(time.Millisecond), wantMove: true},
		{name: "user later, armed at the timeout", user: due.Add(time.Hour), armed: due, want: due},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, move := nextDeadline(now, idle, tc.user, tc.armed)
			if !got.Equal(tc.want) || move != tc.wantMove {
				t.Errorf("nextDeadline(user %v, armed %v) = %v, %v; want %v, %v", tc.user, tc.armed, got, move, tc.want, tc.wantMove)
			}
		})
	}
}
