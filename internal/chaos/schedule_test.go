package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/cluster"
)

var roles5 = []cluster.Role{cluster.Master, cluster.Master, cluster.Master, cluster.Worker, cluster.Worker}

func TestGenerateSameSeedSameSchedule(t *testing.T) {
	o := GenOptions{Seed: 42, Faults: 200, Roles: roles5, VIPs: 3}
	a, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(a, b); d != "" {
		t.Errorf("seed 42 twice gave different schedules (-first +second):\n%s", d)
	}
	o.Seed = 43
	c, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Equal(a, c) {
		t.Errorf("seeds 42 and 43 gave the same schedule")
	}
}

// TestGenerateBounds checks every promise of a schedule over many seeds:
// the count, the order, the duration ranges, the roles of flap targets, no
// node with two faults at once, at most MaxConcurrent faults and
// MaxDisruptive disruptive ones at any time.
func TestGenerateBounds(t *testing.T) {
	ranges := map[Kind][2]time.Duration{
		Stall: {time.Second, 5 * time.Second}, KillAgent: {500 * time.Millisecond, 3 * time.Second},
		Cut: {time.Second, 4 * time.Second}, IfDown: {time.Second, 4 * time.Second},
		FlapAPI: {2 * time.Second, 8 * time.Second}, Delay: {2 * time.Second, 6 * time.Second},
	}
	tests := []struct {
		name string
		o    GenOptions
	}{
		{name: "5 nodes, defaults", o: GenOptions{Faults: 500, Roles: roles5, VIPs: 3}},
		{name: "7 nodes, 4 at once", o: GenOptions{Faults: 300, Roles: append(append([]cluster.Role(nil), roles5...), cluster.Worker, cluster.Worker), VIPs: 3, MaxConcurrent: 4}},
		{name: "kills only", o: GenOptions{Faults: 100, Roles: roles5, VIPs: 3, Weights: map[Kind]int{KillAgent: 1, KillEngine: 1}}},
	}
	for _, tc := range tests {
		for seed := uint64(1); seed <= 20; seed++ {
			o := tc.o
			o.Seed = seed
			s, err := Generate(o)
			if err != nil {
				t.Fatalf("%s seed %d: %v", tc.name, seed, err)
			}
			if len(s) != o.Faults {
				t.Fatalf("%s seed %d: %d faults, want %d", tc.name, seed, len(s), o.Faults)
			}
			maxC := o.MaxConcurrent
			if maxC == 0 {
				maxC = 3
			}
			for i, f := range s {
				if i > 0 && f.At < s[i-1].At {
					t.Fatalf("%s seed %d: fault %d at %v before fault %d at %v", tc.name, seed, i, f.At, i-1, s[i-1].At)
				}
				if w := tc.o.Weights; w != nil && w[f.Kind] == 0 {
					t.Errorf("%s seed %d: %s has weight 0", tc.name, seed, f)
				}
				lo, hi := ranges[f.Kind][0], ranges[f.Kind][1]
				if hi > 0 && (f.For < lo || f.For > hi) {
					t.Errorf("%s seed %d: %s lasts outside %v..%v", tc.name, seed, f, lo, hi)
				}
				switch f.Kind {
				case FlapAPI, FlapLB:
					if o.Roles[f.Node] != cluster.Master {
						t.Errorf("%s seed %d: %s aims at a %s", tc.name, seed, f, o.Roles[f.Node])
					}
				case FlapRouter:
					if o.Roles[f.Node] != cluster.Worker {
						t.Errorf("%s seed %d: %s aims at a %s", tc.name, seed, f, o.Roles[f.Node])
					}
				case Reload:
					if f.Node != -1 {
						t.Errorf("%s seed %d: %s names a node", tc.name, seed, f)
					}
				case HeavyLoss:
					if f.Percent < 30 || f.Percent > 70 {
						t.Errorf("%s seed %d: %s: want 30..70%%", tc.name, seed, f)
					}
				case Loss:
					if f.Percent < 1 || f.Percent > 10 {
						t.Errorf("%s seed %d: %s: want 1..10%%", tc.name, seed, f)
					}
				}
				// Everything under way when f starts.
				conc, dis := 1, 0
				if f.Kind.Disruptive() {
					dis = 1
				}
				for _, g := range s[:i] {
					if g.Kind == Reload || f.Kind == Reload || g.At+g.Busy() <= f.At {
						continue
					}
					conc++
					if g.Kind.Disruptive() {
						dis++
					}
					if g.Node == f.Node {
						t.Errorf("%s seed %d: %s starts while %s still holds the node", tc.name, seed, f, g)
					}
				}
				if f.Kind != Reload && (conc > maxC || dis > 2) {
					t.Errorf("%s seed %d: %s starts with %d faults (%d disruptive) under way", tc.name, seed, f, conc, dis)
				}
			}
		}
	}
}

