package controller

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vipstack/vipstack/internal/allocator"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// TestPoolsInOrder checks which of two overlapping pools the allocator
// keeps: the one already serving (Ready for its current generation),
// else the oldest, else the first by name; never the newcomer or the one
// just edited into the other's range; and a pool whose current spec is
// refused is given as its last valid version, first.
func TestPoolsInOrder(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	mk := func(name string, created metav1.Time, gen int64, ready metav1.ConditionStatus, observed int64, addrs ...string) v1alpha1.IPPool {
		p := v1alpha1.IPPool{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created, Generation: gen},
			Spec: v1alpha1.IPPoolSpec{Addresses: addrs}}
		if ready != "" {
			p.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: ready, ObservedGeneration: observed, Reason: "r", LastTransitionTime: t0}}
		}
		return p
	}
	tests := []struct {
		name    string
		items   []v1alpha1.IPPool
		kept    []string
		refused string
		// last valid versions known (pools edited since into specs
		// refused), and the pools that must serve them.
		last     map[string]lastValid
		useLast  map[string]bool
		fallback []string
	}{
		{
			name: "a new pool overlapping one in use, created the same second, first by name",
			items: []v1alpha1.IPPool{
				mk("alpha", t0, 1, "", 0, "198.18.20.0/29"),
				mk("zeta", t0, 1, metav1.ConditionTrue, 1, "198.18.20.0/30"),
			},
			kept: []string{"zeta"}, refused: "alpha",
		},
		{
			name: "an older pool edited to overlap a newer one in use",
			items: []v1alpha1.IPPool{
				mk("old", t0, 2, metav1.ConditionTrue, 1, "198.18.20.0/30", "198.18.22.0"),
				mk("new", t1, 1, metav1.ConditionTrue, 1, "198.18.22.0"),
			},
			kept: []string{"new"}, refused: "old",
		},
		{
			name: "neither serving yet: the older",
			items: []v1alpha1.IPPool{
				mk("alpha", t1, 1, "", 0, "198.18.20.0/29"),
				mk("zeta", t0, 1, metav1.ConditionFalse, 1, "198.18.20.0/30"),
			},
			kept: []string{"zeta"}, refused: "alpha",
		},
		{
			name: "neither serving, same second: the first by name",
			items: []v1alpha1.IPPool{
				mk("zeta", t0, 1, "", 0, "198.18.20.0/30"),
				mk("alpha", t0, 1, "", 0, "198.18.20.0/29"),
			},
			kept: []string{"alpha"}, refused: "zeta",
		},
		{
			// older was refused for overlapping edited's generation 1;
			// edited then turned invalid: its generation 1 still serves
			// and goes first, so older stays refused.
			name: "a pool serving its last valid version keeps its range",
			items: []v1alpha1.IPPool{
				mk("older", t0, 1, metav1.ConditionFalse, 1, "198.18.20.0/29"),
				mk("edited", t1, 2, metav1.ConditionFalse, 2, "198.18.21.9-198.18.21.1"),
			},
			last: map[string]lastValid{"edited": {gen: 1, pool: allocator.Pool{Name: "edited", AutoAssign: true, Ranges: []allocator.Range{allocator.MustParseRange("198.18.20.0/30")}}}},
			kept: []string{"edited"}, refused: "older",
			fallback: []string{"edited"},
		},
		{
			name: "a pool asked to serve its last valid version",
			items: []v1alpha1.IPPool{
				mk("zeta", t1, 1, metav1.ConditionTrue, 1, "198.18.22.0"),
				mk("alpha", t0, 3, metav1.ConditionFalse, 3, "198.18.20.0/30", "198.18.22.0"),
			},
			last:     map[string]lastValid{"alpha": {gen: 2, pool: allocator.Pool{Name: "alpha", Ranges: []allocator.Range{allocator.MustParseRange("198.18.20.0/29")}}}},
			useLast:  map[string]bool{"alpha": true},
			kept:     []string{"alpha", "zeta"},
			fallback: []string{"alpha"},
		},
		{
			name: "a pool deleted and made again has no last valid version",
			items: []v1alpha1.IPPool{func() v1alpha1.IPPool {
				p := mk("again", t1, 1, "", 0, "198.18.21.9-198.18.21.1")
				p.UID = "second"
				return p
			}()},
			kept: []string{},
			last: map[string]lastValid{"again": {uid: "first", gen: 3, pool: allocator.Pool{Name: "again", Ranges: []allocator.Range{allocator.MustParseRange("198.18.20.0/30")}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pools, vs, errs := poolsInOrder(tt.items, tt.last, tt.useLast)
			if len(errs) > 0 && tt.last == nil {
				t.Fatalf("conversion errors: %v", errs)
			}
			var fb []string
			for _, v := range vs {
				if v.fallback {
					fb = append(fb, v.name)
				}
			}
			if diff := cmp.Diff(tt.fallback, fb); diff != "" {
				t.Errorf("pools on their last valid version (-want +got):\n%s", diff)
			}
			a := allocator.New()
			err := a.SetPools(pools)
			if diff := cmp.Diff(tt.kept, a.Pools()); diff != "" {
				t.Errorf("pools kept (-want +got):\n%s", diff)
			}
			var ae *allocator.Error
			switch {
			case tt.refused == "" && err != nil:
				t.Errorf("SetPools error %v; want none", err)
			case tt.refused != "" && (!errors.As(err, &ae) || ae.Pool != tt.refused):
				t.Errorf("SetPools error %v; want pool %s refused", err, tt.refused)
			}
		})
	}
}
