package lb

import (
	"net/netip"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestSlowStart: after a server comes back UP its weight ramps from 0 to
// its full weight over slowstart, rounded up as haproxy's; at start (no
// DOWN before) it has its full weight at once; round robin shares follow
// the ramped weight.
func TestSlowStart(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	s := &server{}
	s.params.slowstart.Store(int64(time.Minute))
	for _, tt := range []struct {
		upAt time.Time
		at   time.Duration
		w    int
		want int
	}{
		{time.Time{}, 0, 100, 100},        // up since start: no ramp
		{t0, 15 * time.Second, 100, 25},   // a quarter in
		{t0, 30*time.Second + 1, 100, 51}, // rounded up
		{t0, time.Minute, 100, 100},       // done
		{t0, time.Second, 1, 1},           // a weight of 1 stays 1
	} {
		s.params.upAt.Store(0)
		if !tt.upAt.IsZero() {
			s.cameUp(tt.upAt)
		}
		if got := s.slowWeight(tt.w, t0.Add(tt.at)); got != tt.want {
			t.Errorf("weight %d, %v after coming up: %d, want %d", tt.w, tt.at, got, tt.want)
		}
	}

	// In a pool: b came back 15 s into a 60 s slowstart, weights 100
	// each: b gets a quarter of a's share.
	clk := fakeClock()
	l := &LB{clk: clk}
	p := testPool(lbconfig.RoundRobin, 100, 100)
	for _, srv := range p.servers {
		srv.lb = l
		srv.params.slowstart.Store(int64(time.Minute))
	}
	p.servers[1].cameUp(clk.Now())
	clk.Advance(15 * time.Second)
	got := counts(picks(p, 125, netip.Addr{}, 0))
	if got['a'] != 100 || got['b'] != 25 {
		t.Errorf("shares over 125 picks: %v, want a 100 and b 25", got)
	}
}
