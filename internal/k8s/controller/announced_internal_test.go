package controller

import (
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAnnouncedCondition steps one address through a failover and checks
// the condition and the Event after each step: a move is told once, when
// a single node announces it again, even across moments when two or none
// do.
func TestAnnouncedCondition(t *testing.T) {
	a := netip.MustParseAddr("198.18.0.200")
	svc := &corev1.Service{}
	last := map[netip.Addr]string{}
	var old *metav1.Condition
	steps := []struct {
		by        []string
		status    metav1.ConditionStatus
		msg, move string
	}{
		{by: []string{"n1"}, status: metav1.ConditionTrue, msg: "198.18.0.200 by n1"},
		{by: []string{"n1", "n2"}, status: metav1.ConditionTrue, msg: "198.18.0.200 by n1,n2"},
		{by: []string{"n2"}, status: metav1.ConditionTrue, msg: "198.18.0.200 by n2", move: "198.18.0.200 moved from n1 to n2"},
		{by: nil, status: metav1.ConditionFalse, msg: "no agent reports announcing 198.18.0.200"},
		{by: []string{"n3"}, status: metav1.ConditionTrue, msg: "198.18.0.200 by n3", move: "198.18.0.200 moved from n2 to n3"},
		{by: []string{"n3"}, status: metav1.ConditionTrue, msg: "198.18.0.200 by n3"},
	}
	for i, st := range steps {
		by := map[netip.Addr][]string{}
		if st.by != nil {
			by[a] = st.by
		}
		c, p := announcedCondition(svc, []netip.Addr{a}, by, old, last, metav1.Now())
		if c.Status != st.status || c.Message != st.msg {
			t.Errorf("step %d: condition %s %q, want %s %q", i, c.Status, c.Message, st.status, st.msg)
		}
		move := ""
		if p != nil {
			move = p.msg
		}
		if move != st.move {
			t.Errorf("step %d: move %q, want %q", i, move, st.move)
		}
		old = &c
	}
}

func TestChangedAddrs(t *testing.T) {
	a := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, x := range s {
			out = append(out, netip.MustParseAddr(x))
		}
		return out
	}
	tests := []struct {
		name          string
		was, now, out []netip.Addr
	}{
		{name: "renewed, nothing changed", was: a("198.18.0.1", "198.18.0.2"), now: a("198.18.0.2", "198.18.0.1")},
		{name: "first look", now: a("198.18.0.1"), out: a("198.18.0.1")},
		{name: "one more, one less", was: a("198.18.0.1", "198.18.0.2"), now: a("198.18.0.2", "198.18.0.3"), out: a("198.18.0.3", "198.18.0.1")},
		{name: "silent", was: a("198.18.0.1", "fd00::1"), out: a("198.18.0.1", "fd00::1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := changedAddrs(tt.was, tt.now); !slices.Equal(got, tt.out) {
				t.Errorf("changedAddrs(%v, %v) = %v, want %v", tt.was, tt.now, got, tt.out)
			}
		})
	}
}
