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
// just edited into the other's range.
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pools, errs := poolsInOrder(tt.items)
			if len(errs) > 0 {
				t.Fatalf("conversion errors: %v", errs)
			}
			a := allocator.New()
			err := a.SetPools(pools)
			if diff := cmp.Diff(tt.kept, a.Pools()); diff != "" {
				t.Errorf("pools kept (-want +got):\n%s", diff)
			}
			var ae *allocator.Error
			if !errors.As(err, &ae) || ae.Pool != tt.refused {
				t.Errorf("SetPools error %v; want pool %s refused", err, tt.refused)
			}
		})
	}
}