func TestGenerateRejects(t *testing.T) {
	tests := []struct {
		name string
		o    GenOptions
		want string
	}{
		{name: "no faults", o: GenOptions{Roles: roles5}, want: "GenOptions.Faults = 0"},
		{name: "one master", o: GenOptions{Faults: 1, Roles: []cluster.Role{cluster.Master, cluster.Worker}}, want: "has 1 masters"},
		{name: "too many disruptive", o: GenOptions{Faults: 1, Roles: roles5, MaxDisruptive: 3}, want: "MaxDisruptive = 3 with 3 masters"},
		{name: "too many at once", o: GenOptions{Faults: 1, Roles: roles5, MaxConcurrent: 6}, want: "MaxConcurrent = 6: want 1..5"},
		{name: "gaps", o: GenOptions{Faults: 1, Roles: roles5, MinGap: time.Second, MaxGap: time.Millisecond}, want: "want 0 <= MinGap <= MaxGap"},
		{name: "unknown kind", o: GenOptions{Faults: 1, Roles: roles5, Weights: map[Kind]int{"meteor": 1}}, want: `Weights["meteor"] = 1`},
		{name: "all zero", o: GenOptions{Faults: 1, Roles: roles5, Weights: map[Kind]int{Stall: 0}}, want: "no kind has a positive weight"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Generate(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Generate error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestGenerateClusterWide: Service churn and controller kills have no node,
// never overlap each other, name a VIP (churn), and leave the schedules of
// the other kinds' seeds as they were.
func TestGenerateClusterWide(t *testing.T) {
	roles := []cluster.Role{cluster.Master, cluster.Master, cluster.Master, cluster.Master, cluster.Master}
	for seed := uint64(1); seed <= 20; seed++ {
		s, err := Generate(GenOptions{Seed: seed, Faults: 300, Roles: roles, VIPs: 6, Weights: AgentWeights()})
		if err != nil {
			t.Fatal(err)
		}
		var lastEnd time.Duration
		n := 0
		for _, f := range s {
			switch f.Kind {
			case KillController, Churn:
				n++
				if f.Node != -1 || f.HolderOf != -1 {
					t.Errorf("seed %d: %s has a node", seed, f)
				}
				if f.At < lastEnd {
					t.Errorf("seed %d: %s starts before the previous cluster-wide fault ends (%v)", seed, f, lastEnd)
				}
				lastEnd = f.At + f.Busy()
				if f.Kind == Churn && (f.VIP < 0 || f.VIP >= 6 || f.For < time.Second || f.For > 4*time.Second) {
					t.Errorf("seed %d: %s: want VIP 0..5 for 1..4 s", seed, f)
				}
			case FlapAPI, FlapLB, FlapRouter, Reload:
				t.Errorf("seed %d: %s has weight 0 for agents", seed, f)
			}
		}
		if n == 0 {
			t.Errorf("seed %d: no churn or controller kill in 300 faults", seed)
		}
	}
	if _, err := Generate(GenOptions{Seed: 1, Faults: 10, Roles: roles, Weights: map[Kind]int{Churn: 1}}); err == nil || !strings.Contains(err.Error(), "GenOptions.VIPs = 0") {
		t.Errorf("churn without VIPs: got %v, want an error naming GenOptions.VIPs", err)
	}
}

// TestGenerateRouterFaults: BGPWeights' router faults have no node, never
// overlap and leave the router's recovery (Busy) before the next; graceful
// stops hit a node.
func TestGenerateRouterFaults(t *testing.T) {
	roles := []cluster.Role{cluster.Master, cluster.Master, cluster.Master}
	for seed := uint64(1); seed <= 20; seed++ {
		s, err := Generate(GenOptions{Seed: seed, Faults: 200, Roles: roles, VIPs: 2, Weights: BGPWeights()})
		if err != nil {
			t.Fatal(err)
		}
		var lastEnd time.Duration
		router, term := 0, 0
		for _, f := range s {
			switch {
			case f.Kind.OfRouter():
				router++
				if f.Node != -1 || f.HolderOf != -1 || !f.Kind.ClusterWide() {
					t.Errorf("seed %d: %s has a node", seed, f)
				}
				if f.At < lastEnd {
					t.Errorf("seed %d: %s starts before the previous router fault's recovery ends (%v)", seed, f, lastEnd)
				}
				if f.For < 500*time.Millisecond || f.For > 3*time.Second || f.Busy() < f.For+20*time.Second {
					t.Errorf("seed %d: %s: want 0.5..3 s down and 20 s to recover", seed, f)
				}
				lastEnd = f.At + f.Busy()
			case f.Kind == TermAgent:
				term++
				if f.Node < 0 || !f.Kind.Ineligible() || !f.Kind.Disruptive() {
					t.Errorf("seed %d: %s: want a node, ineligible and disruptive", seed, f)
				}
			}
		}
		if router == 0 || term == 0 {
			t.Errorf("seed %d: %d router faults, %d graceful stops in 200 faults: want some of each", seed, router, term)
		}
	}
}
