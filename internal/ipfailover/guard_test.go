package ipfailover

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
)

// TestLayoutGuard runs the guard through a rollout's events, step by step:
// which of this node's groups (10 VIPs, 3 ranks, 6 groups) are held back
// after each advertisement heard and each passing of time.
func TestLayoutGuard(t *testing.T) {
	clk := clock.NewFake(time.Unix(1e9, 0))
	p := NewPlan(specWith(10, 0), 3)
	g := NewLayoutGuard(clk, p)
	old := NewPlan(specWith(10, 0), 2) // the layout of REPLICA_COUNT=2
	a, b := netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("198.18.0.11")
	blocked := func() []int {
		var out []int
		for i := range p.Groups {
			if g.Blocking(i) != "" {
				out = append(out, i)
			}
		}
		return out
	}
	type step struct {
		name    string
		do      func() bool // returns Observe's answer, or false
		other   bool        // want Observe to say "another layout"
		blocked []int
	}
	for i, s := range []step{
		{name: "own layout: not the guard's business", do: func() bool {
			return g.Observe(11, a, 250, time.Second, p.Groups[0].Advertised())
		}, blocked: nil},
		{name: "another router's addresses: not the pool's", do: func() bool {
			return g.Observe(40, a, 100, time.Second, addrs("192.0.2.1"))
		}, blocked: nil},
		// old group 0 holds .1 .3 .5 .7 .9: the new groups 0 (.1 .7),
		// 2 (.3 .9) and 4 (.5) carry them.
		{name: "old layout's group 0", do: func() bool {
			return g.Observe(11, a, 250, time.Second, old.Groups[0].Advertised())
		}, other: true, blocked: []int{0, 2, 4}},
		{name: "old layout's group 1 from another node", do: func() bool {
			return g.Observe(12, b, 250, time.Second, old.Groups[1].Advertised())
		}, other: true, blocked: []int{0, 1, 2, 3, 4, 5}},
		{name: "just under the hold: still held", do: func() bool {
			clk.Advance(HoldFor(time.Second) - time.Millisecond)
			return false
		}, blocked: []int{0, 1, 2, 3, 4, 5}},
		{name: "VRID 12 advertises again; VRID 11 ages out", do: func() bool {
			g.Observe(12, b, 250, time.Second, old.Groups[1].Advertised())
			clk.Advance(time.Millisecond)
			return false
		}, blocked: []int{1, 3, 5}},
		{name: "VRID 12 steps down (priority 0): released at once", do: func() bool {
			return g.Observe(12, b, 0, time.Second, old.Groups[1].Advertised())
		}, other: true, blocked: nil},
	} {
		if got := s.do(); got != s.other {
			t.Errorf("step %d (%s): Observe = %v, want %v", i, s.name, got, s.other)
		}
		if got := blocked(); !equalInts(got, s.blocked) {
			t.Errorf("step %d (%s): held back %v, want %v", i, s.name, got, s.blocked)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestLayoutGuardCheck(t *testing.T) {
	clk := clock.NewFake(time.Unix(1e9, 0))
	p := NewPlan(specWith(10, 0), 3)
	g := NewLayoutGuard(clk, p)
	if err := g.Check(0).Probe(context.Background()); err != nil {
		t.Errorf("nothing heard: %v", err)
	}
	g.Observe(11, netip.MustParseAddr("198.18.0.10"), 250, 100*time.Millisecond, NewPlan(specWith(10, 0), 2).Groups[0].Advertised())
	err := g.Check(0).Probe(context.Background())
	if err == nil || !strings.Contains(err.Error(), "VRID 11 from 198.18.0.10 carries VIPs of group OpenShift_IPFailover_VIP_1 in another layout") {
		t.Errorf("held back: %v", err)
	}
	clk.Advance(HoldFor(100 * time.Millisecond)) // 1.4 s
	if err := g.Check(0).Probe(context.Background()); err != nil {
		t.Errorf("after the hold: %v", err)
	}
}
